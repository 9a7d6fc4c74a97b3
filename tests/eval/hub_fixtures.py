"""A simulated Hugging Face hub: tiny datasets written in the real repositories' layouts.

Each writer puts one repository under `root/<owner>/<name>`, as `hf download --repo-type dataset
REPO --local-dir root/REPO` would: parquet files at the hub's paths, written by `datasets` with
their features (so `ClassLabel` names, int32/int64 dtypes and nested structs travel in the parquet
metadata as on the hub), a README whose YAML `configs` maps configs and splits to files as the
repository's card does, or, for script repositories, the files of their parquet export
(`refs/convert/parquet`). The loaders read them with `ENCODERLAB_HUB_DATA=root`, through the same
`datasets.load_dataset` call as a hub id. Sources are cited per writer; HS n = read on the
repository's hub card and file tree (n: 1 GLUE, 2 NER, 3 QA, 4 retrieval), EE = EncodEval
`encodeval/datasets.py`
(hgissbkh/EncodEval@7e03774). [U] marks what no source confirmed; docs/evaluation.md lists them.
"""

from __future__ import annotations

import random
from pathlib import Path

import yaml
from datasets import ClassLabel, Dataset, Features, List, Value
from tests.eval.conftest import FILLER, NAMES, NEGATIVE, POSITIVE, TOPICS

STR = Value("string")


def _rng(seed: int) -> random.Random:
    return random.Random(seed)


def filler_sentence(rng: random.Random, n: int = 6) -> str:
    """`n` filler words drawn by `rng`."""
    return " ".join(rng.choice(FILLER) for _ in range(n))


def write_repo(
    root: Path, repo: str, files: dict[str, dict[str, tuple[str, Dataset]]], card: bool = True
) -> Path:
    """Write `{config: {split: (path in repo, dataset)}}` and, with `card`, the README `configs`."""
    folder = Path(root) / repo
    configs = []
    for config, splits in files.items():
        entry = {"config_name": config, "data_files": []}
        for split, (path, ds) in splits.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            ds.to_parquet(folder / path)
            entry["data_files"].append({"split": split, "path": path.rsplit("-00000", 1)[0] + "-*"})
        configs.append(entry)
    if card:
        (folder / "README.md").write_text(
            "---\n" + yaml.safe_dump({"configs": configs}, sort_keys=False) + "---\n"
        )
    return folder


def _sharded(config: str | None, split: str) -> str:
    return f"{config or 'data'}/{split}-00000-of-00001.parquet"


# ----------------------------------------------------------------------------- GLUE


GLUE_LABELS = {
    "sst2": ["negative", "positive"],
    "mnli": ["entailment", "neutral", "contradiction"],
    "qqp": ["not_duplicate", "duplicate"],
}
GLUE_SPLITS = {
    "sst2": ("train", "validation", "test"),
    "mnli": ("train", "validation_matched", "validation_mismatched", "test_matched", "test_mismatched"),
    "qqp": ("train", "validation", "test"),
}
GLUE_TEXT = {"sst2": ("sentence",), "mnli": ("premise", "hypothesis"), "qqp": ("question1", "question2")}


