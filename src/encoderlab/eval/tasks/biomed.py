"""Paper 2's English biomedical tasks that exist on the hub, with paper 2's protocol (`biomed` suite).

Paper 2 evaluates English models with the BioClinical-ModernBERT protocol (BCM,
lindvalllab/BioClinical-ModernBERT@fb40fb6, its fine-tuning scripts; the tasks' schemas are
bigscience-workshop/biomedical's bigbio loaders):
lr 5e-5, weight decay 0.01, batch 16, 10 epochs (20 for NER), seeds 42-46, validation after every
epoch and the best epoch's weights tested (`load_best_model_at_end`), otherwise Hugging Face
Trainer's defaults (AdamW betas 0.9/0.999, eps 1e-8, no warmup, linear decay, clipping at 1.0).
Of its 11 tasks, these are on the hub with a known schema, all from BigBio:
  * NER from BLURB (`bigbio/blurb`, configs jnlpba, ncbi_disease: tokens and ner_tags
    ClassLabel[O, B, I]), without the `-DOCSTART-` document markers of JNLPBA's files;
  * BC5CDR as one task with its two entity types, as paper 2 counts it (one column, one score in its
    English table) and its authors' model card names it (`bigbio/bc5cdr`: model-index of
    almanach/ModernBERT-bio-base/-large); BCM's code has no BC5CDR. Read from `bigbio/bc5cdr`, config
    bc5cdr_source (BigBio bc5cdr.py: a document's passages, title then abstract, each with its
    Chemical/Disease mentions at document offsets), tagged O/B-/I-Chemical/Disease per word, one
    example per sentence (`bio_sentences`), scored by seqeval's micro F1 over both types, as BCM
    scores a NER task with several types (DEID, COS). Its sentence split is ours [U: paper 2's];
  * AnatEM (`bigbio/anat_em`, config anat_em_source: brat documents, PubMed abstracts and PMC
    sections, with character-offset mentions of 12 anatomical types; BigBio anat_em.py). We turn
    each into word-level O/B/I tags of one type, one example per sentence (`bio_sentences`), as the
    usual AnatEM NER benchmark does (one "Anatomy" type); how paper 2 read AnatEM is not stated [U];
  * GAD (`bigbio/gad`, config gad_blurb_bigbio_text: text, labels ["0"] or ["1"]);
  * HoC (`bigbio/hallmarks_of_cancer`, config hallmarks_of_cancer_source: text, a list of the 11
    hallmark names with "none"; a row is a sentence), multi-label over the 10 hallmarks as BCM builds
    it from `qanastek/HoC`, whose rows are sentences too: one example per row (a row labelled "none"
    has no label).
  * ChemProt (`bigbio/chemprot`, config chemprot_shared_task_eval_source: abstracts with chemical and
    gene mentions and the gold relations of the 5 evaluated groups). BCM reads BLUE's TSV files; we
    build the same examples from the abstracts as BLUE's converter does (`chemprot_pairs`): every
    chemical-gene pair within a sentence, masked as @CHEMICAL$ / @GENE$, labelled CPR:3-9 or "false".
    Our sentence split is `sentence_starts`, not BLUE's tokenizer, so a few sentences may differ.
Not here: the clinical tasks (Phenotype, COS, Social History, DEID), which are not on the hub.

The BigBio repositories are dataset scripts, which `datasets` >= 4 refuses and which we would not
run unasked: they are read from their parquet export (`refs/convert/parquet`).
As BCM: NER words are handed to the tokenizer pre-split and scored by seqeval's default-mode F1
(`conlleval_f1`), classification uses ModernBERT's own head and picks its best epoch by weighted F1
(registry). Differences from BCM, stated: BCM's max length is the tokenizer's maximum (512 when that is
over 10,000); ours is 0.99 x the model's maximum positions. BCM trains in fp32 with TF32 products
(`torch.set_float32_matmul_precision('high')`, no `bf16` in its TrainingArguments); ours runs under bf16
autocast on CUDA, as every suite (docs/evaluation.md, *biomed*).
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from dataclasses import replace

from encoderlab.errors import UserError
from encoderlab.eval.spec import TaskData
from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hublayout import class_names, require_columns, require_splits
from encoderlab.eval.tasks.hubsource import HubSource, parquet_export
from encoderlab.eval.tasks.paper import load_ner, rows, struct_list
from encoderlab.eval.tasks.splits import label_index, require_nonempty

SPLITS = ("train", "validation", "test")
BLURB_NER = {
    "jnlpba": "JNLPBA",
    "ncbi_disease": "NCBI-Disease",
}
BLURB_DATA_VERSIONS = {"jnlpba": "2", "ncbi_disease": "1"}
"""Each BLURB NER task's `data_version`: jnlpba's 2 reads its files without the `-DOCSTART-` examples
(`load_blurb_ner`); ncbi_disease's files hold none, so its examples and version did not change."""
GAD_LABELS = ("0", "1")
HOC_HALLMARKS = (
    "evading growth suppressors",
    "tumor promoting inflammation",
    "enabling replicative immortality",
    "cellular energetics",
    "resisting cell death",
    "activating invasion and metastasis",
    "genomic instability and mutation",
    "inducing angiogenesis",
    "sustaining proliferative signaling",
    "avoiding immune destruction",
)
"""BCM's HoC classes without "none" (its `HOC.class_names` minus index 7), in BCM's order."""


