"""Named recipes: Python functions that return a complete `RunConfig`.

An experiment is a recipe plus overrides (`--param` for the recipe's arguments, `--set` for any
field of the result). Paper hyperparameters are the defaults of the paper recipes; the `smoke-*`
recipes run the same code paths on a tiny model in seconds.

Paper 1's settings checked against Optimus (EuroBERT's trainer, main branch; the MLM_vs_CLM branch was
not available): torch AdamW (0.9, 0.95), eps 1e-5, weight decay 0.1 on every parameter, clip 1.0, WSD
from 0 to the peak and down to 0 (`div_factor` and `final_div_factor` 0), bf16 autocast, and MLM masks
drawn per position (`PAPER1_MASKING`). Four differences are ours. Optimus counts its schedule in
micro-batches and calls `scheduler.step()` after each backward, before that step's `optimizer.step()`
(optimus/trainer/pretrain.py), so its update k (0-based, accumulation A) runs at the schedule after
(k + 1) A micro-batches: (k + 1) / W + 1 / (W A) of the peak in the warmup, decay progress
(k + 1 - start) / D + 1 / (D A). Ours runs at (k + 1) / W and k / D (`train/schedule.py`): behind by
peak / (W A) in the warmup and by (1 + 1 / A) peak / D in the decay, at most 2 peak / D = 5e-7 over a 2k
decay. Without accumulation (as paper 1's count implies: 192 GPUs x 12 rows x 1,024 tokens is its
2,359,296 per step) Optimus' first update runs at 2 / W of the peak and its last two at LR 0; ours never
runs at 0. And Optimus' loss is the mean of each micro-batch's mean
(`F.cross_entropy` per micro-batch divided by the accumulation, then averaged over ranks,
optimus/trainer/pretrain.py), ours the mean over every target of the global batch (`train/step.py`).
They differ only as the target counts of micro-batches do: about 0.8% (one standard deviation) for
MLM-40 drawn per position over 12 x 2048 tokens. And Optimus attends over its whole 2,048-token blocks of
packed documents (default `var_len: False`, optimus/trainer/data.py), ours within each document
(docs/recipes.md). And Optimus stores a document as its tokens then EOS (optimus/dataprocess/
tokenize_dataset.py; no BOS on its tiktoken path), ours as BOS + tokens + EOS.

Readings of what the papers leave open (paper 1's appendix, paper 2's chapter 5 and
appendix in Rian-T/thesis), chosen here:
  * Paper 1 batch: 1152 rows x 2048 tokens = 2,359,296 tokens/step (the appendix count).
  * `pfs-clm-mlm` uses one WSD schedule spanning both phases: the CLM phase warms up then holds the
    peak, the MLM phase holds it and decays at the end; the optimizer state is kept at the switch.
  * `cpt-mlm`: WSD with a short warmup and a linear decay (the paper's CPT schedule is unknown); a fresh
    optimizer by default (`load=weights`), as Optimus' own continued-pretraining example starts from a
    model's weights (`model.huggingface_id`, no `reload_checkpoint`: Nicolas-BZRD/EuroBERT
    examples/continuous_pretraining.ipynb); `load=full` carries an encoderlab checkpoint's moments instead.
  * `detour`: Composer's DecoupledAdamW (0.9, 0.98), eps 1e-6, wd 1e-5 scaled by lr_t / lr (not
    torch's lr_t * wd), no decay on norms/biases: one of the two optimizers paper 2's "decoupled AdamW"
    fits, our pick (optimi's StableAdamW with decouple_lr, ModernBERT's own, is `optim.kind=stable_adamw`);
    clip 1.0 (ours: clipping is not reported, and BioClinical-ModernBERT's CPT configs clip nothing; ModernBERT's
    own decoupled_adamw configs clip the norm at 1.0, AnswerDotAI/ModernBERT yamls/main/flex-bert-rope-base.yaml
    `algorithms.gradient_clipping`, while its StableAdamW ones turn clipping off), LR 2e-4
    with a 100M-token warmup, 384 x 8192-token batches; MLM phases (the baseline's MLM-30 and both
    arms' MLM-15 decay) mask as ModernBERT's pipeline does: per-token Bernoulli, 80/10/10. Its warmup
    is ours, (s + 1) / W with W = ceil(100M / tokens per step) (32 updates): Composer's
    ConstantWithWarmupScheduler (composer/optim/scheduler.py) gives t / t_warmup in tokens, so its first
    update runs at LR 0 and each warmup update one step behind ours (at most peak / W apart, for W
    updates). The 1-sqrt decay is ModernBERT's OneMinusSqrtScheduler exactly (`train/schedule.py`). Composer
    weighs each micro-batch's mean loss by its share of the samples (its default
    `accumulate_train_batch_on_tokens=False`), ours by its share of the targets, as for paper 1.
"""

