"""Evaluation results and what is computed from them: one record type, the LR selection, family means
per seed and paired comparisons.

`EvalRecord` is one fine-tuning run (model, task, LR, seed). Evaluation writes it to `results.jsonl`
(`protocol.ResultsStore`), a study's eval node returns it, and the report, `encoderlab eval`'s
summaries and `analysis/curves.py` read it; nothing renames or flattens it on the way. Fields added
later (degenerate predictions, saved predictions) have defaults, so older results files still load,
and a new field is one more line here.

The computations are written once, here, and used by `encoderlab eval`, the curves and the study:
- **LR selection** (`select_lr`): per (model, task), the LR with the best validation mean over seeds
  (a tie goes to the smaller LR), and the test scores of the seeds at that LR. Test scores never
  choose anything.
- **Family means per seed** (`family_by_seed`): a family's score at seed s is the mean of its tasks'
  test scores at their chosen LRs, over the seeds every task has; `average=True` adds the mean over
  all tasks (`ALL`).
- **Paired comparison** (`paired`): two models on the seeds both have, as a paired t-test of the
  per-seed differences (`stats.paired_test`), so direction, difference, interval and p come from the
  same paired values.
- **Scores at one LR** (`mean_at_lr`): per seed, the mean over tasks at a given LR (the LR curve and
  the stability analysis).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import TYPE_CHECKING, Any

from encoderlab.config import KEYED_WHEN_SET
from encoderlab.errors import UserError
from encoderlab.eval.stats import Estimate, PairedTest, paired_test, summarize

if TYPE_CHECKING:
    from encoderlab.eval.pooling import ModelPooling

ALL = "all"
"""Pseudo-family: the mean over every task."""

TIE_TOLERANCE = 1e-9
"""Validation means closer than this are a tie (the same scores summed in another order)."""


@dataclass(frozen=True)
class HubRead:
    """A hub dataset an evaluation's task read, as `EvalRecord.hub_datasets` records it (in results.jsonl,
    `{"hub_id": ..., "revision": ..., "commit": ...}`; `eval.tasks.hubcommits`)."""

    hub_id: str
    """The dataset's hub id."""
    revision: str | None = None
    """The revision the task pins (None: the default branch)."""
    commit: str | None = None
    """The commit read (None: not known, e.g. a copy `datasets` prepared before, read offline)."""