def bigbio(repo: str, config: str) -> HubSource:
    """A BigBio script repository's config, from its parquet export."""
    return parquet_export(repo, config, SPLITS)


DOCSTART = "-DOCSTART-"
"""CoNLL's document marker: BLURB's JNLPBA files hold one such line per abstract (cambridgeltl/MTL-Bioinformatics-2016
@df0df02 `data/JNLPBA/*.tsv`), which BigBio blurb.py yields as a one-word example tagged O."""


def load_blurb_ner(task: str, config: str) -> TaskData:
    """A BLURB NER config: its own train/validation/test, tags O/B/I from the ClassLabel, without the
    `-DOCSTART-` document markers: as CoNLL readers drop them (the files' own reader, MTL-Bioinformatics-2016
    `models/ltlib/conlldata.py`, reads one as a document break; Hugging Face's conll2003.py skips it)."""
    data = load_ner(task, bigbio("bigbio/blurb", config), "tokens", "ner_tags", fallback=("O", "B", "I"))

    def sentences(examples: list[dict]) -> list[dict]:
        return [e for e in examples if e["tokens"] != [DOCSTART]]

    kept = {name: sentences(examples) for name, examples in data.tests.items()}
    return require_nonempty(
        task, replace(data, train=sentences(data.train), val=sentences(data.val), tests=kept)
    )


def load_gad(task: str) -> TaskData:
    """GAD (BLURB's split): a sentence with a gene and a disease masked, does it state an
    association? The bigbio_text schema's `labels` list holds one label."""
    source = bigbio(REPOS["gad"], "gad_blurb_bigbio_text")
    ds = load_hub(source)
    require_columns(task, ds["train"], ("text", "labels"), source)

    def examples(split):
        out = []
        for r in rows(ds[split], ("text", "labels")):
            if len(r["labels"]) != 1:
                raise UserError(f"task {task}: a GAD example has {len(r['labels'])} labels, expected one")
            out.append({"text": r["text"], "label": label_index(task, GAD_LABELS, str(r["labels"][0]))})
        return out

    return require_nonempty(
        task, TaskData(examples("train"), examples("validation"), {"test": examples("test")})
    )


def load_hoc(task: str) -> TaskData:
    """HoC: a sentence of an abstract (a row of BigBio's source schema, split by BLURB's PMIDs) and the set
    of cancer hallmarks it discusses ("none" = the empty set)."""
    source = bigbio(REPOS["hoc"], "hallmarks_of_cancer_source")
    ds = load_hub(source)
    require_columns(task, ds["train"], ("text", "label"), source)
    names = class_names(ds["train"], "label")

    def hallmark(value) -> str:
        return names[value] if names is not None and isinstance(value, int) else str(value)

    def examples(split):
        out = []
        for r in rows(ds[split], ("text", "label")):
            found = {hallmark(v) for v in r["label"]} - {"none"}
            out.append(
                {"text": r["text"], "labels": sorted(label_index(task, HOC_HALLMARKS, h) for h in found)}
            )
        return out

    return require_nonempty(
        task, TaskData(examples("train"), examples("validation"), {"test": examples("test")})
    )


ANATEM = "bigbio/anat_em"
NER_TAGS = ("O", "B", "I")
_WORD = re.compile(r"\w+|[^\w\s]")
_SENTENCE_GAP = re.compile(r"(?<=[.?!])\s+(?=\S)")
"""A word is a run of letters and digits, or one other non-space character (AnatEM's IOB release splits
punctuation off words the same way)."""