from __future__ import annotations

import inspect
import math
import typing
from collections.abc import Callable, Mapping
from typing import Any

from encoderlab.config import coerce, parse_scalar, type_hints
from encoderlab.configforms import command_line_values
from encoderlab.data.batch import BatchLayout
from encoderlab.errors import UserError, closest, did_you_mean
from encoderlab.objectives import CLM, MLM, Objective
from encoderlab.train.config import CheckpointConfig, DataConfig, ModelSpec, OptimConfig, Phase, RunConfig
from encoderlab.train.recipe_refusals import ParamRefusal, involved_params
from encoderlab.train.schedule import Schedule
from encoderlab.words import count, share_hint

PAPER1_OPTIM = OptimConfig(lr=5e-4, betas=(0.9, 0.95), eps=1e-5, weight_decay=0.1, clip=1.0)
PAPER2_OPTIM = OptimConfig(
    kind="decoupled_adamw",
    lr=2e-4,
    betas=(0.9, 0.98),
    eps=1e-6,
    weight_decay=1e-5,
    decay_norms_and_biases=False,
    clip=1.0,
)
PAPER1_MASKING: dict[str, Any] = dict(replacement="mask", selection="bernoulli")
"""Optimus' masking (`optimus/trainer/data.py` MaskingDataset, main branch): each non-special position is
selected with probability p (`np.random.rand(...) < mlm_probability`) and every selected one becomes the
mask token (`mask_probability=1.0`); the count per row varies."""
PAPER2_MASKING: dict[str, Any] = dict(replacement="80-10-10", selection="bernoulli")
"""ModernBERT's masking (per-token Bernoulli, 80/10/10 in expectation), used by both arms of paper 2."""


def _layout(seq_len: int, global_batch: int, micro_batch_size: int, world_size: int) -> BatchLayout:
    sizes = {"global_batch": global_batch, "micro_batch_size": micro_batch_size, "world_size": world_size}
    for name, value in sizes.items():  # a zero divides below; named as the parameter the user set
        if value < 1:
            raise ParamRefusal(
                f"recipe parameter {name} must be >= 1, got {value}; pass --param {name}=N with N >= 1"
            )
    per_step = micro_batch_size * world_size
    if global_batch % per_step:
        raise ParamRefusal(
            f"global_batch {global_batch} is not a multiple of micro_batch_size x world_size = {per_step}; "
            "change one of them"
        )
    return BatchLayout(
        seq_len=seq_len,
        micro_batch_size=micro_batch_size,
        grad_accum=global_batch // per_step,
        world_size=world_size,
    )


