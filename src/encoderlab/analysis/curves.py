"""Paper 1's curves from evaluation results: data efficiency, LR sensitivity, mask-ratio sensitivity.

Input. Evaluation writes `results.jsonl` (one line per task x LR x seed fine-tuning run, keyed by
the model's weight fingerprint); what the model *is* (its pretraining step, its masking ratio,
which curve it belongs to) is not in those files, so a small typed file names it (`CurvesInput`):

    sources:
      - {results: evals/mlm40-5k, model: MLM-40, step: 5000, mask_ratio: 0.4}
      - {results: evals/clm-5k, model: CLM, step: 5000}
      - {results: evals/old-shared, model: CLM, step: 10000, source: runs/clm/checkpoints/step_0010000}

`model` is the line a source belongs to; `step` places it on the data-efficiency axis and
`mask_ratio` on the mask-ratio axis (sources without the field are left out of that curve);
`source` picks one model when an evaluation folder holds several (one an older version evaluated several
models into; `encoderlab eval` now refuses a second model's call into an `--out`).

Statistics are evaluation's own (`encoderlab.eval.summary`): per task, the LR with the best
validation mean, and the test mean over seeds with a 95% t-interval there; a family (sc/tc/qa/ir, the
paper's category averages) averages its tasks seed by seed over the seeds every task has, and with
`average` the mean over every task is added as the row `all`. Results of an outdated task definition
(another task signature) are ignored, exactly as in evaluation summaries. So a curve point is, by
construction, the number `encoderlab eval` reported for that model.
The LR curve is drawn per task (test mean and interval at every LR of the grid), or averaged over
tasks seed by seed.

This module is the only curves code: a study's report draws its data-efficiency, LR and mask-ratio
figures with `curve_rows` from the same `ModelSummary`s, placed by the study (`Placed`) instead of by
a curves file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from encoderlab.errors import UserError
from encoderlab.eval.protocol import RESULTS, ResultsStore
from encoderlab.eval.stats import Estimate, summarize
from encoderlab.eval.summary import (
    ALL,
    EvalRecord,
    ModelSummary,
    family_by_seed,
    mean_at_lr,
    summarize_results,
)

Level = Literal["task", "family"]


@dataclass(frozen=True, kw_only=True)
class CurveSource:
    """One evaluated model and where it sits on the curves."""

    results: Path
    """An evaluation output folder or its results.jsonl."""
    model: str
    """The line this model belongs to (e.g. MLM-40, CLM, 610m)."""
    step: int | None = None
    """Pretraining step of the checkpoint (data-efficiency curve)."""
    mask_ratio: float | None = None
    """MLM masking ratio in [0, 1] (mask-ratio curve)."""
    source: str | None = None
    """The evaluated model's source (or fingerprint prefix), when the results hold several models."""


@dataclass(frozen=True, kw_only=True)
class CurvesInput:
    """The models whose evaluation results the curves are drawn from."""

    sources: list[CurveSource]
    """Evaluated models, each with its results and its position on the curves."""
    task_files: list[Path] = field(default_factory=list)
    """The task files (or folders of them) of the evaluations' own tasks, as given to `encoderlab eval
    --task-file`, relative to this file: their runs are summarised under the tasks' current definitions."""


def results_file(path: Path) -> Path:
    """The results.jsonl of an evaluation folder (or the file itself); refused when it does not exist."""
    path = Path(path)
    if path.is_dir():
        path = path / RESULTS
    if not path.is_file():
        raise UserError(
            f"{path} does not exist; point 'results' at an evaluation output folder or its {RESULTS}"
        )
    return path


def read_results(path: Path) -> list[EvalRecord]:
    """Every run record of an evaluation folder (or its results.jsonl)."""
    path = results_file(path)
    records = list(ResultsStore(path, repair=False).records.values())  # an input: never changed
    if not records:
        raise UserError(f"{path} holds no runs; evaluate the model first")
    return records


