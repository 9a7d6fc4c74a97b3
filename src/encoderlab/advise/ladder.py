"""What a ladder is: runs of several objective schedules at several scales, each scored once.

A `Ladder` is a metric plus observations. An `Observation` is one pretraining run: its schedule,
model size N (non-embedding parameters), tokens D, compute C (measured FLOPs when the run logged
them, else 6ND), pretraining seed, and the metric's value. A *rung* is one (N, D) point of a
schedule; the runs of a rung differ only in their pretraining seed.

A `Schedule` is typed, not a name: a sequence of stages (objective, share of the steps, mask ratio),
so "CLM 25% -> MLM-40" read from a CSV and the same split read from a study's run config are the
same schedule. A share is kept as given (a CSV's `clm_share`, a study's recorded `clm_fraction`) and a
schedule is keyed by it exactly, so two recipes never share a trend line: shares rounded to the hundredth
merged 0.125 with 0.12 ("CLM 12%" both) and 0.333 with 0.334. A share read off a run's whole steps is no
recipe's exact share (CLM 16 of 31 steps), so `studyread` keys it beside the study's other such runs
(`stepshares`: runs one share explains, within half a step of each switch, are one schedule, 100 of 333 steps
with 300 of 1000) and marks it approximate (`Stage.approx`, printed `~30%`): it is never merged with, nor
printed as, a share a recipe was given.

The metric's direction is explicit. Curves are fitted to a quantity that falls towards a floor:
a lower-is-better metric (a loss) as it is; a higher-is-better one (a fine-tuning score) as its
distance to a ceiling (100 for scores in percent), which scaling also drives down.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar, Literal, Protocol

import numpy as np

from encoderlab.advise.ladderchecks import check_percent_scores, check_rungs_apart, check_token_units
from encoderlab.errors import UserError
from encoderlab.words import lr_text, percent_text

Objective = Literal["clm", "mlm"]
Direction = Literal["lower", "higher"]


def exact_share(share: float) -> float:
    """A share as its schedule is keyed: its value less float noise (1 - 0.7 is 0.30000000000000004, which must
    key as 0.3), not rounded to a printed precision (module docstring)."""
    return round(float(share), 12)


@dataclass(frozen=True)
class Stage:
    """One stretch of a schedule: an objective for a share of the run's steps."""

    objective: Objective
    share: float
    """Fraction of the run's steps, in (0, 1]: as given (`exact_share`), or read off steps (`stepshares`)."""
    mask_ratio: float | None = None
    """MLM's mask ratio (None for CLM)."""
    approx: bool = False
    """Whether `share` was read off runs' steps (`stepshares`), not one a recipe was given: it keys and prints
    apart (`~50%`) from a given share of the same digits."""

    def __post_init__(self) -> None:
        if self.objective not in ("clm", "mlm"):
            raise UserError(f"schedule stage objective must be clm or mlm, got {self.objective!r}")
        if not 0.0 < self.share <= 1.0:
            raise UserError(f"schedule stage share must be in (0, 1], got {self.share}")
        if self.objective == "mlm" and not (self.mask_ratio is not None and 0.0 < self.mask_ratio < 1.0):
            raise UserError(f"an MLM stage needs a mask ratio in (0, 1), got {self.mask_ratio}")
        if self.objective == "clm" and self.mask_ratio is not None:
            raise UserError("a CLM stage has no mask ratio; leave mask_ratio empty for pure CLM")