def pfs_clm_mlm(
    clm_fraction: float = 0.25,
    ratio: float = 0.40,
    steps: int = 42_000,
    warmup: int = 2_000,
    decay: int = 2_000,
    size: str = "210m",
    data: str = "",
    seq_len: int = 2048,
    global_batch: int = 1152,
    micro_batch_size: int = 12,
    world_size: int = 1,
    checkpoint_every: int = 1000,
) -> RunConfig:
    """Paper 1 biphasic from scratch: CLM for clm_fraction of the steps, then MLM; one WSD schedule."""
    if not 0.0 <= clm_fraction <= 1.0:
        share = share_hint(clm_fraction, "steps", 0.25)  # a percentage written for a share
        raise ParamRefusal(f"clm_fraction must be in [0, 1], got {clm_fraction}{share}")
    if steps < warmup + decay:  # one WSD schedule spans the run: it must hold its warmup and decay
        raise ParamRefusal(
            f"steps must be at least warmup + decay = {warmup + decay}, got {steps}; raise steps "
            "(or lower warmup/decay where the recipe takes them)"
        )
    clm_steps = round(steps * clm_fraction)
    if 0 < clm_fraction < 1 and clm_steps in (0, steps):  # one phase would be dropped without a word
        left, pure = ("CLM", 0) if clm_steps == 0 else ("MLM", 1)
        raise ParamRefusal(
            f"clm_fraction {clm_fraction} of {steps} steps rounds to {clm_steps} CLM steps, leaving no "
            f"{left} phase; raise steps, or pass clm_fraction={pure} for a run of one objective"
        )
    if 0 < clm_steps < warmup:
        raise ParamRefusal(
            f"the CLM phase ({clm_steps} steps: clm_fraction {clm_fraction} of {steps}) is shorter than the "
            f"warmup ({warmup}); raise clm_fraction or steps (or lower warmup where the recipe takes it)"
        )  # a smoke recipe takes no warmup, and --set applies after the recipe: "shorten warmup" was no fix
    objectives: list[tuple[Objective, int]] = [
        (CLM(), clm_steps),
        (MLM(mask_ratio=ratio, **PAPER1_MASKING), steps - clm_steps),
    ]
    objectives = [(o, n) for o, n in objectives if n > 0]
    phases = []
    for i, (objective, n) in enumerate(objectives):
        last = i == len(objectives) - 1
        sched = Schedule(
            kind="wsd" if last else "constant", warmup=warmup if i == 0 else 0, decay=decay if last else 0
        )
        phases.append(Phase(objective=objective, steps=n, schedule=sched))
    return RunConfig(
        model=ModelSpec(size=size),
        data=DataConfig(path=data),
        layout=_layout(seq_len, global_batch, micro_batch_size, world_size),
        optim=PAPER1_OPTIM,
        phases=tuple(phases),
        total_steps=steps,
        checkpoint=CheckpointConfig(every=checkpoint_every),
        precision="bf16",
    )


def pfs_mlm(ratio: float = 0.40, **kwargs: Any) -> RunConfig:
    """Paper 1 pure MLM from scratch at a mask ratio (20/30/40/50%), 42k steps, WSD."""
    return pfs_clm_mlm(clm_fraction=0.0, ratio=ratio, **kwargs)


def pfs_clm(**kwargs: Any) -> RunConfig:
    """Paper 1 pure CLM from scratch, 42k steps, WSD."""
    return pfs_clm_mlm(clm_fraction=1.0, **kwargs)


def cpt_mlm(
    init: str = "",
    load: str = "weights",
    step_offset: int = 0,
    mask_token: str = "<mask>",
    ratio: float = 0.40,
    steps: int = 12_000,
    warmup: int = 200,
    decay: int = 2_000,
    data: str = "",
    seq_len: int = 2048,
    global_batch: int = 1152,
    micro_batch_size: int = 12,
    world_size: int = 1,
    checkpoint_every: int = 1000,
) -> RunConfig:
    """Continued MLM pretraining of any checkpoint (own or HF); load=weights or full training state.

    `step_offset`: steps of the data stream to skip. Continuing a base on the data it was trained on,
    set it to the base's steps (same batch layout and data seed), so the run reads text the base never
    saw; the default 0 replays the base's batches from the start. A study sets it for you.
    `mask_token`: added to a start model whose tokenizer has none (a decoder such as SmolLM2), its rows
    set to the mean of the existing ones and recorded in the run's added_tokens.json; '' refuses such
    a model instead."""
    if not init:
        raise ParamRefusal("cpt-mlm needs a starting checkpoint: --param init=PATH_OR_HUB_ID")
    return RunConfig(
        model=ModelSpec(
            init=init, load=coerce(load, typing.Literal["weights", "full"], "load"), mask_token=mask_token
        ),
        data=DataConfig(path=data, step_offset=step_offset),
        layout=_layout(seq_len, global_batch, micro_batch_size, world_size),
        optim=PAPER1_OPTIM,
        phases=(
            Phase(
                objective=MLM(mask_ratio=ratio, **PAPER1_MASKING),
                steps=steps,
                schedule=Schedule(kind="wsd", warmup=warmup, decay=decay),
            ),
        ),
        checkpoint=CheckpointConfig(every=checkpoint_every),
        precision="bf16",
    )


