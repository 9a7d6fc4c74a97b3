"""The calibration figures' computation (`encoderlab.advise.calibration`, scripts/advise_calibration.py) on a
few draws: not the documented figures, which need the script's hundreds, but that what it measures is sound."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import numpy as np
import pytest

from encoderlab.advise import calibration, predict
from encoderlab.advise.calibration import (
    NOISE_MODELS,
    by_noise_df,
    by_noise_model,
    ladders,
    summary,
    trend_check,
    with_second_seeds,
)
from encoderlab.advise.predict import Rungs


def test_second_seeds_go_to_the_k_smallest_rungs_only():
    (syn,) = ladders(1, 0, seeds=(1, 1))
    for k in (1, 3):
        more = with_second_seeds(syn, k, np.random.default_rng(0))
        for schedule in more.ladder.schedules:
            seeds = {}
            for o in more.ladder.of(schedule):
                seeds[o.params] = seeds.get(o.params, 0) + 1
            assert [seeds[n] for n in sorted(seeds)] == [2] * k + [1] * (4 - k)


def test_each_noise_model_keeps_the_rung_means_scale_and_resamples_within_reach():
    """Log pooling draws relative deviations; per rung draws each run's deviation from its own rung."""
    loss = np.array([2.0, 2.02, 3.0, 3.06, 3.03])
    rungs = Rungs(
        points=np.array([[1.0, 20.0], [2.0, 40.0]]),
        compute=np.array([120.0, 480.0]),
        index=np.array([0, 0, 1, 1, 1]),
    )
    for name, model in NOISE_MODELS.items():
        reps = model(loss, rungs, np.random.default_rng(0), 400)
        assert reps.shape == (401, 5) and np.allclose(reps[0], loss), name
        assert np.allclose(rungs.means(reps[1:]).mean(0), rungs.means(loss[None])[0], atol=0.01), name
    per_rung = NOISE_MODELS["per rung"](loss, rungs, np.random.default_rng(0), 400)
    # the first rung's deviations are +-0.01 inflated by sqrt(2): nothing of the second rung's +-0.03 reaches it
    assert np.abs(per_rung[1:, :2] - 2.01).max() <= 0.01 * np.sqrt(2) + 1e-9
    assert predict.resample is calibration._RESAMPLE  # the variants are swapped in only while measured


def test_coverage_of_a_known_truth_is_near_nominal_and_rises_with_degrees_of_freedom():
    """80% intervals on 40 known-answer ladders: about 80% covered with 3 degrees of freedom, fewer with 1."""
    df = by_noise_df((1, 3), draws=30, ties=10, n_boot=60)
    assert df[3]["intervals"] == 80 and df[3]["near_ties"] == 10
    assert 0.6 <= df[3]["coverage"] <= 0.95, df
    assert df[1]["coverage"] < df[3]["coverage"], df


def test_the_advisors_noise_model_covers_near_nominal():
    """On 40 draws the advisor's model only: the two variants' coverages are the script's figures, not asserted
    (measured with them, the test cost three times as much); that each is measured is the next test's."""
    models = by_noise_model(draws=30, ties=10, n_boot=60, models=("metric units, pooled",))
    assert 0.65 <= models["metric units, pooled"]["coverage"] <= 0.95, models


def test_every_noise_model_is_measured_in_turn_and_the_advisors_restored():
    models = by_noise_model(draws=2, ties=1, n_boot=20)
    assert list(models) == list(NOISE_MODELS) and all(m["intervals"] == 6 for m in models.values())
    assert predict.resample is calibration._RESAMPLE


def test_summary_counts_the_last_rows_as_the_ties():
    rows = [{"covered": [True, False], "insufficient": False}] * 3 + [
        {"covered": [True, True], "insufficient": True}
    ]
    assert summary(rows, 1) == {
        "coverage": 5 / 8,
        "intervals": 8,
        "insufficient_near_ties": 1.0,
        "near_ties": 1,
        "rows": rows,
    }


def test_healthy_ladders_pass_the_trend_check_by_a_wide_margin():
    t = trend_check(5)
    assert t == {**t, "ladders": 5, "schedules": 10, "flagged": 0} and t["least_margin_sd"] > 5
    assert len(t["margins_sd"]) == 10 and min(t["margins_sd"]) == t["least_margin_sd"]


SCRIPT = Path(__file__).parents[2] / "scripts" / "advise_calibration.py"


def test_the_scripts_trend_figures_are_what_its_rows_and_a_direct_regression_say(tmp_path):
    """scripts/advise_calibration.py --trend-only --quick: not the documented figures (its full counts), but that
    the JSON holds each figure beside the rows it is read from, and that the rising probe's trend value is the
    straight line through its runs (each run weighs one, so a rung by its seeds) read at the target, computed
    here with numpy's polyfit, not by the code the script calls."""
    out = tmp_path / "trend.json"
    result = runpy.run_path(str(SCRIPT), run_name="calibration")["main"](
        [str(out), "--trend-only", "--quick"]
    )
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    assert "by_noise_df" not in result and result["trend"]["ladders"] == 4
    for key, draws in (("rise_flat", 100), ("rise_falling", 50)):
        shares = result[key]
        assert shares["draws"] == len(shares["rows"]) == draws
        assert shares["rise_share"] == np.mean([r["rise"] for r in shares["rows"]])
        assert shares["flagged_share"] == np.mean([r["flagged"] for r in shares["rows"]])
        assert all(r["flagged"] for r in shares["rows"] if r["rise"])  # a significant rise is flagged
    r = result["rising"]
    x = np.log10([6.0 * 20.0 * n * n for n in calibration.SIZES for _ in (0, 1)])
    y = [m + d for m in calibration.RISING for d in (-0.01, 0.01)]
    line = np.polyfit(x, y, 1)
    assert r["slope_per_decade"] == pytest.approx(line[0], rel=1e-9)
    assert r["trend_points_to"] == pytest.approx(np.polyval(line, np.log10(r["target_flops"])), rel=1e-9)
    # the curve cannot rise: it is read below the ladder's trend, the schedule flagged and not recommended
    assert r["predicted"] < r["trend_points_to"] and r["flagged"] and r["recommendation"] is None
