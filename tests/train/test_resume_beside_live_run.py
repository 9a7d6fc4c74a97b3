"""A `pretrain --resume` beside the run still training (found by the new-user hunt of 2026-12-06, cluster route:
a SIGKILL of torchrun left its ranks training as orphans, docs/scaling.md).

The lock was taken only once the run was built, so the resume first read the latest checkpoint, which the live
run then rotated away (`checkpoint.keep_last`), and said "tokenizer '.../step_N/model' does not exist ...". It now
names the live holder before it reads anything (`locks.refuse_live_holder`).
"""

from __future__ import annotations

import json
import os
import shutil
import socket

import pytest
from tests.reliability.treestate import assert_unchanged, world_state
from tests.train.helpers import tiny_run

from encoderlab.errors import UserError
from encoderlab.model.runlayout import complete_checkpoints
from encoderlab.train import pretrain
from encoderlab.train.runfolder import LOCK


def test_a_resume_beside_a_live_run_names_its_holder_before_reading_a_checkpoint_it_rotates(
    tmp_path, monkeypatch
):
    cfg = tiny_run(tmp_path / "run")
    run = pretrain(cfg, until_step=2)
    latest = run / "checkpoints" / f"step_{complete_checkpoints(run)[-1]:07d}"
    assert latest.is_dir()
    shutil.rmtree(latest / "model")  # being rotated away by the live run (state.json still there)
    holder = {
        "pid": os.getppid(),
        "host": socket.gethostname(),
        "since": "2026-12-06T20:33:14Z",
        "what": "pretrain",
    }
    (run / LOCK).write_text(json.dumps(holder))  # a live process of this host holds it
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    before = world_state(tmp_path)
    with pytest.raises(UserError) as refused:
        pretrain(cfg, resume=True)
    assert_unchanged(before)  # the lock's bytes and mtime, caches, cwd included
    assert str(refused.value) == (
        f"{run} is in use by pretrain (pid {os.getppid()} on {socket.gethostname()} since 2026-12-06T20:33:14Z); "
        f"wait for it, use another --out, or delete {run / LOCK} if that process is gone"
    )
