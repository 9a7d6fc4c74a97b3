"""What a study's evaluation costs on GPUs, counted from its eval nodes.

Each fine-tuning run (an eval node that trains: not one that takes another's record, `trained_by`)
trains on `steps x batch_size` examples, `steps` being its task's (`FinetuneConfig.total_steps`, capped by
the study's `max_steps`); scoring encodes validation once per epoch with `select: best_epoch` (else once)
and every test set once; a node scoring a model another node fine-tuned (`trained_by`) encodes its own
validation and test sets. FLOPs are 6 x parameters x the tokens trained on plus 2 x parameters x the
tokens encoded, at the pretraining estimate's 40% of an H100's dense bf16 peak (`scales.GPU_FLOPS`), each
step and scoring batch taking at least a floor (below); the parameters and layers are the evaluated model's
(the plan's run, or a start model's: `scales.start_model_size`, its table or its files).

Tokens come from `TASK_SIZES` (`builtin_sizes()`), the built-in tasks' split sizes and tokens per example,
each with its source; a task read from a file counts its loaded rows, at its characters / `plan.CHARS_PER_TOKEN` per example. Every
text counts at most its task's `max_length`, or, for a task of none (paper 1's, the model's context), 0.99 x
the evaluated model's positions (`Task.for_model`: the plan's run's, or `scales.start_model_size`'s), so
MLDR's ~3.3k-token documents count ~2,028 tokens on a model of 2,048 positions. A task that stops early (`FinetuneConfig.patience`) may train fewer epochs, and a pocket
task counted at its max length pads less in practice, so the plan says so; a QA task on an epochs schedule
(a task file's, no `max_steps`) steps through the windows of its contexts, which only its run counts, so its
examples' steps are a lower bound and the plan says "at least" (`Task.steps_at_least`, as `eval --check`);
a task whose size or model is unknown is named as not counted.

A step of a 12-layer model (210m's, BERT-base's) takes at least `STEP_FLOOR_S`, a scoring batch
(`eval.spec.EVAL_BATCH` texts) at least `FORWARD_FLOOR_S`, each in proportion to the model's layers
(`BASE_LAYERS`): time = max(FLOPs at 40% MFU, steps x floor). Fine-tuning steps of 16 or 32 short inputs
are bound by kernel launches, the optimizer and the host, not by FLOPs: biomed-jnlpba's 21,020 steps of
16 sentences of ~40 tokens are ~32 s of FLOPs for a 210m model, ~18 min at the floor. The floor, 50 ms
per eager optimizer step of 12 layers (forward, backward, AdamW, the next batch on the host), is an
engineering estimate [D: not measured on this code's fine-tuning]; what grounds it:
- this project's pretraining step at 210m, batch 8 x 2048 tokens, kept an H200 busy 33.5 ms of a 70 ms
  step before the batch was prepared in the background (docs/benchmarks.md): ~36 ms a step went to the
  host and eager kernels even at 16k tokens a step;
- transformers' run_glue README (examples/text-classification, 2020): BERT-base on MRPC, 3 epochs of
  batch 32 at 128 tokens (345 steps) with evaluation, in 27 s on a V100 with fp16, ~78 ms a step;
  those steps are FLOPs-bound (~2.7 TFLOPs each), so they bound the step from above on an H100, not
  from below.
A larger model's steps are larger in FLOPs, which the max() counts; their launch-bound part grows with
their layers, each launching the same kernels and holding the same number of tensors for AdamW, so the
floor is 50 ms x layers / 12 [D: linear in layers, the embedding, head and host's share counted as
scaling too]: ModernBERT-base's 22 layers ~92 ms, 610m's 26 ~108 ms, the demo and cpu scales' tiny
models' 4 ~17 ms. `study plan` prints the optimizer steps so a reader can apply a step time of their own.
`floored_seconds` is the one max(FLOPs, floor) of every estimate: `plan.py` floors each pretraining
optimizer step at the same `STEP_FLOOR_S` per `BASE_LAYERS` layers [D: a pretraining step is at least
one eager optimizer step; at the gpu scales its FLOPs take seconds and the floor changes nothing].
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from encoderlab.study.graph import Node
from encoderlab.study.scales import GPU_FLOPS, start_model_size

if TYPE_CHECKING:
    from encoderlab.study.nodeconfig import EvalNode
    from encoderlab.study.plan import StudyPlan


@dataclass(frozen=True, kw_only=True)
class TaskSize:
    """What one task's fine-tuning and scoring read: examples and tokens."""

    train: int
    """Training examples (retrieval: query-document pairs); 0 for msmarco-pairs, of unstated size, read
    only by tasks of a fixed step count (`max_steps`)."""
    tokens: float | None
    """Mean tokens per training example (retrieval: query and document together, and its hard negative where
    there is one); None: the task's `max_length` (pocket tasks: an upper bound, inputs are padded to their
    batch's longest only)."""
    val: float
    """Texts one validation pass encodes (retrieval: queries and the corpus searched)."""
    test: float
    """Texts the test sets encode, all together."""
    eval_tokens: float | None = None
    """Mean tokens per encoded text when they differ from `tokens` (retrieval: a query or a document)."""
    texts: int | None = None
    """Texts one training example encodes, each on its own (retrieval: a query and its document, 2; with a
    task file's hard negative, 3: `custom_rows.ir_negatives`); None: the family's (retrieval 2, else 1)."""