@dataclass(frozen=True)
class Schedule:
    """An objective schedule: stages in training order. Equal stages make equal schedules."""

    stages: tuple[Stage, ...]
    label: str = field(default="", compare=False)
    """Display name (defaults to one derived from the stages)."""

    def __post_init__(self) -> None:
        if not self.stages or abs(sum(s.share for s in self.stages) - 1.0) > 0.011:
            raise UserError(f"schedule stages must cover the whole run (shares sum to 1), got {self.stages}")

    @classmethod
    def biphasic(cls, clm_share: float, mask_ratio: float | None, label: str = "") -> Schedule:
        """CLM for `clm_share` of the steps, then MLM at `mask_ratio` (paper 1's family)."""
        if not 0.0 <= clm_share <= 1.0:
            raise UserError(f"clm_share must be in [0, 1], got {clm_share}")
        share = exact_share(clm_share)
        stages = []
        if share > 0:
            stages.append(Stage("clm", share))
        if share < 1:
            if mask_ratio is None:
                raise UserError(f"clm_share {clm_share} leaves an MLM stage: give its mask_ratio")
            stages.append(Stage("mlm", exact_share(1.0 - share), round(mask_ratio, 4)))
        elif mask_ratio is not None:
            raise UserError("clm_share 1 is pure CLM: leave mask_ratio empty")
        return cls(tuple(stages), label)

    @property
    def clm_share(self) -> float:
        """Share of the steps trained with CLM."""
        return exact_share(sum(s.share for s in self.stages if s.objective == "clm"))

    @property
    def mask_ratio(self) -> float | None:
        """The MLM mask ratio when every MLM stage uses the same one, else None."""
        ratios = {s.mask_ratio for s in self.stages if s.objective == "mlm"}
        return ratios.pop() if len(ratios) == 1 else None

    @property
    def name(self) -> str:
        """The label, or e.g. `CLM`, `MLM-40`, `CLM 25% -> MLM-40`, `CLM 25% -> MLM-40 50% -> CLM`: every stage
        but the last with its share (the last is the rest). Named by the first share alone, CLM 25% -> MLM 50% ->
        CLM 25% and CLM 25% -> MLM 25% -> CLM 50% (two schedules) were both `CLM 25% -> MLM-40 -> CLM`, and
        a ladder of both was refused as two schedules of one name (until 2026-12-07)."""
        if self.label:
            return self.label
        parts = [
            f"MLM-{percent_text(s.mask_ratio)}" if s.objective == "mlm" else "CLM"  # type: ignore[arg-type]
            for s in self.stages
        ]
        return " -> ".join(
            [f"{p} {'~' * s.approx}{percent_text(s.share)}%" for p, s in zip(parts[:-1], self.stages)]
            + parts[-1:]
        )


@dataclass(frozen=True, kw_only=True)
class Metric:
    """What the ladder scores, and which way is better."""

    name: str
    """Column or key of the metric (e.g. `val/mlm15`, the held-out MLM loss at a 15% mask)."""
    better: Direction
    """`lower` (a loss) or `higher` (a score)."""
    ceiling: float | None = None
    """The best possible value of a higher-is-better metric (100 for scores in percent)."""
    percent: bool = False
    """Whether the scores are said to be in percent (`--percent`), however low: a ladder whose every score is at
    most 1 at the ceiling of 100 reads as fractions and is refused (`ladderchecks.check_percent_scores`) unless
    its unit is said. The unit is said as the ceiling is, by a flag (a column would let rows disagree)."""

    def __post_init__(self) -> None:
        if self.better not in ("lower", "higher"):
            raise UserError(f"metric direction must be lower or higher, got {self.better!r}")
        if self.percent and self.better == "lower":
            raise UserError(
                f"--percent is the unit of a score, but {self.name} is lower-is-better (a loss); drop --percent"
            )
        if self.better == "higher" and self.ceiling is None:
            raise UserError(
                f"metric {self.name} is higher-is-better: give its ceiling (--ceiling 100 for scores in percent)"
            )
        if self.percent and self.ceiling != 100.0:
            raise UserError(
                f"--percent says {self.name} is in percent, whose ceiling is 100, but its ceiling is "
                f"{self.ceiling:g}; drop --ceiling (or --percent, for a score out of {self.ceiling:g})"
            )

    def to_loss(self, values: np.ndarray) -> np.ndarray:
        """Values as a quantity that falls with scale towards a floor >= 0 (what the curves model)."""
        values = np.asarray(values, dtype=float)
        return values if self.better == "lower" else self.ceiling - values  # type: ignore[operator]

    def from_loss(self, loss: np.ndarray) -> np.ndarray:
        """The inverse of `to_loss`."""
        loss = np.asarray(loss, dtype=float)
        return loss if self.better == "lower" else self.ceiling - loss  # type: ignore[operator]


KNOWN_METRICS = {"val/mlm15": Metric(name="val/mlm15", better="lower")}
"""Metrics whose direction is known: the held-out MLM loss at a fixed 15% mask (nats)."""


class MeasuredWith(Protocol):
    """What a study run's value was measured with (`Yardstick` for a loss, `FinetuneSetup` for a fine-tuning
    score): two runs' values are one yardstick only where theirs are equal (`_check_one_yardstick`)."""

    mismatch: ClassVar[str]
    """How a run measured otherwise is said (`scored val/loss on other held-out rows than ...`)."""
    fix: ClassVar[str]
    """What to do about it."""

    def differs(self, other) -> str:
        """The first setting `other` has otherwise, in words."""
        ...


