"""An MLM objective's tag (`mlm40`: its metrics' objective, its phase's name) is one per mask ratio, and
so are the names advise gives a ladder's schedules and runs. `round(ratio * 100)` wrote 0.15 and 0.154 both
as `mlm15` (a ladder of the two was refused as two schedules named `MLM-15`) and 0.125 as `mlm12`."""

from __future__ import annotations

import math

import pytest

from encoderlab.advise.ladder import Schedule
from encoderlab.advise.study import _run_name
from encoderlab.objectives import MLM
from encoderlab.words import percent_text

RATIOS = [k / 1000 for k in range(1, 1000)] + [0.154, 0.1234567, 0.12345671, 1e-7, 0.999999]
RATIOS += [math.nextafter(0.15, 1.0), math.nextafter(0.4, 0.0)]


def test_two_different_mask_ratios_never_get_the_same_tag():
    tags = {MLM(mask_ratio=r).tag for r in RATIOS}
    assert len(tags) == len(set(RATIOS))
    assert MLM(mask_ratio=0.15).tag != MLM(mask_ratio=0.154).tag
    assert MLM(mask_ratio=0.125).tag == "mlm12.5"


@pytest.mark.parametrize(
    ("ratio", "tag"), [(0.2, "mlm20"), (0.3, "mlm30"), (0.4, "mlm40"), (0.5, "mlm50"), (0.15, "mlm15")]
)
def test_the_tags_of_the_papers_ratios_stay_as_they_were(ratio, tag):
    """Paper 1's ratios, paper 2's MLM-30 baseline and MLM-15 decay: their run ids, phase names and metrics."""
    assert MLM(mask_ratio=ratio).tag == tag


def test_a_percentage_shows_no_float_noise():
    assert [percent_text(x) for x in (0.29, 0.07, 0.57, 1.0, 0.0)] == ["29", "7", "57", "100", "0"]


def test_advise_names_schedules_and_runs_of_near_ratios_apart():
    a, b = Schedule.biphasic(0.25, 0.15), Schedule.biphasic(0.25, 0.154)
    assert a.name == "CLM 25% -> MLM-15" and b.name == "CLM 25% -> MLM-15.4"
    assert _run_name(a, "small", 1.0) != _run_name(b, "small", 1.0)
