"""What a study is: a typed, declarative grid, and the named studies of the two papers.

A `StudySpec` lists datasets (a corpus prepared once with one tokenizer), pretraining runs
(`RunSpec`: a named recipe plus overrides, from scratch or from another run or an asset), the
evaluation protocol every run gets (`EvalSpec`), analyses (CKA pairs against a seed-noise pair)
and the paper's claims it checks (`ClaimSpec`). `graph.build_graph` turns it into nodes; nothing
here runs anything, so a spec can be listed, hashed and validated in milliseconds.

Design choices:
- **Controlled variables are data, not conventions.** Runs that are compared share a `group`;
  the graph refuses a group whose runs differ in dataset, data seed or token budget, and every run
  is evaluated with the one `EvalSpec` of the study.
- **Scales are parameters, not separate studies.** A built-in study is a function of a `Scale`
  (model size, steps, batch, evaluation grid); `demo` and `cpu` shrink the grid for 2 CPU cores,
  the `gpu-*` scales pass the recipes' paper defaults through untouched.
- **The grid is explicit.** Sizes x pretraining seeds multiply every run; anything else (mask
  ratios, CLM fractions) is one `RunSpec` per point, so the report can name each row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from encoderlab.errors import UserError

ClaimKind = Literal["beats", "faster_early", "more_stable", "cka_low_layers"]


@dataclass(frozen=True, kw_only=True)
class DataSpec:
    """A pretraining corpus prepared once and read by every run that names it."""

    name: str
    """Id of this dataset inside the study (runs refer to it)."""
    corpus: tuple[str, ...]
    """Asset names (or local paths) mixed into the corpus."""
    tokenizer: str = "train"
    """'train' trains a BPE tokenizer on the corpus; otherwise an asset, model folder or tokenizer path."""
    vocab_size: int = 8192
    """Vocabulary of a trained tokenizer (ignored for an existing one)."""
    max_docs: int | None = None
    """Use at most this many documents (the first ones in a seeded order); None uses all."""
    seed: int = 0
    """Data seed: the document split and the packed order every run reads."""
    decontaminate: bool = True
    """Remove texts of every fetched evaluation set from the corpus (by id and long n-gram overlap)."""


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """One pretraining run (or a reference model evaluated as is, when `recipe` is None)."""

    name: str
    """Id inside the study, used in node names, tables and claims."""
    label: str = ""
    """Display name in the report (defaults to `name`)."""
    recipe: str | None = None
    """Named recipe of `encoderlab.train.recipes`; None evaluates `init` without training."""
    overrides: tuple[str, ...] = ()
    """Recipe parameters (`ratio=0.3`) or dotted overrides of the recipe's RunConfig (`optim.lr=1e-3`)."""
    init: str | None = None
    """Start from another run of this study (its final model) or an asset / model folder / hub id."""
    data: str = "main"
    """Name of the `DataSpec` this run reads."""
    group: str = "main"
    """Runs in one group are compared: same data, same data seed, same token budget (checked)."""
    seed: int | None = None
    """Training seed offset (added to the grid seed); used for seed-noise twins."""
    steps: int | None = None
    """Optimizer steps; None takes the scale's steps (and the recipe's default at gpu scales)."""
    eval_steps: tuple[int, ...] = ()
    """Intermediate checkpoints also evaluated (data-efficiency curve)."""
    mask_ratio: float | None = None
    """MLM ratio of this run, for the mask-ratio figure."""
    tasks: tuple[str, ...] | None = None
    """Restrict evaluation to these tasks of the study's suite (a domain study's own tasks)."""
    evaluate: bool = True
    """Fine-tune and score this run; False for a run only analysed (a CKA seed-noise twin at the demo)."""

    @property
    def display(self) -> str:
        """The label shown in the report."""
        return self.label or self.name


