"""The results-per-run table says what the numbers of a run continued from a one-seed base cover.

A run continued at three pretraining seeds from a study run trained at one (paper 2's detour and baseline at
`cpu`, from the study's one `base`) had its interval and starred difference over those three seeds read as any
other run's: they replicate the continued pretraining only, not the base. Now such a run's label is marked and
the note under the table says so, and whether the baseline continues the same base; other runs are unmarked.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from fake_study import small_spec
from tests.study.study_fixtures import ONE_SEED_BASE_RUNS, SEEDS

from encoderlab.eval.stats import paired_test, summarize
from encoderlab.study.paper2 import paper2_detour
from encoderlab.study.report import _RUNS_NOTE, _over_runs
from encoderlab.study.scales import SCALES
from encoderlab.study.table import Cell

RUNS = tuple(r for r in ONE_SEED_BASE_RUNS if r.name not in ("mlmcpt3", "clm"))


def _cell(values: list[float], base: list[float] | None) -> Cell:
    return Cell(**vars(summarize(values)), vs_baseline=paired_test(values, base) if base else None)


def _section(spec, rows: list[str]) -> tuple[list[list[str]], str]:
    """The per-run table's rows and note for `rows` (each run's scores made up; the baseline's cell unpaired)."""
    scores = {r: [60.0 + i + 0.3 * k * (i + 1) for k in SEEDS] for i, r in enumerate(rows)}
    runs = {
        r: {"sc": _cell(v, None if r == spec.baseline else scores.get(spec.baseline))}
        for r, v in scores.items()
    }
    data = SimpleNamespace(spec=spec, label={r.name: r.label for r in spec.runs}.get)
    (_, _, (_, table)), (_, _, note) = _over_runs(data, SimpleNamespace(runs=runs), ["sc"], ["SC"])
    return table, note


def test_runs_from_one_seed_bases_are_marked_and_the_note_says_what_they_cover():
    spec = replace(small_spec(), runs=RUNS, cka=(), claims=(), baseline="mlmcpt")
    table, note = _section(spec, ["clmcpt", "mlmcpt", "mlmcpt2", "mlm"])
    labels = [row[0] for row in table]
    assert labels == ["CLM base + MLM †", "MLM base + MLM †", "MLM base + MLM again †", "MLM"]
    assert note.startswith(
        _RUNS_NOTE + " †: CLM base + MLM continues CLM base, trained at one pretraining seed"
    )
    assert "intervals cover the pretraining seeds of the continuation only, not MLM base's own" in note
    assert (
        "the baseline does not continue CLM base, so CLM base + MLM's difference to it compares base" in note
    )
    assert "the baseline continues MLM base too, so MLM base + MLM again's difference to it compares" in note
    assert "MLM base + MLM and MLM base + MLM again continue MLM base" in note


def test_no_mark_without_a_one_seed_base():
    spec = replace(small_spec(), runs=RUNS, cka=(), claims=(), baseline="mlm")
    table, note = _section(spec, ["mlm"])
    assert [row[0] for row in table] == ["MLM"] and note == _RUNS_NOTE


def test_paper2_detour_at_cpu_is_marked_as_continuations_of_its_one_base():
    spec = paper2_detour(SCALES["cpu"])
    table, note = _section(spec, ["detour-biomed", "baseline-biomed"])
    assert all(row[0].endswith(" †") for row in table)
    assert (
        "the baseline continues " in note
        and "difference to it compares continuations of that one model" in note
    )
    assert "base checkpoints" not in note