def _detour(
    first: Objective,
    freeze: str,
    init: str,
    size: str,
    tokens: int,
    decay_fraction: float,
    warmup_tokens: int,
    data: str,
    seq_len: int,
    global_batch: int,
    micro_batch_size: int,
    world_size: int,
    checkpoint_every: int = 500,
    optim: OptimConfig = PAPER2_OPTIM,
    freeze_decay: str = "",
    warmup_param: bool = True,
) -> RunConfig:
    if not (math.isfinite(decay_fraction) and decay_fraction > 0):  # NaN and inf were tracebacks
        raise ParamRefusal(
            f"decay_fraction must be a finite number > 0 (the decay's share of `tokens`), got {decay_fraction}; "
            "e.g. --param decay_fraction=0.1"
        )
    if warmup_tokens < 0:  # a small negative count became no warmup, silently
        raise ParamRefusal(
            f"warmup_tokens must be >= 0, got {warmup_tokens}; e.g. --param warmup_tokens=100000000"
        )
    layout = _layout(seq_len, global_batch, micro_batch_size, world_size)
    phase1 = Phase(
        objective=first,
        tokens=tokens,
        schedule=Schedule(kind="constant", warmup=math.ceil(warmup_tokens / layout.tokens_per_step)),
        freeze=freeze,
        name=f"detour-{first.tag}" if isinstance(first, CLM) else f"baseline-{first.tag}",
    )
    _check_warmup_fits(phase1, layout, tokens, warmup_tokens, warmup_param)
    phase2 = Phase(
        objective=MLM(mask_ratio=0.15, **PAPER2_MASKING),
        tokens=math.ceil(tokens * decay_fraction),
        schedule=Schedule(kind="1-sqrt", end_fraction=0.1),
        freeze=freeze_decay,
        name="decay-mlm15",
    )
    return RunConfig(
        model=ModelSpec(size=size, init=init),
        data=DataConfig(path=data, seed=42),
        layout=layout,
        optim=optim,
        phases=(phase1, phase2),
        checkpoint=CheckpointConfig(every=checkpoint_every),
        seed=17,
        precision="bf16",
    )


def detour(
    init: str = "",
    size: str = "210m",
    tokens: int = 10_000_000_000,
    decay_fraction: float = 0.1,
    warmup_tokens: int = 100_000_000,
    data: str = "",
    seq_len: int = 8192,
    global_batch: int = 384,
    micro_batch_size: int = 4,
    world_size: int = 1,
    checkpoint_every: int = 500,
    freeze: str = "",
    freeze_decay: str = "",
) -> RunConfig:
    """Paper 2: CLM for `tokens`, then MLM-15% decay for 10% of them (1-sqrt to 10% LR, optimizer kept);
    `freeze` / `freeze_decay`: layers frozen during the CLM phase / the decay."""
    args = dict(locals())
    return _detour(CLM(), **args)


def detour_baseline(**kwargs: Any) -> RunConfig:
    """Paper 2's control: MLM-30% instead of CLM, then the same decay on identical data, steps and tokens
    (not FLOPs: CLM's head predicts every position, MLM's the masked ones)."""
    return _detour(
        MLM(mask_ratio=0.30, **PAPER2_MASKING),
        **{**_detour_defaults(), "freeze": "", "freeze_decay": "", **kwargs},
    )


def detour_freeze_low(**kwargs: Any) -> RunConfig:
    """The detour with layers 0-7 frozen during the CLM phase (`paper2-low`; other depths scale)."""
    return detour(**{**kwargs, "freeze": "paper2-low"})


def detour_freeze_mid(**kwargs: Any) -> RunConfig:
    """The detour with layers 8-14 frozen during the CLM phase (`paper2-mid`; other depths scale)."""
    return detour(**{**kwargs, "freeze": "paper2-mid"})


