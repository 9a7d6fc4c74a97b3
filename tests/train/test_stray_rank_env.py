"""A process torchrun did not start, with a RANK or LOCAL_RANK left in its environment (found by the
new-user hunt of 2026-12-06, cluster route).

`join_world` gave such a process `World()` (rank 0 of one), so it trained and wrote the whole run, while
every line said by rank 0 alone read the environment's RANK: a `--dry-run` printed nothing, the summary and
the notes went unsaid, a resume skipped rank 0's check of a moved start model, and RANK=x was a ValueError
traceback once the run had trained. It is now refused in one line before anything is written, the mirror of
WORLD_SIZE without RANK (tests/train/test_distributed.py).
"""

from __future__ import annotations

import pytest
from tests.train.helpers import tiny_run

from encoderlab.cli import main
from encoderlab.errors import UserError
from encoderlab.train import pretrain

STRAYS = [
    ({"RANK": "1"}, "RANK=1 is set but WORLD_SIZE is not; launch with torchrun (it sets them all), or unset RANK"),
    ({"LOCAL_RANK": "1"}, "LOCAL_RANK=1 is set but WORLD_SIZE is not; launch with torchrun (it sets them all), or unset LOCAL_RANK"),
    ({"RANK": "1", "WORLD_SIZE": "1"}, "RANK=1 is set but WORLD_SIZE=1; launch with torchrun"),
    ({"RANK": "x", "WORLD_SIZE": "1"}, "RANK=x is set but WORLD_SIZE=1; launch with torchrun"),
    ({"RANK": "1", "LOCAL_RANK": "1"}, "RANK=1, LOCAL_RANK=1 are set but WORLD_SIZE is not; launch with torchrun (it sets them all), or unset RANK and LOCAL_RANK"),
]  # fmt: skip


def _env(monkeypatch, env: dict) -> None:
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize(("env", "said"), STRAYS)
def test_a_stray_rank_without_a_world_is_refused_before_anything_is_written(tmp_path, monkeypatch, env, said):
    """Trained the whole run as rank 0 of one before (RANK=x: then a traceback after it)."""
    _env(monkeypatch, env)
    with pytest.raises(UserError) as refused:
        pretrain(tiny_run(tmp_path / "run"))
    assert str(refused.value).startswith(said) and str(refused.value).endswith(" to run one process")
    assert list(tmp_path.iterdir()) == []


def test_a_dry_run_with_a_stray_rank_says_why_it_prints_nothing(tmp_path, monkeypatch, capsys):
    """`RANK=1 encoderlab pretrain ... --dry-run` printed nothing and exited 0: the config is printed by rank 0."""
    _env(monkeypatch, {"RANK": "1"})
    with pytest.raises(SystemExit) as done:
        main(["pretrain", "--recipe", "smoke-mlm", "--out", str(tmp_path / "run"), "--dry-run"])
    out, err = capsys.readouterr()
    assert done.value.code == 2 and out == ""
    assert err.splitlines() == [f"encoderlab: error: {STRAYS[0][1]} to run one process"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("env", [{}, {"RANK": "0", "LOCAL_RANK": "0"}, {"RANK": "", "WORLD_SIZE": "1"}])
def test_one_process_as_torchrun_would_start_it_alone_still_runs(tmp_path, monkeypatch, capsys, env):
    """What is not a stray: no variable, rank 0 of one (`torchrun --nproc-per-node 1`), an empty RANK."""
    _env(monkeypatch, env)
    main(["pretrain", "--recipe", "smoke-mlm", "--out", str(tmp_path / "run"), "--dry-run"])
    assert "total_steps:" in capsys.readouterr().out


@pytest.mark.parametrize("world", [None, "-1", "0", "abc", ""])
def test_an_argument_error_of_a_process_torchrun_did_not_start_is_said_whatever_its_local_rank(
    monkeypatch, capsys, world
):
    """LOCAL_RANK=1 without WORLD_SIZE muted the argument error (said by each node's first process only); so
    did a WORLD_SIZE naming no number of processes (-1, abc), which the cli's own parser took for torchrun's
    while `pretrain` refuses it as no launcher's (`launchenv.parsed_world_size`, one parser for both)."""
    _env(monkeypatch, {"LOCAL_RANK": "1"} | ({} if world is None else {"WORLD_SIZE": world}))
    with pytest.raises(SystemExit) as done:
        main(["pretrain", "--bogus"])
    assert done.value.code == 2
    assert capsys.readouterr().err.startswith("encoderlab: error: unrecognized arguments: --bogus")


@pytest.mark.parametrize("value", ["0", "-1", "abc"])
def test_a_world_size_below_one_is_one_line_before_anything_is_written(tmp_path, monkeypatch, value):
    """WORLD_SIZE=0 or -1 ran one process without a word (read as unset); `abc` said only "launch with torchrun"."""
    _env(monkeypatch, {"WORLD_SIZE": value})
    with pytest.raises(UserError) as refused:
        pretrain(tiny_run(tmp_path / "run"))
    assert str(refused.value) == (
        f"WORLD_SIZE={value!r} is not a whole number of processes (1 or more); launch with torchrun, or unset "
        "WORLD_SIZE to run one process"
    )
    assert list(tmp_path.iterdir()) == []