PAIR_TOKENS = {"msmarco": (11, 76), "nq": (11, 106)}
"""(query, document) tokens of a BEIR text with its prefix and EOS: the mean words of BEIR's Table 1
(Thakur et al. 2021, arXiv 2104.08663), MS MARCO 5.96 / 55.98 (as quoted at pendu.github.io/Advanced-
Retreival-and-Re-ranking/benchmarks_and_datasets.html [V]), NQ 9.16 / 78.88 (title and text) [U: the
table itself not re-read (only the opening of the stored ar5iv copy is reachable); an unnamed summary of
the paper in the code index gives the same row, its 3,452 queries and 2,681,468 documents as irds/beir_nq's
card], x ~1.3 Llama-3 tokens a word [D], + 3 for `Query: ` / `Document: ` and EOS; msmarco-pairs' pairs
counted as MS MARCO's [D]."""
MLDR_DOC_TOKENS = 3_308 + 3
"""MLDR-en's mean document length, 3,308: Shitao/MLDR's card (`Avg. Length of Docs`) and BGE-M3's Table 7
(arXiv 2402.03216 v4) [V]; neither names its unit or tokenizer [U: not the caption, s.3.1 or App. A.2;
A.1 counts other lengths in tokens, tokenizer unnamed]; counted as Llama-3 tokens [D], + 3 as above."""

ENCODEVAL_HUB = {
    # task: (the hub's train rows, its validation rows = the test set, tokens per example [D: the
    # datasets' mean words x ~1.3 Llama-3 tokens a word, with the task's template and EOS])
    "paper-sst2": (67_349, 872, 20),  # nyu-mll/glue card (its dataset_info) [V]
    "paper-mnli": (392_702, 9_815, 55),  # test = validation_matched, same card [V]
    "paper-qqp": (363_846, 40_430, 40),  # same card [V]
    "paper-squad": (87_599, 10_570, 180),  # rajpurkar/squad, HFds card [V]
    "paper-squad-v2": (130_319, 11_873, 180),  # rajpurkar/squad_v2, same [V]
    "paper-record": (100_730, 10_000, 260),  # super_glue/record's card [V]; hgissbkh/record's own [U: the
    # hub repo is not stored here (find_files, search), no card seen]
}
"""Paper 1's SC/QA tasks, split as EncodEval splits them (`paper.encodeval_splits`)."""