@dataclass(frozen=True, kw_only=True)
class EvalSpec:
    """The fine-tuning protocol every run of the study gets."""

    suite: str = "pocket"
    """Evaluation suite of `encoderlab.eval`."""
    tasks: tuple[str, ...] = ()
    """Tasks of the suite (empty: all)."""
    lrs: tuple[float, ...] = (1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4)
    """Learning-rate grid; the best one is chosen on validation."""
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    """Fine-tuning seeds; the same seeds for every model, so comparisons are paired."""
    checkpoint_lrs: tuple[float, ...] = ()
    """LRs for intermediate checkpoints (empty: the full grid)."""
    checkpoint_tasks: tuple[str, ...] = ()
    """Tasks for intermediate checkpoints (empty: the same as final models)."""
    max_steps: int | None = None
    """Cap on fine-tuning steps per run, for every task (None: each task's own protocol). Only the
    demo sets it, to fit 2 CPU cores; its scores are then a smoke signal, not the paper's protocol."""


@dataclass(frozen=True, kw_only=True)
class CkaSpec:
    """Layer-wise CKA between two runs, with a seed-noise pair as the baseline."""

    a: str
    """Run compared (e.g. the detour)."""
    b: str
    """Run it is compared to (e.g. the MLM baseline)."""
    noise: tuple[str, str] | None = None
    """Two runs that differ only in seed; their divergence is the noise floor per layer."""
    texts: str = "biomed"
    """Asset of held-out texts."""
    n_texts: int = 500
    """Number of texts (the paper: 500)."""
    max_length: int = 512
    """Tokens per text."""


@dataclass(frozen=True, kw_only=True)
class ClaimSpec:
    """A finding of a paper, checked on this study's numbers."""

    id: str
    """Short id."""
    text: str
    """The claim as the paper states it."""
    kind: ClaimKind
    """beats: a > b on `family`; faster_early: a > b at the first intermediate checkpoint;
    more_stable: a's score varies less across LRs than b's; cka_low_layers: the divergence of
    `a` vs `b` over seed noise is largest in the low third of layers."""
    a: str
    """Run expected to win (or the compared run for CKA)."""
    b: str
    """Run expected to lose (or the reference run for CKA)."""
    family: str | None = None
    """Task family (SC, TC, QA, IR) or None for the average over all tasks."""


@dataclass(frozen=True, kw_only=True)
class StudySpec:
    """A whole controlled comparison: data, runs, evaluation, analyses, claims."""

    name: str
    """Study name."""
    scale: str
    """Scale name this spec was built for."""
    description: str
    """One paragraph for the report."""
    size: str | None
    """Model size of from-scratch runs (None: the study only adapts existing models)."""
    seq_len: int | None
    """Packed sequence length (None: the recipe default)."""
    micro_batch: int | None
    """Rows per micro-batch (None: the recipe default)."""
    grad_accum: int | None
    """Micro-batches per step (None: the recipe default)."""
    steps: int | None
    """Default steps per run (None: the recipe default)."""
    data: tuple[DataSpec, ...]
    """Datasets."""
    runs: tuple[RunSpec, ...]
    """Pretraining runs and reference models."""
    eval: EvalSpec
    """Evaluation protocol."""
    baseline: str
    """Run every other run is compared to in the results table."""
    seeds: tuple[int, ...] = (0,)
    """Pretraining seeds; every run is trained once per seed."""
    cka: tuple[CkaSpec, ...] = ()
    """CKA analyses."""
    claims: tuple[ClaimSpec, ...] = ()
    """Claims checked in the report."""
    expected_minutes: float = 0.0
    """Expected wall time on the scale's hardware (shown by `study list`)."""
    hardware: str = ""
    """Hardware the expected time refers to."""
    run_overrides: tuple[str, ...] = ()
    """RunConfig overrides applied to every pretraining run (e.g. precision=fp32 on CPU)."""

    def __post_init__(self) -> None:
        names = [r.name for r in self.runs]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"run names must be unique, repeated: {', '.join(dup)}")
        datasets = {d.name for d in self.data}
        for run in self.runs:
            if run.data not in datasets:
                raise ValueError(
                    f"run {run.name} reads dataset '{run.data}'; defined: {', '.join(sorted(datasets))}"
                )
        refs = [self.baseline] + [n for c in self.claims for n in (c.a, c.b)]
        refs += [n for c in self.cka for n in (c.a, c.b, *(c.noise or ()))]
        unknown = sorted(set(refs) - set(names))
        if unknown:
            raise ValueError(f"unknown run(s) referenced: {', '.join(unknown)}; runs: {', '.join(names)}")

    def run(self, name: str) -> RunSpec:
        """The run called `name`."""
        return next(r for r in self.runs if r.name == name)


