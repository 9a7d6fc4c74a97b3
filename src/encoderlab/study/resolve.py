"""From a study's run to the typed `RunConfig` it trains: the one place where a study's settings
become training settings.

`resolve_run(spec, run, seed)` is called once per pretraining node, at graph build; the graph stores
the result with the node (as `config.to_dict` data, which is also what its key hashes) and the node
reloads it with the strict typed loader. Nothing is passed as `key=value` text. In order:

1. the scale's settings as arguments of the recipe, where the recipe takes them: model size (runs
   from scratch), sequence length, micro-batch and global batch;
2. the run length, where the study or the run sets one (every run at `demo` and `cpu`, the shorter
   budgets at the gpu scales; otherwise the recipe's own): the recipe's own `Scaling`
   (`train.recipe_scaling.SCALING`) at those steps, so a paper recipe shrunk to 1,000 steps keeps its
   warmup and decay as the same fractions of the run;
3. with such a length, a checkpoint every fifth of the run, so a killed study loses at most a fifth of a
   run (a recipe run at its own length keeps the recipe's cadence: paper 1's, every 1,000 of 42,000 steps);
4. the start model, where the recipe takes one (`init`): an asset, or a placeholder for another run
   of the study that the node fills in with that run's final model;
5. the run's own recipe parameters (typed, checked against the recipe's signature when the spec was
   built), which win over everything above;
6. the study's RunConfig overrides, then the run's own (typed values at dotted paths);
7. the seeds: the training seed (model init, masks) is the recipe's + the pretraining seed + the run's
   offset (a seed-noise twin); the data order is the recipe's data seed + the pretraining seed, so
   every run at one pretraining seed reads the same documents in the same order (the papers'
   controlled variable), a twin keeps its run's order, and another pretraining seed replicates the
   whole run, data order included; then the checkpoints kept for intermediate evaluation, and a
   start model given to a recipe that takes none as `model.init`.

A run that continues another run of the study on the same data reads that stream after the base's
last step (`_after_base`: `DataConfig.step_offset`, the base's data seed), so continued pretraining
never replays the batches and masks its base was trained on.

Axes of the report that describe a run (its masking ratio) are read from the resolved phases
(`mask_ratio`), never declared a second time beside the recipe parameter that sets them.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any

from encoderlab.errors import UserError
from encoderlab.study.spec import RunSpec, StudySpec

if TYPE_CHECKING:
    from encoderlab.train.config import RunConfig

INIT_PLACEHOLDER = "<study-run>"
"""Stands for "the final model of the run this one continues" until the node knows its path."""


def _scale_args(spec: StudySpec, run: RunSpec) -> dict[str, Any]:
    """The scale's batch shape and model size as recipe arguments (only those the scale fixes)."""
    args: dict[str, Any] = {}
    if spec.seq_len is not None:
        args["seq_len"] = spec.seq_len
    if spec.micro_batch is not None:
        args["micro_batch_size"] = spec.micro_batch
        args["global_batch"] = spec.micro_batch * (spec.grad_accum or 1)
    if spec.size is not None and run.init is None:
        args["size"] = spec.size
    return args


