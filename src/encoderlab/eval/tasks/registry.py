"""The task registry: every built-in task with its options, schedule and loader (declarative tables).

`TASKS` maps a name to its `Task`; `get_task` looks one up with a one-line error listing the valid
names; `load_task` calls the loader and fills in a label set read from the data. Schedules: the
pocket suite is sized for CPUs (docs/evaluation.md), the paper suite follows EncodEval's configs.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from encoderlab.errors import UserError, did_you_mean
from encoderlab.eval.spec import (
    FinetuneConfig,
    HubRepo,
    IROptions,
    PairSCOptions,
    QAOptions,
    SCOptions,
    Task,
    TaskData,
    TCOptions,
)
from encoderlab.eval.tasks import biomed, domain, paper, pocket
from encoderlab.eval.tasks.hubsource import PARQUET_EXPORT, HubSource, parquet_export

POCKET_SC = FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=150)
POCKET_TC = FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=None, epochs=1.0)
POCKET_QA = FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=200)
POCKET_IR = FinetuneConfig(batch_size=32, micro_batch_size=32, max_steps=100)
PAPER_SC = PAPER_QA = PAPER_IR = PAPER_ONTONOTES = FinetuneConfig(
    batch_size=32, micro_batch_size=8, max_steps=1000, weights="bf16"
)
"""EncodEval's `max_steps: 1000` (its SC, QA and IR configs, and OntoNotes' among the TC ones), on
bf16 weights as EncodEval casts the model."""
PAPER_TC = FinetuneConfig(batch_size=32, micro_batch_size=8, max_steps=None, epochs=1.0, weights="bf16")
"""EncodEval's `max_steps: -1`, one epoch: its CoNLL-2003 and UNER configs only."""

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

VITAMINC = ("true", "false", "neither")
BOOLQ = ("false", "true")
TWEETS = ("negative", "neutral", "positive")
PUBMEDQA = ("yes", "no", "maybe")


