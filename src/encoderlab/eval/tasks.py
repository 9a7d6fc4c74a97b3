"""The task registry: every task of the `pocket`, `domain` and `paper` suites and its loader.

Offline tasks read the labelled assets (`encoderlab.data.assets.asset_jsonl`, which names the
`encoderlab assets fetch X` command when one is missing). Splits are deterministic and never
depend on the run seed:
  * groups (SQuAD articles, VitaminC evidence pages, Brown documents, stdlib modules, or single
    examples) go to train/val/test by a salted sha256 of their key, so a split never changes
    when other records are added and related examples never straddle two splits;
  * each split is then subsampled to a fixed size with `random.Random(SUBSAMPLE_SEED)`, keeping
    the file order, so every run of a pocket task sees exactly the same examples.
`docs/evaluation.md` lists every split size. Labels outside a task's label set, an empty split
and QA answers whose span does not match the context are handled here (error, error, skipped and
counted).

Paper tasks (paper 1's 12 datasets) load with `datasets.load_dataset` from the hub, or from a
local folder in the same format when `ENCODERLAB_PAPER_DATA` is set: `$ENCODERLAB_PAPER_DATA/<name>/`
holds the hub dataset's splits as `<split>.jsonl` (see docs/evaluation.md for the names).
"""

from __future__ import annotations

import ast
import hashlib
import os
import random
import re
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

from encoderlab.errors import UserError, did_you_mean
from encoderlab.eval.spec import FinetuneConfig, IRSplit, Task, TaskData

SUBSAMPLE_SEED = 1234
PAPER_DATA_ENV = "ENCODERLAB_PAPER_DATA"

# ----------------------------------------------------------------------------- helpers


def _records(asset: str) -> list[dict]:
    from encoderlab.data.assets import asset_jsonl, read_jsonl

    return list(read_jsonl(asset_jsonl(asset)))


def bucket(key: str, salt: str) -> float:
    """A stable pseudo-random number in [0, 1) for `key`."""
    return int(hashlib.sha256(f"{salt}:{key}".encode()).hexdigest()[:12], 16) / 16**12


def split_groups(items: Sequence, key: Callable, salt: str, fractions: Sequence[float]) -> list[list]:
    """Partition `items` by the hashed bucket of `key(item)`: items sharing a key share a split."""
    edges, total = [], 0.0
    for f in fractions:
        total += f
        edges.append(total)
    parts: list[list] = [[] for _ in fractions]
    for item in items:
        b = bucket(str(key(item)), salt)
        parts[next((i for i, e in enumerate(edges) if b < e), len(edges) - 1)].append(item)
    return parts


def subsample(items: Sequence, n: int | None) -> list:
    """`n` items drawn with the fixed subsample seed, in their original order (all if n is None or larger)."""
    if n is None or n >= len(items):
        return list(items)
    keep = sorted(random.Random(SUBSAMPLE_SEED).sample(range(len(items)), n))
    return [items[i] for i in keep]


def label_index(task: str, labels: Sequence[str], value) -> int:
    value = str(value).lower() if isinstance(value, bool) else value
    if value not in labels:
        raise UserError(
            f"task {task}: label {value!r} is not in its label set {list(labels)}; fix the data or the task definition"
        )
    return labels.index(value)


def require_nonempty(task: str, data: TaskData) -> TaskData:
    splits = {"train": data.train, "val": data.val, **{f"test '{k}'": v for k, v in data.tests.items()}}
    for name, split in splits.items():
        size = len(split.queries) if isinstance(split, IRSplit) else len(split)
        if size == 0:
            raise UserError(
                f"task {task}: the {name} split is empty; check the data files or the split sizes"
            )
    return data


