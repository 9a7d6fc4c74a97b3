"""The simulated hub's BigBio repositories (paper 2's English tasks): each script repository's parquet
export, in the layouts of BigBio's loaders (cited per writer; hub_fixtures.py explains the simulated hub
and its conventions, [U] marks what no source confirmed)."""

from __future__ import annotations

import random
from pathlib import Path

from datasets import ClassLabel, Dataset, Features, List, Sequence, Value
from tests.eval.conftest import NEGATIVE, POSITIVE
from tests.eval.hub_fixtures import STR, filler_sentence, ner_rows

from encoderlab.eval.tasks.biomed import HOC_HALLMARKS


def _export(root: Path, repo: str, config: str, splits: dict[str, Dataset]) -> Path:
    """A BigBio script repository's parquet export, current converter layout
    `<config>/<split>/0000.parquet` (the BigBio loaders are scripts that `datasets` >= 4 refuses,
    bigscience-workshop/biomedical's bigbio loaders; that a parquet export exists is unverified)."""
    folder = Path(root) / repo
    for split, ds in splits.items():
        path = folder / config / split / "0000.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        ds.to_parquet(path)
    return folder


def blurb_sentences(split: str) -> tuple[list[list[str]], list[list[int]]]:
    """The sentences (words, tag ids) that `blurb` writes for `split` (every config), without document markers."""
    return ner_rows(40 + ("train", "validation", "test").index(split), 30 if split == "train" else 8)


def _docstarts(tokens: list, tags: list) -> tuple[list, list]:
    """The sentences with a one-word `-DOCSTART-` example tagged O before each abstract (the first
    sentence, then every 3rd or 4th), as blurb.py yields BLURB's JNLPBA files: each begins with a
    `-DOCSTART-\tO` line and holds one per abstract, a blank line after it (MTL-Bioinformatics-2016@df0df02
    `data/JNLPBA/devel.tsv`, `test.tsv`: 200 and 404 markers; blurb.py's `_load_iob` yields every block)."""
    out_tokens, out_tags = [], []
    for k, (words, ids) in enumerate(zip(tokens, tags, strict=True)):
        if k % 7 in (0, 3):
            out_tokens.append(["-DOCSTART-"])
            out_tags.append([0])
        out_tokens.append(words)
        out_tags.append(ids)
    return out_tokens, out_tags


def blurb(root: Path, config: str = "jnlpba") -> Path:
    """`bigbio/blurb` NER configs (bc5chem, bc5disease, bc2gm, jnlpba, ncbi_disease): id str,
    tokens Seq[str], type str, ner_tags Seq[ClassLabel O, B, I] (the bigbio loader,
    BigBio blurb.py; splits train/validation/test). jnlpba's splits hold BLURB's `-DOCSTART-` examples
    (`_docstarts`); the other configs' files have none (MTL-Bioinformatics-2016@df0df02)."""
    features = Features(
        {"id": STR, "tokens": List(STR), "type": STR, "ner_tags": List(ClassLabel(names=["O", "B", "I"]))}
    )
    splits = {}
    for split in ("train", "validation", "test"):
        tokens, tags = blurb_sentences(split)
        if config == "jnlpba":
            tokens, tags = _docstarts(tokens, tags)
        rows = {
            "id": [f"{split}{k}" for k in range(len(tokens))],
            "tokens": tokens,
            "type": ["Chemical"] * len(tokens),
            "ner_tags": tags,
        }
        splits[split] = Dataset.from_dict(rows, features=features)
    return _export(root, "bigbio/blurb", config, splits)


def gad(root: Path) -> Path:
    """`bigbio/gad` config `gad_blurb_bigbio_text` (train/validation/test): the bigbio_text schema
    id, document_id, text str, labels Seq[str] (the bigbio loader); label values "0" /
    "1" and the @GENE$/@DISEASE$ masks as in BLURB's GAD [U]. The label is whether a positive word
    is in the sentence, so a model can learn it."""
    features = Features({"id": STR, "document_id": STR, "text": STR, "labels": List(STR)})
    splits = {}
    for i, split in enumerate(("train", "validation", "test")):
        rng = random.Random(50 + i)
        n = 48 if split == "train" else 12
        labels = [rng.randrange(2) for _ in range(n)]
        texts = [
            f"@GENE$ {filler_sentence(rng, 3)} {rng.choice(POSITIVE if y else NEGATIVE)} @DISEASE$ {split} {k}"
            for k, y in enumerate(labels)
        ]
        rows = {
            "id": [f"{split}{k}" for k in range(n)],
            "document_id": [f"d{k}" for k in range(n)],
            "text": texts,
            "labels": [[str(y)] for y in labels],
        }
        splits[split] = Dataset.from_dict(rows, features=features)
    return _export(root, "bigbio/gad", "gad_blurb_bigbio_text", splits)