def glue(root: Path, n_train: int = 60, n_eval: int = 8) -> Path:
    """`nyu-mll/glue`, configs sst2 / mnli / qqp (HS 1, [V] card `dataset_info` and parquet tree at
    a3f3ab7): `<config>/<split>-00000-of-00001.parquet`; columns text str, label ClassLabel with the
    card's names, idx int32; MNLI has validation_matched/_mismatched and test_matched/_mismatched
    and no `validation`. Test labels are -1 [U]. SST-2's label is the sentiment word's polarity,
    so a model can learn it; every split's text is tagged with its split to trace leaks."""
    files = {}
    for config, splits in GLUE_SPLITS.items():
        names = GLUE_LABELS[config]
        features = Features(
            {**{c: STR for c in GLUE_TEXT[config]}, "label": ClassLabel(names=names), "idx": Value("int32")}
        )
        files[config] = {}
        for s_i, split in enumerate(splits):
            rng = _rng(100 * s_i + len(config))
            n = n_train if split == "train" else n_eval
            rows = {c: [] for c in (*GLUE_TEXT[config], "label", "idx")}
            for i in range(n):
                label = rng.randrange(len(names))
                word = rng.choice(POSITIVE if label else NEGATIVE)
                texts = [
                    f"{split} {i} {filler_sentence(rng, 4)} {word}",
                    f"{filler_sentence(rng, 3)} {split}",
                ]
                for c, t in zip(GLUE_TEXT[config], texts):
                    rows[c].append(t)
                rows["label"].append(-1 if split.startswith("test") else label)
                rows["idx"].append(i)
            files[config][split] = (_sharded(config, split), Dataset.from_dict(rows, features=features))
    return write_repo(root, "nyu-mll/glue", files)


# ----------------------------------------------------------------------------- NER

CONLL_NAMES = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
UNER_NAMES = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]
ONTONOTES_NAMES = ["O", "B-CARDINAL", "B-DATE", "I-DATE", "B-PERSON", "I-PERSON", "B-NORP", "B-GPE", "I-GPE"]


def ner_rows(seed: int, n: int) -> tuple[list[list[str]], list[list[int]]]:
    """`n` six-word sentences and their tags, a quarter of the words names (tag 1)."""
    rng = _rng(seed)
    tokens, tags = [], []
    for _ in range(n):
        words, ids = [], []
        for _ in range(6):
            if rng.random() < 0.25:
                words.append(rng.choice(NAMES).title())
                ids.append(1)
            else:
                words.append(rng.choice(FILLER))
                ids.append(0)
        tokens.append(words)
        tags.append(ids)
    return tokens, tags


def conll2003_en(root: Path) -> Path:
    """`hgissbkh/conll2003-en` (EE: columns `words`, `ner`, splits train/validation/test). The
    layout `data/<split>-00000-of-00001.parquet` is the sibling `hgissbkh/conll2003`'s (HS 2 [V]) and
    assumed here [U]; `ner` as Sequence(ClassLabel) in the `datasets` CoNLL order (HS 2; [U] for
    this repository)."""
    features = Features({"words": List(STR), "ner": List(ClassLabel(names=CONLL_NAMES))})
    splits = {}
    for i, split in enumerate(("train", "validation", "test")):
        tokens, tags = ner_rows(i, 20 if split == "train" else 6)
        splits[split] = (
            _sharded(None, split),
            Dataset.from_dict({"words": tokens, "ner": tags}, features=features),
        )
    return write_repo(root, "hgissbkh/conll2003-en", {"default": splits})


def uner_en(root: Path) -> Path:
    """`hgissbkh/uner_en`: parquet under `data/` ([V] hub tree, 5 months old); the features of
    `universalner/universal_ner` en_ewt (HS 2 [V]): idx str, text str, tokens Seq[str], ner_tags
    Seq[ClassLabel O,B-PER,I-PER,B-ORG,I-ORG,B-LOC,I-LOC], annotator Seq[str]; EE drops idx/text/
    annotator and renames ner_tags. File names `data/<split>-00000-of-00001.parquet` [V: the hub tree,
    huggingface.co/datasets/hgissbkh/uner_en/tree/main/data at ef579f2 "Upload dataset": test-, train-
    and validation-00000-of-00001.parquet]; the card's features (README.md, 810 bytes) were not seen [U]."""
    features = Features(
        {
            "idx": STR,
            "text": STR,
            "tokens": List(STR),
            "ner_tags": List(ClassLabel(names=UNER_NAMES)),
            "annotator": List(STR),
        }
    )
    splits = {}
    for i, split in enumerate(("train", "validation", "test")):
        tokens, tags = ner_rows(10 + i, 20 if split == "train" else 6)
        rows = {
            "idx": [f"{split}-{k}" for k in range(len(tokens))],
            "text": [" ".join(t) for t in tokens],
            "tokens": tokens,
            "ner_tags": tags,
            "annotator": [["a1"] for _ in tokens],
        }
        splits[split] = (_sharded(None, split), Dataset.from_dict(rows, features=features))
    return write_repo(root, "hgissbkh/uner_en", {"default": splits})