def _pocket_tasks() -> list[Task]:
    s = POCKET_SIZES
    sc = partial(Task, metric="accuracy", finetune=POCKET_SC, max_length=128)
    ir = partial(Task, options=IROptions(), metric="ndcg@10", finetune=POCKET_IR, max_length=128)
    return [
        sc(
            name="vitaminc",
            description="VitaminC fact verification (evidence, claim) -> true/false/neither; split by evidence page",
            options=PairSCOptions(labels=VITAMINC, template="Premise: {a}\nHypothesis: {b}"),
            loader=lambda: pocket._sc(
                "vitaminc",
                "vitaminc",
                VITAMINC,
                lambda r: (r["text"], r["meta"]["claim"]),
                lambda r: r["text"].split(":")[0],
                s["vitaminc"],
            ),
        ),
        sc(
            name="boolq",
            description="BoolQ (question, passage) -> yes/no; test = the official dev split",
            options=PairSCOptions(labels=BOOLQ, template="Question: {a}\nPassage: {b}"),
            loader=lambda: pocket._sc(
                "boolq",
                "boolq",
                BOOLQ,
                lambda r: (r["meta"]["question"], r["text"]),
                lambda r: r["text"],
                s["boolq"],
                test_split="dev",
            ),
        ),
        sc(
            name="tweets",
            description="tweet sentiment (deduplicated) -> negative/neutral/positive",
            options=SCOptions(labels=TWEETS),
            loader=lambda: pocket._sc(
                "tweets", "tweets", TWEETS, lambda r: r["text"], lambda r: r["id"], s["tweets"]
            ),
        ),
        Task(
            name="wnut16",
            description="WNUT-16 Twitter NER, strict IOB2 entity F1; 70/10/20 split by tweet id",
            options=TCOptions(labels=pocket.WNUT_LABELS),
            metric="entity_f1",
            finetune=POCKET_TC,
            max_length=128,
            loader=lambda: pocket._tc(
                "wnut16", "wnut16", pocket.WNUT_LABELS, str, lambda r: r["id"], s["wnut16"]
            ),
        ),
        Task(
            name="brown-pos",
            description="Brown corpus POS tagging (tags with -tl/-hl/-nc collapsed), word accuracy; split by document",
            options=TCOptions(),  # the asset's tag set, filled in by `load_task`
            metric="accuracy",
            finetune=POCKET_TC,
            max_length=128,
            loader=lambda: pocket.load_brown_pos("brown-pos", s["brown-pos"]),
        ),
        Task(
            name="squad",
            description="SQuAD v1.1 dev split by article into train/val/test; SQuADShifts NYT/Reddit/Amazon/new-wiki as OOD tests",
            options=QAOptions(stride=64),
            metric="f1",
            finetune=POCKET_QA,
            max_length=256,
            loader=lambda: pocket.load_squad("squad", s["squad"]),
        ),
        ir(
            name="squad-retrieval",
            description="SQuAD question -> paragraph, corpus = the split's paragraphs",
            loader=lambda: pocket.load_squad_retrieval("squad-retrieval", s["squad-retrieval"]),
        ),
        ir(
            name="boolq-retrieval",
            description="BoolQ question -> passage, test corpus = passages of 1500 dev questions",
            loader=lambda: pocket.load_boolq_retrieval("boolq-retrieval", s["boolq-retrieval"]),
        ),
        ir(
            name="pubmedqa-retrieval",
            description="PubMedQA question -> abstract, corpus = the split's abstracts",
            loader=lambda: pocket.load_pubmedqa_retrieval("pubmedqa-retrieval", s["pubmedqa-retrieval"]),
            max_length=192,
        ),
        sc(
            name="pubmedqa",
            description="PubMedQA (question, abstract) -> yes/no/maybe; 60/10/30 split by id",
            options=PairSCOptions(labels=PUBMEDQA, template="Question: {a}\nContext: {b}"),
            max_length=256,
            loader=lambda: pocket._sc(
                "pubmedqa",
                "pubmedqa",
                PUBMEDQA,
                lambda r: (r["meta"]["question"], r["text"]),
                lambda r: r["id"],
                s["pubmedqa"],
                fractions=(0.6, 0.1, 0.3),
            ),
        ),
        ir(
            name="code-retrieval",
            description="docstring -> function (docstring removed) over stdlib modules held out of code-python; split by file",
            loader=lambda: domain.load_code_retrieval("code-retrieval", s["code-retrieval"]),
            max_length=256,
        ),
    ]


CONLL = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")
"""CoNLL-2003's tag order in the `datasets` card, used only if the mirror's tags carry no names."""
ONTONOTES_TAGS = (
    "O", "B-CARDINAL", "B-DATE", "I-DATE", "B-PERSON", "I-PERSON", "B-NORP", "B-GPE", "I-GPE", "B-LAW",
    "I-LAW", "B-ORG", "I-ORG", "B-PERCENT", "I-PERCENT", "B-ORDINAL", "B-MONEY", "I-MONEY", "B-WORK_OF_ART",
    "I-WORK_OF_ART", "B-FAC", "B-TIME", "I-CARDINAL", "B-LOC", "B-QUANTITY", "I-QUANTITY", "I-NORP", "I-LOC",
    "B-PRODUCT", "I-TIME", "B-EVENT", "I-EVENT", "I-FAC", "B-LANGUAGE", "I-PRODUCT", "I-ORDINAL", "I-LANGUAGE",
)  # fmt: skip
"""OntoNotes 5's 37 tags in tner's id order (tner/ontonotes5's card and `dataset/label.json`; a copy of the
card: YoungXinyu1802/HuggingFace-Dataset-Card-Analysis `Data/Dataset_Card/tner_ontonotes5.md`), used only
if the mirror's tags carry no names. tner's script stores `tags` as plain int32 ids (code that re-declares it
says so: "use actual label space instead of simple int32 value"), and EncodEval loads hgissbkh/ontonotes5 with
`trust_remote_code` (a script, or data files: docs/reproduce.md) and 37 labels, and its TC evaluator takes tags as label ids, never names (the Theodb/EncodEval fork
@886e9ff `encodeval/eval_tasks/token_classification_eval.py`), so its parquet export may hold bare ids:
third-party code reading hgissbkh/ontonotes5 maps its ids 0-36 by hand in this order (2026-12-06, `search`)."""
SST2, MNLI, QQP = (
    ("negative", "positive"),
    ("entailment", "neutral", "contradiction"),
    ("not_duplicate", "duplicate"),
)
PAPER_DATA_VERSION = "2"
EUROBERT_HEAD = {"head": "eurobert", "pooling": "model"}
"""EncodEval fine-tunes paper 1's EuroBERT models with `EuroBertForSequenceClassification`, whose head is
a hidden-size layer and GELU before the labels, pooled as the model's config says (`clf_pooling`: bos,
mean or late, late when unset): `model` pooling resolves it per model (`eval/pooling.py`)."""