@dataclass(frozen=True, kw_only=True)
class EvalRecord:
    """One fine-tuning run: a model fine-tuned on a task at one LR and seed, scored on validation and
    on every test split."""

    model: str
    """Fingerprint of the evaluated weights and tokenizer (`protocol.fingerprint`)."""
    task: str
    """Task name."""
    family: str
    """Task family (sc, tc, qa, ir)."""
    task_signature: str
    """Hash of the task's definition: results of another definition are never mixed in."""
    metric: str
    """The task's headline metric."""
    lr: float
    """Fine-tuning learning rate."""
    seed: int
    """Fine-tuning seed."""
    val: dict[str, float]
    """Every metric on the validation split."""
    test: dict[str, dict[str, float]]
    """Every metric on every test split (`test`, and out-of-domain splits where the task has them)."""
    val_score: float
    """The headline metric on validation (chooses the LR)."""
    test_score: float
    """The headline metric on the `test` split (reported)."""
    source: str = ""
    """Where the model came from (path, asset or hub id) when it was evaluated."""
    steps: int = 0
    """Fine-tuning steps run."""
    final_loss: float | None = None
    """Training loss at the last fine-tuning step."""
    counts: dict[str, Any] = field(default_factory=dict)
    """Examples per split and what the loader skipped."""
    n_train: int = 0
    """Training examples after tokenisation."""
    seconds: float = 0.0
    """Wall time of the run."""
    device: str = ""
    """Device it ran on."""
    degenerate: dict[str, str] = field(default_factory=dict)
    """Test splits where every prediction was the same, with why (one class everywhere, ...)."""
    predictions: str = ""
    """Path of the saved test predictions, relative to the results folder (`eval/predictions.py`)."""
    best_epoch: int | None = None
    """The epoch whose weights were tested, for tasks that select the best epoch (paper 2)."""
    val_by_epoch: list[float | None] = field(default_factory=list)
    """The headline metric on validation after every epoch, for those tasks (null where it was not a number)."""
    pooling: str = ""
    """How the head pooled (sc, ir: `mean`, `first`, `late`, `last`; empty for the other families and
    in records written before it was kept), after a `model` pooling was resolved for this model."""
    start_model: dict[str, str | None] = field(default_factory=dict)
    """A source named by a hub id: `{hub_id, commit}`, the commit read (env.json's record of a pretraining
    run's start: `runlayout.start_model_record`); empty for any other source, and in older records."""
    hub_datasets: tuple[HubRead, ...] | None = field(default=None, metadata=KEYED_WHEN_SET)
    """Each hub dataset the task read (`Task.hub_repos`), with the commit read (`HubRead`). Recorded when
    the task was read, so the study report names what was read then, not what a task file names now; empty
    for local data. None: not recorded (a record from before 2026-12-06), which the report tells apart from
    a task that read none; left out of the JSON while None, so such a record reads and writes as before."""

    def non_finite(self) -> str | None:
        """The first score the summaries read that is not a finite number ("test_score is nan"), or None.
        Metrics never give one, so a record holding one was edited or damaged; read, it made the paired
        tests depend on the order of the seeds ([1, nan, 1]: p = 0.25; [nan, 1, 1]: Holm refused)."""
        scores = {"val_score": self.val_score, "test_score": self.test_score}
        # a split's score as it stands: null (a NaN as the strict JSON writer writes it) or missing was a
        # TypeError or KeyError traceback from the summary's interval over the seeds
        scores |= {
            f"test.{split}.{self.metric}": m.get(self.metric, _MISSING) for split, m in self.test.items()
        }
        bad = [f"{k} is {_said(v)}" for k, v in scores.items() if not _finite(v)]
        return bad[0] if bad else None


_MISSING = object()


