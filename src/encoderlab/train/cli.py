"""`encoderlab pretrain` and `encoderlab recipes`: parse, build the config, call the library."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import tyro

from encoderlab.config import apply_overrides, load_yaml
from encoderlab.errors import UserError
from encoderlab.train.checkpoint import checkpoint_dir
from encoderlab.train.config import RunConfig
from encoderlab.train.distributed import env_rank
from encoderlab.train.recipes import RECIPES, build_recipe, recipe_params
from encoderlab.train.trainer import pretrain


def resolve_config(
    recipe: str = "",
    config: Path | None = None,
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


def pretrain_command(
    recipe: str = "",
    config: Path | None = None,
    param: tuple[str, ...] = (),
    overrides: Annotated[tuple[str, ...], tyro.conf.arg(name="set")] = (),
    out: str = "",
    resume: bool = False,
    force: bool = False,
    until_step: int | None = None,
    dry_run: bool = False,
) -> None:
    """Pretrain an encoder: `--recipe NAME [--param k=v ...] [--set field.path=value ...] --out DIR`.

    Args:
        recipe: A named recipe (`encoderlab recipes` lists them).
        config: A YAML run config instead of a recipe (e.g. a run folder's config.yaml).
        param: Recipe parameters, e.g. `ratio=0.3` or `clm_fraction=0.5`.
        overrides: Any field of the resolved config, e.g. `optim.lr=1e-3 layout.grad_accum=4`.
        out: Run folder (overrides `out` of the config).
        resume: Continue the run in `out` from its latest complete checkpoint.
        force: Resume even though the config differs from the saved one.
        until_step: Stop (with a checkpoint) after this many steps; resume later with --resume.
        dry_run: Print the resolved config as YAML and exit.
    """
    cfg = resolve_config(recipe, config, param, overrides)
    if out:
        cfg = dataclasses.replace(cfg, out=out)
    if dry_run:
        import yaml

        from encoderlab.config import to_dict

        print(yaml.safe_dump(to_dict(cfg), sort_keys=False), end="")
        return
    run = pretrain(cfg, resume=resume, force=force, until_step=until_step)
    if env_rank() == 0:  # under torchrun every rank returns here; one summary is enough
        print(_summary(run, cfg.steps, until_step))


def _summary(run: Path, total: int, until_step: int | None) -> str:
    """What a finished `pretrain` prints: the model it wrote (the step's checkpoint when stopped early)."""
    stop = min(until_step, total) if until_step is not None else total
    if stop == total:
        model = f"final model: {run / 'final'}"
    else:
        model = f"stopped after step {stop} of {total} (continue with --resume)\nmodel: {checkpoint_dir(run, stop) / 'model'}"
    return f"run folder: {run}\n{model}\nmetrics: {run / 'metrics.jsonl'}"


def recipes_command() -> None:
    """List the pretraining recipes with their parameters."""
    for name, fn in RECIPES.items():
        doc = (fn.__doc__ or "").strip().splitlines()[0]
        params = ", ".join(f"{k}: {_type_name(t)}" for k, t in recipe_params(name).items())
        print(f"{name:<18} {doc}\n{'':<18} params: {params}")


def _type_name(tp) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")
