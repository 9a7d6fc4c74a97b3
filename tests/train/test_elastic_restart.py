"""A torchrun restart (`--max-restarts`) of a command without --resume (found by the launch review of 2026-12-06).

torchrun restarts every rank with the arguments it started them with, and TORCHELASTIC_RESTART_COUNT one
higher. A start without --resume wrote its run folder, so each restart was refused with "pass --resume to
continue it", which no restart can do, until torchrun gave up (checked by hand: two CPU ranks, rank 1
SIGKILLed after the first checkpoint; with --resume in the command the restart continued from that checkpoint
and finished). The line now says that the torchrun command needs --resume (`runfolder._restarted`).
"""

from __future__ import annotations

import pytest
from tests.train.helpers import tiny_run

from encoderlab.errors import UserError
from encoderlab.train import pretrain


@pytest.mark.parametrize("count", ["1", "0", None])
def test_a_restarted_start_without_resume_says_the_torchrun_command_needs_it(tmp_path, monkeypatch, count):
    cfg = tiny_run(tmp_path / "run")
    monkeypatch.delenv("TORCHELASTIC_RESTART_COUNT", raising=False)
    pretrain(cfg, until_step=2)  # the first start, killed after its checkpoint
    if count is not None:
        monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", count)
    with pytest.raises(UserError) as refused:
        pretrain(cfg)
    said = f"{tmp_path / 'run'} already holds a run; pass --resume to continue it or choose another --out"
    if count == "1":  # was: the plain line alone, after each restart
        said += (
            " (torchrun restarted this command, TORCHELASTIC_RESTART_COUNT=1, with the arguments it started with: a "
            "torchrun that may restart it, --max-restarts, needs --resume in its command to continue from the last "
            "checkpoint; on a new --out that starts the run)"
        )
    assert str(refused.value) == said