def recipe_arguments(spec: StudySpec, run: RunSpec) -> dict[str, Any]:
    """Every argument the study passes to the run's recipe (steps 1-5 above)."""
    from encoderlab.train.recipe_scaling import SCALING
    from encoderlab.train.recipes import SMOKE, recipe_defaults

    assert run.recipe is not None, f"run {run.name} has no recipe"
    defaults = recipe_defaults(run.recipe)
    args = _scale_args(spec, run)
    steps = run.steps if run.steps is not None else spec.steps
    if steps is not None:
        # the smoke recipes take no batch shape (a KeyError before): they run SMOKE's, whatever the scale's
        shape = {**SMOKE, **defaults, **{k: v for k, v in args.items() if k in defaults}}
        args |= SCALING[run.recipe].params(steps, shape["global_batch"] * shape["seq_len"])
        args["checkpoint_every"] = max(1, steps // 5)
    if "init" in defaults:
        args["init"] = _init_of(spec, run) or INIT_PLACEHOLDER
    args |= run.params
    return {k: v for k, v in args.items() if k in defaults}


_FLAG = re.compile(r"--(set|param) ([\w.]+)=(\S+?)(?=[;,)]?(\s|$))")
"""A fix worded as a command-line flag (`e.g. --set seed=0`, `--param init=PATH`), which a study file has none of."""


def in_study_terms(
    message: str, overrides: str = "in the run's overrides or the study's run_overrides"
) -> str:
    """`message` with its `--set K=V` / `--param K=V` fixes said as the study file's keys: `overrides`
    (where a `--set` goes: a run's `overrides` or the study's `run_overrides`), a run's `params`."""
    where = {"set": overrides, "param": "in the run's params"}
    return _FLAG.sub(lambda m: f"{m[2]}: {m[3]} {where[m[1]]}", message)


def _init_of(spec: StudySpec, run: RunSpec) -> str | None:
    """The start model named by an asset, a folder or a hub id (None: scratch or another run of the study)."""
    return run.init if run.init and run.init not in {r.name for r in spec.runs} else None


def resolve_run(spec: StudySpec, run: RunSpec, seed: int, base: RunConfig | None = None) -> RunConfig:
    """The complete RunConfig of `run` at pretraining seed `seed` (paths filled in by the node).

    `base` is the resolved RunConfig of the study run that `run` continues (None: none)."""
    from encoderlab.config import with_values

    try:  # a value the recipe refuses (a mask ratio of 4), or a seed too large for torch, named no run
        cfg = with_values(_recipe(run, recipe_arguments(spec, run)), {**spec.run_overrides, **run.overrides})
        model = cfg.model
        init = _init_of(spec, run)
        if init and model.init != init:
            model = dataclasses.replace(model, init=init)
        cfg = dataclasses.replace(
            cfg,
            model=model,
            data=dataclasses.replace(cfg.data, seed=cfg.data.seed + seed),
            seed=cfg.seed + seed + (run.seed or 0),
            # steps past the run are left to graph._check_eval_steps, whose line names eval_steps, not keep_steps
            checkpoint=dataclasses.replace(
                cfg.checkpoint, keep_steps=tuple(sorted(s for s in run.eval_steps if 0 < s <= cfg.steps))
            ),
        )
    except UserError as exc:
        if _study_overrides_refused(spec, run):
            fix = in_study_terms(str(exc), "in the study's run_overrides")
            raise UserError(f"study {spec.name}: run_overrides (at run {run.name}): {fix}") from None
        raise UserError(f"run {run.name}: {in_study_terms(str(exc))}") from None
    if base is not None and run.data == spec.run(run.init).data:
        cfg = _after_base(cfg, base, run)
    return cfg


def _recipe(run: RunSpec, args: dict[str, Any]) -> RunConfig:
    """The run's recipe built with `args`; a refusal of a part it builds (`MLM`'s mask ratio) names the run's
    `params` it is about, as `pretrain`'s names the `--param` values (`recipes.refused_params`)."""
    from encoderlab.train.recipes import RECIPES, recipe_args, refused_params

    typed = recipe_args(run.recipe, args)
    try:
        return RECIPES[run.recipe](**typed)
    except UserError as exc:
        named = [k for k in refused_params(run.recipe, typed, exc) if k in run.params]
        if not named:  # the recipe's own check, or the scale's arguments: its line as it is
            raise
        given = ", ".join(f"{k}: {run.params[k]}" for k in named)
        raise UserError(f"{given} in its params: {exc}") from None


def _study_overrides_refused(spec: StudySpec, run: RunSpec) -> bool:
    """Whether the study's `run_overrides` that `run` does not override itself are refused alone: then the
    value to fix is the study's, which every run reads, not the first run's that met it."""
    from encoderlab.config import with_values
    from encoderlab.train.recipes import make_recipe

    own = {k: v for k, v in spec.run_overrides.items() if k not in run.overrides}
    try:
        recipe = make_recipe(run.recipe, recipe_arguments(spec, run))
    except UserError:  # the recipe's own arguments are at fault
        return False
    try:
        with_values(recipe, own)
    except UserError:
        return True
    return False


def _after_base(cfg: RunConfig, base: RunConfig, run: RunSpec) -> RunConfig:
    """A continued run on its base's data reads the base's stream from the row after the base's last
    one: the base's order (data seed), skipping as many whole steps as cover the base's rows. Its own
    batch size may differ; its row length may not (rows of another length are other cuts of the text)."""
    if cfg.layout.seq_len != base.layout.seq_len:
        raise UserError(
            f"run {run.name} continues {run.init} on the same data with sequence length {cfg.layout.seq_len}, "
            f"not {base.layout.seq_len}: it could not start where {run.init} stopped; give both one seq_len"
        )
    # the rows the base's stream has reached, its own offset included (counted in the base's batch: a
    # continued base may read the stream in batches of another size than its continuation)
    rows = (base.data.step_offset + base.steps) * base.layout.global_batch_size
    offset = -(-rows // cfg.layout.global_batch_size)  # whole steps, so no row of the base is read again
    return dataclasses.replace(
        cfg, data=dataclasses.replace(cfg.data, seed=base.data.seed, step_offset=offset)
    )


def mask_ratio(cfg: RunConfig) -> float | None:
    """The masking ratio of a run whose every phase is MLM at one ratio (None for any other run)."""
    from encoderlab.objectives import MLM

    ratios = {p.objective.mask_ratio if isinstance(p.objective, MLM) else None for p in cfg.phases}
    return next(iter(ratios)) if len(ratios) == 1 else None


def mask_design(cfg: RunConfig) -> tuple[str, float] | None:
    """A run's line and point on the mask-ratio figure: MLM at one ratio throughout (`MLM`), or CLM for
    a share of the steps then MLM at one ratio (`CLM 25% -> MLM`); None for any other run."""
    from encoderlab.objectives import CLM, MLM

    ratio = mask_ratio(cfg)
    if ratio is not None:
        return "MLM", ratio
    plan = cfg.plan()
    first, last = plan[0].phase.objective, plan[-1].phase.objective
    if len(plan) == 2 and isinstance(first, CLM) and isinstance(last, MLM):
        return f"CLM {round(100 * plan[0].steps / cfg.steps)}% -> MLM", last.mask_ratio
    return None


def tokens(cfg: RunConfig) -> int:
    """The run's token budget: steps x tokens per step."""
    return cfg.steps * cfg.layout.tokens_per_step