def detour_freeze_low_decay(**kwargs: Any) -> RunConfig:
    """The detour with layers 0-7 frozen during the MLM decay instead (paper 2's third freeze run)."""
    return detour(**{**kwargs, "freeze_decay": "paper2-low"})


def _check_warmup_fits(
    phase: Phase, layout: BatchLayout, tokens: int, warmup_tokens: int, param: bool
) -> None:
    """Tokens too few for the first phase's warmup, named in the recipe's parameters (the schedule's "shorten
    them" named none smoke-detour takes: its warmup is fixed, `param` False)."""
    steps, warmup, per = phase.n_steps(layout), phase.schedule.warmup, layout.tokens_per_step
    if warmup > steps:
        raise ParamRefusal(
            f"tokens {tokens} make the {phase.name} phase {count(steps, 'step')} of {per} tokens, fewer than its "
            f"warmup of {count(warmup, 'step')} ({warmup_tokens} warmup_tokens); raise tokens to at least "
            f"{warmup * per} ({count(warmup, 'step')}){', or lower warmup_tokens' if param else ''}"
        )


def _detour_defaults() -> dict[str, Any]:
    sig = inspect.signature(detour)
    return {k: p.default for k, p in sig.parameters.items()}


# ---- smoke recipes: the whole stack on a tiny model in seconds (CPU) ---------------------------
SMOKE = dict(size="tiny", data="synthetic", seq_len=64, global_batch=8, micro_batch_size=4, world_size=1)
SMOKE_OPTIM = OptimConfig(lr=3e-3)


def _smoke(cfg: RunConfig, every: int = 10) -> RunConfig:
    import dataclasses

    return dataclasses.replace(
        cfg, precision="fp32", checkpoint=CheckpointConfig(every=every, keep_last=2), optim=SMOKE_OPTIM
    )


def smoke_mlm(steps: int = 40, data: str = "synthetic") -> RunConfig:
    """Tiny MLM-40 run on CPU in seconds (WSD)."""
    return _smoke(pfs_clm_mlm(clm_fraction=0.0, steps=steps, warmup=4, decay=8, **{**SMOKE, "data": data}))


def smoke_clm(steps: int = 40, data: str = "synthetic") -> RunConfig:
    """Tiny CLM run on CPU in seconds (WSD)."""
    return _smoke(pfs_clm_mlm(clm_fraction=1.0, steps=steps, warmup=4, decay=8, **{**SMOKE, "data": data}))


def smoke_clm_mlm(steps: int = 40, clm_fraction: float = 0.25, data: str = "synthetic") -> RunConfig:
    """Tiny biphasic CLM -> MLM-40 run on CPU in seconds (one WSD across both phases)."""
    return _smoke(
        pfs_clm_mlm(clm_fraction=clm_fraction, steps=steps, warmup=4, decay=8, **{**SMOKE, "data": data})
    )


def smoke_detour(tokens: int = 40 * 8 * 64, data: str = "synthetic") -> RunConfig:
    """Tiny CLM detour then MLM-15% 1-sqrt decay on CPU in seconds."""
    smoke = {**SMOKE, "data": data, "warmup_param": False}
    cfg = _detour(CLM(), "", "", warmup_tokens=4 * 8 * 64, tokens=tokens, decay_fraction=0.1, **smoke)
    import dataclasses

    return dataclasses.replace(_smoke(cfg), optim=dataclasses.replace(PAPER2_OPTIM, lr=3e-3), seed=17)


RECIPES: dict[str, Callable[..., RunConfig]] = {
    "pfs-mlm": pfs_mlm,
    "pfs-clm": pfs_clm,
    "pfs-clm-mlm": pfs_clm_mlm,
    "cpt-mlm": cpt_mlm,
    "detour": detour,
    "detour-baseline": detour_baseline,
    "detour-freeze-low": detour_freeze_low,
    "detour-freeze-mid": detour_freeze_mid,
    "detour-freeze-low-decay": detour_freeze_low_decay,
    "smoke-mlm": smoke_mlm,
    "smoke-clm": smoke_clm,
    "smoke-clm-mlm": smoke_clm_mlm,
    "smoke-detour": smoke_detour,
}