SOURCED: dict[str, TaskSize] = {
    # paper 1 TC: the datasets' own splits
    "paper-conll2003": TaskSize(train=14_041, tokens=22, val=3_250, test=3_453),  # HFds conll2003 [V]
    # (its card's splits); hgissbkh/conll2003-en's own [U: not stored here, no card seen]
    "paper-ontonotes": TaskSize(train=59_924, tokens=26, val=8_528, test=8_262),  # the card of mirror
    # extraordinarylab/ontonotes5 (commit f3a6e40) [V]; hgissbkh/ontonotes5's own [U: not stored here]
    "paper-uner": TaskSize(train=12_543, tokens=23, val=2_001, test=2_077),  # UNER's en_ewt config,
    # universalner/universal_ner's card (README dataset_info, commit 80e4090): 12,543 / 2,001 / 2,077 [V]
    # (UD en_ewt's validation has 2,002 sentences, UNER's 2,001); hgissbkh/uner_en, UNER's columns
    # (UNER's card), its own sizes [U: not stored here]
    # paper 2 (biomed suite); tokens per sentence with ModernBERT's tokenizer, words encoded apart [D]
    "biomed-jnlpba": TaskSize(train=16_807, tokens=40, val=1_739, test=3_856),  # BLURB's sentences without
    # the one -DOCSTART- block per abstract the loader drops (`biomed.load_blurb_ner`): devel.tsv 1,939
    # blocks, 200 of them markers, test.tsv 4,260 with 404 (JNLPBA's 404 evaluation abstracts,
    # geniaproject.org's shared-task page), counted in cambridgeltl/MTL-Bioinformatics-2016@df0df02, the
    # files bigbio/blurb's blurb.py reads [V]; train: the 18,546 sentences of JNLPBA's 2,000 training
    # abstracts (docs/evaluation.md) less devel's 1,739, as the 18,607 rows once counted here less 1,800
    # markers [U: train.tsv itself not counted, its blob absent from our mirror]
    "biomed-ncbi-disease": TaskSize(train=5_424, tokens=35, val=923, test=940),  # BLURB's sentences: the
    # blank-line blocks of NCBI-disease-IOB's train/devel/test.tsv, none a -DOCSTART-, counted in
    # cambridgeltl/MTL-Bioinformatics-2016@df0df02 [V] (ncbi/ncbi_disease's card, commit 9298cd0, the same
    # corpus split by its own reader, says 5,433 / 924 / 941)
    "biomed-anatem": TaskSize(train=5_861, tokens=35, val=2_118, test=3_830),  # the blank-line blocks of
    # AnatEM-IOB's train/devel/test.tsv (no -DOCSTART-), counted in MTL-Bioinformatics-2016@df0df02 [V];
    # `biomed.load_anatem` splits bigbio/anat_em's documents by `sentence_starts` instead, not counted [U]
    "biomed-bc5cdr": TaskSize(train=4_560, tokens=35, val=4_581, test=4_797),  # the blank-line blocks of
    # BC5CDR-IOB's train/devel/test.tsv (no -DOCSTART-), counted in MTL-Bioinformatics-2016@df0df02 [V]:
    # BLURB's BC5CDR-chem-IOB and -disease-IOB, its B- tags 5,203 / 5,347 / 5,385 and 4,182 / 4,246 /
    # 4,424 mentions, split the same sentences; `biomed.load_bc5cdr` splits bigbio/bc5cdr's 500 / 500 /
    # 500 abstracts by `sentence_starts` instead, not counted [U]
    "biomed-chemprot": TaskSize(train=18_035, tokens=60, val=11_268, test=15_745),  # BLUE's pairs, as
    # BLURB's dataset table gives them (Train / Dev / Test; copied in EMBO/BLURB's README, commit 82929ba)
    # [V]; the pairs `biomed.chemprot_pairs` builds from bigbio's abstracts are not counted [U]
    "biomed-gad": TaskSize(train=4_261, tokens=40, val=535, test=534),  # the bigbio/gad viewer,
    # gad_blurb_bigbio_text: 4.26k / 535 / 534 rows [V]
    "biomed-hoc": TaskSize(train=12_100, tokens=35, val=1_800, test=3_550),  # the bigbio/hallmarks_of_cancer
    # viewer: 17.5k rows, 12.1k / 1.8k / 3.55k [V, as rounded there]: a row is a sentence of one of the 1,852
    # abstracts (BigBio's hallmarks_of_cancer.py `_generate_examples`) [V]; tokens as the NER tasks' [D]
}
"""Tasks whose sizes are the datasets' (comments: the source; [V] seen there, [U] not verified)."""

