"""What a task is: its data, metric, fine-tuning settings and the options of its family.

A `Task` is a frozen description plus a loader. What differs between families lives in one typed
options object per family (`SCOptions`, `PairSCOptions`, `TCOptions`, `QAOptions`, `IROptions`),
so a task carries only the settings its family reads and `task.family` follows from the options.

`Task.signature()` hashes every setting that can change a score (`eval.signature`, which keeps the hash of
tasks unchanged since 0.1.0); the results cache keys runs by it, so editing a task never reuses stale scores.

Examples are plain dicts per family:
  * sc: {"text", "label": int}; pair sc: {"text", "text_pair", "label"} (joined by the template);
    multi-label sc: {"text", "labels": [int]}; regression sc: {"text", "target": float}
  * tc: {"tokens": [str], "tags": [int]}
  * qa: {"id", "question", "context", "answers": [{"text", "answer_start"}]}  ([] = no answer)
  * ir: training pairs {"query", "document", "doc_id"}, triplets with `NEGATIVE` too (a hard negative's
    text); evaluation splits are `IRSplit`s.
"""

from __future__ import annotations

import dataclasses
import math
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Literal, NamedTuple

from encoderlab.config import FLOAT32_MAX
from encoderlab.errors import UserError

Family = Literal["sc", "tc", "qa", "ir"]
FAMILY_NAMES = {
    "sc": "sequence classification",
    "tc": "token classification",
    "qa": "extractive QA",
    "ir": "retrieval",
}
Pooling = Literal["mean", "first", "last", "model"]
SCPooling = Literal["mean", "first", "late", "model"]
MODEL_POOLING = "model"
"""The pooling value that means "the model's own": the one its config.json declares (`ModelPooling`),
resolved per model before anything is cached (`Task.resolve_pooling`), as EncodEval reads it."""
DEFAULT_POOLING = {"sc": "late", "ir": "mean"}
"""What `model` pooling resolves to for a model that declares none: EuroBERT's `clf_pooling` default
(late) and SentenceTransformers' default (mean), as EncodEval."""
CONCRETE_POOLINGS = {"sc": ("mean", "first", "late"), "ir": ("mean", "first", "last")}
"""What `model` pooling can resolve to, per family."""
Inputs = Literal["tokenizer", "eos"]


