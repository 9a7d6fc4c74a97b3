"""scripts/advise_extrapolation_audit.py (docs/advise.md's 2-D extrapolation audit) in its --quick mode: not the
documented figures, which need its 120 draws, but that the JSON holds what they are read from and that each gap
is what it says, recomputed here from the stored values and parameters by a direct computation (the curve
written out as E + A/N^a + B/D^b, the objective as a Huber sum), not by the code the script calls."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import numpy as np
import pytest
from tests.advise.advise_fixtures import GRID, LEVEL, NOISE

from encoderlab.advise.fit import DELTA, TIE

SCRIPT = Path(__file__).parents[2] / "scripts" / "advise_extrapolation_audit.py"


def _curve(params, n, d):
    """E + A/N^a + B/D^b from the fit's parameters (log E, log A, a, log B, b), written out."""
    e, log_a, a, log_b, b = params
    return np.exp(e) + np.exp(log_a) * n**-a + np.exp(log_b) * d**-b


def _objective(params, values):
    """The log-Huber objective plus the tie-break at `GRID`, summed directly."""
    r = np.log(_curve(params, GRID[:, 0], GRID[:, 1])) - np.log(values)
    a = np.abs(r)
    return float((np.where(a <= DELTA, r * r / 2, DELTA * (a - DELTA / 2)) + TIE * r * r / 2).sum())


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("audit") / "audit.json"
    script = runpy.run_path(str(SCRIPT), run_name="audit")
    script["main"](["--quick", "--out", str(out)])
    return script, json.loads(out.read_text()), out


def test_the_quick_audit_writes_every_draws_numbers_and_a_png(quick):
    script, result, out = quick
    assert out.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert result["far"] == list(script["FAR"]) and result["seed_sd"] == pytest.approx(LEVEL * NOISE)
    assert set(result["shapes"]) == {"falls and rises", "flat"}
    for shape, s in result["shapes"].items():
        assert [r["draw"] for r in s["rows"]] == [s["first_seed"], s["first_seed"] + 1], shape
        for row in s["rows"]:
            assert len(row["values"]) == len(GRID) and len(row["minima"]) == 36  # 4 floors x 3 x 3 exponents
            assert 1 <= row["near_minima"] <= len(row["minima"])


def test_each_gap_is_read_at_the_far_points_against_the_lowest_minimum(quick):
    script, result, _ = quick
    sd = LEVEL * NOISE
    for shape, s in result["shapes"].items():
        for row in s["rows"]:
            values = np.array(row["values"])
            objs = [_objective(m["params"], values) for m in row["minima"]]
            assert [m["objective"] for m in row["minima"]] == pytest.approx(objs, rel=1e-9), shape
            assert row["fit"]["objective"] == pytest.approx(
                _objective(row["fit"]["params"], values), rel=1e-9
            )
            assert objs[row["optimum"]] == pytest.approx(min(objs), rel=1e-12)  # the lowest, up to rounding
            best = row["minima"][row["optimum"]]
            at = [(m, m) for m in result["far"]]
            ours = [_curve(row["fit"]["params"], n, d) for n, d in at]
            optimum = [_curve(best["params"], n, d) for n, d in at]
            assert row["fit_gap_sd"] == pytest.approx(
                np.abs(np.subtract(ours, optimum)) / sd, rel=1e-9, abs=1e-9
            )
            near = np.array([[_curve(m["params"], n, d) for n, d in at] for m in row["minima"]])
            near = near[np.array(objs) <= min(objs) * (1 + result["near"])]
            assert row["near_spread_sd"] == pytest.approx(np.ptp(near, 0) / sd, rel=1e-9, abs=1e-9)
            assert row["excess"] == pytest.approx(row["fit"]["objective"] / min(objs) - 1, abs=1e-12)
        assert s["max_near_spread_sd"] == np.max([r["near_spread_sd"] for r in s["rows"]], 0).tolist()
        assert s["above_near"] == sum(r["excess"] > result["near"] for r in s["rows"])
