"""The trainer's own collectives on 2 gloo processes: `all_gather` of JSON data, and a destroyed group
kept alive until the process ends (see `distributed._RETIRED`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from tests.train.helpers import free_ports, start_ranks

from encoderlab.data.batch import BatchLayout
from encoderlab.train import distributed

TWO_RANKS = BatchLayout(seq_len=8, micro_batch_size=1, world_size=2)

pytestmark = pytest.mark.distributed

VALUES = [{"a": [1, 2], "b": None, "inf": float("inf")}, ["é" * 300, 7]]  # unequal lengths, non-ASCII


def _worker(rank: int, port: int, out: str) -> None:
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1")
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    world = distributed.init_world(TWO_RANKS)
    group = torch.distributed.group.WORLD
    gathered = distributed.all_gather(VALUES[rank], world)
    summed = distributed.all_reduce_sum(torch.tensor([rank + 1.0]), world)
    retired = len(distributed._RETIRED)
    distributed.shutdown()
    report = {
        "gathered": gathered,
        "sum": summed.item(),
        "initialized": torch.distributed.is_initialized(),
        "kept": len(distributed._RETIRED) == retired + 1 and distributed._RETIRED[-1] is group,
    }
    Path(out, f"rank{rank}.json").write_text(json.dumps(report))


def test_gather_is_json_in_rank_order_and_a_destroyed_group_is_kept_until_the_process_ends(tmp_path):
    """The group's C++ destructor must not run right after a collective (`distributed._RETIRED`)."""
    start_ranks(_worker, (free_ports(1)[0], str(tmp_path)))
    for rank in (0, 1):
        report = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert report["gathered"] == json.loads(json.dumps(VALUES))
        assert report["sum"] == 3.0
        assert report["initialized"] is False and report["kept"] is True


def test_one_process_gives_back_what_json_gives_back():
    assert distributed.all_gather((1, "x", [2.5]), distributed.World()) == [[1, "x", [2.5]]]