@dataclass(frozen=True, kw_only=True)
class FinetuneConfig:
    """Optimiser and schedule of one fine-tuning run (paper 1 / EncodEval defaults)."""

    batch_size: int = 32
    """Examples per optimiser step."""
    micro_batch_size: int = 32
    """Examples per forward pass (gradient accumulation when smaller; IR ignores it)."""
    max_steps: int | None = 1000
    """Optimiser steps (data cycles as needed); None means `epochs` passes over the data."""
    epochs: float = 1.0
    """Passes over the training data when `max_steps` is None (token classification)."""
    warmup_ratio: float = 0.1
    """Share of steps with linear warmup, then linear decay to 0."""
    weight_decay: float = 0.1
    """Decoupled weight decay on matrices (not on biases and norm weights)."""
    betas: tuple[float, float] = (0.9, 0.95)
    """AdamW betas."""
    eps: float = 1e-5
    """AdamW epsilon."""
    grad_clip: float = 1.0
    """Gradient-norm clipping (Hugging Face Trainer's default)."""
    select: Literal["last", "best_epoch"] = "last"
    """Which weights are scored: the model after the last step (paper 1, EncodEval saves no
    checkpoint), or the epoch with the best validation score (paper 2: validation after every
    epoch, the best epoch's weights tested)."""
    select_metric: str | None = None
    """With `best_epoch`, the validation score the epoch is picked by (None: the task's metric); paper
    2's code picks a classification epoch by weighted F1 (`weighted_f1`)."""
    patience: int | None = None
    """With `best_epoch`, early stopping: the run ends once `patience` validations in a row are no better
    than the best (Hugging Face's `EarlyStoppingCallback`, threshold 0; the LR schedule stays the full run's)."""
    weights: Literal["fp32", "bf16"] = "fp32"
    """`fp32`: fp32 weights and AdamW moments (under bf16 autocast on CUDA). `bf16`: the model is cast
    to bf16 before fine-tuning, as EncodEval does (`dtype: torch.bfloat16`, `model.to(dtype)`), so
    weights and moments are bf16 and an update below half a weight's bf16 spacing is lost."""

    def check(self, where: str) -> None:
        """Refuse values fine-tuning would fail on mid-run (a zero batch divides, a negative step count
        indexes, a NaN warmup converts to int) or misuse silently (0 epochs trains nothing): a task file's."""
        finite = all(map(math.isfinite, (self.epochs, self.warmup_ratio, self.weight_decay, self.grad_clip)))
        betas_ok = len(self.betas) == 2 and all(0 <= b < 1 for b in self.betas)
        lowest = min(self.weight_decay, self.grad_clip)
        bad = [
            (min(self.batch_size, self.micro_batch_size) < 1, "batch_size and micro_batch_size must be >= 1"),
            (
                self.max_steps is not None and self.max_steps < 1,
                "max_steps must be >= 1, or null for `epochs`",
            ),
            (not finite, "epochs, warmup_ratio, weight_decay and grad_clip must be finite numbers"),
            (finite and self.epochs <= 0, "epochs must be > 0"),
            (finite and not 0 <= self.warmup_ratio < 1, "warmup_ratio must be in [0, 1)"),
            (finite and lowest < 0, "weight_decay and grad_clip must be >= 0"),
            (not betas_ok, "betas must be two numbers in [0, 1)"),
            (not 0 < self.eps <= FLOAT32_MAX, "eps must be > 0 and finite in float32"),
            (
                self.select_metric is not None and self.select != "best_epoch",
                "select_metric is read only with select: best_epoch",
            ),
            (self.patience is not None and self.patience < 1, "patience must be >= 1, or null"),
            (self.patience and self.select != "best_epoch", "patience is read only with select: best_epoch"),
        ]
        problem = next((message for wrong, message in bad if wrong), None)
        if problem:  # the values of the fields it names (before "must"/"is"), not all thirteen
            words = re.findall(r"\w+", re.split(r" must | is ", problem)[0])
            got = ", ".join(f"{n}: {getattr(self, n)!r}" for n in words if n in self.__dataclass_fields__)
            raise UserError(f"{where}: finetune: {problem}, got {got}")

    def total_steps(self, n_train: int) -> int:
        """`max_steps`, or `epochs` passes of ceil(n_train / batch_size) steps each (an epoch ends with its
        short last batch), rounded up: Hugging Face Trainer's `ceil(num_train_epochs *
        num_update_steps_per_epoch)`. Before, ceil(epochs * n_train / batch_size) ran up to `epochs` - 1
        steps fewer (10 epochs of 100 examples in batches of 16: 63 steps, 9 epochs, not 70)."""
        if self.max_steps is not None:
            return self.max_steps
        return max(1, math.ceil(self.epochs * math.ceil(n_train / self.batch_size)))


# ----------------------------------------------------------------------------- family options


def template_fields(template: str, what: str) -> set[str]:
    """The `{field}` names of a template; one that `str.format` cannot read ("Single '{' encountered in
    format string", which named no template) is a ValueError naming it and the escape."""
    try:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise ValueError(
            f"the {what} {template!r} is not a format string ({exc}); write a literal brace as {{{{ or }}}}"
        ) from None


@dataclass(frozen=True, kw_only=True)
class SCOptions:
    """Sequence classification of one text."""

    family: ClassVar[Family] = "sc"
    labels: tuple[str, ...] = ()
    """Class names, index = class id; empty when the loader reads them from the data."""
    pooling: SCPooling = "mean"
    """How the token states become one vector: `mean` over real tokens or the `first` token
    (BOS/CLS); with the `eurobert` head, also `late`: the mean of the per-token logits (EuroBERT's
    default), and `model`: the model's own, its config.json's `clf_pooling` (`bos` is `first`; late
    when it declares none), as EncodEval fine-tunes paper 1's models."""
    head: Literal["linear", "eurobert", "modernbert"] = "linear"
    """`linear`: one layer to the labels; `eurobert`: a hidden-size layer and GELU first, EuroBERT's
    `EuroBertForSequenceClassification`, which EncodEval fine-tunes paper 1's models with; `modernbert`:
    a hidden-size layer without bias, GELU and a LayerNorm first, `ModernBertForSequenceClassification`,
    which paper 2's code (BioClinical-ModernBERT) fine-tunes with."""
    multilabel: bool = False
    """Each example has a set of labels (`"labels": [ids]`): one sigmoid per label, binary
    cross-entropy, a label predicted when its logit is > 0 (HoC in paper 2's protocol)."""
    regression: bool = False
    """Each example has a number (`"target": float`) instead of a class: one output, mean squared
    error, scored by Pearson and Spearman correlation (GLUE's STS-B, `run_glue.py`'s regression)."""
    positive_label: str | None = None
    """The class a two-class task's `f1` metric scores (scikit-learn's `pos_label`); None: the second
    class, id 1, as GLUE's MRPC and QQP (`equivalent`, `duplicate`) and scikit-learn's default."""

    @property
    def positive(self) -> str:
        """The class `f1` scores: `positive_label`, else the second of `labels` (id 1)."""
        return self.positive_label if self.positive_label is not None else self.labels[1]

    def __post_init__(self):
        if self.regression and (self.multilabel or self.labels):
            raise ValueError("regression predicts one number: it takes no labels and is not multilabel")
        if self.pooling == "late" and self.head != "eurobert":
            raise ValueError(
                "pooling 'late' needs head 'eurobert' (with one linear layer it is mean pooling)"
            )
        if self.pooling == MODEL_POOLING and self.head != "eurobert":
            raise ValueError(
                "pooling 'model' reads EuroBERT's clf_pooling, a setting of its head: it needs head 'eurobert'"
            )


