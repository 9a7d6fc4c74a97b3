"""The typed ladder: schedules compare by their stages, metrics by their direction, bad rows are one line."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from encoderlab.advise.ladder import Ladder, Metric, Observation, Schedule, Stage
from encoderlab.errors import UserError


def test_a_schedule_is_its_stages_not_its_label():
    a = Schedule.biphasic(0.25, 0.4)
    assert a == Schedule.biphasic(0.25, 0.4, label="CLM then MLM") and a.name == "CLM 25% -> MLM-40"
    # a share is keyed exactly: rounded to the hundredth, 0.2500001 was 0.25's schedule, and 0.125 was 0.12's
    assert (
        a != Schedule.biphasic(0.2500001, 0.4) and Schedule.biphasic(0.125, 0.4).name == "CLM 12.5% -> MLM-40"
    )
    assert a != Schedule.biphasic(0.25, 0.3)
    assert Schedule.biphasic(0.0, 0.4).name == "MLM-40" and Schedule.biphasic(1.0, None).name == "CLM"
    assert (a.clm_share, a.mask_ratio) == (0.25, 0.4)
    assert Schedule((Stage("mlm", 0.9, 0.3), Stage("mlm", 0.1, 0.15))).mask_ratio is None


@pytest.mark.parametrize(
    "clm_share,mask_ratio,message",
    [
        (1.2, None, "clm_share must be in [0, 1]"),
        (0.5, None, "give its mask_ratio"),
        (1.0, 0.4, "pure CLM: leave mask_ratio empty"),
        (0.0, 1.5, "mask ratio in (0, 1)"),
    ],
)
def test_bad_schedules_are_one_line(clm_share, mask_ratio, message):
    with pytest.raises(UserError, match=re.escape(message)):
        Schedule.biphasic(clm_share, mask_ratio)


def test_a_higher_is_better_metric_is_fitted_as_its_distance_to_the_ceiling():
    score = Metric(name="finetune:sst2", better="higher", ceiling=100.0)
    assert score.to_loss(np.array([80.0]))[0] == 20.0 and score.from_loss(np.array([20.0]))[0] == 80.0
    with pytest.raises(UserError, match="give its ceiling"):
        Metric(name="acc", better="higher")


def _obs(schedule, seed=0, value=3.0, **kw):
    return Observation(
        schedule=schedule, params=1e6, tokens=2e7, seed=seed, value=value, source=f"row{seed}", **kw
    )


def test_ladder_refusals_name_the_problem_and_the_fix():
    mlm, clm = Schedule.biphasic(0.0, 0.4), Schedule.biphasic(1.0, None)
    loss = Metric(name="val/mlm15", better="lower")
    with pytest.raises(UserError, match="one schedule .*add runs of another schedule"):
        Ladder(loss, (_obs(mlm), _obs(mlm, seed=1)))
    with pytest.raises(UserError, match="appears twice .*row0 and row0"):
        Ladder(loss, (_obs(mlm), _obs(mlm), _obs(clm)))
    with pytest.raises(UserError, match="not positive"):
        Ladder(loss, (_obs(mlm, value=-1.0), _obs(clm)))
    with pytest.raises(UserError, match=r"acc = 100.0 is at or above its ceiling \(100\);"):  # was "above"
        Ladder(
            Metric(name="acc", better="higher", ceiling=100.0),
            (_obs(mlm, value=100.0), _obs(clm, value=50.0)),
        )
    with pytest.raises(UserError, match="at or above its ceiling"):
        Ladder(
            Metric(name="acc", better="higher", ceiling=100.0),
            (_obs(mlm, value=101.0), _obs(clm, value=50.0)),
        )
    with pytest.raises(UserError, match="finite and positive"):
        Ladder(loss, (_obs(mlm, flops=float("nan")), _obs(clm)))
    # a count that is not positive is named with its value (the line said "params, tokens and flops")
    with pytest.raises(
        UserError, match=r"^row0: params = -1e\+06 must be finite and positive; fix or drop that row$"
    ):
        Ladder(loss, (dataclasses.replace(_obs(mlm), params=-1e6), _obs(clm)))
    with pytest.raises(UserError, match=r"^row0: flops = 0 must be finite and positive"):
        Ladder(loss, (_obs(mlm, flops=0.0), _obs(clm)))
    assert _obs(mlm).compute == 6 * 1e6 * 2e7 and _obs(mlm, flops=5.0).compute == 5.0


@pytest.mark.parametrize(
    "a,b,said",
    [
        (Schedule.biphasic(0.0, 0.4, "same"), Schedule.biphasic(1.0, None, "same"), "MLM at mask 0.4 100%; CLM 100%"),
        # a label that is another schedule's derived name (two ratios' derived names differ: MLM-40, MLM-40.1)
        (Schedule.biphasic(0.0, 0.4), Schedule.biphasic(0.0, 0.401, "MLM-40"), "MLM at mask 0.4 100%; MLM at mask 0.401 100%"),
    ],
)  # fmt: skip
def test_two_schedules_of_one_name_are_refused(a, b, said):
    """Were accepted: the output ranked "same > same", and the backtest, which pairs schedules by name,
    found no pair ("nan% of pairs ranked right") and failed, so another method was recommended."""
    rows = (_obs(a), _obs(b))
    first, second = said.split("; ")
    with pytest.raises(UserError) as err:
        Ladder(Metric(name="val/mlm15", better="lower"), rows)
    assert str(err.value) == (
        f"two schedules are named {a.name!r} ({first} at row0; {second} at row0); give each schedule its own label"
    )


def test_a_finetune_setup_tells_lr_grids_alike_to_six_digits_apart():
    """Two runs fine-tuned over 1e-5 and over 1.0000001e-5 were refused as "LR grid 1e-05, not 1e-05"."""
    from encoderlab.advise.ladder import FinetuneSetup

    mine, theirs = (
        FinetuneSetup(task="t", lrs=(lr,), seeds=(0,), max_steps=None) for lr in (1e-5, 1.0000001e-5)
    )
    assert mine.differs(theirs) == "LR grid 1.0000001e-05, not 1e-05"


def test_a_schedule_of_three_stages_is_named_whole():
    """Named by its first share alone, CLM 25% -> MLM 50% -> CLM 25% and CLM 25% -> MLM 25% -> CLM 50% were both
    `CLM 25% -> MLM-40 -> CLM`, so a ladder of the two was refused as two schedules of one name."""
    half = Schedule((Stage("clm", 0.25), Stage("mlm", 0.5, 0.4), Stage("clm", 0.25)))
    quarter = Schedule((Stage("clm", 0.25), Stage("mlm", 0.25, 0.4), Stage("clm", 0.5)))
    assert (half.name, quarter.name) == ("CLM 25% -> MLM-40 50% -> CLM", "CLM 25% -> MLM-40 25% -> CLM")
    rows = [
        Observation(schedule=s, params=n, tokens=2e7, seed=0, value=3.0)
        for s in (half, quarter)
        for n in (1e6, 2e6)
    ]
    assert Ladder(Metric(name="val/mlm15", better="lower"), tuple(rows)).schedules == (
        half,
        quarter,
    )  # two keys, not one
    two = Schedule((Stage("mlm", 0.3, 0.2), Stage("mlm", 0.7, 0.4)))
    three = Schedule((Stage("mlm", 0.3, 0.2), Stage("mlm", 0.4, 0.4), Stage("mlm", 0.3, 0.2)))
    assert (two.name, three.name) == ("MLM-20 30% -> MLM-40", "MLM-20 30% -> MLM-40 40% -> MLM-20")
    assert Schedule((Stage("clm", 0.25, approx=True), Stage("mlm", 0.75, 0.4, approx=True))).name == (
        "CLM ~25% -> MLM-40"  # two stages read as before
    )


def _runs(schedule, points):
    return [Observation(schedule=schedule, params=n, tokens=d, seed=0, value=1.0) for n, d in points]


def test_token_units_pass_real_ladders_whose_schedules_ran_other_sizes_and_budgets():
    """Per parameter, at any sizes: a fixed-tokens ladder (D the same at every size, so 2.5-160 tokens per
    parameter) beside a Chinchilla one at other sizes (20 per parameter) and one of small budgets (1-4) is one
    unit; a Chinchilla ladder in millions beside one in counts, at other sizes, is not."""
    from encoderlab.advise.ladderchecks import check_token_units

    fixed = _runs(Schedule.biphasic(0.0, 0.4), [(n, 1.6e8) for n in (1e6, 4e6, 1.6e7, 6.4e7)])
    chinchilla = _runs(Schedule.biphasic(1.0, None), [(n, 20 * n) for n in (2e6, 8e6, 3.2e7)])
    small = _runs(Schedule.biphasic(0.5, 0.4), [(n, b * n) for n in (3e6, 1.2e7) for b in (1, 2, 4)])
    check_token_units((*fixed, *chinchilla, *small))
    millions = _runs(Schedule.biphasic(0.0, 0.4), [(n, 20 * n / 1e6) for n in (1e6, 4e6, 1.6e7)])
    with pytest.raises(
        UserError, match=r": 1e\+06 times apart in tokens per parameter, where their schedules"
    ):
        check_token_units((*chinchilla, *millions))