MSMARCO_JUDGED = 7_437 + 9_260
"""MS MARCO's judged passages, the corpus EncodEval scores against: its BEIR dev qrels' judgements (7,437:
irds/beir_msmarco_dev's card, commit a2542a6, its `qrels` count beside 6,980 queries [V]) and TREC-DL
2019's (9,260: irds/beir_msmarco_test's card [V]), an upper bound (a passage judged twice counts once)."""
NQ_TEST_QUERIES, NQ_JUDGED = 3_452, 4_201
"""BeIR/nq's test queries and qrels (irds/beir_nq's card [V]); EncodEval halves the
queries (`paper.nq_halves`), every half scored against the judged documents."""
MLDR_QUERIES, MLDR_JUDGED = (200, 800), 1_000
"""MLDR-en's dev and test queries (Shitao/MLDR's card [V]) and their judged documents, one positive each
(its layout, the same card) [V]."""

POCKET_MEASURED = {
    "wnut16": {"train": 1675, "val": 239, "test": 480},
    "pubmedqa": {"train": 608, "val": 101, "test": 291},
    "pubmedqa-retrieval": {"train": 560},
    "code-retrieval": {"train": 639, "val": 169, "test": 246},
}
"""Pocket splits below their caps (`registry.POCKET_SIZES`; None: all): counted by loading each task from
its fetched asset with this code (2026-12-04), as docs/evaluation.md's tables say."""
POCKET_CORPUS = {
    "squad-retrieval": (208, 882),  # docs/evaluation.md (its asset not fetched here)
    "boolq-retrieval": (787, 1429),
    "pubmedqa-retrieval": (110, 330),
    "code-retrieval": (169, 246),
}
"""Documents a pocket retrieval task's validation and test scoring encode beside the queries, counted as
`POCKET_MEASURED`."""


def _pocket(name: str) -> TaskSize:
    """A pocket task's size: its caps (`registry.POCKET_SIZES`), or the counts below them; at its max
    length (`tokens` None); squad's tests add its SQuADShifts sets (`pocket.SQUAD_SHIFTS`)."""
    from encoderlab.eval.tasks.pocket import SQUAD_SHIFTS
    from encoderlab.eval.tasks.registry import POCKET_SIZES

    caps, counted = POCKET_SIZES[name], POCKET_MEASURED.get(name, {})
    n = {split: counted.get(split, caps[split]) for split in ("train", "val", "test")}
    docs = POCKET_CORPUS.get(name, (0, 0))
    shifts = len(SQUAD_SHIFTS) * caps["shift"] if "shift" in caps else 0
    return TaskSize(train=n["train"], tokens=None, val=n["val"] + docs[0], test=n["test"] + docs[1] + shifts)


def _encodeval(hub_train: int, test: int, tokens: float) -> TaskSize:
    """An SC/QA task split as EncodEval splits it: floor(0.95 n) of the hub's train rows train, the rest
    validation (`paper.ENCODEVAL_TRAIN_SIZE`), its validation split the test."""
    from encoderlab.eval.tasks.paper import ENCODEVAL_TRAIN_SIZE

    train = math.floor(ENCODEVAL_TRAIN_SIZE * hub_train)
    return TaskSize(train=train, tokens=tokens, val=hub_train - train, test=test)


def _retrieval() -> dict[str, TaskSize]:
    """Paper 1's IR tasks: trained on msmarco-pairs (`train` 0: a fixed step count); scoring encodes the
    split's queries and the judged-only corpus, a query counted at a document's tokens [D]."""
    from encoderlab.eval.tasks.paper import nq_halves

    query, doc = PAIR_TOKENS["msmarco"]
    pair = {"train": 0, "tokens": query + doc}
    nq_val, nq_test = (len(h) for h in nq_halves({str(i) for i in range(NQ_TEST_QUERIES)}))
    return {
        "paper-msmarco": TaskSize(
            **pair, val=6_980 + MSMARCO_JUDGED, test=43 + MSMARCO_JUDGED, eval_tokens=doc
        ),
        "paper-nq": TaskSize(
            **pair, val=nq_val + NQ_JUDGED, test=nq_test + NQ_JUDGED, eval_tokens=PAIR_TOKENS["nq"][1]
        ),
        "paper-mldr": TaskSize(
            **pair,
            val=MLDR_QUERIES[0] + MLDR_JUDGED,
            test=MLDR_QUERIES[1] + MLDR_JUDGED,
            eval_tokens=MLDR_DOC_TOKENS,
        ),
    }


