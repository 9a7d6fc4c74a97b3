"""What the runs of a study start from, checked with the spec (`StudySpec.problems`).

A run's `init` names another run of the study (it continues that run's final model), or an asset, a
model folder or a hub id (a run without a recipe evaluates it as is). Refused here, one line each: a
name that is probably a typo of a run's; a continued run at pretraining seeds its start run cannot give
it; and a run without a recipe whose init is a run of the study (its eval nodes took the run's name for
a model source and failed after the runs had trained; that model is evaluated as that run already).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from encoderlab.errors import closest

if TYPE_CHECKING:
    from encoderlab.study.spec import StudySpec


def start_problems(spec: StudySpec, names: list[str]) -> list[str]:
    """The problems of the runs' start models, one line each (`names`: the study's run names)."""
    out = []
    for r in spec.runs:
        near = _near_run(r.init, names) if r.init else None
        if near:
            out.append(
                f"run {r.name} starts from '{r.init}', which is no run of the study (did you mean '{near}'?); "
                "an asset, model folder or hub id is used as given"
            )
    return out + _continuation_problems(spec, names)


def _continuation_problems(spec: StudySpec, names: list[str]) -> list[str]:
    """Runs that continue a run of the study at pretraining seeds it cannot give them, or without a recipe."""
    out = []
    for run in spec.runs:
        if run.init not in names:
            continue
        mine, theirs = spec.seeds_of(run), spec.seeds_of(spec.run(run.init))
        if (
            run.recipe is None
        ):  # its eval nodes took the run's name for a model source, after the runs trained
            out.append(
                f"run {run.name} has no recipe, and its init {run.init} is a run of the study, evaluated as run "
                f"{run.init} already; drop run {run.name}, or give it a recipe to continue {run.init}"
            )
        elif len(theirs) == 1 and theirs[0] > min(mine):  # the graph adds nodes seed by seed
            out.append(
                f"run {run.name} continues {run.init}, trained at pretraining seed {theirs[0]} only, at seeds "
                f"{list(mine)}; a continued run's seeds must not be below its start model's {theirs[0]}"
            )
        elif len(theirs) > 1 and not set(mine) <= set(theirs):
            out.append(
                f"run {run.name} continues {run.init} at pretraining seeds {list(mine)}, but "
                f"{run.init} is trained at {list(theirs)}; give {run.name} seeds {run.init} has, or train "
                f"{run.init} at one seed (each seed of {run.name} then continues that one model)"
            )
    return out


def _near_run(init: str, names: list[str]) -> str | None:
    """The run name a start model is probably a typo of: close to one, and no asset, path or run."""
    from pathlib import Path

    from encoderlab.data.assets import ASSETS

    if init in names or init in ASSETS or Path(init).exists():
        return None
    # `CLM` for `clm`: difflib compares case, so no run was near and the start was taken for a hub id
    if same := next((n for n in names if n.lower() == init.lower()), None):
        return same
    # stricter: a start model may be any hub id, so only a near-certain typo
    return closest(init, names, cutoff=0.8)
