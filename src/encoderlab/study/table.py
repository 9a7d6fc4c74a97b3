"""The report's results tables: per checkpoint, and per run over its pretraining seeds.

**Per checkpoint** (every final model id x column): evaluation's number for that model
(`eval.summary`: the test score at the LR chosen on validation per task, a family the mean of its
tasks per seed) as a mean with a 95% t-interval over fine-tuning seeds, and, for every model but the
baseline's, the paired test of its difference to the baseline's checkpoint of the same pretraining
seed (same data order) over the fine-tuning seeds both have (a family: over the tasks both have results
for, `StudyData.shared_tasks`, so a report rebuilt mid-study compares like with like). This interval is
fine-tuning noise of one checkpoint only.

**Per run** (runs trained at two or more pretraining seeds): the mean over pretraining seeds of each
checkpoint's mean over fine-tuning seeds, with a 95% t-interval over pretraining seeds, and the
paired difference to the baseline over the pretraining seeds both have (`nested.compare_runs`).

Neither table is corrected for multiple comparisons: each cell's p and `*` describe that cell alone.
The claims (`results.py`) are where a study tests, with Holm's correction over its claims.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass

from encoderlab.eval.stats import Estimate, PairedTest, summarize
from encoderlab.eval.summary import ALL, TaskSummary, family_by_seed, paired
from encoderlab.study.data import StudyData, split_id
from encoderlab.study.nested import Scores, compare_runs, over_pretraining


@dataclass(frozen=True, kw_only=True)
class Cell(Estimate):
    """A score in one column, and its paired difference to the baseline."""

    vs_baseline: PairedTest | None = None
    """Paired test of this - baseline (None for the baseline itself, or with fewer than 2 replicates)."""


@dataclass(frozen=True, kw_only=True)
class ResultsTable:
    """Final models (and runs) x columns (families, then `ALL`, then tasks)."""

    models: list[str]
    """Model ids in graph order."""
    families: list[str]
    """Family columns, sorted, then `ALL`."""
    tasks: list[str]
    """Task columns, sorted."""
    baseline: str | None
    """The baseline's model id at the first pretraining seed (None when it has no results yet)."""
    cells: dict[str, dict[str, Cell]]
    """model -> column -> cell over fine-tuning seeds (a column without results is absent)."""
    per_task: dict[str, dict[str, TaskSummary]]
    """model -> task -> evaluation's summary."""
    runs: dict[str, dict[str, Cell]]
    """run -> column -> cell over pretraining seeds, for runs with two or more (empty otherwise)."""

    @property
    def shown_families(self) -> list[str]:
        """The family columns the report shows: `ALL` only beside two or more families (with one, it
        repeats that family's numbers)."""
        return [f for f in self.families if f != ALL or len(self.families) > 2]

    def family_heading(self, family: str) -> str:
        """A family column's name as the results table and the results figure both write it: "Avg",
        "SC: tweets" for a family of one task (named by it), else "SC". The figure's tick said "IR" where
        the table said "IR: pubmedqa-retrieval"."""
        if family == ALL:
            return "Avg"
        tasks = self.family_tasks(family)
        return f"{family.upper()}: {tasks[0]}" if len(tasks) == 1 else family.upper()

    def family_tasks(self, family: str) -> list[str]:
        """The task columns of `family`, in column order (none for `ALL`)."""
        family_of = {t: s.family for per in self.per_task.values() for t, s in per.items()}
        return [t for t in self.tasks if family_of.get(t) == family]

    def seeds(self, model: str, col: str, tasks: Container[str] | None = None) -> dict[int, float] | None:
        """A model's score per fine-tuning seed in a column (None without results); a family column
        averages over `tasks` only, when given (the tasks a comparison shares)."""
        if col in self.families:
            mine = self.per_task[model]
            if tasks is not None:
                mine = {t: s for t, s in mine.items() if t in tasks}
            return family_by_seed(mine, average=True).get(col)
        return self.per_task[model][col].test_by_seed if col in self.per_task[model] else None


def results_table(data: StudyData) -> ResultsTable:
    """The tables of the study's final models."""
    models = data.models()
    per_task = {m: data.summary(m).tasks for m in models}
    fams = {f for m in models for f in family_by_seed(per_task[m], average=True)}
    table = ResultsTable(
        models=models,
        families=sorted(fams - {ALL}) + [ALL],
        tasks=sorted({t for m in models for t in per_task[m]}),
        baseline=None,
        cells={},
        per_task=per_task,
        runs={},
    )
    base_ids = {data.seed_of(m): m for m in models if split_id(m)[0] == data.spec.baseline}
    cols = [*table.families, *table.tasks]
    cells = {m: _checkpoint_cells(data, table, m, cols, base_ids.get(data.seed_of(m))) for m in models}
    runs = _run_cells(data, table, cols)
    base = base_ids[min(base_ids)] if base_ids else None
    return ResultsTable(**{**vars(table), "baseline": base, "cells": cells, "runs": runs})


def _checkpoint_cells(
    data: StudyData, table: ResultsTable, model: str, cols: list[str], base: str | None
) -> dict[str, Cell]:
    shared = data.shared_tasks((model, base), None)[0] if base and base != model else None
    row = {}
    for col in cols:
        values = table.seeds(model, col)
        if not values:
            continue
        vs = None
        if shared is not None:
            mine, ref = table.seeds(model, col, shared), table.seeds(base, col, shared)
            vs = paired(mine, ref) if mine and ref else None
        row[col] = Cell(**vars(summarize(list(values.values()))), vs_baseline=vs)
    return row


def run_scores(
    data: StudyData, table: ResultsTable, run: str, col: str, tasks: Container[str] | None = None
) -> Scores:
    """A run's scores in a column: pretraining seed -> fine-tuning seed -> score (a family over `tasks`
    only, when given)."""
    out = {}
    for seed, model in data.model_ids(run).items():
        values = table.seeds(model, col, tasks) if model in table.per_task else None
        if values:
            out[seed] = values
    return out


def _run_cells(data: StudyData, table: ResultsTable, cols: list[str]) -> dict[str, dict[str, Cell]]:
    runs = {}
    for run in data.spec.runs:
        if len(data.spec.seeds_of(run)) < 2:
            continue
        row = {}
        for col in cols:
            scores = run_scores(data, table, run.name, col)
            estimate = over_pretraining(scores)
            if estimate is None:
                continue
            vs = None
            if run.name != data.spec.baseline:
                base = data.spec.baseline
                ids = [*data.model_ids(run.name).values(), *data.model_ids(base).values()]
                shared = data.shared_tasks(ids, None)[0]
                mine = run_scores(data, table, run.name, col, shared)
                nested = compare_runs(mine, run_scores(data, table, base, col, shared))
                vs = nested.diff if nested and nested.level == "pretraining" else None
            row[col] = Cell(**vars(estimate), vs_baseline=vs)
        if row:
            runs[run.name] = row
    return runs