@functools.cache
def builtin_sizes() -> dict[str, TaskSize]:
    """Built-in tasks' sizes for cost estimates (not read by any run): the sizes the code defines
    (pocket caps, EncodEval's split) from the code, the datasets' from the sources cited above."""
    from encoderlab.eval.tasks.registry import POCKET_SIZES

    return {
        **{name: _pocket(name) for name in POCKET_SIZES},
        **{name: _encodeval(*hub) for name, hub in ENCODEVAL_HUB.items()},
        **_retrieval(),
        **SOURCED,
    }


def __getattr__(name: str):
    """`TASK_SIZES`: `builtin_sizes()`, built on first use (it reads the task registry)."""
    if name == "TASK_SIZES":
        return builtin_sizes()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


STEP_FLOOR_S = 0.05
"""Seconds one eager fine-tuning optimizer step of a `BASE_LAYERS` model takes at least, whatever its FLOPs
[D] (module docstring)."""
FORWARD_FLOOR_S = STEP_FLOOR_S / 3
"""Seconds one scoring batch of a `BASE_LAYERS` model takes at least: a forward pass, about a third of a
step's work [D]."""
BASE_LAYERS = 12
"""Layers of the model the floors are set for (210m's; BERT-base's): a model's floors scale with its
layers / this [D]."""


def floored_seconds(flops: float, steps: int, floor_s: float, layers: int) -> float:
    """GPU-seconds of `flops` FLOPs done in `steps` steps (or scoring batches) by a model of `layers`: the
    FLOPs at 40% MFU (`GPU_FLOPS`), or `steps` x `floor_s` x layers / `BASE_LAYERS` if longer. The one
    formula of every estimate, evaluation's (`NodeWork.seconds`) and pretraining's (`plan.py`)."""
    return max(flops / GPU_FLOPS, steps * floor_s * layers / BASE_LAYERS)


@dataclass(frozen=True, kw_only=True)
class EvalCost:
    """The GPU-hours of a study's fine-tuning and scoring, and what they leave out."""

    gpu_hours: float
    """Of the eval nodes counted: each run's steps and scoring batches at the longer of their FLOPs at 40%
    MFU and their floors (`STEP_FLOOR_S`, `FORWARD_FLOOR_S`, x the model's layers / `BASE_LAYERS`)."""
    runs: int
    """Fine-tuning runs counted (nodes that train)."""
    steps: int = 0
    """Optimizer steps of those runs, all together (a reader's own step time x steps: their time)."""
    early_stop: bool = False
    """A counted task stops early (`patience`): its runs may be shorter."""
    at_max_length: bool = False
    """A counted task's inputs are counted at their max length (the pocket tasks')."""
    steps_at_least: bool = False
    """A counted QA task on an epochs schedule: its steps, and so `steps` and `gpu_hours`, are lower bounds."""
    uncounted: tuple[str, ...] = ()
    """Tasks whose nodes are not counted: their size, or the evaluated model's parameters, unknown."""
    tasks: tuple[str, ...] = ()
    """Every task the eval nodes score, counted or not, in the graph's order: `study plan` names a task
    file's tasks from them (it printed "all their tasks")."""

    @property
    def counted(self) -> bool:
        """Whether any eval node was counted (else `text` names only what was not)."""
        return self.runs > 0 or self.gpu_hours > 0

    def text(self) -> str:
        """`evaluation: ~4.1 GPU-hours (245 fine-tuning runs, 292,460 optimizer steps; ...)`, as `study plan`
        prints it; with nothing counted, `evaluation: none (no fine-tuning runs)` or `evaluation: 1 task
        not counted (...): code-retrieval`."""
        from encoderlab.words import count

        if not self.counted:
            if not self.uncounted:
                return "evaluation: none (no fine-tuning runs)"
            return (
                f"evaluation: {count(len(self.uncounted), 'task')} not counted (size or model parameters "
                f"unknown): {', '.join(self.uncounted)}"
            )
        notes = "".join(
            note
            for note, on in (
                ("; early stopping can shorten the runs with patience", self.early_stop),
                ("; inputs of the pocket tasks counted at their max length", self.at_max_length),
                (
                    "; QA runs on an epochs schedule counted at least (a long context makes several windows)",
                    self.steps_at_least,
                ),
            )
            if on
        )
        left = (
            f"; evaluation of {count(len(self.uncounted), 'task')} not counted (size or model parameters unknown): "
            f"{', '.join(self.uncounted)}"
            if self.uncounted
            else ""
        )
        steps = ("at least " if self.steps_at_least else "") + count(self.steps, "optimizer step")
        return (
            f"evaluation: ~{hours_text(self.gpu_hours)} ({count(self.runs, 'fine-tuning run')}, "
            f"{steps}; each step max(FLOPs at 40% MFU, "
            f"{STEP_FLOOR_S * 1000:g} ms per {BASE_LAYERS} layers), a scoring batch max(FLOPs, "
            f"{FORWARD_FLOOR_S * 1000:.0f} ms per {BASE_LAYERS} layers), study/evalcost.py{notes}){left}"
        )