@dataclass(frozen=True, kw_only=True)
class PairSCOptions(SCOptions):
    """Sequence classification of a pair of texts, joined into one input by a template."""

    template: str = "{a}\n{b}"
    """The input built from an example's two texts: `{a}` is the first, `{b}` the second. Paper 1
    uses EncodEval's `Premise: {a}\\nHypothesis: {b}` and `Question 1: {a}\\nQuestion 2: {b}`;
    putting the shorter text first keeps it whole when truncation cuts the input."""

    def __post_init__(self):
        super().__post_init__()
        fields = template_fields(self.template, "pair template")
        if fields != {"a", "b"}:
            raise ValueError(
                f"a pair template needs exactly the fields {{a}} and {{b}}, got {self.template!r}"
            )

    def render(self, a: str, b: str) -> str:
        return self.template.format(a=a, b=b)


@dataclass(frozen=True, kw_only=True)
class TCOptions:
    """Token classification (NER, POS) over pre-split words (`words` says how they reach the tokenizer)."""

    family: ClassVar[Family] = "tc"
    labels: tuple[str, ...] = ()
    """Tag names, index = tag id (IOB2 for NER); empty when the loader reads them from the data."""
    words: Literal["text", "split"] = "text"
    """How words reach the tokenizer: `text`, joined by spaces and tokenised as running text, tokens
    mapped back by offsets (EncodEval); `split`, as pre-split words (`is_split_into_words`, Hugging
    Face's `run_ner.py` and BioClinical-ModernBERT's code, paper 2), which makes a byte-level BPE
    without a prefix-space setting (ModernBERT's, AnswerDotAI/ModernBERT#149) encode each word as if it
    began the text."""
    subword_labels: Literal["first", "all"] = "first"
    """`first`: a word's tag trains and is read on its first subword (Hugging Face's `run_ner.py`);
    `all`: every subword trains on its word's tag and a word takes the majority tag of its subwords,
    ties to the lowest tag id (EncodEval, paper 1)."""


@dataclass(frozen=True, kw_only=True)
class QAOptions:
    """Extractive question answering over question + context inputs."""

    family: ClassVar[Family] = "qa"
    v2: bool = False
    """Allow and score "no answer" (SQuAD v2.0 rules)."""
    stride: int = 128
    """Tokens shared by neighbouring context windows (`span` head)."""
    max_answer_tokens: int = 30
    """Longest answer span considered when decoding (`span` head)."""
    head: Literal["span", "tagger"] = "span"
    """`span`: start/end logits over stride windows, decoded to a text scored by the SQuAD scripts;
    `tagger`: each token of one window tagged in or out of the answer, scored by the F1 of the tagged
    against the gold token positions (EncodEval, paper 1; `eval/answer_tagger.py`)."""
    question_template: str = "{question}"
    """The first segment built from the question (paper 1: `Question: {question}\nContext: `)."""

    def __post_init__(self):
        if self.stride < 0 or self.max_answer_tokens < 1:  # the tokenizer's OverflowError; no span ever
            raise ValueError(
                f"stride must be >= 0 and max_answer_tokens >= 1, got {self.stride} and {self.max_answer_tokens}"
            )
        fields = template_fields(self.question_template, "question template")
        if fields != {"question"}:
            raise ValueError(
                f"a question template needs exactly the field {{question}}, got {self.question_template!r}"
            )

    def first_segment(self, question: str) -> str:
        return self.question_template.format(question=question)


@dataclass(frozen=True, kw_only=True)
class IROptions:
    """Retrieval with a bi-encoder trained on (query, document) pairs."""

    family: ClassVar[Family] = "ir"
    query_prefix: str = "query: "
    """Prepended to every query (paper 1: `Query: `)."""
    document_prefix: str = "document: "
    """Prepended to every document (paper 1: `Document: `)."""
    pooling: Pooling = "mean"
    """How token states become the embedding (before L2 normalisation): `mean` over real tokens, the
    `first` or the `last` real token (EOS with `eos` inputs), or `model`: the model's own, last when
    its config.json says `retrieval_pooling: eos`, else mean (EncodEval, SentenceTransformers' default)."""


