"""The trainer's own collectives on 2 gloo processes: `all_gather` of JSON data and the tensors that stay
referenced past the process group's teardown (see `distributed._RECENT`)."""

from __future__ import annotations

import json
import os
import weakref
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from tests.train.helpers import free_ports

from encoderlab.train import distributed

pytestmark = pytest.mark.distributed

VALUES = [{"a": [1, 2], "b": None, "inf": float("inf")}, ["é" * 300, 7]]  # unequal lengths, non-ASCII


def _worker(rank: int, port: int, out: str) -> None:
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1")
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    world = distributed.init_world(2)
    gathered = distributed.all_gather(VALUES[rank], world)
    summed = distributed.all_reduce_sum(torch.tensor([rank + 1.0]), world)
    alive = [weakref.ref(t) for kept in distributed._RECENT for t in kept]
    report = {
        "gathered": gathered,
        "sum": summed.item(),
        "kept": len(alive),
        "alive": sum(r() is not None for r in alive),
    }
    del summed
    distributed.shutdown()
    report["alive_after_shutdown"] = sum(r() is not None for r in alive)
    del gathered
    for _ in range(distributed._RECENT.maxlen):  # later collectives push them out
        distributed._keep(torch.zeros(1))
    report["alive_after_later_collectives"] = sum(r() is not None for r in alive)
    Path(out, f"rank{rank}.json").write_text(json.dumps(report))


def test_gather_is_json_in_rank_order_and_keeps_its_tensors_past_the_teardown(tmp_path):
    mp.spawn(_worker, args=(free_ports(1)[0], str(tmp_path)), nprocs=2, join=True)
    for rank in (0, 1):
        report = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert report["gathered"] == json.loads(json.dumps(VALUES))
        assert report["sum"] == 3.0
        # the gather's 2 sizes, its padded input and 2 outputs, its own size, and the summed tensor
        assert report["kept"] == report["alive"] == 7
        # a DDP reducer can keep the group (and its worker threads) alive past destroy_process_group:
        # the tensors stay referenced until later collectives push them out
        assert report["alive_after_shutdown"] == 7 and report["alive_after_later_collectives"] == 0


def test_one_process_gives_back_what_json_gives_back():
    assert distributed.all_gather((1, "x", [2.5]), distributed.World()) == [[1, "x", [2.5]]]
