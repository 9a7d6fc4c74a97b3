"""The report's "pretraining seeds" row when every run names its own seeds.

It listed the study's `seeds` first, then the runs at others: a study file whose runs all say `seeds: [3]`
(the study's `seeds` left at its default, 0) read "0 (mlm40, mlm20, ...: 3)", a seed no run trained at.
"""

from __future__ import annotations

from dataclasses import replace

from fake_study import small_spec

from encoderlab.study.report import _seed_text


def _own_seeds(spec, seeds_of) -> object:
    """`spec` with each run at `seeds_of(run)` (None: the study's)."""
    return replace(spec, runs=tuple(replace(r, seeds=seeds_of(r) or r.seeds) for r in spec.runs))


def test_runs_all_at_one_seed_of_their_own_read_that_seed_alone():
    spec = small_spec()
    assert 3 not in spec.seeds
    assert _seed_text(_own_seeds(spec, lambda r: (3,))) == "3"


def test_runs_at_seeds_of_their_own_read_by_run_without_the_unused_study_seeds():
    spec = small_spec()
    first = spec.runs[0].name
    text = _seed_text(_own_seeds(spec, lambda r: (3,) if r.name == first else (4, 5)))
    others = ", ".join(r.name for r in spec.runs[1:])
    assert text == f"{first}: 3; {others}: 4, 5"


def test_a_run_at_the_study_seeds_keeps_them_first():
    spec = small_spec()
    first = spec.runs[0].name
    study = ", ".join(map(str, spec.seeds))
    text = _seed_text(_own_seeds(spec, lambda r: (3,) if r.name == first else None))
    assert text == f"{study} ({first}: 3)"