def load_anatem(task: str) -> TaskData:
    """AnatEM: anatomical entity mentions, converted from brat offsets to sentence-level O/B/I tags."""
    source = bigbio(ANATEM, "anat_em_source")
    ds = load_hub(source)
    require_splits(task, ds, SPLITS, source)
    require_columns(task, ds["train"], ("text", "entities"), source)

    def examples(split):
        out = []
        for r in rows(ds[split], ("text", "entities")):
            spans = []
            for entity in struct_list(r["entities"]):
                for (start, end), words in zip(entity["offsets"], entity["text"], strict=True):
                    if r["text"][start:end] != words:
                        raise UserError(
                            f"task {task}: an entity of {source.describe()} reads {words!r} but its offsets "
                            f"{start}-{end} hold {r['text'][start:end]!r}; the dataset's layout changed"
                        )
                    spans.append((start, end))
            out += bio_sentences(r["text"], spans)
        return out

    data = TaskData(examples("train"), examples("validation"), {"test": examples("test")}, labels=NER_TAGS)
    return require_nonempty(task, data)


def sentence_starts(text: str, keep: list[tuple[int, int]] = ()) -> list[int]:
    """Where the sentences of `text` after the first begin: at a capital letter that follows `.`, `?`
    or `!` and white space, unless the gap lies inside a `keep` span (a mention) or follows "i.v."
    (BLUE's `merge_sentences` rule, ncbi-nlp/BLUE_Benchmark blue/bert/create_chemprot_bert.py)."""
    starts = []
    for m in _SENTENCE_GAP.finditer(text):
        at = m.end()
        inside = any(start < at and m.start() < end for start, end in keep)
        if text[at].isupper() and not inside and not text.endswith("i.v.", 0, m.start()):
            starts.append(at)
    return starts


def bio_sentences(text: str, spans: list[tuple[int, int]], kinds: list[int] | None = None) -> list[dict]:
    """`text` as sentences (`sentence_starts`) of words with O/B/I tag ids from character `spans`
    [start, end): O is 0; a span of kind k (`kinds`, parallel to `spans`; all 0 when None) tags B as
    1 + 2k and I as 2 + 2k (labels O, B-type0, I-type0, B-type1, ...).

    A word is tagged when it overlaps a span, B on the span's first word. A span overlapping one
    already tagged (a nested mention) is dropped: the outer, earlier one is kept. Each fragment of a
    discontinuous mention is a span of its own."""
    words = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]
    tags = [0] * len(words)
    typed = zip(spans, kinds if kinds is not None else [0] * len(spans), strict=True)
    for (start, end), kind in sorted(typed, key=lambda span: (span[0][0], -span[0][1])):
        inside = [i for i, (s, e, _) in enumerate(words) if s < end and e > start]
        if not inside or any(tags[i] for i in inside):
            continue
        tags[inside[0]] = 1 + 2 * kind
        for i in inside[1:]:
            tags[i] = 2 + 2 * kind
    starts = set(sentence_starts(text, spans))
    cuts = [0, *(i for i, (s, _, _) in enumerate(words) if s in starts), len(words)]
    return [
        {"tokens": [w for _, _, w in words[a:b]], "tags": tags[a:b]} for a, b in zip(cuts, cuts[1:]) if b > a
    ]


BC5CDR = "bigbio/bc5cdr"
BC5CDR_TYPES = ("Chemical", "Disease")
BC5CDR_TAGS = ("O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease")
"""BC5CDR's tags: O, then B/I of each entity type in `BC5CDR_TYPES` order (`bio_sentences`' ids)."""


def load_bc5cdr(task: str) -> TaskData:
    """BC5CDR's chemical and disease mentions as one NER task, sentence-level typed O/B/I tags."""
    source = bigbio(BC5CDR, "bc5cdr_source")
    ds = load_hub(source)
    require_splits(task, ds, SPLITS, source)
    require_columns(task, ds["train"], ("passages",), source)

    def examples(split):
        out = []
        for r in rows(ds[split], ("passages",)):
            passages = struct_list(r["passages"])
            # BigBio's document text: the passages joined by one space, as its mention offsets count
            # (bc5cdr.py `_get_document_text` pads each passage to its BioC offset, title length + 1)
            text = " ".join(p["text"] for p in passages)
            spans, kinds = [], []
            for entity in (e for p in passages for e in struct_list(p["entities"])):
                kind = label_index(task, BC5CDR_TYPES, entity["type"])
                for (start, end), words in zip(entity["offsets"], entity["text"], strict=True):
                    if text[start:end] != words:
                        raise UserError(
                            f"task {task}: a mention of {source.describe()} reads {words!r} but its offsets "
                            f"{start}-{end} hold {text[start:end]!r}; the dataset's layout changed"
                        )
                    spans.append((start, end))
                    kinds.append(kind)
            out += bio_sentences(text, spans, kinds)
        return out

    data = TaskData(examples("train"), examples("validation"), {"test": examples("test")}, labels=BC5CDR_TAGS)
    return require_nonempty(task, data)


