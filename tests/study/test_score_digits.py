"""The report prints each score with the digits its interval allows (`words.estimate_text`).

Every score was printed at two places, so a wide interval claimed digits a fine-tuning seed moves by far more
than 0.01 (`71.23 ± 9.80`). Now the half-width has two significant digits and the score is rounded to the
same place, as the GUM advises (JCGM 100:2008, "Evaluation of measurement data - Guide to the expression of
uncertainty in measurement", 7.2.6: an uncertainty "to at most two significant digits"); one helper prints the
results table's cells, the claims and the notes.
"""

from __future__ import annotations

import json
import re

import pytest
from golden_report import GOLDEN

from encoderlab.eval.stats import PairedTest, interval_text
from encoderlab.study.report import _cell
from encoderlab.study.table import Cell
from encoderlab.words import MAX_DECIMALS, decimals, estimate_text


@pytest.mark.parametrize(
    ("mean", "half_width", "text"),
    [
        (71.234, 9.8, "71.2 ± 9.8"),  # was 71.23 ± 9.80
        (69.8642, 0.3412, "69.86 ± 0.34"),  # two places, as before
        (71.234, 12.3, "71 ± 12"),
        (71.234, 9.96, "71 ± 10"),  # 9.96 rounds to 10.0, three digits: one place less
        (71.234, 0.0996, "71.23 ± 0.10"),
        (71.23456, 0.0123, "71.235 ± 0.012"),
        (71.234, None, "71.23"),  # one seed: no interval, two places
        (71.234, 0.0, "71.23 ± 0.00"),  # seeds that agree: no digits to take from the width
        (float("nan"), 1.2, "n/a ± 1.2"),
    ],
)
def test_a_score_is_printed_to_the_digits_of_its_interval(mean, half_width, text):
    assert estimate_text(mean, half_width) == text


def test_float_noise_in_a_width_is_not_printed_as_digits():
    assert decimals(1e-13) == MAX_DECIMALS
    assert estimate_text(50.0, 1e-13) == f"{50:.{MAX_DECIMALS}f} ± {0:.{MAX_DECIMALS}f}"


def _test(mean: float, half_width: float, p: float = 0.01) -> PairedTest:
    return PairedTest(
        mean=mean, sd=1.0, n=3, ci_low=mean - half_width, ci_high=mean + half_width, half_width=half_width,
        t=2.0, p_value=p, degenerate=False,
    )  # fmt: skip


def test_a_results_cell_prints_the_score_and_its_difference_each_at_its_own_intervals_digits():
    vs = _test(1.2345, 1.23)
    cell = Cell(mean=71.234, sd=4.0, n=3, ci_low=61.4, ci_high=81.0, half_width=9.8, vs_baseline=vs)
    assert _cell(cell, baseline=False) == "71.2 ± 9.8 (+1.2, p = 0.01*)"
    assert _cell(Cell(mean=71.234, sd=None, n=1, ci_low=None, ci_high=None, half_width=None), True) == (
        "71.23 (baseline)"
    )
    # a difference that rounds to nothing has no sign: -0.0 told a direction
    tie = Cell(
        mean=69.9, sd=1.0, n=3, ci_low=68.9, ci_high=70.9, half_width=1.0, vs_baseline=_test(-0.04, 1.2, 0.9)
    )
    assert _cell(tie, baseline=False) == "69.9 ± 1.0 (0.0, p = 0.9)"


def test_a_claims_difference_and_its_interval_share_the_intervals_digits():
    assert interval_text(_test(2.2634, 1.055)) == "+2.3, 95% CI [+1.2, +3.3]"
    assert interval_text(_test(9.8234, 0.4612)) == "+9.82, 95% CI [+9.36, +10.28]"


def test_every_score_of_the_fake_studys_report_has_its_intervals_digits():
    """The saved report (`test_golden_report` checks the code still writes it): in its results table and
    claims, each `A ± B` has B at two significant digits and A at B's places."""
    golden = json.loads(GOLDEN.read_text())
    text = "\n".join(golden["results_md"] + golden["claims_md"])
    pairs = re.findall(r"(\d+(?:\.(\d+))?) ± (\d+(?:\.(\d+))?)", text)
    assert len(pairs) > 10
    for score, score_places, width, width_places in pairs:
        assert len(score_places) == len(width_places) == decimals(float(width)), (score, width)
        assert len(width.replace(".", "").lstrip("0")) <= 2, width