def _paper_tasks() -> list[Task]:
    """Paper 1's datasets with EncodEval's protocol and scores: inputs up to 0.99 x the model's maximum
    ending in EOS, TC trained on every subword and scored by per-sentence macro-F1, QA as in/out
    token tagging scored by position F1, IR by nDCG over the retrieved 10 (`metrics/encodeval.py`)."""
    common = {"max_length": None, "data_version": PAPER_DATA_VERSION, "inputs": "eos"}
    sc = partial(Task, metric="accuracy", finetune=PAPER_SC, **common)
    tc = partial(
        Task,
        metric="sentence_macro_f1",
        finetune=PAPER_TC,
        options=TCOptions(subword_labels="all"),
        **common,
    )
    qa = partial(Task, metric="position_f1", finetune=PAPER_QA, **common)
    qa_options = partial(QAOptions, head="tagger", question_template="Question: {question}\nContext: ")
    ir = partial(
        Task,
        options=IROptions(query_prefix="Query: ", document_prefix="Document: ", pooling="model"),
        metric="ndcg@10_retrieved",
        finetune=PAPER_IR,
        **common,
    )
    ner = paper.load_ner
    return [
        sc(
            name="paper-sst2",
            hub_repos=(HubRepo("nyu-mll/glue"),),
            description="GLUE SST-2 (nyu-mll/glue sst2; test = validation)",
            options=SCOptions(labels=SST2, **EUROBERT_HEAD),
            loader=lambda: paper.load_glue("paper-sst2", "sst2", "validation", SST2, ("sentence",)),
        ),
        sc(
            name="paper-mnli",
            hub_repos=(HubRepo("nyu-mll/glue"),),
            description="GLUE MNLI-matched (nyu-mll/glue mnli; test = validation_matched)",
            options=PairSCOptions(labels=MNLI, template="Premise: {a}\nHypothesis: {b}", **EUROBERT_HEAD),
            loader=lambda: paper.load_glue(
                "paper-mnli", "mnli", "validation_matched", MNLI, ("premise", "hypothesis")
            ),
        ),
        sc(
            name="paper-qqp",
            hub_repos=(HubRepo("nyu-mll/glue"),),
            description="GLUE QQP (nyu-mll/glue qqp; test = validation)",
            options=PairSCOptions(labels=QQP, template="Question 1: {a}\nQuestion 2: {b}", **EUROBERT_HEAD),
            loader=lambda: paper.load_glue("paper-qqp", "qqp", "validation", QQP, ("question1", "question2")),
        ),
        tc(
            name="paper-conll2003",
            hub_repos=(HubRepo("hgissbkh/conll2003-en"),),
            description="CoNLL-2003 English NER (hgissbkh/conll2003-en)",
            loader=lambda: ner("paper-conll2003", HubSource("hgissbkh/conll2003-en"), "words", "ner", CONLL),
        ),
        tc(
            name="paper-ontonotes",
            hub_repos=(HubRepo(ONTONOTES.repo, ONTONOTES.revision),),
            description="OntoNotes 5 NER (hgissbkh/ontonotes5, parquet export)",
            finetune=PAPER_ONTONOTES,  # not one epoch: about 1,900 steps on its ~60k sentences
            loader=lambda: ner("paper-ontonotes", ONTONOTES, "tokens", "tags", ONTONOTES_TAGS),
        ),
        tc(
            name="paper-uner",
            hub_repos=(HubRepo("hgissbkh/uner_en"),),
            description="UNER English NER (hgissbkh/uner_en)",
            loader=lambda: ner("paper-uner", HubSource("hgissbkh/uner_en"), "tokens", "ner_tags"),
        ),
        qa(
            name="paper-squad",
            hub_repos=(HubRepo("rajpurkar/squad"),),
            description="SQuAD v1.1 (rajpurkar/squad; test = validation)",
            options=qa_options(),
            loader=lambda: paper.load_squad_format("paper-squad", HubSource("rajpurkar/squad", "plain_text")),
        ),
        qa(
            name="paper-squad-v2",
            hub_repos=(HubRepo("rajpurkar/squad_v2"),),
            description="SQuAD v2.0 with no-answer (rajpurkar/squad_v2; test = validation)",
            options=qa_options(v2=True),
            loader=lambda: paper.load_squad_format(
                "paper-squad-v2", HubSource("rajpurkar/squad_v2", "squad_v2")
            ),
        ),
        qa(
            name="paper-record",
            hub_repos=(HubRepo("hgissbkh/record"),),
            description="ReCoRD in SQuAD format (hgissbkh/record; test = validation)",
            options=qa_options(),
            loader=lambda: paper.load_squad_format("paper-record", HubSource("hgissbkh/record")),
        ),
        ir(
            name="paper-msmarco",
            hub_repos=(paper.MSMARCO_PAIRS_REPO, *paper.beir_repos("BeIR/msmarco")),
            description="MS MARCO (BEIR dev = validation, TREC-DL'19 = test; judged-only corpus), trained on msmarco-pairs",
            loader=lambda: paper.load_msmarco("paper-msmarco"),
        ),
        ir(
            name="paper-nq",
            hub_repos=(paper.MSMARCO_PAIRS_REPO, *paper.beir_repos("BeIR/nq")),
            trains_as="paper-msmarco",
            description="NQ (BEIR test qrels split 50/50 into val/test, seed 42), zero-shot after msmarco-pairs",
            loader=lambda: paper.load_nq("paper-nq"),
        ),
        ir(
            name="paper-mldr",
            hub_repos=(paper.MSMARCO_PAIRS_REPO, HubRepo("hgissbkh/mldr-en")),
            trains_as="paper-msmarco",
            description="MLDR-en dev/test (judged-only corpus), zero-shot after msmarco-pairs",
            loader=lambda: paper.load_mldr("paper-mldr"),
        ),
    ]