HOC_NAMES = [*HOC_HALLMARKS[:7], "none", *HOC_HALLMARKS[7:]]
"""BigBio's 11 classes: BCM's order, "none" at index 7 (its `HOC.class_names`)."""


def hoc(root: Path) -> Path:
    """`bigbio/hallmarks_of_cancer` config `hallmarks_of_cancer_source`: document_id, text str,
    label a list of the 11 classes with "none" (the bigbio loader); stored as
    Seq[ClassLabel] in BCM's class order (its `HOC.class_names`, `qanastek/HoC`) [U for BigBio's
    dtype and order]."""
    features = Features({"document_id": STR, "text": STR, "label": List(ClassLabel(names=HOC_NAMES))})
    splits = {}
    for i, split in enumerate(("train", "validation", "test")):
        rng = random.Random(60 + i)
        rows = {"document_id": [], "text": [], "label": []}
        for k in range(24 if split == "train" else 8):
            labels = sorted(rng.sample([0, 1, 4, 8], rng.randrange(0, 3))) or [7]
            rows["document_id"].append(f"{split}{k}")
            rows["text"].append(f"{split} {k} " + " ".join(HOC_NAMES[x].split()[0] for x in labels))
            rows["label"].append(labels)
        splits[split] = Dataset.from_dict(rows, features=features)
    return _export(root, "bigbio/hallmarks_of_cancer", "hallmarks_of_cancer_source", splits)


ANATEM_TYPES = ["Organ", "Cell", "Tissue"]  # 3 of AnatEM's 12 types


def anatem(root: Path, offsets_shift: int = 0) -> Path:
    """`bigbio/anat_em` config `anat_em_source` (train/validation/test): document_id, document_type
    ("PM"/"PMC"), text, text_type, entities: a list of {entity_id, type, offsets: list of [start, end],
    text: one string per fragment} (BigBio anat_em.py `_info` and `_to_source_example` [V]). Each
    document holds two sentences; the organ mention follows "the", so a model can learn it.
    `offsets_shift` moves every offset (a layout whose offsets do not match the text)."""
    entity = {"entity_id": STR, "type": STR, "offsets": List(List(Value("int32"))), "text": List(STR)}
    features = Features(
        {"document_id": STR, "document_type": STR, "text": STR, "text_type": STR, "entities": List(entity)}
    )
    splits = {}
    for i, split in enumerate(("train", "validation", "test")):
        rng, rows = random.Random(70 + i), {k: [] for k in features}
        for k in range(24 if split == "train" else 6):
            organ, cell = (
                rng.choice(["left ventricle", "liver", "renal cortex"]),
                rng.choice(["neurons", "cells"]),
            )
            text = (
                f"{filler_sentence(rng, 3).capitalize()} the {organ} grew. Many {cell} of {split} {k} died."
            )
            mentions = [(organ, "Organ"), (cell, "Cell")]
            found = [(text.index(f" {m} ") + 1, t) for m, t in mentions]
            rows["entities"].append(
                [
                    {"entity_id": f"{split}{k}_T{j}", "type": t, "text": [m]}
                    | {"offsets": [[s + offsets_shift, s + len(m) + offsets_shift]]}
                    for j, ((m, _), (s, t)) in enumerate(zip(mentions, found))
                ]
            )
            rows["document_id"].append(f"PMID-{split}{k}")
            rows["document_type"].append("PM")
            rows["text"].append(text)
            rows["text_type"].append("abstract")
        splits[split] = Dataset.from_dict(rows, features=features)
    return _export(root, "bigbio/anat_em", "anat_em_source", splits)


