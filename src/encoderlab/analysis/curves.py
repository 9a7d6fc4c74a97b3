"""Paper 1's curves from evaluation results: data efficiency, LR sensitivity, mask-ratio sensitivity.

Input. Evaluation writes one `results.jsonl` per model (one line per task x LR x seed fine-tuning
run); what the model *is* (its pretraining step, its masking ratio, which curve it belongs to)
is not in those files, so a small typed file names it (`CurvesInput`, YAML):

    sources:
      - {results: evals/mlm40-5k, model: MLM-40, step: 5000, mask_ratio: 0.4}
      - {results: evals/clm-5k, model: CLM, step: 5000}

`model` is the line a source belongs to; `step` places it on the data-efficiency axis and
`mask_ratio` on the mask-ratio axis (sources without the field are left out of that curve).

Statistics follow paper 1's protocol (papers.md 1.5): per task, the LR with the best mean
validation score is selected and the test score at that LR is reported as the mean over seeds
with a 95% Student-t interval (`encoderlab.eval.stats.summarize`). The LR curve shows the test
mean at every LR instead. At the family level (sc/tc/qa/ir, the paper's category averages) the
per-seed test scores of the family's tasks are averaged seed by seed (each task at its own
selected LR), and the interval is taken over those per-seed averages; only seeds present in
every task of the family count, so a missing run shrinks n rather than biasing the mean.

The reader of results files is `read_results`, the one place that knows their field names.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from encoderlab.errors import UserError
from encoderlab.eval.stats import summarize

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


@dataclass(frozen=True, kw_only=True)
class CurvesInput:
    """The models whose evaluation results the curves are drawn from."""

    sources: list[CurveSource]
    """Evaluated models, each with its results and its position on the curves."""


@dataclass(frozen=True)
class EvalRun:
    """One fine-tuning run: task, LR, seed and its primary-metric scores (0-100)."""

    task: str
    family: str
    lr: float
    seed: int
    val: float
    test: float


def _score(value, metric: str | None, where: str) -> float:
    """The primary metric from a score field: a number, {metric: x}, or {split: {metric: x}}
    (the in-domain test split first, as evaluation writes it)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, dict) and metric is not None:
        if metric in value:
            return _score(value[metric], None, where)
        first = next(iter(value.values()), None)
        if isinstance(first, dict):
            return _score(first, metric, where)
    raise UserError(
        f"{where}: cannot read the '{metric}' score from {value!r}; is this an encoderlab results.jsonl?"
    )


def read_results(path: Path) -> list[EvalRun]:
    """Every run in a results.jsonl (or an evaluation folder holding one)."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.jsonl"
    if not path.is_file():
        raise UserError(
            f"{path} does not exist; point 'results' at an evaluation output folder or its results.jsonl"
        )
    runs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            raise UserError(f"{where} is not valid JSON; fix or remove that line") from None
        missing = [k for k in ("task", "family", "lr", "seed", "val", "test") if k not in rec]
        if missing:
            raise UserError(f"{where} lacks {', '.join(missing)}; is this an encoderlab results.jsonl?")
        metric = rec.get("metric")
        runs.append(
            EvalRun(
                task=rec["task"],
                family=rec["family"],
                lr=float(rec["lr"]),
                seed=int(rec["seed"]),
                val=_score(rec["val"], metric, where),
                test=_score(rec["test"], metric, where),
            )
        )
    if not runs:
        raise UserError(f"{path} holds no runs; evaluate the model first")
    return runs


PerSeed = dict[int, float]


def _by(runs: Iterable[EvalRun], key) -> dict:
    out: dict = {}
    for run in runs:
        out.setdefault(key(run), []).append(run)
    return out


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return math.fsum(values) / len(values)


def select_lr(runs: list[EvalRun]) -> tuple[float, PerSeed]:
    """The LR with the best mean validation score (ties: the smaller LR) and its test score per seed."""
    by_lr = _by(runs, lambda r: r.lr)
    best = max(sorted(by_lr), key=lambda lr: _mean(r.val for r in by_lr[lr]))
    return best, {r.seed: r.test for r in by_lr[best]}


def aggregate(per_task: dict[str, PerSeed], families: dict[str, str], level: Level) -> dict[str, PerSeed]:
    """Per-task seed scores, or their seed-by-seed mean over each family's tasks (common seeds only)."""
    if level == "task":
        return per_task
    out = {}
    for family, tasks in _by(per_task, lambda t: families[t]).items():
        seeds = set.intersection(*(set(per_task[t]) for t in tasks))
        if seeds:
            out[family] = {s: _mean(per_task[t][s] for t in tasks) for s in sorted(seeds)}
    return out


def _stat_row(per_seed: PerSeed) -> dict:
    stats = summarize([per_seed[s] for s in sorted(per_seed)])
    return {k: stats[k] for k in ("mean", "sd", "n", "ci_low", "ci_high")}


def selected_rows(runs: list[EvalRun], level: Level) -> list[dict]:
    """One row per task (or family): the selected-LR test statistics."""
    families = {r.task: r.family for r in runs}
    chosen = {task: select_lr(task_runs) for task, task_runs in _by(runs, lambda r: r.task).items()}
    per = aggregate({t: seeds for t, (_, seeds) in chosen.items()}, families, level)
    rows = []
    for name, per_seed in per.items():
        extra = {"best_lr": chosen[name][0]} if level == "task" else {}
        rows.append({"name": name, **extra, **_stat_row(per_seed)})
    return rows


def lr_rows(runs: list[EvalRun], level: Level) -> list[dict]:
    """One row per task (or family) and LR: the test statistics at that LR."""
    families = {r.task: r.family for r in runs}
    rows = []
    for lr, lr_runs in sorted(_by(runs, lambda r: r.lr).items()):
        per_task = {t: {r.seed: r.test for r in rs} for t, rs in _by(lr_runs, lambda r: r.task).items()}
        for name, per_seed in aggregate(per_task, families, level).items():
            rows.append({"name": name, "lr": lr, **_stat_row(per_seed)})
    return rows


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
    return spec


def _label(src: CurveSource) -> str:
    """The LR curve's line: the model, plus its step or ratio when several sources share the model."""
    parts = [src.model] + ([f"step {src.step}"] if src.step is not None else [])
    return " @ ".join(parts) + (f" (mask {src.mask_ratio:g})" if src.mask_ratio is not None else "")


def curve_tables(spec: CurvesInput, base: Path, level: Level = "family") -> dict[str, list[dict]]:
    """The tables of the three curves; a curve whose axis no source fills is omitted."""
    tables: dict[str, list[dict]] = {"data_efficiency": [], "lr_sensitivity": [], "mask_ratio": []}
    for src in spec.sources:
        runs = read_results(src.results if src.results.is_absolute() else base / src.results)
        for row in lr_rows(runs, level):
            tables["lr_sensitivity"].append({"model": _label(src), **row})
        selected = selected_rows(runs, level)
        if src.step is not None:
            tables["data_efficiency"] += [{"model": src.model, "step": src.step, **r} for r in selected]
        if src.mask_ratio is not None:
            tables["mask_ratio"] += [
                {"model": src.model, "mask_ratio": src.mask_ratio, **r} for r in selected
            ]
    return {name: rows for name, rows in tables.items() if rows}