def qa_example(rec_id: str, context: str, question: str, answers: list[dict], counts: dict) -> dict | None:
    """A QA example with answers whose span matches the context; others are skipped and counted
    (None when a question had answers and none of them matches)."""
    good = [
        a for a in answers if context[a["answer_start"] : a["answer_start"] + len(a["text"])] == a["text"]
    ]
    counts["skipped_answers"] = counts.get("skipped_answers", 0) + len(answers) - len(good)
    if answers and not good:
        counts["skipped_questions"] = counts.get("skipped_questions", 0) + 1
        return None
    return {"id": rec_id, "question": question, "context": context, "answers": good}


def ir_split(pairs: Iterable[tuple[str, str, str, str]]) -> IRSplit:
    """An IRSplit from (query id, query, document id, document) tuples."""
    split = IRSplit({}, {}, {})
    for qid, query, did, doc in pairs:
        split.queries[qid] = query
        split.corpus[did] = doc
        split.qrels.setdefault(qid, {})[did] = 1
    return split


def ir_task_data(train: list[dict], val: list[dict], test: list[dict], sizes: dict) -> TaskData:
    """Retrieval data from records {"qid", "query", "did", "doc"}: training pairs, and val/test
    corpora holding the documents of the split (judged-only, as paper 1's evaluation)."""

    def evaluation(records, n_queries):
        corpus_records = subsample(records, sizes.get("corpus_queries"))
        corpus = {r["did"]: r["doc"] for r in corpus_records}
        split = ir_split(
            (r["qid"], r["query"], r["did"], r["doc"]) for r in subsample(corpus_records, n_queries)
        )
        split.corpus = corpus
        return split

    pairs = [
        {"query": r["query"], "document": r["doc"], "doc_id": r["did"]}
        for r in subsample(train, sizes.get("train"))
    ]
    return TaskData(pairs, evaluation(val, sizes.get("val")), {"test": evaluation(test, sizes.get("test"))})


# ----------------------------------------------------------------------------- pocket loaders


def _sc(
    name: str,
    asset: str,
    labels: Sequence[str],
    render: Callable[[dict], str],
    group: Callable,
    sizes: dict,
    test_split: Callable | None = None,
    fractions: tuple[float, float, float] = (0.8, 0.05, 0.15),
) -> TaskData:
    records = _records(asset)
    if test_split is None:
        train, val, test = split_groups(records, group, name, fractions)
    else:
        rest = [r for r in records if not test_split(r)]
        test = [r for r in records if test_split(r)]
        train, val = split_groups(rest, group, name, (0.9, 0.1))

    def examples(split, n):
        return [
            {"text": render(r), "label": label_index(name, labels, r["meta"]["label"])}
            for r in subsample(split, n)
        ]

    data = TaskData(
        examples(train, sizes["train"]), examples(val, sizes["val"]), {"test": examples(test, sizes["test"])}
    )
    return require_nonempty(name, data)


def _tc(
    name: str,
    asset: str,
    labels: Sequence[str],
    normalise: Callable[[str], str],
    group: Callable,
    sizes: dict,
) -> TaskData:
    train, val, test = split_groups(_records(asset), group, name, (0.7, 0.1, 0.2))

    def examples(split, n):
        return [
            {
                "tokens": r["meta"]["tokens"],
                "tags": [label_index(name, labels, normalise(t)) for t in r["meta"]["tags"]],
            }
            for r in subsample(split, n)
        ]

    data = TaskData(
        examples(train, sizes["train"]), examples(val, sizes["val"]), {"test": examples(test, sizes["test"])}
    )
    return require_nonempty(name, data)


WNUT_TYPES = (
    "company",
    "facility",
    "geo-loc",
    "movie",
    "musicartist",
    "other",
    "person",
    "product",
    "sportsteam",
    "tvshow",
)
WNUT_LABELS = ("O", *(f"{p}-{t}" for t in WNUT_TYPES for p in "BI"))
_BROWN_SUFFIX = re.compile(r"(-(tl|hl|nc))+$")


def brown_tag(tag: str) -> str:
    """Collapse Brown's title/headline/cited suffixes (-tl, -hl, -nc): they mark context, not part of speech."""
    return _BROWN_SUFFIX.sub("", tag.lower())


