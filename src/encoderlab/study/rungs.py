"""One test of "one rung written apart", shared by `encoderlab advise` and the ladder studies it reads.

A rung of a ladder is its exact (N, D): seeds pool, and schedules pair, only there. Two rungs within
`RUNG_RTOL` of each other in both N and D are one size and budget written apart, which advise refuses
(`advise/ladderchecks.py`). A ladder study that trains such a pair is refused before it trains, by the same
test and threshold: by `LadderDesign` (`advise/study.py`) on the runs a design would build, and here, at
`study plan`/`study run`, on a ladder study file's resolved runs (one written by hand or before the design
refused it), with a run whose decay is 1 step (`FEWEST_DECAY_STEPS`). The constants live in the study layer,
the lowest both may import. The trade-off is the threshold: loose enough that a ladder as written by hand
passes, tight enough that no real ladder meets it.
Only studies of scale `ladder` (what `ladder_study` writes) are checked: any other study's groups are
compared by the study's own report, not as rungs, so runs near each other there are no mistake.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from encoderlab.errors import UserError

if TYPE_CHECKING:
    from encoderlab.config import RunConfig
    from encoderlab.study.spec import StudySpec

Rung = tuple[float, float]
"""A rung: (N, D), non-embedding parameters and tokens trained."""

RUNG_RTOL = 0.01
"""Two rungs whose N and D both lie within this share of each other are one size and budget written apart."""

FEWEST_DECAY_STEPS = 2
"""Fewest decay updates of a ladder's run: the first runs at the peak (the floor comes after the last), so a
1-step decay lowers no LR and the run is not the annealed run the ladder's fit assumes."""

LADDER_SCALE = "ladder"
"""The scale of a ladder study (`advise.study.ladder_study`), whose runs are checked as rungs."""


def rungs_apart(rungs: Iterable[Rung]) -> tuple[Rung, Rung] | None:
    """The first two distinct (N, D) rungs within `RUNG_RTOL` of each other in both N and D, smaller N first;
    None if no two are."""
    ordered = sorted(set(rungs))
    for i, (n, d) in enumerate(ordered):
        for m, e in ordered[i + 1 :]:
            if m > n * (1 + RUNG_RTOL):
                break  # sorted by N: no later rung is near
            if abs(e - d) <= RUNG_RTOL * min(d, e):
                return (n, d), (m, e)
    return None


def check_ladder_study(spec: StudySpec, resolved: Mapping[str, RunConfig]) -> None:
    """Refuse a ladder study two of whose from-scratch runs advise would read as one rung written apart (it
    trained for hours, then `encoderlab advise` refused its folder), or one of whose runs decays over 1 step."""
    from encoderlab.model.config import non_embedding_params
    from encoderlab.study.resolve import tokens

    if spec.scale != LADDER_SCALE:
        return
    rungs: dict[Rung, str] = {}
    for run in spec.runs:
        cfg = resolved.get(run.name)
        # a continued run is no rung of advise's (it leaves such runs out)
        if cfg is not None and run.init is None and not cfg.model.init:
            rungs.setdefault((non_embedding_params(cfg.model.size), float(tokens(cfg))), run.name)
    _check_decays(spec, resolved)
    pair = rungs_apart(rungs)
    if pair:
        (n, d), (m, e) = pair
        raise UserError(
            f"runs {rungs[pair[0]]} and {rungs[pair[1]]} of ladder study {spec.name} are at N={n:.6g}, D={d:.6g} "
            f"and N={m:.6g}, D={e:.6g}, within {RUNG_RTOL:.0%} of each other, so `encoderlab advise` would refuse "
            f"the study's folder (one rung written apart); spread their steps more than {RUNG_RTOL:.0%} apart, "
            "or give them the same steps"
        )


def _check_decays(spec: StudySpec, resolved: Mapping[str, RunConfig]) -> None:
    """Refuse a ladder study's run whose WSD decay is under `FEWEST_DECAY_STEPS` steps (a file edited by hand, or
    written before `LadderDesign` refused it): its LR is never lowered."""
    for run in spec.runs:
        cfg = resolved.get(run.name)
        for phase in cfg.phases if cfg is not None else ():
            if phase.schedule.kind == "wsd" and 0 < phase.schedule.decay < FEWEST_DECAY_STEPS:
                raise UserError(
                    f"run {run.name} of ladder study {spec.name} decays over {phase.schedule.decay} step of its "
                    f"{cfg.steps}, which runs at the peak: its LR is never lowered, so it is not an annealed rung; "
                    f"give it a decay of {FEWEST_DECAY_STEPS} steps or more (more steps, or a larger decay)"
                )
