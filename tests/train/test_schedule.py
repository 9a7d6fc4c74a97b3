"""Each schedule against its closed form, written out independently of the implementation."""

from __future__ import annotations

import math

import pytest
import torch

from encoderlab.errors import UserError
from encoderlab.train.schedule import Schedule

T = 50


def _curve(sched: Schedule, total: int = T) -> list[float]:
    return [sched.factor(s, total) for s in range(total)]


def test_warmup_then_constant():
    got = _curve(Schedule(kind="constant", warmup=10))
    assert got[:10] == pytest.approx([(i + 1) / 10 for i in range(10)])
    assert got[10:] == [1.0] * 40


def test_linear_to_floor():
    got = _curve(Schedule(kind="linear", warmup=0, end_fraction=0.1))
    assert got == pytest.approx([0.1 + 0.9 * (1 - t / T) for t in range(T)])


def test_cosine_after_warmup():
    got = _curve(Schedule(kind="cosine", warmup=5))
    want = [(i + 1) / 5 for i in range(5)] + [0.5 * (1 + math.cos(math.pi * t / 45)) for t in range(45)]
    assert got == pytest.approx(want)


def test_one_minus_sqrt_matches_paper2_closed_form():
    # lr(t) = end + (peak - end)(1 - sqrt(t/T)), peak 2e-4, end 2e-5 (paper 2's decay)
    peak, end = 2e-4, 2e-5
    got = [peak * f for f in _curve(Schedule(kind="1-sqrt", end_fraction=0.1))]
    assert got == pytest.approx([end + (peak - end) * (1 - math.sqrt(t / T)) for t in range(T)])
    assert got[0] == pytest.approx(peak)


def test_wsd_warmup_stable_linear_decay():
    got = _curve(Schedule(kind="wsd", warmup=5, decay=10))
    want = [(i + 1) / 5 for i in range(5)] + [1.0] * 35 + [1 - j / 10 for j in range(10)]
    assert got == pytest.approx(want)


def test_wsd_with_1_sqrt_decay_and_floor():
    got = _curve(Schedule(kind="wsd", decay=20, decay_shape="1-sqrt", end_fraction=0.25))
    want = [1.0] * 30 + [0.25 + 0.75 * (1 - math.sqrt(j / 20)) for j in range(20)]
    assert got == pytest.approx(want)


def test_bad_schedules_are_user_errors():
    with pytest.raises(UserError, match="warmup"):
        Schedule(warmup=-1)
    with pytest.raises(UserError, match="only applies to kind wsd"):
        Schedule(kind="linear", decay=3)
    with pytest.raises(UserError, match="exceed the phase"):
        Schedule(kind="wsd", warmup=30, decay=30).check(50, "phase clm")


def _optimus_lrs(total: int, warmup: int, decay: int, accum: int) -> list[float]:
    """The LR factor of each optimizer update under Optimus' loop (Nicolas-BZRD/EuroBERT
    optimus/trainer/pretrain.py): its WarmupStableDecayLR (script/warmup_stable_decay_lr.py, initial and
    final LR 0) counts micro-batches, and `scheduler.step()` runs after each micro-batch's backward,
    before that step's `optimizer.step()`; torch's scheduler has already stepped once when built."""
    W, D, T = warmup * accum, decay * accum, total * accum

    def factor(e: int) -> float:
        if e < W:
            return (e + 1) / W
        if e < T - D:
            return 1.0
        return max(0.0, 1 - (e - (T - D) + 1) / D)

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    used = []
    for i in range(1, T + 1):
        sched.step()
        if i % accum == 0:
            used.append(opt.param_groups[0]["lr"])
    return used


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before")
@pytest.mark.parametrize("accum", [1, 4])
def test_wsd_runs_behind_optimus_by_what_the_docs_say(accum):
    """Paper 1's WSD against Optimus' (docs/training.md, train/recipes.py): Optimus' update k runs at the
    schedule after (k + 1) x accum micro-batches, ours at (k + 1) / W in the warmup and progress k / D in
    the decay. So Optimus' warmup is ahead by 1 / (W accum), its decay by (1 + 1 / accum) / D, and
    without accumulation its first update runs at 2 / W and its last two at LR 0, where ours never does."""
    total, warmup, decay = 60, 8, 10
    ours = _curve(Schedule(kind="wsd", warmup=warmup, decay=decay), total)
    theirs = _optimus_lrs(total, warmup, decay, accum)
    ahead = [t - o for t, o in zip(theirs, ours)]
    assert ahead[: warmup - 1] == pytest.approx([1 / (warmup * accum)] * (warmup - 1))
    start = total - decay
    assert ahead[start + 1 : -1] == pytest.approx([-(1 + 1 / accum) / decay] * (decay - 2))
    assert max(abs(a) for a in ahead) == pytest.approx(max(1 / (warmup * accum), (1 + 1 / accum) / decay))
    assert min(ours) > 0
    if accum == 1:
        assert theirs[0] == pytest.approx(2 / warmup) and theirs[-2:] == [0.0, 0.0]
