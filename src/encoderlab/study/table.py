"""The report's results table: every final model x (family, task), against the baseline.

A cell is evaluation's number for that model (`eval.summary`: the test score at the LR chosen on
validation per task, a family the mean of its tasks per seed) as a mean with a 95% t-interval over
fine-tuning seeds, and, for every model but the baseline, the paired test of its difference to the
baseline over the same seeds (`eval.summary.paired`). The cells are not corrected for multiple
comparisons: they describe, and the claims (`results.py`) are where a study tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from encoderlab.eval.stats import Estimate, PairedTest, summarize
from encoderlab.eval.summary import ALL, TaskSummary, family_by_seed, paired
from encoderlab.study.data import StudyData, split_id


@dataclass(frozen=True, kw_only=True)
class Cell(Estimate):
    """A model's score in one column, and its paired difference to the baseline."""

    vs_baseline: PairedTest | None = None
    """Paired test of model - baseline over the seeds both have (None for the baseline itself, or with
    fewer than 2 common seeds)."""


@dataclass(frozen=True, kw_only=True)
class ResultsTable:
    """Final models x columns (families, then `ALL`, then tasks)."""

    models: list[str]
    """Model ids in graph order."""
    families: list[str]
    """Family columns, sorted, then `ALL`."""
    tasks: list[str]
    """Task columns, sorted."""
    baseline: str | None
    """The baseline's model id (None when it has no results yet)."""
    cells: dict[str, dict[str, Cell]]
    """model -> column -> cell (a column the model has no results for is absent)."""
    per_task: dict[str, dict[str, TaskSummary]]
    """model -> task -> evaluation's summary."""


def results_table(data: StudyData) -> ResultsTable:
    """The table of the study's final models."""
    models = data.models()
    per_task = {m: data.summary(m).tasks for m in models}
    fam = {m: family_by_seed(per_task[m], average=True) for m in models}
    families = sorted({f for m in models for f in fam[m]} - {ALL}) + [ALL]
    tasks = sorted({t for m in models for t in per_task[m]})
    base = next((m for m in models if split_id(m)[0] == data.spec.baseline), None)

    def seeds(model: str, col: str) -> dict[int, float] | None:
        if col in families:
            return fam[model].get(col)
        return per_task[model][col].test_by_seed if col in per_task[model] else None

    cells: dict[str, dict[str, Cell]] = {}
    for m in models:
        row = {}
        for col in [*families, *tasks]:
            values = seeds(m, col)
            if not values:
                continue
            ref = seeds(base, col) if base and m != base else None
            vs = paired(values, ref) if ref else None
            row[col] = Cell(**vars(summarize(list(values.values()))), vs_baseline=vs)
        cells[m] = row
    return ResultsTable(
        models=models, families=families, tasks=tasks, baseline=base, cells=cells, per_task=per_task
    )