# --------------------------------------------------------------------------- scales


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
    run_overrides: tuple[str, ...]
    """RunConfig overrides for every pretraining run (fp32 on CPU: bf16 autocast is slower there)."""
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
    real_models: bool = False
    """Continue full-size real checkpoints: SmolLM2-135M against MiniLM in paper1-cpt, ModernBERT-base
    or -large (from the hub) on biomed and code in paper2-detour. Hours per run on CPU, so GPU scales only."""
    hardware: str
    """What the expected times refer to."""


_PAPER_LRS = (1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4)

_DEMO_TASKS = ("tweets", "wnut16")
"""The demo's subset of the pocket suite: the fastest SC and TC tasks. QA (squad, scored on SQuAD
and four SQuADShifts test sets) costs ~2 CPU-minutes per fine-tuning run even capped at a few
steps, more than the demo's whole evaluation budget, so QA claims are tested from scale `cpu` up."""

SCALES: dict[str, Scale] = {
    "demo": Scale(
        name="demo",
        size="tiny",
        steps=400,
        seq_len=128,
        micro_batch=8,
        grad_accum=1,
        vocab_size=4096,
        max_docs=4000,
        lrs=(1e-4, 5e-4),
        seeds=(0, 1),
        finetune_steps=60,
        run_overrides=("precision=fp32",),
        cka_texts=64,
        full=False,
        pocket_tasks=_DEMO_TASKS,
        checkpoint_tasks=_DEMO_TASKS[:1],
        checkpoint_lrs=(5e-4,),
        hardware="2 CPU cores",
    ),
    # Sized to finish inside a few hours on 2 cores with --jobs 2, from measured costs: tiny trains
    # 16 x 256 tokens in ~0.3 s, so paper1-pfs's eight 1000-step runs take ~45 min; one fine-tuning run
    # capped at 100 steps, 1 thread, takes ~12 s (tweets), ~18 s (brown-pos) and ~74 s (squad: 384-token
    # inputs, then SQuAD and four SQuADShifts sets scored), so 8 models x 3 tasks x 3 LRs x 3 seeds take
    # ~70 min two at a time. IR (squad-retrieval, ~55 s more per run) would add ~35 min: gpu scales.
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
        run_overrides=("precision=fp32",),
        cka_texts=512,
        full=True,
        pocket_tasks=("tweets", "brown-pos", "squad"),
        # tweets alone left the data-efficiency curve flat (100 fine-tuning steps do not separate a
        # run's checkpoints); brown-pos separated the final models by 20 points.
        checkpoint_tasks=("tweets", "brown-pos"),
        checkpoint_lrs=(2e-4,),
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
            vocab_size=32768,
            max_docs=None,
            lrs=_PAPER_LRS,
            seeds=(0, 1, 2, 3, 4),
            finetune_steps=None,
            run_overrides=(),
            cka_texts=500,
            full=True,
            real_models=True,
            hardware="8 GPUs (H100 class)",
        )
        for size in ("210m", "610m", "1b")
    },
}


# --------------------------------------------------------------------------- built-in studies


def _steps_at(scale: Scale, *fractions: float) -> tuple[int, ...]:
    """Intermediate checkpoint steps at fractions of the scale's run length (42k at gpu scales)."""
    total = scale.steps or 42_000
    return tuple(max(1, round(total * f)) for f in fractions)


def _common(scale: Scale) -> dict:
    return dict(
        scale=scale.name,
        size=scale.size,
        seq_len=scale.seq_len,
        micro_batch=scale.micro_batch,
        grad_accum=scale.grad_accum,
        steps=scale.steps,
        hardware=scale.hardware,
        run_overrides=scale.run_overrides,
    )


