"""The fix a resume refused for another world size names (`runfolder._resplit_fix`), where the config
changed in more than the layout: "set layout.grad_accum=N to keep the run's global batch" alone was no fix,
as the resume it names is refused again for the other change (an LR, a micro-batch size's rows)."""

from __future__ import annotations

from encoderlab.train.runfolder import _resplit_fix

OLD = {"world_size": 1, "grad_accum": 4, "micro_batch_size": 8}
NEW = {"world_size": 2, "grad_accum": 4, "micro_batch_size": 8}


def test_a_world_size_alone_names_the_grad_accum_that_keeps_the_batch():
    fix = _resplit_fix(["layout.world_size: 1 -> 2"], OLD, NEW)
    assert fix.startswith("set layout.grad_accum=2 to keep ") and fix.endswith(
        "on 2 processes, or rerun with the original settings or pass --force"
    )


def test_another_change_beside_the_world_size_is_named_as_one_to_undo():
    diff = ["layout.world_size: 1 -> 2", "phases.0.lr: 0.001 -> 0.002"]
    fix = _resplit_fix(diff, OLD, NEW)
    assert fix.startswith("set layout.grad_accum=2 to keep ")
    assert fix.endswith("on 2 processes and the other settings as they were, or pass --force"), fix
    assert "or rerun with the original settings" not in fix  # the new allocation cannot


def test_a_changed_micro_batch_names_no_grad_accum():
    new = {**NEW, "micro_batch_size": 4}
    diff = ["layout.micro_batch_size: 8 -> 4", "layout.world_size: 1 -> 2"]
    assert _resplit_fix(diff, OLD, new) == "rerun with the original settings or pass --force"