TNER_CARD_ROW = (
    ("``", "It", "'s", "very", "costly", "and", "time", "-", "consuming", ",", "''", "says", "Phil", "Rosen", ",",
     "a", "partner", "in", "Fleet", "&", "Leasing", "Management", "Inc.", ",", "a", "Boston", "car", "-",
     "leasing", "company", "."),
    (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 5, 0, 0, 0, 0, 11, 12, 12, 12, 12, 0, 0, 7, 0, 0, 0, 0, 0),
)  # fmt: skip
"""tner/ontonotes5's one data instance, as its card prints it (tokens and bare tag ids; the card at
huggingface.co/datasets/tner/ontonotes5 README.md @cb73f48, and its copy in
YoungXinyu1802/HuggingFace-Dataset-Card-Analysis@dfb229a `Data/Dataset_Card/tner_ontonotes5.md`, read
2026-12-06): the only row seen whose words say what its ids 4, 5, 7, 11 and 12 name."""


def ontonotes5(
    root: Path, layout: str = "current", tag_kind: str = "classlabel", config: str = "ontonotes5"
) -> Path:
    """`hgissbkh/ontonotes5`, read from its parquet export (`refs/convert/parquet`): EE@7e03774 loads it
    with trust_remote_code, which suggests a dataset script but does not show one (`datasets` ignores the
    flag for data files); other loaders call it without the flag, which `datasets` allows for a script (since
    #6954) only through its parquet export (huggingface/datasets#6448), so it holds data files or an exported
    script [U], and both have the export (the converter's, or links to the parquet files). Written here in
    the current layout `<config>/<split>/0000.parquet` or its 2023 one `<config>/<name>-<split>.parquet` (HS 1 [V] for
    the GLUE export tree; [U] that this repository has an export). The config name
    (`ontonotes5`) [U]. Features: tokens Seq[str], tags Seq[ClassLabel] with tner's label order
    (all 37 [V]: tner's card, `registry.ONTONOTES_TAGS`; 9 of them here). Looked for on 2026-12-06 (search corpora:
    hub pages, code, web pages): no tree, card, viewer or `refs/convert/parquet` page of
    hgissbkh/ontonotes5 is held, only tner/ontonotes5's parquet-converter history on
    `refs/convert/parquet` (2022-12 to 2023-09), so the export, its config name and its layout stay [U].

    `tag_kind="int32"` writes bare ids, as tner/ontonotes5's script declares them (Sequence(int32); its card,
    copied in YoungXinyu1802/HuggingFace-Dataset-Card-Analysis `Data/Dataset_Card/tner_ontonotes5.md`,
    shows `tags` as ids and the 37-entry label2id) and puts `TNER_CARD_ROW` first in train. Which of the two
    hgissbkh/ontonotes5's export holds is
    [U]: third-party code reading it maps ids 0-36 by hand, in tner's order (`search` code corpus,
    2026-12-06), which fits bare ids but does not prove them; the loader reads both.

    `config="default"` writes the export of a repository of data files, whose converter branch holds its
    parquet files as `default/<split>/0000.parquet` (e.g. huggingface.co/datasets/rb-dev/train_data, tree
    `refs/convert/parquet/default/train`, Formats: parquet [V]), the form hgissbkh/ontonotes5's export
    takes if the repository is no script (docs/reproduce.md)."""
    kind = ClassLabel(names=ONTONOTES_NAMES) if tag_kind == "classlabel" else Value("int32")
    features = Features({"tokens": List(STR), "tags": List(kind)})
    folder = Path(root) / "hgissbkh/ontonotes5"
    for i, split in enumerate(("train", "validation", "test")):
        tokens, tags = ner_rows(20 + i, 20 if split == "train" else 6)
        tags = [[4 * t for t in seq] for seq in tags]  # B-PERSON
        if tag_kind == "int32" and split == "train":  # bare ids: the card's own row goes first
            tokens, tags = [list(TNER_CARD_ROW[0]), *tokens], [list(TNER_CARD_ROW[1]), *tags]
        path = folder / (
            f"{config}/{split}/0000.parquet"
            if layout == "current"
            else f"{config}/ontonotes5-{split}.parquet"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        Dataset.from_dict({"tokens": tokens, "tags": tags}, features=features).to_parquet(path)
    return folder


# ----------------------------------------------------------------------------- QA

SQUAD_FEATURES = Features(
    {
        "id": STR,
        "title": STR,
        "context": STR,
        "question": STR,
        "answers": {"text": List(STR), "answer_start": List(Value("int32"))},
    }
)


def _squad_rows(seed: int, n: int, unanswerable: float = 0.0, start_dtype: str = "int32") -> dict:
    rng = _rng(seed)
    rows = {k: [] for k in ("id", "title", "context", "question", "answers")}
    for i in range(n):
        words = [rng.choice(FILLER) for _ in range(rng.randrange(4, 12))]
        answers = {"text": [], "answer_start": []}
        if rng.random() >= unanswerable:
            pos = rng.randrange(len(words) + 1)
            colour = rng.choice(TOPICS)
            words[pos:pos] = ["code", "is", colour]
            answers = {"text": [colour], "answer_start": [len(" ".join(words[: pos + 2])) + 1]}
        rows["id"].append(f"{seed}-{i}")
        rows["title"].append(f"t{i % 3}")
        rows["context"].append(" ".join(words))
        rows["question"].append("what is the code ?")
        rows["answers"].append(answers)
    return rows


def squad(root: Path, v2: bool = False) -> Path:
    """`rajpurkar/squad` (config `plain_text`) and `rajpurkar/squad_v2` (config `squad_v2`):
    id/title/context/question str, answers Sequence{text str, answer_start int32}, i.e. arrow
    struct<text: list<string>, answer_start: list<int32>> (HS 3 [V]); unanswerable v2 questions have
    empty lists [U]; files `<config>/<split>-00000-of-00001.parquet` [U]. Splits train/validation."""
    config, repo = ("squad_v2", "rajpurkar/squad_v2") if v2 else ("plain_text", "rajpurkar/squad")
    splits = {
        split: (
            _sharded(config, split),
            Dataset.from_dict(
                _squad_rows(i, 40 if split == "train" else 8, 0.3 if v2 else 0.0), features=SQUAD_FEATURES
            ),
        )
        for i, split in enumerate(("train", "validation"))
    }
    return write_repo(root, repo, {config: splits})


def record(root: Path, ids: bool = True) -> Path:
    """`hgissbkh/record`: EE loads it with no config and no column edits into its SQuAD pipeline,
    so SQuAD's columns [U, inferred]; `answer_start` as int64 like the sibling `hgissbkh/qed`
    (HS 3 [V]); layout `data/<split>-00000-of-00001.parquet` [U]. Looked for on 2026-12-06 (search
    corpora: hub pages, code, web pages): no tree, card or viewer page of hgissbkh/record is held; the only
    sources are EncodEval's `record()` (`load_dataset("hgissbkh/record")`, test := validation, no column
    edits) and a later copy of that file with the same function, so the columns stay [U, inferred].

    `ids=False` leaves out `id` and `title`: EE's `squad()` and `squad_v2()` drop those two columns
    (`remove_columns(["id", "title"])`) before the same pipeline, its `record()` and `qed()` drop
    nothing, which fits a repository prepared without them as well as one its pipeline tolerates them in
    (EE's QA module is not in the file index, 2026-12-06), so either may be the hub's [U]."""
    kept = ("id", "title", "context", "question") if ids else ("context", "question")
    features = Features(
        {**{k: SQUAD_FEATURES[k] for k in kept},
         "answers": {"text": List(STR), "answer_start": List(Value("int64"))}}
    )  # fmt: skip
    splits = {
        split: (
            _sharded(None, split),
            Dataset.from_dict(
                {
                    k: v
                    for k, v in _squad_rows(30 + i, 40 if split == "train" else 8).items()
                    if k in features
                },
                features=features,
            ),
        )
        for i, split in enumerate(("train", "validation"))
    }
    return write_repo(root, "hgissbkh/record", {"default": splits})


# ----------------------------------------------------------------------------- IR


def msmarco_pairs(root: Path, n: int = 64) -> Path:
    """`hgissbkh/msmarco-pairs`: columns `query`, `positive`, split train (EE [V]); layout
    `data/train-00000-of-00001.parquet` [U]."""
    rng = _rng(7)
    rows = {"query": [], "positive": []}
    for _ in range(n):
        topic = rng.choice(TOPICS)
        rows["query"].append(f"about {topic}")
        rows["positive"].append(f"{filler_sentence(rng, 4)} {topic} {filler_sentence(rng, 3)}")
    data = Dataset.from_dict(rows, features=Features({"query": STR, "positive": STR}))
    return write_repo(root, "hgissbkh/msmarco-pairs", {"default": {"train": (_sharded(None, "train"), data)}})


def _beir_export(
    root: Path,
    repo: str,
    corpus: dict[str, tuple[str, str]],
    queries: dict[str, str],
    shards: int = 1,
) -> Path:
    """A BEIR script repository's parquet export, in the 2023 converter layout both real ones have
    (`<config>/<name>-<split>-0000k-of-0000n.parquet`): configs `corpus` and `queries` whose only split
    has the config's name; `_id`, `title`, `text` str (HS 4 [V] for the BEIR script pattern and
    for BeIR/nq's `corpus/nq-corpus-0000{0,1,2}-of-00003.parquet`; BeIR/msmarco's export tree at
    1aab771 [V] has `corpus/msmarco-corpus-0000N-of-00007.parquet`). The corpus is cut into
    `shards` files in order, so a loader that reads one file only misses documents; queries are
    one file (their shard counts are not verified)."""
    folder = Path(root) / repo
    name = repo.split("/")[-1]
    parts = {
        "corpus": {
            "_id": list(corpus),
            "title": [t for t, _ in corpus.values()],
            "text": [x for _, x in corpus.values()],
        },
        "queries": {"_id": list(queries), "title": [""] * len(queries), "text": list(queries.values())},
    }
    features = Features({"_id": STR, "title": STR, "text": STR})
    for part, rows in parts.items():
        n = shards if part == "corpus" else 1
        data = Dataset.from_dict(rows, features=features)
        for k in range(n):
            path = folder / f"{part}/{name}-{part}-{k:05d}-of-{n:05d}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            data.shard(n, k, contiguous=True).to_parquet(path)
    return folder


def qrels_repo_folder(root: Path, repo: str, splits: dict[str, list[tuple[str, str, int]]]) -> Path:
    """BEIR qrels repositories hold TSV files `train.tsv`, `dev.tsv`, `test.tsv` with columns
    query-id, corpus-id, score (HS 4 [V] tree); `datasets` reads `dev` as the split `validation`."""
    folder = Path(root) / repo
    folder.mkdir(parents=True, exist_ok=True)
    for split, triples in splits.items():
        lines = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t{s}" for q, d, s in triples)]
        (folder / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return folder


def msmarco(root: Path) -> dict:
    """BeIR/msmarco (export, the corpus in 7 files as on the hub) + BeIR/msmarco-qrels: numeric ids (read back as int64),
    dev qrels with grade 1, TREC-DL'19-style graded test qrels (0-3), unjudged distractors. Returns
    the ids the loader must keep."""
    rng = _rng(3)
    corpus = {str(1000 + i): ("", f"{TOPICS[i % len(TOPICS)]} {filler_sentence(rng, 5)}") for i in range(40)}
    queries = {str(i): f"about {TOPICS[i % len(TOPICS)]}" for i in range(12)}
    dev = [(str(q), str(1000 + q), 1) for q in range(6)]
    test = [(str(q), str(1000 + q), 3) for q in range(6, 10)] + [("10", "1010", 0), ("6", "1020", 0)]
    _beir_export(root, "BeIR/msmarco", corpus, queries, shards=7)
    qrels_repo_folder(root, "BeIR/msmarco-qrels", {"train": [("11", "1011", 1)], "dev": dev, "test": test})
    return {"dev": dev, "test": test}


def nq(root: Path) -> dict:
    """BeIR/nq (export, the corpus in 3 files as on the hub) + BeIR/nq-qrels (only `test.tsv`,
    HS 4 [V]); ids like `test0` / `doc0`; documents have titles (EE renders `{title}. {text}`)."""
    rng = _rng(4)
    corpus = {
        f"doc{i}": (f"Title {i}", f"{TOPICS[i % len(TOPICS)]} {filler_sentence(rng, 5)}") for i in range(30)
    }
    queries = {f"test{i}": f"about {TOPICS[i % len(TOPICS)]}" for i in range(10)}
    test = [(f"test{i}", f"doc{i}", 1) for i in range(10)] + [("test0", "doc20", 1)]
    _beir_export(root, "BeIR/nq", corpus, queries, shards=3)
    qrels_repo_folder(root, "BeIR/nq-qrels", {"test": test})
    return {"test": test}


def mldr_en(root: Path) -> dict:
    """`hgissbkh/mldr-en`: config `default` with splits dev/test, config `corpus` with split
    `corpus` (EE [V]); the schema of `Shitao/MLDR` (HS 4 [V]): query_id, query str;
    positive_passages / negative_passages lists of {docid, text} (negatives empty in dev/test);
    corpus docid, text str. Parquet files and card configs [U]."""
    passages = List({"docid": STR, "text": STR})
    features = Features(
        {"query_id": STR, "query": STR, "positive_passages": passages, "negative_passages": passages}
    )
    docs = {f"d{i}": f"{TOPICS[i % len(TOPICS)]} long document {i}" for i in range(12)}
    splits, qrels = {}, {}
    for k, split in enumerate(("dev", "test")):
        ids = range(4 * k, 4 * k + 4)
        rows = {
            "query_id": [f"{split}-q{i}" for i in ids],
            "query": [f"about {TOPICS[i % len(TOPICS)]}" for i in ids],
            "positive_passages": [[{"docid": f"d{i}", "text": docs[f"d{i}"]}] for i in ids],
            "negative_passages": [[] for _ in ids],
        }
        splits[split] = (_sharded(None, split), Dataset.from_dict(rows, features=features))
        qrels[split] = [(f"{split}-q{i}", f"d{i}") for i in ids]
    corpus = Dataset.from_dict(
        {"docid": list(docs), "text": list(docs.values())}, features=Features({"docid": STR, "text": STR})
    )
    write_repo(
        root,
        "hgissbkh/mldr-en",
        {"default": splits, "corpus": {"corpus": ("corpus/corpus-00000-of-00001.parquet", corpus)}},
    )
    return qrels


PAPER_IR = ("paper-msmarco", "paper-nq", "paper-mldr")


def use_paper_ir(tmp: Path, monkeypatch, finetune) -> None:
    """Paper 1's three IR tasks read from a simulated hub under `tmp` (`datasets`' cache kept there),
    all three at the fine-tuning schedule `finetune` (so they still share one run)."""
    import dataclasses

    import datasets

    from encoderlab.eval.tasks import TASKS

    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp / "hub"))
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp / "home"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp / "hf-cache"))
    for write in (msmarco_pairs, msmarco, nq, mldr_en):
        write(tmp / "hub")
    for name in PAPER_IR:
        monkeypatch.setitem(TASKS, name, dataclasses.replace(TASKS[name], finetune=finetune))