def hours_text(hours: float) -> str:
    """GPU time as `study plan` prints a total: `1,319.9 GPU-hours`, `0.0 GPU-hours`, in minutes from 3
    minutes to an hour (`18 GPU-minutes`, not `0.3 GPU-hours`), in seconds below (a CPU scale's): `2.7
    GPU-seconds`, `31 GPU-seconds`."""
    seconds = hours * 3600
    if hours == 0 or seconds >= 3600:
        return f"{hours:,.1f} GPU-hours"
    if seconds >= 180:
        return f"{seconds / 60:.0f} GPU-minutes"
    return f"{seconds:.2g} GPU-seconds" if seconds < 10 else f"{seconds:.0f} GPU-seconds"


class Evaluated(NamedTuple):
    """What an evaluated model's cost depends on (None: unknown)."""

    params: float | None
    layers: int | None
    positions: int | None = None
    """The longest input it takes: a task of no `max_length` reads 0.99 x it per text (`Task.for_model`)."""


def with_evaluation(plan: StudyPlan, nodes: Iterable[Node]) -> StudyPlan:
    """`plan` with the cost of the eval nodes among `nodes` (the study's graph, `graph.build_graph`)."""
    models = {r.model: Evaluated(r.params, r.layers, r.positions) for r in plan.runs}
    return dataclasses.replace(plan, evaluation=eval_cost(nodes, models))


def eval_cost(nodes: Iterable[Node], models: dict[str, Evaluated]) -> EvalCost:
    """The GPU-hours of the eval nodes among `nodes`; `models`: model id -> what its cost depends on
    (the plan's runs)."""
    seconds, runs, steps, missing, sizes = 0.0, 0, 0, set(), {}
    early = at_max = at_least = False
    cells = _grid_cells(nodes)
    for cfg, nodes_alike in cells:
        src = cfg.source
        n, layers, positions = (
            models.get(cfg.model, Evaluated(None, None)) if src is None else Evaluated(*start_model_size(src))
        )
        if cfg.task not in sizes:
            sizes[cfg.task] = task_size(cfg.task)
        if n is None or layers is None or sizes[cfg.task] is None:
            missing.add(cfg.task)
            continue
        work = node_work(cfg, *sizes[cfg.task], positions=positions)
        seconds += nodes_alike * work.seconds(n, layers)
        runs += nodes_alike * (cfg.trained_by is None)
        steps += nodes_alike * work.steps
        early, at_max = early or work.early_stop, at_max or work.at_max_length
        at_least = at_least or work.steps_at_least
    return EvalCost(
        gpu_hours=seconds / 3600,
        runs=runs,
        steps=steps,
        early_stop=early,
        at_max_length=at_max,
        steps_at_least=at_least,
        uncounted=tuple(sorted(missing)),
        tasks=tuple(dict.fromkeys(cfg.task for cfg, _ in cells)),
    )