def load_brown_pos(name: str, sizes: dict) -> TaskData:
    """Brown POS; the label set is the collapsed tag set of the whole asset, so no split holds an unseen tag."""
    labels = tuple(sorted({brown_tag(t) for r in _records("brown-pos") for t in r["meta"]["tags"]}))
    data = _tc(name, "brown-pos", labels, brown_tag, lambda r: r["meta"].get("doc", r["id"]), sizes)
    data.labels = labels
    return data


SQUAD_SPLIT = (0.6, 0.1, 0.3)
SQUAD_SHIFTS = ("nyt", "reddit", "amazon", "new-wiki")


def _squad_article_splits() -> list[list[dict]]:
    return split_groups(_records("squad-v1-dev"), lambda r: r["meta"]["title"], "squad-articles", SQUAD_SPLIT)


def _qa_examples(records: Sequence[dict], counts: dict) -> list[dict]:
    out = []
    for r in records:
        ex = qa_example(r["id"], r["text"], r["meta"]["question"], r["meta"]["answers"], counts)
        if ex is not None:
            out.append(ex)
    return out


def load_squad(name: str, sizes: dict) -> TaskData:
    counts: dict = {}
    train, val, test = _squad_article_splits()
    tests = {"test": _qa_examples(subsample(test, sizes["test"]), counts)}
    for shift in SQUAD_SHIFTS:
        tests[shift] = _qa_examples(subsample(_records(f"squad-shifts-{shift}"), sizes["shift"]), counts)
    data = TaskData(
        _qa_examples(subsample(train, sizes["train"]), counts),
        _qa_examples(subsample(val, sizes["val"]), counts),
        tests,
        counts,
    )
    return require_nonempty(name, data)


def _squad_ir_records(records):
    return [
        {
            "qid": r["id"],
            "query": r["meta"]["question"],
            "did": r["meta"].get("paragraph") or r["text"][:64],
            "doc": r["text"],
        }
        for r in records
    ]


def load_squad_retrieval(name: str, sizes: dict) -> TaskData:
    train, val, test = (_squad_ir_records(s) for s in _squad_article_splits())
    return require_nonempty(name, ir_task_data(train, val, test, sizes))


def _passage_ir_records(records: list[dict]) -> list[dict]:
    """Question -> passage records; the passage id is a hash of its text (BoolQ repeats passages)."""
    return [
        {
            "qid": r["id"],
            "query": r["meta"]["question"],
            "did": hashlib.sha256(r["text"].encode()).hexdigest()[:16],
            "doc": r["text"],
        }
        for r in records
    ]


def load_boolq_retrieval(name: str, sizes: dict) -> TaskData:
    raw = _records("boolq")
    records = _passage_ir_records(raw)
    dev = {r["id"] for r in raw if r["meta"].get("split") == "dev"}
    rest = [r for r in records if r["qid"] not in dev]
    train, val = split_groups(rest, lambda r: r["did"], name, (0.9, 0.1))
    return require_nonempty(name, ir_task_data(train, val, [r for r in records if r["qid"] in dev], sizes))


def load_pubmedqa_retrieval(name: str, sizes: dict) -> TaskData:
    train, val, test = split_groups(
        _passage_ir_records(_records("pubmedqa")), lambda r: r["did"], name, (0.6, 0.1, 0.3)
    )
    return require_nonempty(name, ir_task_data(train, val, test, sizes))


# ----------------------------------------------------------------------------- domain: code retrieval


