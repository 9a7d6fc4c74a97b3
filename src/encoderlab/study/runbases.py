"""The results-per-run table's note on runs that continue a base trained at one pretraining seed.

A run continued at three pretraining seeds from a study run trained at one (paper 2's detour and baseline at
`cpu`, both from the study's one `base`) has its interval over those three seeds: they replicate the continued
pretraining, not the base, so the interval says nothing of the base's own seed-to-seed variation, and neither
does the run's difference to the baseline. The table's cells read as every other run's, so such a run's label
carries a mark and the note under the table says what its numbers cover (`results.continued_one_seed_bases`),
and, for its difference, whether the baseline continues the same base (a difference between continuations of
that one model) or not (two base checkpoints compared, as its claim says: `results.one_seed_bases`).
Runs from a start model evaluated as is, or trained from scratch, carry no mark: there the note would be noise.
Trade-off: one mark for every such run, the note naming each group by its bases, rather than a mark per base.
"""

from __future__ import annotations

from collections.abc import Iterable

from encoderlab.study.data import StudyData
from encoderlab.study.results import continued_one_seed_bases, one_seed_bases
from encoderlab.words import noun

MARK = " †"
"""Appended to the label of a run whose checkpoints all continue a one-seed base."""


def base_marks(data: StudyData, runs: Iterable[str]) -> tuple[dict[str, str], str]:
    """The mark per run of `runs` (the table's rows) that continues a one-seed base, and the note saying what
    those runs' intervals and differences cover; ({}, "") when no row does."""
    spec, baseline = data.spec, data.spec.baseline
    groups: dict[tuple[str, ...], list[str]] = {}
    rows = list(runs)
    for run in rows:
        if bases := continued_one_seed_bases(spec, run):
            groups.setdefault(bases, []).append(run)
    baseline = baseline if baseline in rows else None  # a baseline not in the table: no difference is shown
    said = [_group_text(data, bases, names, baseline) for bases, names in groups.items()]
    marks = {run: MARK for names in groups.values() for run in names}
    return marks, ("†: " + "; ".join(said) + ".") if said else ""


def _group_text(data: StudyData, bases: tuple[str, ...], runs: list[str], baseline: str | None) -> str:
    """What the numbers of `runs`, which all continue the one-seed `bases`, cover."""
    many, named = len(runs) > 1, " and ".join(data.label(b) for b in bases)
    text = (
        f"{' and '.join(data.label(r) for r in runs)} {noun(len(runs), 'continues', 'continue')} {named}, trained "
        f"at one pretraining seed (every checkpoint continues that one model), so {'their' if many else 'its'} "
        f"intervals cover the pretraining seeds of the continuation only, not {named}'s own seed-to-seed variation"
    )
    compared = [r for r in runs if baseline is not None and r != baseline]
    same = [r for r in compared if not one_seed_bases(data.spec, r, baseline)]
    other = [r for r in compared if r not in same]
    if same:
        text += (
            f"; the baseline continues {named} too, so {_whose(data, same)} difference to it compares "
            "continuations of that one model"
        )
    if other:
        text += (
            f"; the baseline does not continue {named}, so {_whose(data, other)} difference to it compares base "
            "checkpoints, not their objectives"
        )
    return text


def _whose(data: StudyData, runs: list[str]) -> str:
    """ "A's" or "A's and B's"."""
    return " and ".join(f"{data.label(r)}'s" for r in runs)