TaskOptions = SCOptions | PairSCOptions | TCOptions | QAOptions | IROptions


# ----------------------------------------------------------------------------- data


@dataclass
class IRSplit:
    """A retrieval evaluation split: queries, the corpus they search and the judged pairs."""

    queries: dict[str, str]
    """Query id -> query text."""
    corpus: dict[str, str]
    """Document id -> document text: everything a query is ranked against."""
    qrels: dict[str, dict[str, int]]
    """Query id -> {document id: relevance}; a document a query does not list is not relevant."""
    ignore_identical_ids: bool = False
    """Leave out of a query's ranking the document whose id is the query's, as BEIR's dense search and
    evaluator do by default (`ignore_identical_ids=True`); set for BEIR task files (ArguAna, Quora share ids)."""


NEGATIVE = "negative"
"""A retrieval training example's hard negative, and the task files' column of it (sentence-transformers'
triplet column name): the one name every reader and counter of it uses (`custom_rows`, `irpairs`, `beir`,
`families.Retrieval`, `preflight`, `study/evalcount.py`). Only a train split of triplets has the key, so
other tasks' examples, and their data hash, are as before."""


@dataclass
class TaskData:
    """Loaded splits of a task; `tests` holds the in-domain test first, then out-of-domain ones."""

    train: list
    """Training examples of the task's family (retrieval: (query, positive document) pairs)."""
    val: list | IRSplit
    """Validation examples (the LR is chosen on them); an `IRSplit` for retrieval."""
    tests: dict[str, list | IRSplit]
    """Test set name -> its examples, the in-domain test first, then the out-of-domain ones."""
    counts: dict[str, int] = field(default_factory=dict)
    """Bookkeeping recorded with each result (e.g. skipped QA answers whose span is wrong)."""
    labels: tuple[str, ...] = ()
    """Label set read from the data, for tasks that do not fix one in advance."""


# ----------------------------------------------------------------------------- task

MODEL_LENGTH_FRACTION = 0.99
"""`max_length=None` means this share of the model's positions (EncodEval keeps a 1% margin)."""
EVAL_BATCH = 64
"""Texts per prediction batch (`batching.predict_rows`); here, torch-free, for `study/evalcost.py` too."""


class HubRepo(NamedTuple):
    """A hub dataset repository a task's loader reads, at the revision it reads (None: the default)."""

    repo: str
    revision: str | None = None