# Paper 2's protocol (BioClinical-ModernBERT, see biomed.py): batch 16, 10 epochs (NER 20), wd 0.01,
# Hugging Face Trainer's AdamW defaults, no warmup, the best epoch on validation, early stopping after 3
# epochs without a better validation score: the authors' account of this protocol (Rian-T/thesis@0c3a71a
# sources/part_1/chapter2/article.tex L309, "early stopping patience of 3 epochs for all" of the 11
# tasks); BCM's own code has none (no EarlyStoppingCallback in lindvalllab/BioClinical-ModernBERT@fb40fb6).
PAPER2_CLS = FinetuneConfig(
    batch_size=16,
    micro_batch_size=16,
    max_steps=None,
    epochs=10.0,
    warmup_ratio=0.0,
    weight_decay=0.01,
    betas=(0.9, 0.999),
    eps=1e-8,
    select="best_epoch",
    select_metric="weighted_f1",  # BCM's metric_for_best_model; NER picks by its reported seqeval F1
    patience=3,
)
"""The classification tasks also report weighted F1: BCM's code computes only weighted and micro F1 (and
accuracy), never macro (src/metrics/metrics.py L18-21, L37-40), and main.py reads weighted F1 as the run's
metric (L101-105); paper 2's ChemProt scores (about 90) are on that scale, not on a six-class macro-F1's."""
PAPER2_NER = replace(PAPER2_CLS, epochs=20.0, select_metric=None)


BCM_WORDS = TCOptions(words="split")
"""BioClinical-ModernBERT's NER code hands the words to the tokenizer pre-split (`is_split_into_words`);
with ModernBERT's tokenizer each word is then encoded without its leading space (AnswerDotAI/ModernBERT
#149), and paper 2's NER numbers were made so."""