def _grid_cells(nodes: Iterable[Node]) -> list[tuple[EvalNode, int]]:
    """The typed configs of the eval nodes, one per set of nodes that differ only in LR and seed (which
    change no cost), with how many nodes each stands for: parsing each of a paper study's ~9k nodes
    took seconds."""
    from encoderlab.study.nodeconfig import EvalNode

    cells: dict[str, list] = {}
    for node in nodes:
        if node.kind == "eval":
            rest = {k: v for k, v in node.config.items() if k not in ("lr", "seed")}
            cell = cells.setdefault(json.dumps(rest, sort_keys=True), [node, 0])
            cell[1] += 1
    return [(EvalNode.of(node), alike) for node, alike in cells.values()]


def task_size(name: str):
    """(task, its `TaskSize`) of a registered task (a built-in from `builtin_sizes()`, a task file's counted
    from its loaded rows), or None when unknown."""
    from encoderlab.eval.tasks import TASKS
    from encoderlab.eval.tasks.registry import BUILTIN

    task = TASKS.get(name)
    if task is None:
        return None
    from encoderlab.study.evalcount import counted

    size = builtin_sizes().get(name) if name in BUILTIN else counted(task)
    if size is None or (size.tokens is None and task.max_length is None and size.eval_tokens is None):
        return None
    return task, size


@dataclass(frozen=True, kw_only=True)
class NodeWork:
    """What one eval node computes: tokens and optimizer steps trained, tokens and batches scored."""

    trained: float
    steps: int
    scored: float
    batches: int
    early_stop: bool
    at_max_length: bool
    steps_at_least: bool = False
    """`steps` is a lower bound (`Task.steps_at_least`: a QA run on an epochs schedule steps through windows)."""

    def seconds(self, params: float, layers: int) -> float:
        """GPU-seconds for a model of `params` and `layers`: each part's FLOPs at 40% MFU, or its floor
        (x layers / `BASE_LAYERS`) if longer."""
        train = floored_seconds(6 * params * self.trained, self.steps, STEP_FLOOR_S, layers)
        return train + floored_seconds(2 * params * self.scored, self.batches, FORWARD_FLOOR_S, layers)


def node_work(cfg, task, size: TaskSize, positions: int | None = None) -> NodeWork:
    """What one eval node trains on and scores (`NodeWork`), each text at most the task's `max_length`,
    or for a task of none, the length it runs at on a model of `positions` (None: unknown, uncapped)."""
    from encoderlab.eval.spec import EVAL_BATCH

    ft = task.finetune
    steps = cfg.max_steps if cfg.max_steps is not None else ft.total_steps(max(size.train, 1))
    # a query and its document, each encoded (and capped at `length`) on its own; a hard negative is a third
    texts = size.texts or (2 if task.family == "ir" else 1)
    length = (
        task.max_length
        if task.max_length is not None or positions is None
        else task.for_model(positions).max_length
    )
    tokens = size.tokens if size.tokens is not None else texts * (length or 0)
    per_text = size.eval_tokens or (tokens / texts)
    if length is not None:
        tokens, per_text = min(tokens, texts * length), min(per_text, length)
    at_max = size.tokens is None and size.eval_tokens is None  # inputs padded to their batch's longest only
    per_epoch = math.ceil(size.train / ft.batch_size) if size.train else 0
    trains = cfg.trained_by is None  # else: scores a model another node fine-tuned, its own sets once
    validations = math.ceil(steps / per_epoch) if trains and ft.select == "best_epoch" and per_epoch else 1
    batches = validations * math.ceil(size.val / EVAL_BATCH) + math.ceil(size.test / EVAL_BATCH)
    return NodeWork(
        trained=steps * ft.batch_size * tokens if trains else 0.0,
        steps=steps if trains else 0,
        scored=(validations * size.val + size.test) * per_text,
        batches=batches,
        early_stop=trains and bool(ft.patience),
        at_max_length=at_max,
        steps_at_least=trains and cfg.max_steps is None and task.steps_at_least,
    )