def _finite(value) -> bool:
    """Whether a score read from JSON is a finite number (`from_dict` reads a top-level 50 as 50.0)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _said(value) -> str:
    """A score as the refusal names it: nan, inf, null or missing (a split's), or the JSON value written."""
    if value is _MISSING:
        return "missing"
    if value is None:
        return "null"
    return repr(value) if isinstance(value, str) else str(value)


def missing_split(records: Sequence[EvalRecord]) -> tuple[int, str] | None:
    """The first record (its index in `records`) lacking a test split that another run of its task has (same
    model, task and definition, whose splits are the same for every LR and seed), with that split; None when
    none does. Evaluation writes every split, so such a record was edited or damaged; read, `select_lr`'s
    interval over the seeds of that split was a KeyError traceback."""
    splits: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for r in records:
        splits[(r.model, r.task, r.task_signature)] |= set(r.test)
    for i, r in enumerate(records):
        if lacking := sorted(splits[(r.model, r.task, r.task_signature)] - set(r.test)):
            return i, lacking[0]
    return None


@dataclass(frozen=True, kw_only=True)
class LRPoint:
    """The scores of one LR of the grid."""

    lr: float
    """Learning rate."""
    seeds: list[int]
    """Seeds run at this LR."""
    val: Estimate
    """Validation mean and interval over the seeds."""
    test: Estimate
    """Test mean and interval over the seeds."""
    test_by_seed: dict[int, float]
    """Test score per seed at this LR."""


@dataclass(frozen=True, kw_only=True)
class Degenerate:
    """Runs at the chosen LR whose predictions were all the same."""

    runs: int
    """How many runs."""
    of: int
    """Out of how many."""
    why: str
    """What they predicted: the reason when every such run gives the same one, else each seed's
    ("seed 0: predicts class 'pos' for all 100 examples; seed 1: predicts class 'neg' ...")."""


@dataclass(frozen=True, kw_only=True)
class TaskSummary:
    """One model on one task: the LR curve, the LR chosen on validation and the test scores there."""

    metric: str
    """Headline metric."""
    family: str
    """Task family."""
    best_lr: float
    """The LR with the best validation mean (ties to the smaller LR)."""
    val: Estimate
    """Validation at the chosen LR."""
    test: Estimate
    """Test at the chosen LR (the reported number)."""
    test_splits: dict[str, Estimate]
    """Every test split at the chosen LR."""
    test_by_seed: dict[int, float]
    """Test score per seed at the chosen LR."""
    curve: list[LRPoint]
    """Every LR of the grid."""
    counts: dict[str, Any]
    """The task's example counts."""
    degenerate: Degenerate | None
    """Runs at the chosen LR that predicted one output for everything (None: none)."""


@dataclass(frozen=True, kw_only=True)
class FamilySummary:
    """A family of tasks: the mean over its tasks per seed, summarised over seeds."""

    tasks: list[str]
    """Its tasks."""
    seeds: list[int]
    """Seeds every task has."""
    test: Estimate | None
    """Mean over tasks per seed, summarised over those seeds (None without a common seed)."""


@dataclass(frozen=True, kw_only=True)
class ModelSummary:
    """Every task and family of one model within an LR x seed grid (`summary.json`)."""

    model: str
    """Fingerprint."""
    lrs: list[float]
    """LR grid."""
    seeds: list[int]
    """Seeds."""
    tasks: dict[str, TaskSummary]
    """Per task."""
    families: dict[str, FamilySummary]
    """Per family (known families only, in the order of `eval.spec.FAMILY_NAMES`)."""
    source: str = ""
    """Where the model came from."""
    start_model: dict[str, str | None] = field(default_factory=dict)
    """The hub id and commit read, where `source` is a hub id (`EvalRecord.start_model`)."""


def best_lr_entry(curve: Sequence[LRPoint], val: Mapping[float, float] | None = None) -> LRPoint:
    """The curve entry with the best validation mean; a tie goes to the smallest LR (the
    conservative choice: the least change to the pretrained weights that scores as well). `val`
    (LR -> validation mean) replaces the entries' own means: `select_lr` gives the means over the
    seeds every LR has when a grid is partial."""
    score = (lambda c: c.val.mean) if val is None else (lambda c: val[c.lr])
    top = max(score(c) for c in curve)
    return min((c for c in curve if score(c) >= top - TIE_TOLERANCE), key=lambda c: c.lr)


def _shared_seed_val(grid: Mapping[float, Mapping[int, EvalRecord]]) -> dict[float, float] | None:
    """Per LR, the validation mean over the seeds every LR has, when the LRs have different seeds (a
    grid read while it runs, or after a failed run): each LR's own mean would compare seed sets, and
    seed-to-seed spread could pick the LR. None when every LR has the same seeds, or none in common."""
    seeds = [set(runs) for runs in grid.values()]
    common = set.intersection(*seeds)
    if not common or all(s == common for s in seeds):
        return None
    return {lr: fmean(runs[s].val_score for s in sorted(common)) for lr, runs in grid.items()}


def _degenerate(runs: Sequence[EvalRecord]) -> Degenerate | None:
    flagged = [r for r in runs if r.degenerate.get("test")]
    if not flagged:
        return None
    reasons = [r.degenerate["test"] for r in flagged]
    # one reason for all reads as if every seed predicted that one class; say each seed's when they differ
    why = (
        reasons[0]
        if len(set(reasons)) == 1
        else "; ".join(f"seed {r.seed}: {w}" for r, w in zip(flagged, reasons))
    )
    return Degenerate(runs=len(flagged), of=len(runs), why=why)


def select_lr(records: Iterable[EvalRecord]) -> TaskSummary:
    """The summary of one model on one task from its runs (one per LR and seed)."""
    grid: dict[float, dict[int, EvalRecord]] = defaultdict(dict)
    for r in records:
        grid[r.lr][r.seed] = r
    curve = []
    for lr in sorted(grid):
        runs = [grid[lr][s] for s in sorted(grid[lr])]
        curve.append(
            LRPoint(
                lr=lr,
                seeds=sorted(grid[lr]),
                val=summarize([r.val_score for r in runs]),
                test=summarize([r.test_score for r in runs]),
                test_by_seed={r.seed: r.test_score for r in runs},
            )
        )
    best = best_lr_entry(curve, _shared_seed_val(grid))
    runs = [grid[best.lr][s] for s in best.seeds]
    metric = runs[0].metric
    return TaskSummary(
        metric=metric,
        family=runs[0].family,
        best_lr=best.lr,
        val=best.val,
        test=best.test,
        test_splits={name: summarize([r.test[name][metric] for r in runs]) for name in runs[0].test},
        test_by_seed=dict(best.test_by_seed),
        curve=curve,
        counts=runs[0].counts,
        degenerate=_degenerate(runs),
    )


def _mean_by_seed(per_task: Sequence[Mapping[int, float]]) -> dict[int, float]:
    """Per seed every task has, the mean over tasks."""
    if not per_task:
        return {}
    seeds = set.intersection(*(set(p) for p in per_task))
    return {s: fmean(p[s] for p in per_task) for s in sorted(seeds)}


def family_by_seed(tasks: Mapping[str, TaskSummary], average: bool = False) -> dict[str, dict[int, float]]:
    """Per family (and, with `average`, `ALL`): the per-seed mean over its tasks' test scores at their
    chosen LRs, over the seeds every task of the family has."""
    from encoderlab.eval.spec import FAMILY_NAMES

    members: dict[str, list[str]] = defaultdict(list)
    for name, t in tasks.items():
        members[t.family].append(name)
    order = [f for f in FAMILY_NAMES if f in members] + sorted(set(members) - set(FAMILY_NAMES))
    out = {f: _mean_by_seed([tasks[t].test_by_seed for t in members[f]]) for f in order}
    if average:
        out[ALL] = _mean_by_seed([t.test_by_seed for t in tasks.values()])
    return out


def mean_at_lr(tasks: Mapping[str, TaskSummary], lr: float) -> dict[int, float]:
    """Per seed, the mean over tasks of the test score at `lr` (seeds every task has there)."""
    per_task = [next((c.test_by_seed for c in t.curve if c.lr == lr), {}) for t in tasks.values()]
    return _mean_by_seed(per_task)


def paired(a: Mapping[int, float], b: Mapping[int, float]) -> PairedTest | None:
    """Paired t-test of a - b over the seeds both have (None with fewer than 2)."""
    seeds = sorted(set(a) & set(b))
    if len(seeds) < 2:
        return None
    return paired_test([a[s] for s in seeds], [b[s] for s in seeds])


def task_records(
    records: Iterable[EvalRecord],
    model: str,
    task: str,
    lrs: Iterable[float],
    seeds: Iterable[int],
    pooling: ModelPooling | None = None,
    segments: bool = False,
) -> list[EvalRecord]:
    """`model`'s runs of `task` under its current definition, within the LR x seed grid. A task that
    pools as the model declares (`pooling: model`) is resolved with `pooling`, the model's declaration,
    and `segments`, whether the model takes segment ids (`Task.resolve_segments`); without them
    (results read without the model) any resolution is its definition, but runs of two (the model's
    config.json changed between runs into one folder) are refused: they are not one score. Runs with
    segment ids beside runs of the same model without them are the newer code's and the older's (before
    segment ids were passed): the newer are its runs."""
    from encoderlab.eval.tasks import get_task

    spec = get_task(task)
    if pooling is not None:
        signatures = {spec.resolve_pooling(pooling.of(spec.family)).resolve_segments(segments).signature()}
    else:
        signatures = {t.signature() for t in spec.resolutions()}
    lrs, seeds = {float(lr) for lr in lrs}, {int(s) for s in seeds}
    mine = [
        r
        for r in records
        if r.model == model
        and r.task == task
        and r.task_signature in signatures
        and r.lr in lrs
        and r.seed in seeds
    ]
    marked = {t.signature() for t in spec.resolutions() if t.segments}
    if any(r.task_signature in marked for r in mine):
        mine = [r for r in mine if r.task_signature in marked]
    if len({r.task_signature for r in mine}) > 1:
        made = sorted({r.pooling or "?" for r in mine})
        raise UserError(
            f"the results of task {task} for model {mine[0].source or model[:12]} were made with {len(made)} poolings "
            f"({', '.join(made)}): its config.json declared another between runs; evaluate each "
            "configuration into its own folder"
        )
    return mine


def summarize_runs(records: Iterable[EvalRecord], model: str = "", lrs=(), seeds=()) -> ModelSummary:
    """The summary of one model from its runs: every task they hold (in the order met), and the known
    families of those tasks."""
    from encoderlab.eval.spec import FAMILY_NAMES

    by_task: dict[str, list[EvalRecord]] = defaultdict(list)
    for r in records:
        by_task[r.task].append(r)
    per_task = {task: select_lr(runs) for task, runs in by_task.items()}
    families = {}
    for family, by_seed in family_by_seed(per_task).items():
        if family in FAMILY_NAMES:
            families[family] = FamilySummary(
                tasks=[t for t, s in per_task.items() if s.family == family],
                seeds=sorted(by_seed),
                test=summarize(list(by_seed.values())) if by_seed else None,
            )
    return ModelSummary(
        model=model,
        lrs=[float(x) for x in lrs],
        seeds=[int(s) for s in seeds],
        tasks=per_task,
        families=families,
    )


def summarize_results(
    records: Sequence[EvalRecord],
    model: str,
    tasks: Sequence[str],
    lrs,
    seeds,
    pooling: ModelPooling | None = None,
    segments: bool = False,
) -> ModelSummary:
    """`model`'s summary from a results file's records: its runs of `tasks` under their current
    definitions (resolved with `pooling`, its declared poolings, and `segments`, see `task_records`),
    within the requested grid."""
    mine = [r for task in tasks for r in task_records(records, model, task, lrs, seeds, pooling, segments)]
    return summarize_runs(mine, model, lrs, seeds)


@dataclass(frozen=True, kw_only=True)
class TaskComparison:
    """Two models on one task, each at its own LR chosen on validation."""

    best_lr_a: float
    """Model a's chosen LR."""
    best_lr_b: float
    """Model b's chosen LR."""
    at_best_lr: PairedTest | None
    """Paired test of a - b over the seeds both have at their chosen LRs (None with fewer than 2)."""


def compare(
    records: Sequence[EvalRecord], model_a: str, model_b: str, tasks: Sequence[str], lrs, seeds
) -> dict[str, TaskComparison]:
    """Paired comparison of two models (fingerprints) per task: each at its own best validation LR,
    test scores paired by seed.

    Only the seeds are replicates: the runs of one model at several LRs share its weights and its
    seeds, so pairing every (LR, seed) as if independent (pseudo-replication) would understate p."""
    out = {}
    for task in tasks:
        ra, rb = (task_records(records, m, task, lrs, seeds) for m in (model_a, model_b))
        if ra and rb:
            sa, sb = select_lr(ra), select_lr(rb)
            out[task] = TaskComparison(
                best_lr_a=sa.best_lr,
                best_lr_b=sb.best_lr,
                at_best_lr=paired(sa.test_by_seed, sb.test_by_seed),
            )
    return out
