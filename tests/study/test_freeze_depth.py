"""A study run that freezes paper 2's layer groups on a model too shallow for them.

`detour-freeze-low` continuing a `nano` run (2 layers) passed `study plan` and `study run`'s checks, and
its pretraining node failed after its base had trained: "paper 2's low/mid/late layer groups need at
least 3 layers, the model has 2; give the layers explicitly, e.g. 0", a choice no recipe parameter of a
study gives. The checks `study run` and `study plan` make first now refuse it in one line.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from fake_study import small_spec

from encoderlab.errors import UserError
from encoderlab.study.runchecks import check_runs
from encoderlab.study.spec import RunSpec


def _spec(size: str):
    spec = small_spec(size=size, cka=(), claims=())
    frozen = RunSpec(name="frozen", recipe="detour-freeze-low", init="mlm40", group="cpt")
    return replace(spec, runs=(*spec.runs, frozen))


def test_a_freeze_preset_on_a_model_of_two_layers_is_refused_before_anything_runs():
    with pytest.raises(UserError) as refused:
        check_runs(_spec("nano"), memory=False)
    assert str(refused.value) == (
        "study fake-pfs, run frozen: it freezes paper2-low, but its model has 2 layers: paper 2's "
        "low/mid/late groups need at least 3; train it at a size of more layers"
    )
    check_runs(_spec("tiny"), memory=False)  # deep enough: passes
