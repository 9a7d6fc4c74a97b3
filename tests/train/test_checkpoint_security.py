"""A checkpoint is data, never code: no file under a checkpoint is unpickled.

The old layout kept optimizer state in a `torch.distributed.checkpoint` folder whose `.metadata`
is a pickle, so a crafted file ran code on `--resume` and on `init=CKPT load=full`. These tests
plant such a pickle (its `__reduce__` writes a marker file) and check that nothing runs.
"""

from __future__ import annotations

import dataclasses
import shutil

import pytest
from tests.train.helpers import plant_malicious_checkpoint, tiny_run

from encoderlab.errors import UserError
from encoderlab.train import checkpoint as ckpt
from encoderlab.train import pretrain
from encoderlab.train.config import ModelSpec


@pytest.fixture
def run_with_checkpoint(tmp_path):
    cfg = tiny_run(tmp_path / "run")
    pretrain(cfg, until_step=4)
    return cfg


def test_resume_never_unpickles_a_planted_metadata_file(tmp_path, run_with_checkpoint):
    cfg = run_with_checkpoint
    marker = tmp_path / "pwned"
    plant_malicious_checkpoint(ckpt.checkpoint_dir(cfg.out, 4), marker)
    pretrain(cfg, resume=True)
    assert not marker.exists()


def test_init_load_full_never_unpickles_a_planted_metadata_file(tmp_path, run_with_checkpoint):
    cfg = run_with_checkpoint
    marker = tmp_path / "pwned"
    step = ckpt.checkpoint_dir(cfg.out, 4)
    plant_malicious_checkpoint(step, marker)
    cont = dataclasses.replace(cfg, model=ModelSpec(init=str(step), load="full"), out=str(tmp_path / "cont"))
    pretrain(cont)
    assert not marker.exists()


def test_a_checkpoint_in_the_old_layout_is_refused_without_reading_it(tmp_path, run_with_checkpoint):
    cfg = run_with_checkpoint
    marker = tmp_path / "pwned"
    step = ckpt.checkpoint_dir(cfg.out, 4)
    (step / ckpt.TRAIN_STATE).unlink()
    plant_malicious_checkpoint(step, marker)
    with pytest.raises(UserError, match="never read because its metadata is a pickle"):
        ckpt.load_train_state(step)
    assert not marker.exists()


def test_a_damaged_train_state_is_one_line(tmp_path, run_with_checkpoint):
    step = ckpt.checkpoint_dir(run_with_checkpoint.out, 4)
    path = step / ckpt.TRAIN_STATE
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(UserError, match="is damaged"):
        ckpt.load_train_state(step)
    shutil.rmtree(step)