def model_summary(records: list[EvalRecord], source: str | None, where: Path) -> ModelSummary:
    """Evaluation's summary (per task and per family) of the one model a curve source names."""
    models = {r.model: r.source or "?" for r in records}
    if source is not None:
        picked = [fp for fp, src in models.items() if src == source or fp.startswith(source)]
    else:
        picked = list(models)
    if len(picked) != 1:
        shown = "; ".join(f"{src} ({fp[:12]})" for fp, src in models.items())
        what = f"no model '{source}'" if source is not None and not picked else f"{len(picked)} models"
        raise UserError(f"{where} holds {what} ({shown}); set 'source' to one of them in the curves file")
    fingerprint = picked[0]
    mine = [r for r in records if r.model == fingerprint]
    tasks = sorted({r.task for r in mine})
    _check_known(tasks, where)
    lrs = sorted({r.lr for r in mine})
    seeds = sorted({r.seed for r in mine})
    summary = summarize_results(mine, fingerprint, tasks, lrs, seeds)
    if not summary.tasks:  # every run outdated: the source drew nothing, and alone an empty --out
        raise UserError(
            f"{where}: no run of {models[fingerprint]} is of its task's current definition ({', '.join(tasks)} "
            "changed since it was evaluated: settings, data or task file); evaluate it again into that folder"
        )
    return summary


def _check_known(tasks: list[str], where: Path) -> None:
    """A task of one's own is summarised by its definition, which only its task file holds: without it
    the curves were refused as "unknown task 'reviews'; valid: <the built-in tasks>", with no way on."""
    from encoderlab.eval.tasks import TASKS

    unknown = next((t for t in tasks if t not in TASKS), None)
    if unknown is not None:
        raise UserError(
            f"{where} holds runs of task '{unknown}', which is not a built-in task; add the task file that "
            "defines it (as given to eval --task-file) to the curves file: `task_files: [path/to/task.yaml]`"
        )


def _stats(s: Estimate) -> dict:
    return {"mean": s.mean, "sd": s.sd, "n": s.n, "ci_low": s.ci_low, "ci_high": s.ci_high}


def selected_rows(summary: ModelSummary, level: Level, average: bool = False) -> list[dict]:
    """One row per task (or family, plus the mean over all tasks with `average`): the test statistics
    at the best-validation LR."""
    if level == "task":
        return [
            {"name": t, "family": s.family, "best_lr": s.best_lr, **_stats(s.test)}
            for t, s in summary.tasks.items()
        ]
    rows = [{"name": f, **_stats(s.test)} for f, s in summary.families.items() if s.test is not None]
    overall = family_by_seed(summary.tasks, average=True)[ALL] if average else {}
    return rows + ([{"name": ALL, **_stats(summarize(list(overall.values())))}] if overall else [])


def lr_rows(summary: ModelSummary, average: bool = False) -> list[dict]:
    """One row per task and LR (or, with `average`, per LR: the mean over tasks seed by seed)."""
    if not average:
        return [
            {"name": t, "lr": point.lr, **_stats(point.test)}
            for t, s in summary.tasks.items()
            for point in s.curve
        ]
    lrs = sorted({p.lr for s in summary.tasks.values() for p in s.curve})
    per_lr = {lr: mean_at_lr(summary.tasks, lr) for lr in lrs}
    return [{"name": ALL, "lr": lr, **_stats(summarize(list(v.values())))} for lr, v in per_lr.items() if v]


@dataclass(frozen=True, kw_only=True)
class Placed:
    """An evaluated model's summary and where it sits on the curves."""

    model: str
    """The line it belongs to (data efficiency and mask ratio)."""
    summary: ModelSummary
    """Its evaluation summary."""
    step: int | None = None
    """Pretraining step (data-efficiency axis)."""
    mask_ratio: float | None = None
    """MLM masking ratio (mask-ratio axis)."""
    label: str = ""
    """Its line on the LR curve (default: `model`)."""


