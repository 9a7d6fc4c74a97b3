"""`study plan` says, before anything trains, whether a scale is its paper's setup: at a paper scale the
readings its runs train on where the paper is silent, else NOT the paper's setup with every departure. The
plan of `paper1-pfs --scale gpu-610m` (3,484 GPU-hours) said neither; only `study list` gave the verdict's
aspects, and the report the rest, after the runs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from encoderlab.study.catalog import get_study
from encoderlab.study.fidelity import PAPERS, departures
from encoderlab.study.plan import plan_study
from encoderlab.study.plantext import plan_text


def _setup(study: str, scale: str) -> list[str]:
    return [
        line
        for line in plan_text(plan_study(get_study(study, scale))).splitlines()
        if line.startswith("setup:")
    ]


@pytest.mark.parametrize("study, scale", [("paper1-pfs", "gpu-610m"), ("paper1-pfs", "gpu-1b")])
def test_a_paper_scale_plan_says_it_is_the_papers_setup_and_names_the_readings(study, scale):
    spec = get_study(study, scale)
    assert not departures(spec)  # these scales are paper 1's setup
    (line,) = _setup(study, scale)
    assert line.startswith("setup: paper 1's setup")
    assert PAPERS["paper1"].readings in line  # the 1,024-token rows, the 1B shape, ...
    assert "28 layers with SwiGLU 5,120" in line


@pytest.mark.parametrize(
    "study, scale", [("paper1-pfs", "demo"), ("paper1-cpt", "gpu-210m"), ("paper2-detour", "gpu-210m")]
)
def test_a_plan_that_is_not_the_papers_setup_says_so_with_every_departure(study, scale):
    spec = get_study(study, scale)
    gone = departures(spec)
    assert gone
    (line,) = _setup(study, scale)
    short = PAPERS[spec.paper].short
    assert line.startswith(f"setup: NOT {short}'s setup, so it does not reproduce {short}'s results")
    for d in gone:
        assert d.sentence() in line
    # the readings describe paper-length runs: said where the runs train at that length, not at the demo's
    shrunk = any(d.aspect == "pretraining" for d in gone)
    assert (PAPERS[spec.paper].readings in line) is not shrunk


def test_a_study_that_names_no_paper_has_no_setup_line():
    spec = replace(get_study("paper1-pfs", "demo"), paper="")
    assert not [line for line in plan_text(plan_study(spec)).splitlines() if line.startswith("setup:")]
