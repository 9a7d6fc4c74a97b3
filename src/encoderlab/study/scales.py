"""The scales of the built-in studies, and what a study costs on GPUs.

A `Scale` says how big a built-in study is: model size, training length, batch, the evaluation grid
and the hardware its expected time refers to. `demo` and `cpu` are sized from measured costs on 2 CPU
cores (docs/studies.md); the `gpu-*` scales pass the recipes' paper defaults through untouched
(steps, batch and sequence length None), so their runs are the papers' own settings, on the papers'
corpora and tokenizer, evaluated on paper 1's 12 datasets (`paper` suite), and they refuse a corpus
that a run would repeat (`max_passes`). GPU estimates (`plan.py`) count 6 N D FLOPs at 40% MFU, each
optimizer step at least a floor (`evalcost.floored_seconds`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from encoderlab.study.spec import EvalSpec


@dataclass(frozen=True, kw_only=True)
class Scale:
    """How big a built-in study is: model size, training length and evaluation grid."""

    name: str
    """Scale name."""
    size: str
    """Model size for from-scratch runs."""
    steps: int | None
    """Steps per from-scratch run (None: the recipe's paper default)."""
    seq_len: int | None
    """Packed sequence length (None: recipe default)."""
    micro_batch: int | None
    """Rows per micro-batch (None: recipe default)."""
    grad_accum: int | None
    """Micro-batches per step (None: recipe default)."""
    vocab_size: int
    """Vocabulary of trained tokenizers."""
    max_docs: int | None
    """Cap on corpus documents."""
    lrs: tuple[float, ...]
    """Fine-tuning LR grid."""
    seeds: tuple[int, ...]
    """Fine-tuning seeds."""
    finetune_steps: int | None
    """Cap on fine-tuning steps (None: the tasks' protocol)."""
    run_overrides: dict[str, Any]
    """RunConfig fields by dotted path for every pretraining run (fp32 on CPU: bf16 autocast is slower there)."""
    cka_texts: int
    """Texts for CKA."""
    full: bool
    """Run the whole grid of runs of the paper (False: the reduced demo grid)."""
    pocket_tasks: tuple[str, ...] = ()
    """Tasks of the pocket suite that every model is fine-tuned on (empty: the whole suite)."""
    checkpoint_tasks: tuple[str, ...] = ()
    """Tasks for intermediate checkpoints (empty: the same as final models)."""
    checkpoint_lrs: tuple[float, ...] = ()
    """LRs for intermediate checkpoints (empty: the whole grid)."""
    claim_seeds: tuple[int, ...] = ()
    """Pretraining seeds of the runs a study's claims compare (empty: the study's one seed, so its claims
    compare checkpoints); the other runs keep one seed."""
    stability_lrs: tuple[float, float] = (1e-5, 1e-4)
    """LR range of the stability claim: paper 1's, unless the scale's grid sits above it."""
    budgets: tuple[int, ...] = ()
    """Paper 1's shorter from-scratch budgets, in steps of its 42k timeline (12k, 22k): each shrinks with
    the scale's run length and keeps the long runs' warmup and decay, so it branches from them."""
    budget_fractions: tuple[float, ...] = ()
    """CLM shares trained at the shorter budgets (0: MLM-40 alone, 1: CLM alone)."""
    biphasic_ratios: tuple[float, ...] = ()
    """Masking ratios of CLM 25% -> MLM runs besides MLM-40 (paper 1's mask-ratio figure of biphasic runs)."""
    cpt_budgets: tuple[int, ...] = (12_000,)
    """Continued-pretraining lengths, in steps of paper 1's timeline (+2k, +12k, +22k on 42k bases)."""
    paper_setup: bool = False
    """Paper 1's data, tokenizer and tasks (FineWeb-Edu through EuroBERT's tokenizer, the `paper` suite, from
    the hub or its mirrors); False: offline corpora, a BPE trained on them and the pocket suite."""
    max_passes: float | None = None
    """Refuse a pretraining run that would read its corpus more often (None: allowed, shown by `study plan`)."""
    real_models: bool = False
    """Continue full-size real checkpoints: SmolLM2-135M against MiniLM in paper1-cpt, ModernBERT-base
    or -large (from the hub) on biomed and code in paper2-detour. Hours per run on CPU, so GPU scales only."""
    hardware: str
    """What the expected times refer to."""


_PAPER_LRS = (1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4)


_DEMO_TASKS = ("tweets", "brown-pos")
"""The demo's subset of the pocket suite: an SC and a TC task that separate the objectives at the demo's
size. wnut16 (the TC task until 2026-12-01) scored 0.00 entity F1 for every demo model, so every claim
read undecided; brown-pos separates CLM-containing runs from MLM-40 by 25-40 points at 400 steps
(measured 2026-12-01: CLM 51.3, CLM 25% -> MLM-40 39.3, MLM-40 13.4), which makes the biphasic claim
significant after Holm's correction with three fine-tuning seeds (two cannot: a paired t over two seeds
has one degree of freedom). The reason is a small-scale one: after 400 steps MLM-40's held-out MLM loss
(6.72 nats) is still at the corpus's unigram entropy (6.78), so it predicts token frequencies and its
fine-tuned tagger says 'nn' for 99% of words, while CLM (5.56) has left that plateau. QA (squad, scored
on SQuAD and four SQuADShifts test sets) costs ~2 CPU-minutes per fine-tuning run even capped at a few
steps, so QA claims are tested from scale `cpu` up."""

SCALES: dict[str, Scale] = {
    "demo": Scale(
        name="demo",
        size="tiny",
        steps=400,
        seq_len=128,
        micro_batch=8,
        grad_accum=1,
        vocab_size=4096,
        max_docs=5000,  # the CPT continuation reads past its base's 410k tokens without wrapping
        # One LR, the one validation chose for 5 of the 6 model-task pairs when the grid also had 1e-4
        # (2026-12-01): half the fine-tuning runs, so the demo takes about 5 min; the stability claim,
        # which needs two LRs, is reported as not tested at this scale.
        lrs=(5e-4,),
        seeds=(0, 1, 2),
        finetune_steps=60,
        # held-out losses every 100 steps: the report's curve shows MLM-40 sitting on the unigram plateau
        run_overrides={"precision": "fp32", "validation.every": 100},
        cka_texts=64,
        full=False,
        pocket_tasks=_DEMO_TASKS,
        checkpoint_tasks=("brown-pos",),  # the task whose score moves with pretraining at this size
        checkpoint_lrs=(5e-4,),
        stability_lrs=(1e-4, 5e-4),  # as the cpu scale: its grid sits above paper 1's range
        hardware="2 CPU cores",
    ),
    # Sized from the costs measured on 2026-11-30 (docs/studies.md), one thread per node, two nodes at a
    # time: a 1000-step tiny run takes 11 min (MLM) to 21 min (CLM's dense targets), a mix in between by
    # its CLM share; a fine-tuning run capped at 100 steps 12 s (tweets), 18 s (brown-pos), 74 s (squad).
    # Three pretraining seeds for the three runs the claims compare (MLM-40, CLM, CLM 25% -> MLM-40) and
    # one for the other five: 14 runs, ~204 CPU-min; 14 models x 2 tasks x 3 LRs x 3 seeds plus six
    # checkpointed models x 3 steps x 2 tasks x 3 seeds, ~90 CPU-min; so ~2 h 25 min from start to report.
    # squad is left out (it alone would add ~75 min): at 100 fine-tuning steps its F1 stayed at 4-11, the
    # floor, for every model, so QA claims wait for the gpu scales, as IR does (~55 s more per run).
    # That sizing predates the grid's 12k/22k budgets and biphasic mask ratios (`budgets`, `biphasic_ratios`
    # below): paper1-pfs now trains 17 runs, 23 models with the claim seeds; its expected time is
    # `paper1.paper1_pfs`'s `expected_minutes`, shown by `study list`.
    "cpu": Scale(
        name="cpu",
        size="tiny",
        steps=1000,
        seq_len=256,
        micro_batch=16,
        grad_accum=1,
        vocab_size=8192,
        max_docs=None,
        lrs=(1e-4, 2e-4, 5e-4),
        seeds=(0, 1, 2),
        finetune_steps=100,
        run_overrides={"precision": "fp32"},
        cka_texts=512,
        full=True,
        pocket_tasks=("tweets", "brown-pos"),
        # tweets alone left the data-efficiency curve flat (100 fine-tuning steps do not separate a
        # run's checkpoints); brown-pos separated the final models by 20 points.
        checkpoint_tasks=("tweets", "brown-pos"),
        checkpoint_lrs=(2e-4,),
        claim_seeds=(0, 1, 2),
        # The grid beyond the 42k runs, at one pretraining seed: the budgets for the three compared
        # designs, the biphasic mask ratios, CPT at +2k/+12k/+22k; branching keeps it affordable.
        budgets=(12_000, 22_000),
        budget_fractions=(0.0, 0.25, 1.0),
        biphasic_ratios=(0.2, 0.3, 0.5),
        cpt_budgets=(2_000, 12_000, 22_000),
        # Tiny models train at higher LRs (every model's best LR was 5e-4, the top of this grid, on
        # 2026-11-30): the grid holds one LR of paper 1's 1e-5..1e-4, so stability is measured over it.
        stability_lrs=(1e-4, 5e-4),
        hardware="2 CPU cores",
    ),
    **{
        f"gpu-{size}": Scale(
            name=f"gpu-{size}",
            size=size,
            steps=None,
            seq_len=None,
            micro_batch=None,
            grad_accum=None,
            vocab_size=128_256,
            max_docs=None,
            lrs=_PAPER_LRS,
            seeds=(0, 1, 2, 3, 4),
            finetune_steps=None,
            run_overrides={},
            cka_texts=500,
            full=True,
            budgets=(12_000, 22_000),
            budget_fractions=(0.0, 0.25, 0.5, 0.75, 1.0),
            biphasic_ratios=(0.2, 0.3, 0.5),
            cpt_budgets=(2_000, 12_000, 22_000),
            paper_setup=True,
            max_passes=1.0,
            real_models=True,
            hardware="8 GPUs (H100 class)",
        )
        for size in ("210m", "610m", "1b")
    },
}


def steps_at(scale: Scale, *fractions: float) -> tuple[int, ...]:
    """Intermediate checkpoint steps at fractions of the scale's run length (42k at gpu scales)."""
    total = scale.steps or 42_000
    return tuple(max(1, round(total * f)) for f in fractions)


def common(scale: Scale) -> dict:
    """The StudySpec fields a scale sets."""
    return dict(
        scale=scale.name,
        size=scale.size,
        seq_len=scale.seq_len,
        micro_batch=scale.micro_batch,
        grad_accum=scale.grad_accum,
        steps=scale.steps,
        hardware=scale.hardware,
        run_overrides=scale.run_overrides,
        max_passes=scale.max_passes,
    )


def eval_spec(scale: Scale, suite: str) -> EvalSpec:
    """The scale's evaluation protocol on `suite` (the pocket suite at the scale's tasks)."""
    return EvalSpec(
        suite=suite,
        tasks=scale.pocket_tasks if suite == "pocket" else (),
        lrs=scale.lrs,
        seeds=scale.seeds,
        checkpoint_lrs=scale.checkpoint_lrs,
        checkpoint_tasks=scale.checkpoint_tasks,
        max_steps=scale.finetune_steps,
    )


GPUS = 8
"""GPUs of the gpu scales' expected times."""
GPU_FLOPS = 989e12 * 0.4
"""One H100 at 40% of its dense bf16 peak (FLOP/s)."""

START_MODEL_PARAMS: dict[str, float] = {
    "minilm": 22.7e6,
    "smollm2-135m": 134.5e6,
    "answerdotai/ModernBERT-base": 149e6,
    "answerdotai/ModernBERT-large": 395e6,
}
"""Parameters of the start models the built-in studies continue, for GPU-hour estimates (the model
cards' counts)."""

START_MODEL_LAYERS: dict[str, int] = {
    "minilm": 6,  # all-MiniLM-L6-v2
    "smollm2-135m": 30,
    "answerdotai/ModernBERT-base": 22,
    "answerdotai/ModernBERT-large": 28,
}
"""Transformer blocks of those start models (their configs' `num_hidden_layers`), which scale an
evaluation step's floor (`evalcost.STEP_FLOOR_S`)."""

START_MODEL_POSITIONS: dict[str, int] = {
    "minilm": 512,  # all-MiniLM-L6-v2's learned positions
    "smollm2-135m": 8192,
    "answerdotai/ModernBERT-base": 8192,
    "answerdotai/ModernBERT-large": 8192,
}
"""Positions of those start models (their configs' `max_position_embeddings`): an evaluation task of no
`max_length` truncates its inputs at 0.99 x them (`Task.for_model`), so the cost estimate does too."""


def start_model_size(init: str) -> tuple[float | None, int | None, int | None]:
    """The parameters, blocks and positions of start model `init` (None: unknown): the table's for the
    built-in studies' start models, else what its files on this machine say (a folder, a run, a fetched
    asset, a hub id's mirror or cached snapshot: `model.sizeof`, read without its weights). A start model
    not on this machine, or whose files hold no safetensors, is unknown until a run fetches it. A table
    model pinned to a revision (`OWNER/NAME@REV`) is priced as the table's: a plan's estimate, which a
    later commit of the same repo does not move."""
    from encoderlab.data.hubmodels import split_revision

    repo = split_revision(init)[0]
    if repo in START_MODEL_PARAMS:
        return START_MODEL_PARAMS[repo], START_MODEL_LAYERS.get(repo), START_MODEL_POSITIONS.get(repo)
    from encoderlab.model.sizeof import stored_size
    from encoderlab.model.sources import config_folder, config_positions
    from encoderlab.train.start import start_checkpoint

    found = start_checkpoint(init)
    folder = config_folder(found / "model" if found is not None else init)  # as `start_positions` reads
    if folder is None or not folder.is_dir():
        return None, None, None
    size = stored_size(folder)
    params = None if size is None or size.params is None else float(size.params)
    return params, None if size is None else size.layers, config_positions(folder)