@dataclass(frozen=True)
class Yardstick:
    """What a study run's held-out loss was scored on: `train/validation.py` scores the first `rows` rows of
    `seq_len` tokens of the prepared data's val split, so two runs' losses are one yardstick only where all of
    these agree (in nats of one tokenizer, on the same tokens)."""

    data: str
    """A digest of the prepared data's tokenizer and val split (`studyread._held_out_rows`; not its path: a
    copy prepared again is the same), or the synthetic source's settings."""
    seq_len: int
    rows: int
    """`validation.rows`."""
    attend: str
    """`data.attend`: whether a row is scored as its documents or as one sequence."""
    where: str = field(default="", compare=False)
    """The data's folder, for messages."""

    def differs(self, other: Yardstick) -> str:
        """How `other` scores differently, in words (`seq_len 256, not 128`)."""
        for name in ("data", "seq_len", "rows", "attend"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                if name == "data":
                    return f"data {other.where or theirs}, not {self.where or mine}"
                return f"{'validation.' if name == 'rows' else ''}{name} {theirs}, not {mine}"
        return "the same rows"

    mismatch: ClassVar[str] = "on other held-out rows"
    fix: ClassVar[str] = "advise runs on the same prepared data, seq_len and validation.rows together"


def _listed(values: tuple) -> str:
    return ", ".join(lr_text(v) if isinstance(v, float) else str(v) for v in values) or "none"


@dataclass(frozen=True)
class FinetuneSetup:
    """How a study run's `finetune:TASK` score was fine-tuned (`studyread`, from its eval nodes): a score is the
    test mean over fine-tuning seeds at the LR chosen on validation, so two runs' scores are one yardstick only
    where the task's definition (its data, epochs, batch: its signature, capped at `max_steps`), the LR grid
    chosen from and the seeds averaged all agree. A wider grid can only choose better, more seeds move the mean."""

    task: str
    """The task's signature (`EvalRecord.task_signature`): its definition as the nodes ran it."""
    lrs: tuple[float, ...]
    """The LR grid of the finished fine-tuning runs the score chose from, sorted."""
    seeds: tuple[int, ...]
    """The fine-tuning seeds, sorted."""
    max_steps: int | None
    """The study's cap on fine-tuning steps (None: the task's own schedule)."""
    task_files: tuple[str, ...] = ()
    """The task files a task of one's own came from."""

    mismatch: ClassVar[str] = "with another fine-tuning setup"
    fix: ClassVar[str] = (
        "advise on runs fine-tuned alike together (one task version, LR grid, fine-tuning seeds and max_steps): "
        "finish the studies' evaluations, or evaluate them again with one protocol"
    )

    def differs(self, other: FinetuneSetup) -> str:
        """How `other` was fine-tuned differently, in words (`LR grid 0.0001, not 0.0001, 0.0005`)."""
        for name, words in (
            ("task", "task version"),
            ("task_files", "task files"),
            ("lrs", "LR grid"),
            ("seeds", "fine-tuning seeds"),
            ("max_steps", "max_steps"),
        ):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                if isinstance(mine, tuple):
                    mine, theirs = _listed(mine), _listed(theirs)
                return f"{words} {theirs}, not {mine}"
        return "the same setup"


@dataclass(frozen=True, kw_only=True)
class Observation:
    """One pretraining run of a ladder, scored once."""

    schedule: Schedule
    params: float
    """N: non-embedding parameters."""
    tokens: float
    """D: training tokens."""
    seed: int
    """Pretraining seed."""
    value: float
    """The metric's value."""
    flops: float | None = None
    """Measured training FLOPs (None: 6ND is used)."""
    source: str = ""
    """Where it was read (file and line, or run folder), for messages."""
    scored_on: MeasuredWith | None = None
    """What a study run's value was measured with: the held-out rows of its loss, or the fine-tuning setup of
    its `finetune:TASK` score (None: unknown, as in a ladder file)."""

    @property
    def compute(self) -> float:
        """C: measured FLOPs, else 6ND."""
        return self.flops if self.flops is not None else 6.0 * self.params * self.tokens

    @property
    def rung(self) -> tuple[float, float]:
        """The (N, D) point this run belongs to."""
        return (self.params, self.tokens)


@dataclass(frozen=True)
class Ladder:
    """A metric and the observations of at least two schedules."""

    metric: Metric
    observations: tuple[Observation, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "observations", _one_label(self.observations))
        _validate(self)

    @property
    def schedules(self) -> tuple[Schedule, ...]:
        """Schedules in first-seen order."""
        return tuple(dict.fromkeys(o.schedule for o in self.observations))

    def of(self, schedule: Schedule) -> tuple[Observation, ...]:
        """The observations of one schedule, by compute then seed."""
        return tuple(
            sorted(
                (o for o in self.observations if o.schedule == schedule), key=lambda o: (o.compute, o.seed)
            )
        )


def _validate(ladder: Ladder) -> None:
    obs, metric = ladder.observations, ladder.metric
    if not obs:
        raise UserError("the ladder has no observations; give CSV/JSONL files or study folders with runs")
    for o in obs:
        _check_row(o, metric)
    seen: dict[tuple, str] = {}
    for o in obs:
        key = (o.schedule, o.params, o.tokens, o.seed)
        if key in seen:
            raise UserError(
                f"{o.schedule.name} at N={o.params:.3g}, D={o.tokens:.3g}, seed {o.seed} appears twice ({seen[key]} "
                f"and {o.source}); give each run once"
            )
        seen[key] = o.source
    check_rungs_apart(obs)
    check_token_units(obs)
    _check_one_compute_scale(obs)
    _check_one_yardstick(obs, metric)
    check_percent_scores(ladder)
    names = [s.name for s in ladder.schedules]
    if len(names) < 2:
        raise UserError(
            f"the ladder has one schedule ({names[0]}); advise compares schedules: add runs of another schedule"
        )
    if twice := next((n for n in names if names.count(n) > 1), None):
        # was accepted: the output ranked "same > same", and the backtest, which pairs schedules by
        # name, found no pair and failed (nan% of pairs), so the method recommended changed
        a, b = [next(o for o in obs if o.schedule == s) for s in ladder.schedules if s.name == twice][:2]
        raise UserError(
            f"two schedules are named {twice!r} ({_stages(a.schedule)} at {a.source or 'a run'}; "
            f"{_stages(b.schedule)} at {b.source or 'a run'}); give each schedule its own label"
        )
    if len(scales := {o.rung for o in obs}) == 1:  # was advised: the one rung's ranking, "at the target"
        (n, d), files = scales.pop(), {o.source.rsplit(":", 1)[0] for o in obs if o.source}
        where = next(iter(files)) if len(files) == 1 else "the ladder"
        raise UserError(
            f"{where} is not a ladder: every run is at N={n:.3g}, D={d:.3g}, one scale, which says nothing about "
            f"a larger one; add runs of every schedule at other model sizes or token budgets{_ladder_fix(files)}"
        )


def _check_row(o: Observation, metric: Metric) -> None:
    """One run's counts finite and positive, its value on the curves' side of the best value."""
    numbers = {"params": o.params, "tokens": o.tokens, "value": o.value, "flops": o.flops or 1.0}
    bad = [k for k, v in numbers.items() if not (isinstance(v, (int, float)) and math.isfinite(v))] or [
        f"{k} = {v:g}"  # the count that is not positive, by name: the line listed all three, whichever it was
        for k, v in (("params", o.params), ("tokens", o.tokens), ("flops", o.flops))
        if v is not None and v <= 0
    ]
    if bad:
        raise UserError(
            f"{o.source or 'an observation'}: {', '.join(bad)} must be finite and positive; fix or drop that row"
        )
    if metric.to_loss(np.array(o.value)) <= 0:
        # a score at the ceiling itself (a perfect 100) was said to be above it
        where = (
            f"at or above its ceiling ({metric.ceiling:g})" if metric.better == "higher" else "not positive"
        )
        raise UserError(
            f"{o.source or 'an observation'}: {metric.name} = {o.value} is {where}; curves model a positive "
            "distance to the best value: check the metric, its direction or --ceiling"
        )


def _ladder_fix(sources: set[str]) -> str:
    """How to add a scale, for a ladder read from a study folder: in its study file, which a user who ran one
    has at hand (the line named only the Python `ladder_study` API); else (ladder files, or runs built in
    Python, which name no source) rows. Decided by the sources, not by the line's `where`: with two ladder
    files `where` reads "the ladder", which is no file, and they were told to edit a study file. A copy at
    other `steps` needs a group of its own: in the runs' group the study refuses it for its token budget
    (until 2026-12-06 the line left that out, so the fix it gave was refused by `study run`)."""
    from encoderlab.model.config import SIZES

    if not any(Path(s).is_dir() for s in sources):
        return " (rows at other params or tokens, or a ladder study: `encoderlab.advise.study.ladder_study`, docs/advise.md)"
    return (
        f": in the study file, a copy of each run with another `params: {{size: ...}}` ({', '.join(SIZES)}) or "
        "`steps: N` and a `group:` of its own (a group's runs share one token budget), then `study run` it and "
        "advise on its folder (docs/advise.md)"
    )


def _check_one_compute_scale(obs: tuple[Observation, ...]) -> None:
    """Measured FLOPs for every run or for none. Measured FLOPs count what 6ND leaves out (attention, the
    output head: CLM's dense one costs more than MLM's sparse one), so the two are different scales: mixed,
    a curve's rungs sat on both, and a compute target or a crossover compared one schedule's measured
    compute with another's 6ND (a ladder whose MLM runs logged 1.5 x 6ND moved the crossover from 4.8e18 to
    1.3e19 FLOPs and flipped the point ranking at the target, without a word)."""
    measured = next((o for o in obs if o.flops is not None), None)
    nominal = next((o for o in obs if o.flops is None), None)
    if measured is not None and nominal is not None:
        raise UserError(
            f"{measured.source or 'a run'} gives its measured FLOPs but {nominal.source or 'another run'} does not "
            "(6ND would stand in for it), and the two are not one scale of compute; give measured flops for every "
            "run or for none"
        )


def _check_one_yardstick(obs: tuple[Observation, ...], metric: Metric) -> None:
    """Every study run measured alike: its loss scored on the same held-out rows, its fine-tuning score from the
    same setup. Two study folders on other prepared data (another corpus, another tokenizer: nats of another
    vocabulary), row length or `validation.rows`, or fine-tuned over another LR grid, other seeds or another
    version of the task, were advised as one ladder, their values compared as if measured alike, without a
    word."""
    scored = [o for o in obs if o.scored_on is not None]
    for o in scored[1:]:
        first, theirs = scored[0].scored_on, o.scored_on
        assert first is not None and theirs is not None
        if theirs != first:
            differs = first.differs(theirs) if type(first) is type(theirs) else "another kind of yardstick"
            raise UserError(
                f"{o.source} scored {metric.name} {first.mismatch} than {scored[0].source} "
                f"({differs}), so their values are not one yardstick; {first.fix}"
            )


def _one_label(obs: tuple[Observation, ...]) -> tuple[Observation, ...]:
    """The observations with every run of a schedule under its one label, or a refusal naming two labels.

    A schedule is its stages, and its label was the first run's: runs labelled as two variants of one split
    (two learning rates, two corpora: what the columns do not tell apart) were pooled as one schedule without
    a word, and a label missing on the first run was dropped from the table while `runs.*` and the held-out
    score (which pairs runs by name) read the others' ("extrapolation n/a"). A run without a label takes
    its schedule's."""
    labelled: dict[Schedule, Observation] = {}
    for o in obs:
        first = labelled.setdefault(o.schedule, o) if o.schedule.label else None
        if first is not None and first.schedule.label != o.schedule.label:
            raise UserError(
                f"{first.source or 'a run'} labels its schedule ({_stages(o.schedule)}) {first.schedule.label!r} but "
                f"{o.source or 'another run'} labels the same schedule {o.schedule.label!r}; a label names one "
                "schedule, not a variant of it: give its runs one label, or advise the variants apart"
            )
    return tuple(
        replace(o, schedule=labelled[o.schedule].schedule) if o.schedule in labelled else o for o in obs
    )


def _stages(schedule: Schedule) -> str:
    """A schedule's stages in words (`CLM 25%, then MLM at mask 0.4 75%`), whatever its label."""
    return ", then ".join(
        f"{st.objective.upper()}{f' at mask {st.mask_ratio:g}' if st.mask_ratio is not None else ''} "
        f"{'~' * st.approx}{percent_text(st.share)}%"
        for st in schedule.stages
    )
