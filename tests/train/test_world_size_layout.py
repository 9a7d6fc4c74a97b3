"""A layout for another number of processes than are running names the layout.grad_accum that keeps its global
batch (found by the new-user hunt of 2026-12-06, cluster route).

`init_world` said "layout.world_size is 2 but 1 process is running; set layout.world_size=1 (and grad_accum to
keep the global batch)", leaving the sum to the user; a resume refused a wrong guess only afterwards. It now
names the figure, as a refused resume at another world size does (`distributed.Resplit`, shared with
`runfolder._resplit_fix`), or says that no whole one exists.
"""

from __future__ import annotations

import dataclasses

import pytest
from tests.train.helpers import tiny_run

from encoderlab.data.batch import BatchLayout
from encoderlab.errors import UserError
from encoderlab.train import distributed, pretrain
from encoderlab.train.distributed import World, init_world


def test_a_layout_for_two_processes_run_by_one_names_the_grad_accum_that_keeps_its_batch(
    tmp_path, monkeypatch
):
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    two = BatchLayout(seq_len=32, micro_batch_size=2, grad_accum=3, world_size=2)
    cfg = tiny_run(tmp_path / "run", layout=two)
    with pytest.raises(UserError) as refused:
        pretrain(cfg, until_step=1)
    assert str(refused.value) == (
        "layout.world_size is 2 but 1 process is running; set layout.world_size=1 and layout.grad_accum=6 to keep "
        "the run's global batch of 6 micro-batches (layout.world_size x layout.grad_accum)"
    )
    assert not (tmp_path / "run").exists()
    fixed = dataclasses.replace(cfg, layout=dataclasses.replace(two, world_size=1, grad_accum=6))
    assert fixed.layout.world_size * fixed.layout.grad_accum == two.world_size * two.grad_accum
    pretrain(fixed, until_step=1)  # the settings it names run
    assert (tmp_path / "run" / "checkpoints").is_dir()


def test_a_batch_the_running_processes_cannot_split_says_so(monkeypatch):
    """Three processes for a layout of two with grad_accum 2: no whole grad_accum keeps 4 micro-batches."""
    monkeypatch.setattr(distributed, "join_world", lambda: World(rank=0, world_size=3))
    with pytest.raises(UserError) as refused:
        init_world(BatchLayout(seq_len=32, micro_batch_size=2, grad_accum=2, world_size=2))
    assert str(refused.value) == (
        "layout.world_size is 2 but 3 processes are running, over which the run's global batch of 4 micro-batches "
        "(layout.world_size x layout.grad_accum) does not split; run on a number of processes that divides 4, or "
        "set layout.world_size=3 and a layout.grad_accum for another batch"
    )