_WRAPS: dict[str, tuple[Callable[..., RunConfig], tuple[str, ...]]] = {
    "pfs-mlm": (pfs_clm_mlm, ("clm_fraction",)),
    "pfs-clm": (pfs_clm_mlm, ("clm_fraction", "ratio")),
    "detour-baseline": (detour, ("freeze", "freeze_decay")),
    "detour-freeze-low": (detour, ("freeze", "freeze_decay")),
    "detour-freeze-mid": (detour, ("freeze", "freeze_decay")),
    "detour-freeze-low-decay": (detour, ("freeze", "freeze_decay")),
}
"""A `**kwargs` recipe takes the parameters of the recipe it wraps, except those it fixes."""


def recipe_params(name: str) -> dict[str, Any]:
    """A recipe's parameters and their types."""
    if name not in RECIPES:
        raise did_you_mean(name, list(RECIPES), "recipe")
    fn = RECIPES[name]
    hints = {k: v for k, v in type_hints(fn).items() if k not in ("return", "kwargs")}
    if name in _WRAPS:
        base, fixed = _WRAPS[name]
        wrapped = {k: v for k, v in type_hints(base).items() if k != "return" and k not in fixed}
        hints = {**wrapped, **hints}
    return hints


def recipe_defaults(name: str) -> dict[str, Any]:
    """A recipe's parameters with their default values."""
    fns = [RECIPES[name], *(_WRAPS[name][:1] if name in _WRAPS else ())]
    defaults = {
        k: p.default
        for fn in reversed(fns)
        for k, p in inspect.signature(fn).parameters.items()
        if p.default is not p.empty
    }
    return {k: v for k, v in defaults.items() if k in recipe_params(name)}


def recipe_args(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """`params` checked against the recipe's signature and converted to its types (a UserError names
    an unknown parameter with the valid ones, or a value of the wrong type)."""
    hints = recipe_params(name)
    unknown = sorted(set(params) - set(hints))
    if unknown:
        named = ", ".join(f"'{k}'" + (f" ({near}?)" if (near := closest(k, hints)) else "") for k in unknown)
        raise UserError(f"recipe {name} has no parameter {named}; valid: {', '.join(sorted(hints))}")
    return {k: coerce(v, hints[k], f"{name}.{k}") for k, v in params.items()}


def make_recipe(name: str, params: Mapping[str, Any] | None = None) -> RunConfig:
    """The recipe `name` called with typed parameters (checked against its signature)."""
    args = recipe_args(name, params or {})  # first: an unknown name is a UserError listing the recipes
    return RECIPES[name](**args)


def refused_params(name: str, args: Mapping[str, Any], exc: UserError) -> list[str]:
    """The names in `args` (typed) that `exc`, raised by recipe `name` built with them, is about: none for
    the recipe's own checks (`ParamRefusal`), which name theirs (`recipe_refusals.involved_params`)."""
    if isinstance(exc, ParamRefusal):
        return []
    return involved_params(lambda a: RECIPES[name](**a), args, exc)


def build_recipe(name: str, params: list[str] | tuple[str, ...] = ()) -> RunConfig:
    """The recipe `name` called with command-line `key=value` parameters (`--param`); a part's refusal
    (`MLM`'s mask ratio) is led by the `--param` values it is about (`recipe_refusals`)."""
    parsed, typed = {}, {}
    for item in params:
        key, sep, raw = item.partition("=")
        if not sep:
            raise UserError(f"recipe parameter '{item}' must look like name=value")
        parsed[key] = parse_scalar(raw, f"recipe parameter '{key}'")
        typed[key] = item
    with command_line_values({f"{name}.{k}": (k, item.partition("=")[2]) for k, item in typed.items()}):
        args = recipe_args(name, parsed)  # an unknown parameter or a wrong type: its own line, naming it
    try:
        return RECIPES[name](**args)
    except UserError as exc:  # a part's own check ("mlm mask_ratio must be ...") named no --param
        if not (involved := refused_params(name, args, exc)):
            raise  # the recipe's own check, or about no value given (a required parameter missing)
        given = " ".join(f"--param {typed[k]}" for k in involved)
        raise UserError(f"recipe {name} with {given}: {exc}") from None