def chemprot(root: Path, offsets_shift: int = 0) -> Path:
    """`bigbio/chemprot` config `chemprot_shared_task_eval_source`: pmid, text (title, a line break, the
    abstract), entities Sequence({id, type CHEMICAL/GENE-Y/GENE-N, text, offsets [start, end] int64}),
    relations Sequence({type CPR:N, arg1, arg2}) of the evaluated groups (BigBio chemprot.py [V]).
    The relation is CPR:4 when "inhibits" joins the pair, else none."""
    mention = {"id": STR, "type": STR, "text": STR, "offsets": Sequence(Value("int64"))}
    relation = {"type": STR, "arg1": STR, "arg2": STR}
    features = Features(
        {"pmid": STR, "text": STR, "entities": Sequence(mention), "relations": Sequence(relation)}
    )
    splits = {}
    for i, split in enumerate(("train", "validation", "test")):
        rng, rows = random.Random(80 + i), {k: [] for k in features}
        for k in range(32 if split == "train" else 8):
            verb = rng.choice(["inhibits", "meets"])
            text = f"Study {split} {k}\nAspirin {verb} COX2 here. Then caffeine was seen."
            found = [("T1", "CHEMICAL", "Aspirin"), ("T2", "GENE-Y", "COX2"), ("T3", "CHEMICAL", "caffeine")]
            spans = [(e, t, m, text.index(m) + offsets_shift) for e, t, m in found]
            # `Sequence` of a struct holds a dict of lists (datasets' rule for BigBio's features)
            rows["entities"].append(
                {
                    "id": [e for e, _, _, _ in spans],
                    "type": [t for _, t, _, _ in spans],
                    "text": [m for _, _, m, _ in spans],
                    "offsets": [[s, s + len(m)] for _, _, m, s in spans],
                }
            )
            gold = verb == "inhibits"
            rows["relations"].append({"type": ["CPR:4"] * gold, "arg1": ["T1"] * gold, "arg2": ["T2"] * gold})
            rows["pmid"].append(f"{split}{k}")
            rows["text"].append(text)
        splits[split] = Dataset.from_dict(rows, features=features)
    return _export(root, "bigbio/chemprot", "chemprot_shared_task_eval_source", splits)


def bc5cdr(root: Path, offsets_shift: int = 0) -> Path:
    """`bigbio/bc5cdr` config `bc5cdr_source` (splits train/test/validation): passages, a list of
    {document_id, type "title"/"abstract", text, entities: a list of {id, offsets: list of [start, end]
    int32, text: one string per fragment, type "Chemical"/"Disease", normalized: a list of {db_name,
    db_id}}, relations: a list of {id, type "CID", arg1_id, arg2_id} (MeSH ids)}; mention offsets count
    in the document, the abstract starting one character after the title (BigBio bc5cdr.py `_info`,
    `_generate_examples`, `_get_document_text` [V]). The chemical follows "given", the disease
    "developed", so a model can learn both. `offsets_shift` moves every offset."""
    normalized = {"db_name": STR, "db_id": STR}
    entity = {"id": STR, "offsets": List(List(Value("int32"))), "text": List(STR), "type": STR}
    relation = {"id": STR, "type": STR, "arg1_id": STR, "arg2_id": STR}
    passage = {
        "document_id": STR,
        "type": STR,
        "text": STR,
        "entities": List({**entity, "normalized": List(normalized)}),
        "relations": List(relation),
    }
    features = Features({"passages": List(passage)})
    splits = {}
    for i, split in enumerate(("train", "test", "validation")):
        rng, docs = random.Random(90 + i), []
        for k in range(24 if split == "train" else 6):
            chem, disease = rng.choice(["lithium", "cocaine"]), rng.choice(["renal failure", "seizures"])
            title = f"Study {split} {k} of {chem}."
            abstract = (
                f"{filler_sentence(rng, 3).capitalize()} rats given {chem} developed {disease}. All lived."
            )
            doc = f"{title} {abstract}"
            mentions = [("Chemical", chem, "D1", title.index(chem)), ("Chemical", chem, "D1", doc.index(f"n {chem}") + 2),
                        ("Disease", disease, "D2", doc.index(disease))]  # fmt: skip
            ents = [
                {
                    "id": str(j),
                    "offsets": [[s + offsets_shift, s + len(m) + offsets_shift]],
                    "text": [m],
                    "type": t,
                }
                | {"normalized": [{"db_name": "MESH", "db_id": mesh}]}
                for j, (t, m, mesh, s) in enumerate(mentions)
            ]
            rels = [{"id": "R0", "type": "CID", "arg1_id": "D1", "arg2_id": "D2"}]
            docs.append(
                [
                    {"document_id": f"{split}{k}", "type": "title", "text": title, "entities": ents[:1]}
                    | {"relations": rels},
                    {"document_id": f"{split}{k}", "type": "abstract", "text": abstract, "entities": ents[1:]}
                    | {"relations": rels},
                ]
            )
        splits[split] = Dataset.from_dict({"passages": docs}, features=features)
    return _export(root, "bigbio/bc5cdr", "bc5cdr_source", splits)
