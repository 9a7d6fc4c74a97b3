"""Paper 1's 12 datasets as EncodEval loads them, from the hub or from local files.

Paper tasks load with `datasets.load_dataset` from the hub, or from a local folder in the same
format when `ENCODERLAB_PAPER_DATA` is set: `$ENCODERLAB_PAPER_DATA/<name>/` holds the hub
dataset's splits as `<split>.jsonl` (see docs/evaluation.md for the names).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from encoderlab.errors import UserError
from encoderlab.eval.spec import IRSplit, TaskData
from encoderlab.eval.tasks.splits import (
    ir_split,
    label_index,
    qa_example,
    require_nonempty,
    split_groups,
    text_fields,
)

PAPER_DATA_ENV = "ENCODERLAB_PAPER_DATA"


def _paper_dataset(hub_id: str, config: str | None = None, **kw):
    """A `datasets` DatasetDict from the hub, or from $ENCODERLAB_PAPER_DATA/<name>/ (same format)."""
    try:
        import datasets
    except ImportError:
        raise UserError(
            "the paper suite reads data with the `datasets` package; pip install datasets"
        ) from None

    local = os.environ.get(PAPER_DATA_ENV)
    folder_name = hub_id.split("/")[-1] + (f"-{config}" if config else "")
    if local:
        folder = Path(local) / folder_name
        files = {p.stem: str(p) for p in sorted(folder.glob("*.jsonl"))}
        if not files:
            raise UserError(
                f"{PAPER_DATA_ENV}={local} has no {folder_name}/<split>.jsonl files; add them or unset {PAPER_DATA_ENV} to use the hub"
            )
        return datasets.load_dataset("json", data_files=files, **kw)
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        raise UserError(
            f"paper tasks need the hub dataset {hub_id} but HF_HUB_OFFLINE=1; set {PAPER_DATA_ENV}=DIR with DIR/{folder_name}/<split>.jsonl"
        )
    return datasets.load_dataset(hub_id, config, **kw)


def _glue_splits(ds) -> tuple:
    """EncodEval's SC/QA split: 5% of train (seed 42) is validation, the official validation is test."""
    parts = ds["train"].train_test_split(train_size=0.95, seed=42)
    return parts["train"], parts["test"], ds["validation"]


def load_paper_sc(
    name: str, hub_id: str, config: str, labels: Sequence[str], texts: Callable[[dict], str | tuple[str, str]]
) -> TaskData:
    train, val, test = _glue_splits(_paper_dataset(hub_id, config))

    def examples(split):
        return [{**text_fields(texts(r)), "label": _int_label(name, labels, r["label"])} for r in split]

    return require_nonempty(name, TaskData(examples(train), examples(val), {"test": examples(test)}))


def _int_label(task: str, labels: Sequence[str], value) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(labels):
        return value
    return label_index(task, labels, value)


def load_paper_tc(name: str, hub_id: str, tokens_col: str, tags_col: str, labels: Sequence[str]) -> TaskData:
    ds = _paper_dataset(hub_id)

    def examples(split):
        return [
            {"tokens": r[tokens_col], "tags": [_int_label(name, labels, t) for t in r[tags_col]]}
            for r in ds[split]
        ]

    return require_nonempty(
        name, TaskData(examples("train"), examples("validation"), {"test": examples("test")})
    )


def load_paper_qa(name: str, hub_id: str) -> TaskData:
    counts: dict = {}
    train, val, test = _glue_splits(_paper_dataset(hub_id))

    def examples(split):
        out = []
        for i, r in enumerate(split):
            answers = [
                {"text": t, "answer_start": s}
                for t, s in zip(r["answers"]["text"], r["answers"]["answer_start"])
            ]
            ex = qa_example(str(r.get("id", i)), r["context"], r["question"], answers, counts)
            if ex is not None:
                out.append(ex)
        return out

    return require_nonempty(name, TaskData(examples(train), examples(val), {"test": examples(test)}, counts))


def _msmarco_pairs() -> list[dict]:
    ds = _paper_dataset("hgissbkh/msmarco-pairs")
    return [
        {
            "query": r["query"],
            "document": r["positive"],
            "doc_id": hashlib.sha256(r["positive"].encode()).hexdigest()[:16],
        }
        for r in ds["train"]
    ]


def _beir(hub_id: str, qrels_splits: dict[str, str], title: bool) -> dict[str, IRSplit]:
    """BEIR corpus/queries/qrels restricted to judged documents (EncodEval's evaluation corpus)."""
    corpus = _paper_dataset(hub_id, "corpus")["corpus"]
    queries = {str(r["_id"]): r["text"] for r in _paper_dataset(hub_id, "queries")["queries"]}
    docs = {str(r["_id"]): (f"{r['title']}. {r['text']}" if title else r["text"]) for r in corpus}
    qrels = _paper_dataset(hub_id + "-qrels")
    out = {}
    for name, split in qrels_splits.items():
        pairs = [(str(r["query-id"]), str(r["corpus-id"])) for r in qrels[split] if r["score"] >= 1]
        out[name] = ir_split((q, queries[q], d, docs[d]) for q, d in pairs)
    return out


def load_paper_msmarco(name: str) -> TaskData:
    splits = _beir("BeIR/msmarco", {"val": "validation", "test": "test"}, title=False)
    return require_nonempty(name, TaskData(_msmarco_pairs(), splits["val"], {"test": splits["test"]}))


def load_paper_nq(name: str) -> TaskData:
    """NQ's test qrels split 50/50 into val/test by a hash of the query id (EncodEval samples at random)."""
    full = _beir("BeIR/nq", {"all": "test"}, title=True)["all"]
    val_q, test_q = split_groups(list(full.queries), lambda q: q, name, (0.5, 0.5))
    parts = {}
    for part, qids in (("val", val_q), ("test", test_q)):
        parts[part] = ir_split((q, full.queries[q], d, full.corpus[d]) for q in qids for d in full.qrels[q])
    return require_nonempty(name, TaskData(_msmarco_pairs(), parts["val"], {"test": parts["test"]}))


def load_paper_mldr(name: str) -> TaskData:
    corpus = {r["docid"]: r["text"] for r in _paper_dataset("hgissbkh/mldr-en", "corpus")["corpus"]}
    ds = _paper_dataset("hgissbkh/mldr-en", "default")

    def split(part):
        return ir_split(
            (r["query_id"], r["query"], p["docid"], corpus[p["docid"]])
            for r in ds[part]
            for p in r["positive_passages"]
        )

    return require_nonempty(name, TaskData(_msmarco_pairs(), split("dev"), {"test": split("test")}))


def load_paper_tc_named(name: str, hub_id: str, tokens_col: str, tags_col: str) -> TaskData:
    """TC data whose label names come from the data: ClassLabel names on the hub, else string tags."""
    ds = _paper_dataset(hub_id)
    feature = ds["train"].features[tags_col]
    names = getattr(getattr(feature, "feature", None), "names", None)
    if names is None:
        tags = {t for split in ds.values() for r in split for t in r[tags_col]}
        if not all(isinstance(t, str) for t in tags):
            raise UserError(
                f"task {name}: integer tags without label names; store string tags in the local files"
            )
        names = ["O", *sorted(tags - {"O"})]
    data = load_paper_tc(name, hub_id, tokens_col, tags_col, names)
    data.labels = tuple(names)
    return data
