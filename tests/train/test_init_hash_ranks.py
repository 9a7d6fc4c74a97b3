"""A resume on two processes (gloo) whose `model.init` names the moved start model: rank 0 alone hashes it.

The record a resume compares a moved start model with (`build.init_identity`) hashes every byte of it: minutes
for a large model. Every rank hashed it when it checked the run folder, and rank 0 once more under the run
folder's lock. Now rank 0 hashes it once (`build.InitIdentity`) and judges the change alone; its refusal of
another model at the new place stops every rank with one line (`distributed.agreed`). One spawn of two
processes runs both jobs, each rank writing the files it hashed and how its command ended.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from tests.train.helpers import free_ports, start_ranks, tiny_run

from encoderlab.config import save_yaml
from encoderlab.data.batch import BatchLayout
from encoderlab.model import Encoder, ModelConfig
from encoderlab.model.io import save_model_folder
from encoderlab.objectives import MLM
from encoderlab.train import Phase, pretrain
from encoderlab.train.config import ModelSpec

pytestmark = pytest.mark.distributed

PHASES = (Phase(objective=MLM(mask_ratio=0.3), steps=3),)
ONE = BatchLayout(seq_len=32, micro_batch_size=2, grad_accum=4, world_size=1)
TWO = BatchLayout(seq_len=32, micro_batch_size=2, grad_accum=2, world_size=2)  # the same global batch
JOBS = ("same", "other")


def _start_model(folder: Path, seed: int) -> Path:
    torch.manual_seed(seed)
    save_model_folder(Encoder(ModelConfig.from_size("tiny", vocab_size=128)), folder)
    return folder


def _worker(rank: int, root: str, ports: list[int]) -> None:
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1")
    torch.set_num_threads(1)
    import encoderlab.data.filerecords as records
    from encoderlab.cli import main

    real, hashed = records.sha256_of, []

    def counted(path, *args, **kwargs):
        hashed.append(str(path))
        return real(path, *args, **kwargs)

    records.sha256_of = counted
    for name, port in zip(JOBS, ports):
        os.environ["MASTER_PORT"] = str(port)
        hashed.clear()
        err, code = io.StringIO(), 0
        with contextlib.redirect_stderr(err):
            try:
                main(["pretrain", "--config", str(Path(root) / f"{name}.yaml"), "--resume"])
            except SystemExit as exc:
                code = exc.code
        record = {"code": code, "stderr": err.getvalue(), "hashed": list(hashed)}
        (Path(root) / f"{name}.{rank}.json").write_text(json.dumps(record))


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    root = tmp_path_factory.mktemp("init_ranks")
    for name in JOBS:  # each run stopped after step 1 on one process, its start model then moved
        cfg = tiny_run(
            root / name,
            phases=PHASES,
            layout=ONE,
            model=ModelSpec(init=str(_start_model(root / f"{name}_init", seed=0))),
        )
        pretrain(cfg, until_step=1)
        moved = Path(shutil.move(cfg.model.init, root / f"{name}_moved"))
        if name == "other":  # other weights at the new place: a changed start model
            shutil.rmtree(moved)
            _start_model(moved, seed=1)
        save_yaml(
            dataclasses.replace(cfg, layout=TWO, model=ModelSpec(init=str(moved))), root / f"{name}.yaml"
        )
    start_ranks(_worker, (str(root), free_ports(len(JOBS))))

    def read(name: str) -> list[dict]:
        return [json.loads((root / f"{name}.{rank}.json").read_text()) for rank in (0, 1)]

    return root, read


def test_rank_zero_alone_hashes_the_moved_start_model_once(outcomes):
    root, read = outcomes
    rank0, rank1 = read("same")
    assert (rank0["code"], rank1["code"]) == (0, 0), rank0["stderr"] + rank1["stderr"]
    moved = root / "same_moved"
    assert sorted(rank0["hashed"]) == sorted(str(f) for f in moved.iterdir() if f.is_file())  # each once
    assert rank1["hashed"] == []
    assert (root / "same" / "final" / "model.safetensors").is_file()


def test_another_model_at_the_new_place_is_refused_on_every_rank_in_one_line(outcomes):
    root, read = outcomes
    rank0, rank1 = read("other")
    assert (rank0["code"], rank1["code"]) == (2, 2)
    errors = [line for line in rank0["stderr"].splitlines() if "error" in line]
    assert len(errors) == 1 and "with a changed config (model.init: " in errors[0]
    assert [line for line in rank1["stderr"].splitlines() if "error" in line] == []  # rank 0 said it
    assert rank1["hashed"] == []
    assert not (root / "other" / "checkpoints" / "step_0000003").exists()
