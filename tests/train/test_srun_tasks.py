"""`srun -n N encoderlab pretrain ...` without torchrun (found by the launch review of 2026-12-06).

srun starts N copies of the command, each with SLURM_PROCID and SLURM_STEP_NUM_TASKS but none of torchrun's
variables, so each ran alone as rank 0 of one: all N trained the whole run, on the same GPU, into the same
run folder; one took its lock and the others were refused after building everything (checked by hand with
two such processes on CPU: one trained, the other said "... is in use by pretrain ..."). It is now refused
before anything is written, said by task 0 alone (`launchenv.check_not_srun_tasks`). SLURM's variables are
not read as a world: the documented launch is one torchrun per node under srun (docs/scaling.md).
"""

from __future__ import annotations

import pytest
from tests.train.helpers import tiny_run

from encoderlab.cli import main
from encoderlab.errors import UserError
from encoderlab.train import pretrain

SAID = (
    "srun started 2 tasks of this command (SLURM_STEP_NUM_TASKS=2) but WORLD_SIZE is not set, so each would "
    "train the whole run alone into the same --out; under srun run one task per node that starts torchrun "
    "(docs/scaling.md), or a single task (srun --ntasks=1)"
)
SLURM = ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_LOCALID")


def _env(monkeypatch, env: dict) -> None:
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", *SLURM):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def test_srun_tasks_without_torchrun_are_refused_before_anything_is_written(tmp_path, monkeypatch):
    """Each task trained the whole run alone into the same folder before."""
    _env(monkeypatch, {"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "2", "SLURM_NTASKS": "2"})
    with pytest.raises(UserError) as refused:
        pretrain(tiny_run(tmp_path / "run"))
    assert str(refused.value) == SAID and not refused.value.quiet
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("task", "lines"), [("0", [f"encoderlab: error: {SAID}"]), ("1", [])])
def test_the_refusal_is_said_by_task_zero_alone(tmp_path, monkeypatch, capsys, task, lines):
    """srun gathers every task's stderr into one stream: one line, every task exiting 2."""
    _env(monkeypatch, {"SLURM_PROCID": task, "SLURM_LOCALID": task, "SLURM_STEP_NUM_TASKS": "2"})
    with pytest.raises(SystemExit) as done:
        main(["pretrain", "--recipe", "smoke-mlm", "--out", str(tmp_path / "run"), "--dry-run"])
    out, err = capsys.readouterr()
    assert done.value.code == 2 and out == ""
    assert err.splitlines() == lines
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "env",
    [
        # the batch script itself: run once, SLURM_NTASKS the allocation's
        {"SLURM_PROCID": "0", "SLURM_NTASKS": "4"},
        {"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "1", "SLURM_NTASKS": "1"},  # srun --ntasks=1
    ],
)
def test_one_process_under_slurm_still_runs(tmp_path, monkeypatch, capsys, env):
    _env(monkeypatch, env)
    main(["pretrain", "--recipe", "smoke-mlm", "--out", str(tmp_path / "run"), "--dry-run"])
    assert "total_steps:" in capsys.readouterr().out


@pytest.mark.parametrize(("task", "said"), [("0", True), ("1", False)])
def test_an_argument_error_of_srun_tasks_is_said_by_task_zero_alone(monkeypatch, capsys, task, said):
    """Each of srun's tasks printed it (without torchrun, each is its node's only process by LOCAL_RANK)."""
    _env(monkeypatch, {"SLURM_PROCID": task, "SLURM_LOCALID": task, "SLURM_STEP_NUM_TASKS": "2"})
    with pytest.raises(SystemExit) as done:
        main(["pretrain", "--bogus"])
    assert done.value.code == 2
    assert capsys.readouterr().err.startswith("encoderlab: error: unrecognized arguments: --bogus") == said