@dataclass(frozen=True, kw_only=True)
class Task:
    """One evaluation task."""

    name: str
    """Registry name; also the key of its results."""
    description: str
    """One line for listings and summaries."""
    options: TaskOptions
    """The settings of the task's family (labels, pooling, QA windows, IR prefixes...)."""
    metric: str
    """Key of the score used for LR selection and reporting (`accuracy`, `macro_f1`, `entity_f1`,
    `f1`, `ndcg@10`, ...)."""
    loader: Callable[[], TaskData] = field(compare=False, repr=False)
    """Returns the task's splits; called once per process and task."""
    finetune: FinetuneConfig = FinetuneConfig()
    """Optimiser and schedule."""
    max_length: int | None = 512
    """Tokens per input (QA: per window); longer inputs are truncated. None: 0.99 x the model's
    maximum (paper 1: EncodEval's `round(0.99 * max_position_embeddings)`), see `for_model`."""
    data_version: str = "1"
    """Bump when the loader's output changes (file tasks: a hash of their data)."""
    inputs: Inputs = "tokenizer"
    """How texts become ids: `tokenizer`, with the tokenizer's own special tokens (BOS/CLS, SEP...);
    `eos`, with none but the end-of-text token appended (EOS, or SEP for a tokenizer that has no EOS),
    as EncodEval feeds every family (paper 1)."""
    trains_as: str | None = None
    """The task whose fine-tuning run this one is (its own test data scored zero-shot), e.g. NQ and MLDR
    scored with the MS MARCO-trained retriever as EncodEval reloads it: one run serves all of them
    (`training_groups`). Not in the signature: which task trained the model changes no score."""
    hub_repos: tuple[HubRepo, ...] = field(default=(), compare=False)
    """The hub datasets its loader reads: with `$ENCODERLAB_HUB_DATA` set, each must be mirrored before
    any run starts (`suites.require_assets`), not when the grid reaches the task hours in."""
    segments: bool = False
    """Set per model, never by a task (`resolve_segments`): the model is handed the segment ids of the
    tokenizer's text pair. In the signature only when set, so results from before segment ids were
    passed (BERT-family QA ran with segment 0 on the context) are not taken for this run's."""

    @property
    def family(self) -> Family:
        return self.options.family

    @property
    def labels(self) -> tuple[str, ...]:
        """Class or tag names of sc/tc tasks (empty for qa/ir)."""
        return getattr(self.options, "labels", ())

    @property
    def multilabel(self) -> bool:
        """Whether it is sequence classification with a label set per example (`SCOptions.multilabel`)."""
        return getattr(self.options, "multilabel", False)

    @property
    def pools_first(self) -> bool:
        """Whether its head reads the first position (`pooling: first`): `eos` inputs put the start token there."""
        return getattr(self.options, "pooling", None) == "first"

    @property
    def pools_by_model(self) -> bool:
        """Whether its head pools as the model declares (`pooling: model`), resolved per model."""
        return getattr(self.options, "pooling", None) == MODEL_POOLING

    def resolve_pooling(self, declared: str | None) -> Task:
        """The task with `model` pooling replaced by `declared` (the model's, `pooling.ModelPooling`), or
        by its family's default when the model declares none; other tasks unchanged. The resolved task is
        what runs and what keys the cache: a model resolving to the default keeps the signature the
        task had when it said that pooling itself."""
        if not self.pools_by_model:
            return self
        pooling = declared or DEFAULT_POOLING[self.family]
        return dataclasses.replace(self, options=dataclasses.replace(self.options, pooling=pooling))

    @property
    def encodes_pairs(self) -> bool:
        """Whether its inputs are the tokenizer's text pairs, whose segment ids a model with a segment
        table is handed: extractive QA's span head, and its tagger with `inputs: tokenizer`."""
        return self.family == "qa" and (self.options.head == "span" or self.inputs == "tokenizer")

    def resolve_segments(self, model_takes: bool) -> Task:
        """The task as it runs on a model that takes segment ids (`model_takes`: a segment table, and a
        tokenizer giving `token_type_ids`): marked where it encodes pairs, else unchanged."""
        return dataclasses.replace(self, segments=True) if model_takes and self.encodes_pairs else self

    def resolutions(self) -> list[Task]:
        """Every task this one can run as: one per concrete pooling for `model` pooling, each also with
        segment ids where it encodes pairs (`resolve_segments`)."""
        poolings = (
            [self.resolve_pooling(p) for p in CONCRETE_POOLINGS[self.family]]
            if self.pools_by_model
            else [self]
        )
        return [*poolings, *(t.resolve_segments(True) for t in poolings if self.encodes_pairs)]

    @property
    def steps_at_least(self) -> bool:
        """Whether `finetune.total_steps` of its training examples is only a lower bound of a run's
        optimizer steps: a QA task on an `epochs` schedule (no `max_steps`) steps through the windows of its
        contexts, a long context several, which only the run's tokenising counts. `eval --check` and a
        study's plan (`study.evalcost`) both say "at least" by it."""
        return self.family == "qa" and self.finetune.max_steps is None

    def for_model(self, max_positions: int) -> Task:
        """The task with a concrete `max_length` for a model of `max_positions` positions."""
        if self.max_length is not None:
            return self
        return dataclasses.replace(self, max_length=round(MODEL_LENGTH_FRACTION * max_positions))

    def training(self) -> tuple:
        """What fixes its fine-tuning run besides the training examples: tasks that share one must agree."""
        return (
            self.trains_as or self.name,
            self.family,
            self.finetune,
            self.options,
            self.max_length,
            self.inputs,
        )

    def with_labels(self, labels: tuple[str, ...]) -> Task:
        return dataclasses.replace(self, options=dataclasses.replace(self.options, labels=tuple(labels)))

    def signature(self) -> str:
        """Hash of every score-relevant setting (the loader is represented by data_version): `eval.signature`."""
        from encoderlab.eval.signature import task_signature

        return task_signature(self)


def training_groups(tasks: Sequence[Task]) -> list[list[Task]]:
    """`tasks` in order, those that share one fine-tuning run (`Task.trains_as`, the same schedule, head
    and lengths) together, the first-listed of each group first. A task that picks its best epoch on
    its own validation never shares: another task's validation would have chosen its weights."""
    groups: dict[tuple, list[Task]] = {}
    for t in tasks:
        key = (t.name,) if t.finetune.select == "best_epoch" else t.training()
        groups.setdefault(key, []).append(t)
    return list(groups.values())
