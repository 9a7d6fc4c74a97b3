"""`encoderlab pretrain` and `encoderlab recipes`: parse, build the config, call the library."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import torch
import tyro
import yaml

from encoderlab.cliargs import Repeated, flatten
from encoderlab.config import apply_overrides, load_yaml
from encoderlab.errors import UserError
from encoderlab.interrupts import work_complete, writes_into
from encoderlab.launchenv import env_rank
from encoderlab.paths import found_beside_instead
from encoderlab.train.checkpoint import checkpoint_dir
from encoderlab.train.config import RunConfig, check_until_step
from encoderlab.train.distributed import agreed, join_world, shutdown
from encoderlab.train.entry import pretrain
from encoderlab.train.flops import peak_flops, step_flops_bound
from encoderlab.train.freeze import check_scratch_freezes
from encoderlab.train.recipes import RECIPES, build_recipe
from encoderlab.train.runfolder import check_run_folder
from encoderlab.train.step import TrainStep
from encoderlab.train.trainer import Trainer


def resolve_config(
    recipe: Annotated[str, tyro.conf.arg(help_behavior_hint="(this or --config)")] = "",
    config: Annotated[Path | None, tyro.conf.arg(help_behavior_hint="(this or --recipe)")] = None,
    params: tuple[str, ...] = (),
    overrides: tuple[str, ...] = (),
) -> RunConfig:
    """A run config from a recipe (with parameters) or a YAML file, then dotted overrides."""
    if bool(recipe) == (config is not None):
        raise UserError(f"give exactly one of --recipe NAME or --config FILE; recipes: {', '.join(RECIPES)}")
    if config is not None:
        if params:
            raise UserError("--param applies to recipes; with --config use --set field.path=value")
        cfg = load_yaml(RunConfig, config)
    else:
        cfg = build_recipe(recipe, params)
    return apply_overrides(cfg, overrides)


def _before_build(cfg: RunConfig, *, check_time: bool) -> Callable[[TrainStep, int], None]:
    """What runs before the model is built: the duration check (not with --yes or --resume) of a model built
    from scratch, whose shape the config gives (`TrainStep.planned_model`): after the build, it cost the
    build (seconds of a 210m model's initialisation) before its one line."""

    def before_build(step: TrainStep, steps: int) -> None:
        if check_time and step.planned_model is not None:
            params = step.planned_model.num_params()  # the built model's count, by arithmetic
            check_duration(cfg, step.planned_model, params, step.device, steps)

    return before_build


def _before_start(cfg: RunConfig, *, from_recipe: bool, check_time: bool) -> Callable[[Trainer, int], None]:
    """What runs once the trainer is built, before its first step: the duration check of an `init` model (not
    with --yes or --resume), whose shape its load read; then the notes on data read again and on synthetic
    tokens (rank 0 only), whose fix names the recipe's parameter or the config's field, whichever way the
    run was given."""

    def before_start(trainer: Trainer, stop: int) -> None:
        from encoderlab.data.reader import repeat_note

        if check_time and trainer.train_step.planned_model is None:
            model, steps = trainer.model, stop - trainer.progress.step
            params = sum(p.numel() for p in model.parameters())
            check_duration(cfg, model.config, params, trainer.train_step.device, steps)
        note = repeat_note(trainer.train_step.source, trainer.plan[-1].end)
        if note and env_rank() == 0:
            print(f"encoderlab: note: {note}", file=sys.stderr)
        if cfg.data.path == "synthetic" and env_rank() == 0:
            print(
                "encoderlab: note: training on synthetic tokens (random documents, no text); "
                + ("pass --param data=PREPARED_FOLDER" if from_recipe else "set data.path=PREPARED_FOLDER")
                + " to train on prepared text",
                file=sys.stderr,
            )

    return before_start


def pretrain_command(
    recipe: Annotated[str, tyro.conf.arg(help_behavior_hint="(this or --config)")] = "",
    config: Annotated[Path | None, tyro.conf.arg(help_behavior_hint="(this or --recipe)")] = None,
    param: Repeated = (),
    overrides: Annotated[Repeated, tyro.conf.arg(name="set")] = (),
    out: Annotated[
        str, tyro.conf.arg(help_behavior_hint="(default: the config's `out`; a recipe sets none)")
    ] = "",
    resume: bool = False,
    force: bool = False,
    until_step: int | None = None,
    dry_run: bool = False,
    yes: bool = False,
) -> None:
    """Pretrain an encoder: `--recipe NAME [--param k=v ...] [--set field.path=value ...] --out DIR`.

    Args:
        recipe: A named recipe (`encoderlab recipes` lists them).
        config: A YAML run config instead of a recipe (e.g. a run folder's config.yaml).
        param: Recipe parameters, e.g. `ratio=0.3` or `clm_fraction=0.5` (repeatable; each name once).
        overrides: Any field of the resolved config, e.g. `optim.lr=1e-3 layout.grad_accum=4` (repeatable;
            each field once).
        out: Run folder (overrides `out` of the config).
        resume: Continue the run in `out` from its latest complete checkpoint.
        force: Resume even though the config differs from the saved one.
        until_step: Stop (with a checkpoint) after this many steps; resume later with --resume.
        dry_run: Print the resolved config as YAML and exit.
        yes: Start a run even when it is estimated to take more than a day on this machine.
    """
    run_dir = out or _own_run(config, resume)
    writes_into(run_dir or None)  # an interrupt before the run folder exists then says nothing was written
    cfg = _agreed_config(
        recipe, config, param, overrides, run_dir, dry_run, resume=resume, force=force, until_step=until_step
    )
    writes_into(cfg.out)
    if dry_run:
        from encoderlab.config import to_dict

        if env_rank() == 0:
            print(yaml.safe_dump(to_dict(cfg), sort_keys=False), end="")
        shutdown()
        return

    check_time = not (yes or resume)
    before_start = _before_start(cfg, from_recipe=bool(recipe), check_time=check_time)
    before_build = _before_build(cfg, check_time=check_time)
    run = pretrain(
        cfg,
        resume=resume,
        force=force,
        until_step=until_step,
        before_start=before_start,
        before_build=before_build,
    )
    # final/ or the --until-step checkpoint is written: a signal from now on is a note (`interrupts`). Here,
    # not in the trainer: a study runs its pretrain nodes in one process, and a call there muted Ctrl-C and
    # SIGTERM for the rest of the study
    work_complete()
    if env_rank() == 0:  # under torchrun every rank returns here; one summary is enough
        print(_summary(run, cfg.steps, until_step))


def _own_run(config: Path | None, resume: bool) -> str:
    """The run folder a `--config RUN/config.yaml --resume` without `--out` continues: RUN itself.

    A run's saved `out` is the path it was started with, relative to the folder it was started from;
    read from another folder (or after the run was moved) it named a folder holding nothing to resume,
    and `--resume` started a new run there, leaving the interrupted one as it was. Only a run's own
    config.yaml (its folder holds a run) points at RUN; any other file keeps its `out`."""
    from encoderlab.train.runfolder import is_run_folder

    if not resume or config is None or config.name != "config.yaml":
        return ""
    return str(config.parent) if is_run_folder(config.parent) else ""


def _agreed_config(
    recipe: str,
    config: Path | None,
    param: Repeated,
    overrides: Repeated,
    out: str,
    dry_run: bool = False,
    *,
    resume: bool = False,
    force: bool = False,
    until_step: int | None = None,
) -> RunConfig:
    """The run config, resolved on every rank after the ranks joined (under torchrun), so that a
    refused config prints one line, from rank 0, and stops every rank (`agreed`). `--until-step` is checked
    here first, for the same reason: checked before the ranks joined, its refusal was said by every rank.

    A `--dry-run` with a run folder checks that folder as the run does (`check_run_folder`, which touches
    nothing): it printed a config for an `--out` that is a file, that already holds a run without `--resume`,
    or whose saved config a `--resume` would refuse, so a config checked with --dry-run then failed where it
    was submitted."""
    world = join_world()
    try:
        with agreed(world):
            check_until_step(until_step)  # before the config and data are read, which may print notes
            params = once(flatten(param, "--param"), "--param")
            cfg = resolve_config(recipe, config, params, once(flatten(overrides, "--set"), "--set"))
            cfg = dataclasses.replace(cfg, out=out) if out else cfg
            check_scratch_freezes(cfg)  # `--dry-run` too: it builds no model
            if not dry_run:
                _check_data_path(cfg, config)
            elif cfg.out:
                check_run_folder(cfg, resume=resume, force=force)
            return cfg
    except BaseException:
        shutdown(clean=False)
        raise


def _check_data_path(cfg: RunConfig, config: Path | None) -> None:
    """A relative `data.path` is read from the working directory; missing there but beside the config file or
    in the run folder, it said "is not a folder; run `encoderlab data prepare` first", of data that exists."""
    places = [("the config file's folder", config.parent)] if config is not None else []
    places += [("the run folder", Path(cfg.out))] if cfg.out else []
    if cfg.data.path not in ("", "synthetic") and (
        why := found_beside_instead(cfg.data.path, places, "data.path")
    ):
        raise UserError(why)


def once(items: tuple[str, ...], flag: str) -> tuple[str, ...]:
    """`key=value` items with every key given once; a repeated key is refused, never resolved."""
    seen: dict[str, str] = {}
    for item in items:
        key = item.partition("=")[0]
        if key in seen:
            raise UserError(f"{flag} {key}= is given twice ({seen[key]!r} and {item!r}); give it once")
        seen[key] = item
    return items


REASONABLE_HOURS = 24
"""Longer estimated runs start only with --yes."""
ASSUMED_MFU = 0.4
"""The share of peak FLOP/s the estimate assumes (our 210m runs reach 27-45% on an H200)."""


def check_duration(cfg: RunConfig, model_config, size: int, device: torch.device, steps: int) -> None:
    """Refuse, before anything is written, a run of `steps` more steps of a `size`-parameter model of shape
    `model_config` estimated to take more than a day on `device`."""
    peak = peak_flops(device, torch.bfloat16 if cfg.precision == "bf16" else torch.float32, cfg.peak_tflops)
    seconds = estimated_seconds(model_config, cfg, steps, peak)
    if seconds <= REASONABLE_HOURS * 3600:
        return
    tokens = steps * cfg.layout.tokens_per_step
    raise UserError(
        f"this run trains a {size / 1e6:,.0f}M-parameter model for {steps:,} steps ({tokens / 1e9:,.2f}B tokens): "
        f"about {_duration(seconds)} on {cfg.layout.world_size} x {device.type} (counted FLOPs at "
        f"{ASSUMED_MFU:.0%} of {peak / 1e12:.3g} TFLOP/s); pass --yes to start it anyway, or shorten it "
        "(fewer steps, a smaller size, or a smoke-* recipe)"
    )


def estimated_seconds(model_config, cfg: RunConfig, steps: int, peak: float) -> float:
    """Seconds `steps` steps of `cfg` take at `ASSUMED_MFU` of `peak` FLOP/s per process: an upper bound
    (`step_flops_bound`: every row one document, every position a target)."""
    return steps * step_flops_bound(model_config, cfg.layout) / (peak * ASSUMED_MFU * cfg.layout.world_size)


def _duration(seconds: float) -> str:
    for unit, size in (("years", 365 * 86400), ("days", 86400), ("hours", 3600)):
        if seconds >= size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds / 60:,.0f} minutes"


def _summary(run: Path, total: int, until_step: int | None) -> str:
    """What a finished `pretrain` prints: the model it wrote (the step's checkpoint when stopped early)."""
    stop = min(until_step, total) if until_step is not None else total
    if stop == total:
        model = f"final model: {run / 'final'}"
    else:
        model = f"stopped after step {stop} of {total} (continue with --resume)\nmodel: {checkpoint_dir(run, stop) / 'model'}"
    return f"run folder: {run}\n{model}\nmetrics: {run / 'metrics.jsonl'}"