CHEMPROT = "bigbio/chemprot"
REPOS = {
    "anatem": ANATEM,
    "bc5cdr": BC5CDR,
    "chemprot": CHEMPROT,
    "gad": "bigbio/gad",
    "hoc": "bigbio/hallmarks_of_cancer",
}
"""The BigBio repository each non-BLURB task reads (its parquet export; `Task.hub_repos`)."""
CHEMPROT_LABELS = ("CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "false")
"""BLUE's ChemProt labels in BCM's order (`class_encode_column`: sorted)."""
_GENES = ("GENE-Y", "GENE-N")


def load_chemprot(task: str) -> TaskData:
    """ChemProt as BLUE's sentence-level relation classification, built from BigBio's abstracts."""
    source = bigbio(CHEMPROT, "chemprot_shared_task_eval_source")
    ds = load_hub(source)
    require_splits(task, ds, SPLITS, source)
    columns = ("text", "entities", "relations")
    require_columns(task, ds["train"], columns, source)

    def examples(split):
        out = []
        for r in rows(ds[split], columns):
            mentions = struct_list(r["entities"])
            for m in mentions:
                start, end = m["offsets"]
                if r["text"][start:end] != m["text"]:
                    raise UserError(
                        f"task {task}: a mention of {source.describe()} reads {m['text']!r} but its offsets "
                        f"{start}-{end} hold {r['text'][start:end]!r}; the dataset's layout changed"
                    )
            pairs = chemprot_pairs(r["text"], mentions, struct_list(r["relations"]))
            out += [{"text": t, "label": label_index(task, CHEMPROT_LABELS, y)} for t, y in pairs]
        return out

    return require_nonempty(
        task, TaskData(examples("train"), examples("validation"), {"test": examples("test")})
    )


def chemprot_pairs(text: str, mentions: list[dict], relations: list[dict]) -> list[tuple[str, str]]:
    """BLUE's ChemProt examples of one abstract (`convert` in create_chemprot_bert.py): for every
    chemical-gene pair inside one sentence, the sentence with the chemical as @CHEMICAL$ and the gene
    as @GENE$ (both as one @CHEM-GENE$ when they overlap or touch), once per gold relation of the pair
    (chemical as Arg1), or once labelled "false". The title's line break reads as a space, as BLUE
    joins title and abstract."""
    labels = defaultdict(list)
    for rel in relations:
        labels[rel["arg1"], rel["arg2"]].append(rel["type"])
    spans = [(m["offsets"][0], m["offsets"][1]) for m in mentions]
    bounds = [0, *sentence_starts(text, spans), len(text)]
    out = []
    for lo, hi in zip(bounds, bounds[1:]):
        inside = [m for m in mentions if lo <= m["offsets"][0] and m["offsets"][1] <= hi]
        chemicals = [m for m in inside if m["type"].upper() == "CHEMICAL"]
        genes = [m for m in inside if m["type"].upper() in _GENES]
        for chem, gene in itertools.product(chemicals, genes):
            masked = _mask_pair(text, lo, hi, chem["offsets"], gene["offsets"]).strip().replace("\n", " ")
            out += [(masked, y) for y in labels.get((chem["id"], gene["id"]), ["false"])]
    return out


def _mask_pair(text: str, lo: int, hi: int, chem: list[int], gene: list[int]) -> str:
    (cs, ce), (gs, ge) = chem, gene
    if cs <= gs <= ce or cs <= ge <= ce or gs <= cs <= ge or gs <= ce <= ge:  # BLUE's overlap test
        return text[lo : min(cs, gs)] + "@CHEM-GENE$" + text[max(ce, ge) : hi]
    (a, a_end, a_tag), (b, b_end, b_tag) = sorted([(cs, ce, "@CHEMICAL$"), (gs, ge, "@GENE$")])
    return text[lo:a] + a_tag + text[a_end:b] + b_tag + text[b_end:hi]