def curve_rows(
    points: Sequence[Placed], level: Level = "family", average: bool = False
) -> dict[str, list[dict]]:
    """The tables of the three curves from placed summaries; a curve whose axis no point fills is
    omitted. `average` adds the mean over all tasks (`all`) to family rows and draws the LR curve
    averaged over tasks instead of per task."""
    tables: dict[str, list[dict]] = {"data_efficiency": [], "lr_sensitivity": [], "mask_ratio": []}
    for p in points:
        tables["lr_sensitivity"] += [
            {"model": p.label or p.model, **row} for row in lr_rows(p.summary, average=average)
        ]
        selected = selected_rows(p.summary, level, average=average)
        if p.step is not None:
            tables["data_efficiency"] += [{"model": p.model, "step": p.step, **r} for r in selected]
        if p.mask_ratio is not None:
            tables["mask_ratio"] += [{"model": p.model, "mask_ratio": p.mask_ratio, **r} for r in selected]
    return {name: rows for name, rows in tables.items() if rows}


def load_input(path: Path) -> CurvesInput:
    """Read and check a curves input file."""
    from encoderlab.config import load_yaml

    spec = load_yaml(CurvesInput, Path(path))
    if not spec.sources:
        raise UserError(f"{path} lists no sources; add at least one {{results, model}} entry")
    for src in spec.sources:
        if src.mask_ratio is not None and not 0 < src.mask_ratio < 1:
            raise UserError(
                f"{path}: mask_ratio {src.mask_ratio} of '{src.model}' must be a fraction in (0, 1), e.g. 0.4"
            )
        if src.step is not None and src.step < 0:  # was drawn at step -5
            raise UserError(f"{path}: step {src.step} of '{src.model}' must be a pretraining step >= 0")
    _check_points_once(path, spec.sources)
    if spec.task_files:  # read and checked here, before any output: their runs' definitions
        from encoderlab.eval.tasks.custom import load_task_files

        load_task_files([f if f.is_absolute() else Path(path).parent / f for f in spec.task_files])
    return spec


def _check_points_once(path: Path, sources: list[CurveSource]) -> None:
    """Refuse one point given twice: two sources of one label (two LR lines of one label), and two
    sources of one model at one x of a curve: at one step with other mask ratios (two points at one step
    of the data-efficiency line), or at one mask ratio with other steps (at one ratio of the mask-ratio
    line; `MLM-40` at 5k and 10k steps, both with `mask_ratio: 0.4`, was drawn as a vertical segment)."""
    seen: dict[tuple, int] = {}
    for i, src in enumerate(sources, 1):
        if (first := seen.setdefault(("label", _label(src)), i)) != i:
            raise UserError(
                f"{path}: sources {first} and {i} are both {_label(src)}, one point of the curves; give each "
                "point once (a step or mask_ratio tells two checkpoints of one model apart)"
            )
        for axis, curve, x in (
            ("step", "data-efficiency", src.step),
            ("mask_ratio", "mask-ratio", src.mask_ratio),
        ):
            if x is not None and (first := seen.setdefault((axis, src.model, x), i)) != i:
                raise UserError(
                    f"{path}: sources {first} and {i} are both '{src.model}' at {axis} {x:g}, two points at one x "
                    f"of its {curve} curve; give {axis} to only one of them, or give them different models"
                )


def _label(src: CurveSource) -> str:
    """The LR curve's line: the model, plus its step or ratio when several sources share the model."""
    parts = [src.model] + ([f"step {src.step}"] if src.step is not None else [])
    return " @ ".join(parts) + (f" (mask {src.mask_ratio:g})" if src.mask_ratio is not None else "")


def curve_tables(spec: CurvesInput, base: Path, level: Level = "family") -> dict[str, list[dict]]:
    """The tables of the three curves of a curves file; a curve whose axis no source fills is omitted."""
    paths = [src.results if src.results.is_absolute() else base / src.results for src in spec.sources]
    for path in paths:  # every file is there before any is read (a missing last one came after reading all)
        results_file(path)
    points = []
    for src, path in zip(spec.sources, paths, strict=True):
        summary = model_summary(read_results(path), src.source, path)
        points.append(
            Placed(
                model=src.model, summary=summary, step=src.step, mask_ratio=src.mask_ratio, label=_label(src)
            )
        )
    return curve_rows(points, level)
