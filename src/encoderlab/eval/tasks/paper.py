"""Paper 1's 12 datasets, loaded from the hub ids EncodEval uses, split as EncodEval splits them.

Sources and splits (EncodEval `encodeval/datasets.py`, hgissbkh/EncodEval@7e03774; schemas from
the datasets' hub cards, in docs/evaluation.md, which marks what is unverified):
  * SC, GLUE (`nyu-mll/glue`): test = the validation split (MNLI: `validation_matched`; the
    config has no `validation`), validation = 5% of train by `train_test_split(train_size=0.95,
    seed=42)`, the same call EncodEval makes, so the split is the same. Pair tasks keep their two
    texts and join them with the task's template.
  * TC (`hgissbkh/conll2003-en`, `hgissbkh/ontonotes5`, `hgissbkh/uner_en`): their own
    train/validation/test; tag names from the `ClassLabel` feature.
  * QA (`rajpurkar/squad`, `rajpurkar/squad_v2`, `hgissbkh/record`): as SC (5% of train is
    validation, the validation split is test). Training answers whose span does not match the
    context are skipped and counted; scored splits keep every answer (`splits.qa_example`).
  * IR: trained on `hgissbkh/msmarco-pairs`; evaluated on MS MARCO (BEIR dev qrels = validation,
    TREC-DL 2019 = test), NQ (BEIR test qrels split 50/50 into validation and test by query id)
    and MLDR-en (dev/test). As in EncodEval the corpus is the judged documents only (any grade, all
    splits together), so scores are not comparable to full-corpus leaderboards; a document is
    relevant when its grade is >= 1. EncodEval draws NQ's halves with an unseeded
    `random.sample`; we draw them with `random.Random(42)` over the sorted query ids, so ours are
    reproducible and EncodEval's differ from run to run.

The BEIR corpora are dataset scripts on the hub, and OntoNotes may be one (EncodEval loads it with
`trust_remote_code`; docs/reproduce.md says why that is not certain): they are read from the
repositories' parquet export (`refs/convert/parquet`), never by running their code; the export exists
for a script the converter ran and links the files of a repository already in parquet.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

from encoderlab.errors import UserError
from encoderlab.eval.spec import HubRepo, IRSplit, TaskData
from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hublayout import class_names, require_columns, require_splits
from encoderlab.eval.tasks.hubsource import PARQUET_EXPORT, HubSource, parquet_export
from encoderlab.eval.tasks.splits import (
    ir_split,
    label_index,
    qa_example,
    read_across,
    require_nonempty,
    text_fields,
    text_id,
)
from encoderlab.words import count, noun

ENCODEVAL_SPLIT_SEED = 42
ENCODEVAL_TRAIN_SIZE = 0.95
"""EncodEval's `train_test_split(train_size=0.95)` of an SC/QA hub train split: floor(0.95 n) rows train,
the rest validation (`datasets`' rule; `study/evalcost.py` counts the sizes by it)."""
NQ_SPLIT_SEED = 42


def rows(split, columns: Sequence[str]) -> Iterator[dict]:
    """The rows of a `datasets` split restricted to `columns`, read in batches (fast, flat memory)."""
    for batch in split.select_columns(list(columns)).iter(batch_size=4096):
        for i in range(len(batch[columns[0]])):
            yield {c: batch[c][i] for c in columns}


def encodeval_splits(task: str, ds, test_split: str, source: HubSource) -> tuple:
    """EncodEval's SC/QA splits: 5% of train (seed 42) is validation, `test_split` is test."""
    require_splits(task, ds, ("train", test_split), source)
    parts = ds["train"].train_test_split(train_size=ENCODEVAL_TRAIN_SIZE, seed=ENCODEVAL_SPLIT_SEED)
    return parts["train"], parts["test"], ds[test_split]


# ----------------------------------------------------------------------------- SC


def load_glue(
    task: str, config: str, test_split: str, labels: Sequence[str], columns: tuple[str, ...]
) -> TaskData:
    """A GLUE config; one text column, or two joined by the task's pair template."""
    source = HubSource("nyu-mll/glue", config)
    ds = load_hub(source)
    train, val, test = encodeval_splits(task, ds, test_split, source)
    require_columns(task, train, (*columns, "label"), source)
    names = class_names(train, "label")
    if names is not None and names != tuple(labels):
        raise UserError(f"task {task}: {source.describe()} labels are {list(names)}, expected {list(labels)}")

    def examples(split):
        out = []
        for r in rows(split, (*columns, "label")):
            texts = tuple(r[c] for c in columns)
            label = r["label"] if names is not None else label_index(task, labels, r["label"])
            out.append({**text_fields(texts if len(texts) == 2 else texts[0]), "label": label})
        return out

    data = TaskData(examples(train), examples(val), {"test": examples(test)})
    return read_across(
        require_nonempty(task, data), {"test": test_split}
    )  # GLUE's test labels are unpublished


# ----------------------------------------------------------------------------- TC


def load_ner(task: str, source: HubSource, tokens: str, tags: str, fallback: Sequence[str] = ()) -> TaskData:
    """A NER dataset with its own train/validation/test; tag names from its ClassLabel feature,
    else `fallback` (the order the dataset documents), else an error."""
    ds = load_hub(source)
    require_splits(task, ds, ("train", "validation", "test"), source)
    require_columns(task, ds["train"], (tokens, tags), source)
    names = class_names(ds["train"], tags) or tuple(fallback)
    if not names:
        raise UserError(
            f"task {task}: {source.describe()} stores {tags} as integers without label names; "
            "the dataset's layout changed, see docs/evaluation.md"
        )

    def examples(split):
        out = []
        for r in rows(ds[split], (tokens, tags)):
            ids = [t if isinstance(t, int) else label_index(task, names, t) for t in r[tags]]
            if any(not 0 <= t < len(names) for t in ids):
                raise UserError(
                    f"task {task}: a tag id in {source.describe()} is outside its {len(names)} labels"
                )
            out.append({"tokens": list(r[tokens]), "tags": ids})
        return out

    data = TaskData(examples("train"), examples("validation"), {"test": examples("test")}, labels=names)
    return require_nonempty(task, data)


# ----------------------------------------------------------------------------- QA


def struct_list(value) -> list[dict]:
    """A list of structs as `datasets` returns it: a list of dicts (`List(struct)`) or a dict of
    lists (`Sequence(struct)`, e.g. SQuAD's `answers`)."""
    if isinstance(value, dict):
        keys = list(value)
        return [dict(zip(keys, items)) for items in zip(*(value[k] for k in keys))]
    return list(value)


def _answers(value) -> list[dict]:
    return [{"text": a["text"], "answer_start": int(a["answer_start"])} for a in struct_list(value)]


def load_squad_format(task: str, source: HubSource) -> TaskData:
    ds = load_hub(source)
    train, val, test = encodeval_splits(task, ds, "validation", source)
    require_columns(task, train, ("context", "question", "answers"), source)
    has_id = "id" in train.column_names
    counts: dict = {}

    def examples(split, part):
        out = []
        columns = ("id", "context", "question", "answers") if has_id else ("context", "question", "answers")
        for i, r in enumerate(rows(split, columns)):
            rec_id = str(r["id"]) if has_id else f"{part}-{i}"
            answers = _answers(r["answers"])
            ex = qa_example(rec_id, r["context"], r["question"], answers, counts, scored=part != "train")
            if ex is not None:
                out.append(ex)
        return out

    data = TaskData(examples(train, "train"), examples(val, "val"), {"test": examples(test, "test")}, counts)
    return read_across(require_nonempty(task, data), {"test": "validation"})  # their test splits are hidden


# ----------------------------------------------------------------------------- IR

MSMARCO_PAIRS = HubSource("hgissbkh/msmarco-pairs")
MSMARCO_PAIRS_REPO = HubRepo(MSMARCO_PAIRS.repo)
"""Every paper IR task trains on it (NQ and MLDR zero-shot after it)."""


def msmarco_pairs(task: str) -> list[dict]:
    """EncodEval's IR training data; the document id is a hash of its text (for in-batch duplicates)."""
    ds = load_hub(MSMARCO_PAIRS)
    require_splits(task, ds, ("train",), MSMARCO_PAIRS)
    require_columns(task, ds["train"], ("query", "positive"), MSMARCO_PAIRS)
    return [
        {
            "query": r["query"],
            "document": r["positive"],
            "doc_id": text_id(r["positive"]),
        }
        for r in rows(ds["train"], ("query", "positive"))
    ]


def beir_repos(repo: str) -> tuple[HubRepo, ...]:
    """What `_beir` reads of a BEIR dataset: its `-qrels` repository and its parquet export."""
    return (HubRepo(f"{repo}-qrels"), HubRepo(repo, PARQUET_EXPORT))


def beir_export(repo: str, part: str) -> HubSource:
    """A BEIR script repository's corpus or queries (config and split both named `part`), from its
    parquet export."""
    return parquet_export(repo, part, (part,))


def judged_splits(
    task: str, qrels: dict[str, list[tuple[str, str, int]]], queries: dict[str, str], corpus: dict[str, str]
) -> dict[str, IRSplit]:
    """One IRSplit per qrels split over the shared judged-only corpus: the queries with a document
    of grade >= 1, and those documents as relevant (grade 1, as EncodEval's binary relevance)."""
    out = {}
    for name, triples in qrels.items():
        split = ir_split((q, queries[q], d, corpus[d]) for q, d, grade in triples if grade >= 1)
        split.corpus = corpus
        out[name] = split
    return out


def _beir(task: str, repo: str, qrels_repo: str, splits: dict[str, str], title: bool) -> dict[str, IRSplit]:
    """BEIR corpus, queries and qrels restricted to the judged documents of every split."""
    qrels_source = HubSource(qrels_repo)
    qrels_ds = load_hub(qrels_source)
    require_splits(task, qrels_ds, tuple(splits.values()), qrels_source)
    qrels = {
        name: [
            (str(r["query-id"]), str(r["corpus-id"]), int(r["score"]))
            for r in rows(qrels_ds[split], ("query-id", "corpus-id", "score"))
        ]
        for name, split in splits.items()
    }
    judged = {d for triples in qrels.values() for _, d, _ in triples}
    wanted = {q for triples in qrels.values() for q, _, _ in triples}
    corpus_source, queries_source = beir_export(repo, "corpus"), beir_export(repo, "queries")
    corpus_ds, queries_ds = load_hub(corpus_source)["corpus"], load_hub(queries_source)["queries"]
    require_columns(task, corpus_ds, ("_id", "title", "text"), corpus_source)
    corpus = {
        str(r["_id"]): (f"{r['title']}. {r['text']}" if title else r["text"])
        for r in rows(corpus_ds, ("_id", "title", "text"))
        if str(r["_id"]) in judged
    }
    queries = {str(r["_id"]): r["text"] for r in rows(queries_ds, ("_id", "text")) if str(r["_id"]) in wanted}
    _require_known(task, repo, judged - set(corpus), "document")
    _require_known(task, repo, wanted - set(queries), "query")
    return judged_splits(task, qrels, queries, corpus)


def _require_known(task: str, repo: str, missing: set[str], what: str) -> None:
    if missing:
        raise UserError(
            f"task {task}: {count(len(missing), f'judged {what} id')} of {repo} {noun(len(missing), 'is', 'are')} not in its {what} file "
            f"(first: {sorted(missing)[0]}); the mirror is incomplete"
        )


def load_msmarco(task: str) -> TaskData:
    splits = _beir(
        task, "BeIR/msmarco", "BeIR/msmarco-qrels", {"val": "validation", "test": "test"}, title=False
    )
    return require_nonempty(task, TaskData(msmarco_pairs(task), splits["val"], {"test": splits["test"]}))


def nq_halves(query_ids: set[str]) -> tuple[set[str], set[str]]:
    """EncodEval's 50/50 split of NQ's test queries, drawn with a fixed seed over the sorted ids."""
    ordered = sorted(query_ids)
    val = set(random.Random(NQ_SPLIT_SEED).sample(ordered, round(0.5 * len(ordered))))
    return val, set(ordered) - val


def load_nq(task: str) -> TaskData:
    full = _beir(task, "BeIR/nq", "BeIR/nq-qrels", {"all": "test"}, title=True)["all"]
    val_q, test_q = nq_halves(set(full.qrels))
    parts = {}
    for name, qids in (("val", val_q), ("test", test_q)):
        parts[name] = IRSplit(
            {q: full.queries[q] for q in sorted(qids)}, full.corpus, {q: full.qrels[q] for q in sorted(qids)}
        )
    data = TaskData(msmarco_pairs(task), parts["val"], {"test": parts["test"]})
    return read_across(require_nonempty(task, data), {"validation": "test"})  # NQ has test qrels only


def load_mldr(task: str) -> TaskData:
    queries_source, corpus_source = (
        HubSource("hgissbkh/mldr-en", "default"),
        HubSource("hgissbkh/mldr-en", "corpus"),
    )
    ds = load_hub(queries_source)
    require_splits(task, ds, ("dev", "test"), queries_source)
    require_columns(task, ds["dev"], ("query_id", "query", "positive_passages"), queries_source)
    qrels, queries = {}, {}
    for name, split in (("val", "dev"), ("test", "test")):
        qrels[name] = []
        for r in rows(ds[split], ("query_id", "query", "positive_passages")):
            queries[str(r["query_id"])] = r["query"]
            qrels[name] += [
                (str(r["query_id"]), str(p["docid"]), 1) for p in struct_list(r["positive_passages"])
            ]
    judged = {d for triples in qrels.values() for _, d, _ in triples}
    corpus_ds = load_hub(corpus_source)
    require_splits(task, corpus_ds, ("corpus",), corpus_source)
    corpus = {
        str(r["docid"]): r["text"]
        for r in rows(corpus_ds["corpus"], ("docid", "text"))
        if str(r["docid"]) in judged
    }
    _require_known(task, "hgissbkh/mldr-en", judged - set(corpus), "document")
    splits = judged_splits(task, qrels, queries, corpus)
    return require_nonempty(task, TaskData(msmarco_pairs(task), splits["val"], {"test": splits["test"]}))