def docstring_functions(source: str, module: str) -> list[dict]:
    """Functions and methods of `source` with a docstring: query = its first paragraph, document =
    the function's code with the docstring removed (so the answer is not in the document)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines()
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        doc = ast.get_docstring(node)
        if not doc or not node.body or len(node.body) < 2:
            continue
        query = " ".join(doc.strip().split("\n\n")[0].split())
        doc_node = node.body[0]
        code = lines[node.lineno - 1 : doc_node.lineno - 1] + lines[doc_node.end_lineno : node.end_lineno]
        if len(query) < 10:
            continue
        out.append(
            {
                "qid": f"{module}:{node.lineno}",
                "query": query,
                "did": f"{module}:{node.name}:{node.lineno}",
                "doc": textwrap.dedent("\n".join(code)),
            }
        )
    return out


def code_functions(modules: Sequence[str]) -> list[dict]:
    """Docstring/function records of the given top-level stdlib modules (files of this interpreter)."""
    import sysconfig

    root = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for module in modules:
        files = (
            [root / f"{module}.py"]
            if (root / f"{module}.py").is_file()
            else sorted((root / module).rglob("*.py"))
        )
        for path in files:
            try:
                out += docstring_functions(path.read_text(encoding="utf-8"), str(path.relative_to(root)))
            except (UnicodeDecodeError, OSError):
                continue
    return out


def load_code_retrieval(name: str, sizes: dict) -> TaskData:
    from encoderlab.data.assets import code_heldout_modules

    records = code_functions(code_heldout_modules())
    train, val, test = split_groups(records, lambda r: r["did"].split(":")[0], name, (0.6, 0.1, 0.3))
    return require_nonempty(name, ir_task_data(train, val, test, sizes))


# ----------------------------------------------------------------------------- paper suite (hub or local files)


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
    name: str, hub_id: str, config: str, labels: Sequence[str], render: Callable[[dict], str]
) -> TaskData:
    train, val, test = _glue_splits(_paper_dataset(hub_id, config))

    def examples(split):
        return [{"text": render(r), "label": _int_label(name, labels, r["label"])} for r in split]

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


# ----------------------------------------------------------------------------- registry

POCKET_SC = FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=150)
POCKET_TC = FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=None, epochs=1.0)
POCKET_QA = FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=200)
POCKET_IR = FinetuneConfig(batch_size=32, micro_batch_size=32, max_steps=100)
PAPER_SC = PAPER_QA = PAPER_IR = FinetuneConfig(batch_size=32, micro_batch_size=8, max_steps=1000)
PAPER_TC = FinetuneConfig(batch_size=32, micro_batch_size=8, max_steps=None, epochs=1.0)

POCKET_SIZES = {
    "vitaminc": {"train": 2000, "val": 300, "test": 1000},
    "boolq": {"train": 2000, "val": 300, "test": 1000},
    "tweets": {"train": 2000, "val": 300, "test": 1000},
    "wnut16": {"train": None, "val": None, "test": None},
    "brown-pos": {"train": 1500, "val": 300, "test": 1000},
    "squad": {"train": 3000, "val": 300, "test": 1000, "shift": 500},
    "squad-retrieval": {"train": 3200, "val": 200, "test": 500, "corpus_queries": None},
    "boolq-retrieval": {"train": 3200, "val": 200, "test": 500, "corpus_queries": 1500},
    "pubmedqa-retrieval": {"train": 600, "val": 100, "test": 300, "corpus_queries": None},
    "pubmedqa": {"train": None, "val": None, "test": None},
    "code-retrieval": {"train": 3200, "val": 200, "test": 500, "corpus_queries": None},
}


def _tasks() -> list[Task]:
    s = POCKET_SIZES
    sc = partial(Task, family="sc", metric="accuracy", finetune=POCKET_SC, max_length=128)
    ir = partial(Task, family="ir", metric="ndcg@10", finetune=POCKET_IR, max_length=128)
    tasks = [
        sc(
            name="vitaminc",
            description="VitaminC fact verification (evidence, claim) -> true/false/neither; split by evidence page",
            labels=("true", "false", "neither"),
            loader=lambda: _sc(
                "vitaminc",
                "vitaminc",
                ("true", "false", "neither"),
                lambda r: f"Premise: {r['text']}\nHypothesis: {r['meta']['claim']}",
                lambda r: r["text"].split(":")[0],
                s["vitaminc"],
            ),
        ),
        sc(
            name="boolq",
            description="BoolQ (question, passage) -> yes/no; test = the official dev split",
            labels=("false", "true"),
            loader=lambda: _sc(
                "boolq",
                "boolq",
                ("false", "true"),
                lambda r: f"Question: {r['meta']['question']}\nPassage: {r['text']}",
                lambda r: r["text"],
                s["boolq"],
                test_split=lambda r: r["meta"].get("split") == "dev",
            ),
        ),
        sc(
            name="tweets",
            description="tweet sentiment (deduplicated) -> negative/neutral/positive",
            labels=("negative", "neutral", "positive"),
            loader=lambda: _sc(
                "tweets",
                "tweets",
                ("negative", "neutral", "positive"),
                lambda r: r["text"],
                lambda r: r["id"],
                s["tweets"],
            ),
        ),
        Task(
            name="wnut16",
            family="tc",
            description="WNUT-16 Twitter NER, strict IOB2 entity F1; 70/10/20 split by tweet id",
            labels=WNUT_LABELS,
            metric="entity_f1",
            finetune=POCKET_TC,
            max_length=128,
            loader=lambda: _tc("wnut16", "wnut16", WNUT_LABELS, str, lambda r: r["id"], s["wnut16"]),
        ),
        Task(
            name="brown-pos",
            family="tc",
            description="Brown corpus POS tagging (tags with -tl/-hl/-nc collapsed), word accuracy; split by document",
            labels=(),  # the asset's tag set, filled in by `load_task`
            metric="accuracy",
            finetune=POCKET_TC,
            max_length=128,
            loader=lambda: load_brown_pos("brown-pos", s["brown-pos"]),
        ),
        Task(
            name="squad",
            family="qa",
            description="SQuAD v1.1 dev split by article into train/val/test; SQuADShifts NYT/Reddit/Amazon/new-wiki as OOD tests",
            metric="f1",
            finetune=POCKET_QA,
            max_length=256,
            stride=64,
            loader=lambda: load_squad("squad", s["squad"]),
        ),
        ir(
            name="squad-retrieval",
            description="SQuAD question -> paragraph, corpus = the split's paragraphs",
            loader=lambda: load_squad_retrieval("squad-retrieval", s["squad-retrieval"]),
        ),
        ir(
            name="boolq-retrieval",
            description="BoolQ question -> passage, test corpus = passages of 1500 dev questions",
            loader=lambda: load_boolq_retrieval("boolq-retrieval", s["boolq-retrieval"]),
        ),
        ir(
            name="pubmedqa-retrieval",
            description="PubMedQA question -> abstract, corpus = the split's abstracts",
            loader=lambda: load_pubmedqa_retrieval("pubmedqa-retrieval", s["pubmedqa-retrieval"]),
            max_length=192,
        ),
        sc(
            name="pubmedqa",
            description="PubMedQA (question, abstract) -> yes/no/maybe; 60/10/30 split by id",
            labels=("yes", "no", "maybe"),
            max_length=256,
            loader=lambda: _sc(
                "pubmedqa",
                "pubmedqa",
                ("yes", "no", "maybe"),
                lambda r: f"Question: {r['meta']['question']}\nContext: {r['text']}",
                lambda r: r["id"],
                s["pubmedqa"],
                fractions=(0.6, 0.1, 0.3),
            ),
        ),
        ir(
            name="code-retrieval",
            description="docstring -> function (docstring removed) over stdlib modules held out of code-python; split by file",
            loader=lambda: load_code_retrieval("code-retrieval", s["code-retrieval"]),
            max_length=256,
        ),
    ]
    tasks += _paper_tasks()
    return tasks


def _paper_tasks() -> list[Task]:
    conll = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")
    sc = partial(Task, family="sc", metric="accuracy", finetune=PAPER_SC, max_length=512)
    tc = partial(Task, family="tc", metric="entity_f1", finetune=PAPER_TC, max_length=512)
    qa = partial(Task, family="qa", metric="f1", finetune=PAPER_QA, max_length=384, stride=128)
    ir = partial(
        Task,
        family="ir",
        metric="ndcg@10",
        finetune=PAPER_IR,
        max_length=512,
        query_prefix="Query: ",
        document_prefix="Document: ",
    )
    return [
        sc(
            name="paper-sst2",
            description="GLUE SST-2",
            labels=("negative", "positive"),
            loader=lambda: load_paper_sc(
                "paper-sst2", "nyu-mll/glue", "sst2", ("negative", "positive"), lambda r: r["sentence"]
            ),
        ),
        sc(
            name="paper-mnli",
            description="GLUE MNLI-matched",
            labels=("entailment", "neutral", "contradiction"),
            loader=lambda: load_paper_sc(
                "paper-mnli",
                "nyu-mll/glue",
                "mnli",
                ("entailment", "neutral", "contradiction"),
                lambda r: f"Premise: {r['premise']}\nHypothesis: {r['hypothesis']}",
            ),
        ),
        sc(
            name="paper-qqp",
            description="GLUE QQP",
            labels=("not_duplicate", "duplicate"),
            loader=lambda: load_paper_sc(
                "paper-qqp",
                "nyu-mll/glue",
                "qqp",
                ("not_duplicate", "duplicate"),
                lambda r: f"Question 1: {r['question1']}\nQuestion 2: {r['question2']}",
            ),
        ),
        tc(
            name="paper-conll2003",
            description="CoNLL-2003 English NER (hgissbkh/conll2003-en)",
            labels=conll,
            loader=lambda: load_paper_tc("paper-conll2003", "hgissbkh/conll2003-en", "words", "ner", conll),
        ),
        tc(
            name="paper-ontonotes",
            description="OntoNotes 5 NER (hgissbkh/ontonotes5); labels from the data",
            loader=lambda: load_paper_tc_named("paper-ontonotes", "hgissbkh/ontonotes5", "tokens", "tags"),
        ),
        tc(
            name="paper-uner",
            description="UNER English NER (hgissbkh/uner_en); labels from the data",
            loader=lambda: load_paper_tc_named("paper-uner", "hgissbkh/uner_en", "tokens", "ner_tags"),
        ),
        qa(
            name="paper-squad",
            description="SQuAD v1.1 (rajpurkar/squad)",
            loader=lambda: load_paper_qa("paper-squad", "rajpurkar/squad"),
        ),
        qa(
            name="paper-squad-v2",
            description="SQuAD v2.0 with no-answer (rajpurkar/squad_v2)",
            qa_v2=True,
            loader=lambda: load_paper_qa("paper-squad-v2", "rajpurkar/squad_v2"),
        ),
        qa(
            name="paper-record",
            description="ReCoRD in SQuAD format (hgissbkh/record, schema assumed)",
            loader=lambda: load_paper_qa("paper-record", "hgissbkh/record"),
        ),
        ir(
            name="paper-msmarco",
            description="MS MARCO (BEIR dev/test qrels, judged-only corpus), trained on msmarco-pairs",
            loader=lambda: load_paper_msmarco("paper-msmarco"),
        ),
        ir(
            name="paper-nq",
            description="NQ (BEIR test qrels split 50/50 into val/test), zero-shot after msmarco-pairs",
            loader=lambda: load_paper_nq("paper-nq"),
        ),
        ir(
            name="paper-mldr",
            description="MLDR-en dev/test, zero-shot after msmarco-pairs",
            loader=lambda: load_paper_mldr("paper-mldr"),
        ),
    ]


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


TASKS: dict[str, Task] = {t.name: t for t in _tasks()}


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise did_you_mean(name, list(TASKS), "task")
    return TASKS[name]


def load_task(task: Task) -> tuple[Task, TaskData]:
    """Load a task's data; tasks whose label set comes from the data get it filled in."""
    data = task.loader()
    return (replace(task, labels=data.labels) if data.labels else task), data