def _eval(scale: Scale, suite: str) -> EvalSpec:
    return EvalSpec(
        suite=suite,
        tasks=scale.pocket_tasks if suite == "pocket" else (),
        lrs=scale.lrs,
        seeds=scale.seeds,
        checkpoint_lrs=scale.checkpoint_lrs,
        checkpoint_tasks=scale.checkpoint_tasks,
        max_steps=scale.finetune_steps,
    )


def paper1_pfs(scale: Scale) -> StudySpec:
    """Paper 1, pretraining from scratch: MLM ratios, CLM, CLM->MLM splits under one budget."""
    early = _steps_at(scale, 0.125, 0.25, 0.5) if scale.full else _steps_at(scale, 0.25)
    ratios = (0.2, 0.3, 0.4, 0.5) if scale.full else (0.4,)
    fractions = (0.25, 0.5, 0.75) if scale.full else (0.25,)
    runs = [
        RunSpec(
            name=f"mlm{round(r * 100)}",
            label=f"MLM-{round(r * 100)}",
            recipe="pfs-mlm",
            overrides=(f"ratio={r}",),
            mask_ratio=r,
            eval_steps=early if r == 0.4 else (),
        )
        for r in ratios
    ]
    runs.append(RunSpec(name="clm", label="CLM", recipe="pfs-clm", eval_steps=early))
    runs += [
        RunSpec(
            name=f"clm{round(f * 100)}-mlm40",
            label=f"CLM {round(f * 100)}% -> MLM-40",
            recipe="pfs-clm-mlm",
            overrides=(f"clm_fraction={f}",),
        )
        for f in fractions
    ]
    data = DataSpec(
        name="main",
        corpus=("general-en",) if scale.full else ("wiki-leads",),
        vocab_size=scale.vocab_size,
        max_docs=scale.max_docs,
    )
    claims = (
        ClaimSpec(
            id="mlm-sc",
            text="MLM beats CLM on sequence classification",
            kind="beats",
            a="mlm40",
            b="clm",
            family="sc",
        ),
        ClaimSpec(
            id="mlm-qa", text="MLM beats CLM on extractive QA", kind="beats", a="mlm40", b="clm", family="qa"
        ),
        ClaimSpec(
            id="clm-early",
            text="CLM learns faster early in pretraining",
            kind="faster_early",
            a="clm",
            b="mlm40",
        ),
        ClaimSpec(
            id="clm-stable",
            text="CLM checkpoints fine-tune more stably across learning rates",
            kind="more_stable",
            a="clm",
            b="mlm40",
        ),
        ClaimSpec(
            id="clm25-mlm",
            text="CLM then MLM (25/75) beats MLM alone under the same budget",
            kind="beats",
            a="clm25-mlm40",
            b="mlm40",
        ),
    )
    return StudySpec(
        name="paper1-pfs",
        description=(
            "Paper 1's from-scratch comparison: MLM at several masking ratios, CLM, and CLM followed by "
            "MLM-40 at several CLM fractions, all on the same tokens in the same order and the same number "
            "of steps, each fine-tuned with the same LR x seed protocol."
        ),
        data=(data,),
        runs=tuple(runs),
        eval=_eval(scale, "pocket"),
        baseline="mlm40",
        claims=claims,
        expected_minutes={"demo": 6, "cpu": 120}.get(scale.name, 0.0),
        **_common(scale),
    )