def _biomed_tasks() -> list[Task]:
    """Paper 2's English tasks on the hub, with its protocol; inputs up to 0.99 x the model maximum."""
    common = {"max_length": None, "data_version": "1"}
    ner = [
        Task(
            name=f"biomed-{config.replace('_', '-')}",
            description=f"{title} NER (BLURB, bigbio/blurb {config})",
            options=BCM_WORDS,
            metric="conlleval_f1",
            finetune=PAPER2_NER,
            loader=partial(biomed.load_blurb_ner, f"biomed-{config.replace('_', '-')}", config),
            hub_repos=(HubRepo("bigbio/blurb", PARQUET_EXPORT),),
            **{**common, "data_version": biomed.BLURB_DATA_VERSIONS[config]},
        )
        for config, title in biomed.BLURB_NER.items()
    ]
    rows = [  # name, description, options, metric, protocol, loader, max length (None: the model's)
        ("anatem", "AnatEM anatomical entity NER, one type (bigbio/anat_em, brat offsets to O/B/I)",
         BCM_WORDS, "conlleval_f1", PAPER2_NER, biomed.load_anatem, None),
        ("bc5cdr", "BC5CDR chemical and disease NER, one task (bigbio/bc5cdr, offsets to typed O/B/I)",
         BCM_WORDS, "conlleval_f1", PAPER2_NER, biomed.load_bc5cdr, None),
        ("chemprot", "ChemProt chemical-protein relations as BLUE's masked sentences (bigbio/chemprot)",
         SCOptions(labels=biomed.CHEMPROT_LABELS, head="modernbert"), "weighted_f1", PAPER2_CLS, biomed.load_chemprot, 512),
        ("gad", "GAD gene-disease association (BLURB split, bigbio/gad)",
         SCOptions(labels=biomed.GAD_LABELS, head="modernbert"), "weighted_f1", PAPER2_CLS, biomed.load_gad, None),
        ("hoc", "Hallmarks of Cancer, multi-label over 10 hallmarks (bigbio/hallmarks_of_cancer)",
         SCOptions(labels=biomed.HOC_HALLMARKS, multilabel=True, head="modernbert"), "weighted_f1", PAPER2_CLS,
         biomed.load_hoc, None),
    ]  # fmt: skip
    return [
        *ner,
        *(
            Task(
                name=f"biomed-{name}",
                description=description,
                options=options,
                metric=metric,
                finetune=protocol,
                loader=partial(load, f"biomed-{name}"),
                hub_repos=(HubRepo(biomed.REPOS[name], PARQUET_EXPORT),),
                **{**common, "max_length": length},  # paper 2 gives ChemProt 512 tokens
            )
            for name, description, options, metric, protocol, load, length in rows
        ),
    ]


ONTONOTES = parquet_export("hgissbkh/ontonotes5", "*", ("train", "validation", "test"))


TASKS: dict[str, Task] = {t.name: t for t in _pocket_tasks() + _paper_tasks() + _biomed_tasks()}


def get_task(name: str) -> Task:
    if name not in TASKS and name.lower().endswith((".yaml", ".yml")):  # was "unknown task; valid: <all>"
        raise UserError(
            f"task {name!r} is a task file, not a task's name; pass it with --task-file {name} (a study: "
            f"eval: {{task_files: [{name}]}})"
        )
    if name not in TASKS:
        raise did_you_mean(name, list(TASKS), "task")
    return TASKS[name]


def load_task(task: Task) -> tuple[Task, TaskData]:
    """Load a task's data; tasks whose label set comes from the data get it filled in."""
    data = task.loader()
    return (task.with_labels(data.labels) if data.labels else task), data


BUILTIN: frozenset[str] = frozenset(TASKS)


def register(task: Task) -> Task:
    """Add a task (one read from a task file) to the registry, replacing an earlier task of that
    name read from a file; a built-in name is refused."""
    if task.name in BUILTIN:
        raise UserError(f"task name '{task.name}' is a built-in task's; rename yours")
    TASKS[task.name] = task
    return task