def paper1_cpt(scale: Scale) -> StudySpec:
    """Paper 1, continued pretraining: CLM and MLM bases each continued with MLM-40."""
    base_steps = scale.steps
    cpt_steps = max(1, (scale.steps or 42_000) // 4) if scale.steps else 12_000
    runs = [
        RunSpec(name="clm-base", label="CLM base", recipe="pfs-clm", group="bases"),
        RunSpec(
            name="mlm-base",
            label="MLM-40 base",
            recipe="pfs-mlm",
            overrides=("ratio=0.4",),
            group="bases",
        ),
        RunSpec(
            name="clm-base+mlm", label="CLM base + MLM-40", recipe="cpt-mlm", init="clm-base", steps=cpt_steps
        ),
        RunSpec(
            name="mlm-base+mlm", label="MLM base + MLM-40", recipe="cpt-mlm", init="mlm-base", steps=cpt_steps
        ),
    ]
    data = [
        DataSpec(
            name="main",
            corpus=("general-en",) if scale.full else ("wiki-leads",),
            vocab_size=scale.vocab_size,
            max_docs=scale.max_docs,
        )
    ]
    claims = [
        ClaimSpec(
            id="cpt-clm",
            text="MLM-adapting a CLM-pretrained model beats continuing MLM on an MLM model",
            kind="beats",
            a="clm-base+mlm",
            b="mlm-base+mlm",
        ),
    ]
    if scale.real_models:
        # A real decoder turned encoder against a real encoder, each with the same MLM budget on
        # the same documents (each in its own tokenizer, so each has its own prepared data).
        data += [
            DataSpec(
                name="smollm2", corpus=data[0].corpus, tokenizer="smollm2-135m", max_docs=scale.max_docs
            ),
            DataSpec(name="minilm", corpus=data[0].corpus, tokenizer="minilm", max_docs=scale.max_docs),
        ]
        runs += [
            RunSpec(
                name="smollm2+mlm",
                label="SmolLM2-135M + MLM-40",
                recipe="cpt-mlm",
                init="smollm2-135m",
                data="smollm2",
                group="real",
                steps=cpt_steps,
            ),
            RunSpec(
                name="minilm+mlm",
                label="MiniLM + MLM-40",
                recipe="cpt-mlm",
                init="minilm",
                data="minilm",
                group="real",
                steps=cpt_steps,
            ),
        ]
        claims.append(
            ClaimSpec(
                id="cpt-real",
                text="A real decoder MLM-adapted beats a real encoder given the same continued MLM",
                kind="beats",
                a="smollm2+mlm",
                b="minilm+mlm",
            )
        )
    return StudySpec(
        name="paper1-cpt",
        description=(
            "Paper 1's continued pretraining: a CLM base and an MLM base trained on the same data for the same "
            "steps, each continued with MLM-40 for the same budget; at full scales also SmolLM2-135M (a real "
            "decoder) MLM-adapted against MiniLM with continued MLM."
        ),
        data=tuple(data),
        runs=tuple(runs),
        eval=_eval(scale, "pocket"),
        baseline="mlm-base+mlm",
        claims=tuple(claims),
        expected_minutes={"demo": 11, "cpu": 60}.get(scale.name, 0.0),
        **{**_common(scale), "steps": base_steps},
    )


_DETOUR_DEMO_RUNS = {"steps": 40, "micro_batch": 8}
"""The demo continues MiniLM (22M parameters, 30k vocabulary): ~2-3 s per step on 2 shared CPU
cores, so three runs of the scale's 400 steps alone would take over an hour."""
_DETOUR_DEMO_EVAL = EvalSpec(suite="domain", lrs=(1e-4,), seeds=(0, 1), max_steps=12)
"""One task (_DETOUR_CPU_DOMAINS), one LR, two seeds, 12 fine-tuning steps: a smoke signal that fits
the 15-minute demo (a pubmedqa-retrieval node took about 97 s on 2 cores, the whole demo 12 min)."""


_DETOUR_CPU_RUNS = {"steps": 100, "micro_batch": 8}
"""MiniLM at 8 x 256 tokens per step for 100 steps, plus the 10-step decay. Measured on one thread: a
run with a CLM phase 460-530 CPU-s (the 30k-vocabulary head over every token costs as much as the
encoder), an MLM-phase run 310-340 CPU-s; the five continued runs take ~35 CPU-minutes."""
_DETOUR_CPU_EVAL = EvalSpec(
    suite="domain", tasks=("pubmedqa-retrieval",), lrs=(3e-5, 1e-4), seeds=(0, 1, 2), max_steps=12
)
"""pubmedqa-retrieval at 2 LRs x 3 seeds, 12 fine-tuning steps (a 24-step node cost 225 CPU-s, most of
it training). PubMedQA classification with its own 150-step protocol measured 436 s per node (MiniLM,
2 threads) and still scored below the majority class, so its 36 nodes (~4.4 h) bought no signal; it
waits for a GPU with the code domain."""
_DETOUR_CPU_DOMAINS = {"biomed": ("pubmedqa-retrieval",)}
"""The domain and task of the CPU scales: retrieval, where MiniLM (a sentence-embedding model) starts
strong and continued pretraining moves its score. PubMedQA classification left every model at its
majority class in the demo, and the start model below it with the cpu protocol."""


_DETOUR_GPU_MODELS = {
    "210m": ("answerdotai/ModernBERT-base", 149e6, 10_000_000_000),
    "610m": ("answerdotai/ModernBERT-large", 395e6, 25_000_000_000),
    "1b": ("answerdotai/ModernBERT-large", 395e6, 50_000_000_000),
}
"""(model, parameters, CLM or MLM tokens) of paper 2's grid (papers.md 2.3) by gpu scale: Base at 10B,
Large at 25B (the French sweep's best) and at 50B (the English runs); each adds a 10% decay."""


def paper2_detour(scale: Scale) -> StudySpec:
    """Paper 2: a CLM detour against the MLM baseline when continuing an existing encoder on a domain."""
    base, tokens_override, run_flops = "minilm", (), 0.0
    if scale.real_models:
        base, params, tokens = _DETOUR_GPU_MODELS[scale.size]
        tokens_override, run_flops = (f"tokens={tokens}",), 6 * params * tokens * 1.1  # + the 10% decay
    domains = {"biomed": ("pubmedqa", "pubmedqa-retrieval"), "code": ("code-retrieval",)}
    if not scale.real_models:
        domains = _DETOUR_CPU_DOMAINS
    data, runs, claims, cka = [], [], [], []
    runs.append(
        RunSpec(
            name="start",
            label=f"{base} (start)",
            init=base,
            group="reference",
            data=next(iter(domains)),
            tasks=tuple(t for tasks in domains.values() for t in tasks),
        )
    )
    for dom, tasks in domains.items():
        data.append(
            DataSpec(
                name=dom,
                corpus=(dom if dom != "code" else "code-python",),
                tokenizer=base,
                max_docs=scale.max_docs,
            )
        )
        common = dict(init=base, data=dom, group=dom, tasks=tasks, overrides=tokens_override)
        runs += [
            RunSpec(name=f"detour-{dom}", label=f"CLM detour ({dom})", recipe="detour", **common),
            RunSpec(
                name=f"baseline-{dom}", label=f"MLM baseline ({dom})", recipe="detour-baseline", **common
            ),
            RunSpec(
                name=f"baseline-{dom}-s2",
                label=f"MLM baseline, seed 2 ({dom})",
                recipe="detour-baseline",
                seed=1,
                evaluate=scale.full,  # the demo's budget pays for its CKA noise floor only
                **common,
            ),
        ]
        if scale.full:
            runs += [
                RunSpec(
                    name=f"freeze-low-{dom}",
                    label=f"detour, low layers frozen in CLM ({dom})",
                    recipe="detour-freeze-low",
                    **common,
                ),
                RunSpec(
                    name=f"freeze-mid-{dom}",
                    label=f"detour, middle layers frozen in CLM ({dom})",
                    recipe="detour-freeze-mid",
                    **common,
                ),
            ]
            claims.append(
                ClaimSpec(
                    id=f"freeze-{dom}",
                    text=(
                        "The detour's gain lives in the low layers: freezing the middle layers during CLM "
                        f"beats freezing the low layers ({dom})"
                    ),
                    kind="beats",
                    a=f"freeze-mid-{dom}",
                    b=f"freeze-low-{dom}",
                )
            )
        claims.append(
            ClaimSpec(
                id=f"detour-{dom}",
                text=f"The CLM detour beats the MLM baseline on the {dom} domain suite",
                kind="beats",
                a=f"detour-{dom}",
                b=f"baseline-{dom}",
            )
        )
        cka.append(
            CkaSpec(
                a=f"detour-{dom}",
                b=f"baseline-{dom}",
                noise=(f"baseline-{dom}-s2", f"baseline-{dom}"),
                texts="pubmedqa" if dom == "biomed" else "code-python",
                n_texts=scale.cka_texts,
            )
        )
        claims.append(
            ClaimSpec(
                id=f"cka-{dom}",
                text=f"CKA divergence from the detour is concentrated in the low layers ({dom})",
                kind="cka_low_layers",
                a=f"detour-{dom}",
                b=f"baseline-{dom}",
            )
        )
    return StudySpec(
        name="paper2-detour",
        description=(
            f"Paper 2: continue {base} on a domain corpus with a CLM detour (CLM, then a short MLM-15% decay) "
            "against the MLM baseline (MLM-30%, then the same decay) on identical data and compute; "
            "evaluation on the domain suite, layer-wise CKA against a seed-noise baseline, and at full "
            "scales freezing the low or middle layers during the CLM phase."
        ),
        data=tuple(data),
        runs=tuple(runs),
        eval={"demo": _DETOUR_DEMO_EVAL, "cpu": _DETOUR_CPU_EVAL}.get(scale.name) or _eval(scale, "domain"),
        baseline=f"baseline-{next(iter(domains))}",
        cka=tuple(cka),
        claims=tuple(claims),
        expected_minutes={"demo": 15, "cpu": 60}.get(scale.name)
        or gpu_minutes(run_flops * sum(run.recipe is not None for run in runs)),
        **{
            **_common(scale),
            "size": None,
            **{"demo": _DETOUR_DEMO_RUNS, "cpu": _DETOUR_CPU_RUNS}.get(scale.name, {}),
        },
    )


STUDIES: dict[str, Callable[[Scale], StudySpec]] = {
    "paper1-pfs": paper1_pfs,
    "paper1-cpt": paper1_cpt,
    "paper2-detour": paper2_detour,
}


def get_study(name: str, scale: str = "demo", overrides: dict | None = None) -> StudySpec:
    """The built-in study `name` at `scale`; fields of the spec can be replaced by `overrides`."""
    if name not in STUDIES:
        raise UserError(f"unknown study '{name}'; valid: {', '.join(STUDIES)} (see: encoderlab study list)")
    if scale not in SCALES:
        raise UserError(f"unknown scale '{scale}' for study {name}; valid: {', '.join(SCALES)}")
    spec = STUDIES[name](SCALES[scale])
    return replace(spec, **(overrides or {}))


_PAPER1_TOKENS_PER_STEP = 2_359_296
"""Paper 1's tokens per step (papers.md 1.3): 42k steps ~ 99B tokens."""
_GPU_FLOPS = 8 * 989e12 * 0.4
"""8 H100s at 40% of their dense bf16 peak."""


def gpu_minutes(training_flops: float) -> float:
    """Minutes of 8 GPUs for `training_flops`, plus 10% for evaluation."""
    return round(1.1 * training_flops / _GPU_FLOPS / 60, -1)


def estimate_minutes(spec: StudySpec) -> float:
    """The spec's expected minutes, or for paper 1's gpu scales an estimate of 6 N D FLOPs per run."""
    if spec.expected_minutes:
        return spec.expected_minutes
    from encoderlab.model.config import ModelConfig

    params = ModelConfig.from_size(spec.size or "210m", vocab_size=32_768).num_params()
    steps = sum(run.steps or 42_000 for run in spec.runs if run.recipe is not None)
    return gpu_minutes(6 * params * steps * _PAPER1_TOKENS_PER_STEP)


def list_studies() -> list[tuple[str, str, float, str]]:
    """(study, scale, expected minutes, hardware) for every built-in study and scale."""
    return [
        (name, scale, estimate_minutes(s := build(sc)), s.hardware)
        for name, build in STUDIES.items()
        for scale, sc in SCALES.items()
    ]


__all__ = [
    "SCALES",
    "STUDIES",
    "CkaSpec",
    "ClaimSpec",
    "DataSpec",
    "EvalSpec",
    "RunSpec",
    "Scale",
    "StudySpec",
    "get_study",
    "list_studies",
]
