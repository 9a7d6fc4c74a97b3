"""Output folders: refuse before touching, write only into folders encoderlab created."""

from __future__ import annotations

import os

import pytest

from encoderlab.errors import UserError
from encoderlab.outdir import MARKER, check_output, create_output, owner


def _snapshot(root):
    return sorted(
        (str(p.relative_to(root)), p.read_bytes() if p.is_file() else None) for p in root.rglob("*")
    )


def test_a_new_folder_is_created_and_marked(tmp_path):
    out = tmp_path / "a" / "b"
    check_output(out, "pretrain")
    assert not out.exists()  # checking touches nothing
    create_output(out, "pretrain")
    assert owner(out)["kind"] == "pretrain"
    check_output(out, "pretrain")  # ours: accepted again (resume)


def test_a_foreign_non_empty_folder_is_refused_and_left_alone(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "metrics.jsonl").write_text("theirs")
    before = _snapshot(tmp_path)
    with pytest.raises(UserError, match="did not create"):
        check_output(tmp_path / "x", "pretrain")
    assert _snapshot(tmp_path) == before


def test_an_empty_existing_folder_is_accepted(tmp_path):
    (tmp_path / "x").mkdir()
    check_output(tmp_path / "x", "eval")


def test_another_kind_of_output_is_refused(tmp_path):
    create_output(tmp_path / "x", "eval")
    (tmp_path / "x" / "results.jsonl").write_text("")
    with pytest.raises(UserError, match="holds the output of `eval`"):
        check_output(tmp_path / "x", "pretrain")


def test_legacy_folders_are_recognised(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "config.yaml").write_text("ours")
    check_output(tmp_path / "x", "pretrain", legacy=lambda p: (p / "config.yaml").is_file())


@pytest.mark.parametrize("where", ["same", "inside", "contains"])
def test_output_overlapping_a_source_is_refused(tmp_path, where):
    src = tmp_path / "run"
    (src / "final").mkdir(parents=True)
    out = {"same": src, "inside": src / "final", "contains": tmp_path}[where]
    with pytest.raises(UserError, match="source"):
        check_output(out, "export", sources=[src])


def test_a_symlink_to_a_source_is_refused(tmp_path):
    src = tmp_path / "run"
    src.mkdir()
    (tmp_path / "link").symlink_to(src)
    with pytest.raises(UserError, match="source"):
        check_output(tmp_path / "link", "export", sources=[src])


def test_files_loops_and_uncreatable_parents_are_one_line(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(UserError, match="is a file"):
        check_output(tmp_path / "f", "eval")
    with pytest.raises(UserError, match="is a file"):
        check_output(tmp_path / "f" / "sub", "eval")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(UserError):
        check_output(loop, "eval")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(UserError, match="symlink"):
        check_output(tmp_path / "dangling", "eval")


def test_a_folder_that_cannot_be_made_is_one_line(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(UserError, match="cannot create"):
        create_output(tmp_path / "f" / "sub", "eval")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_parent_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(UserError, match="not writable"):
            check_output(ro / "out", "eval")
    finally:
        ro.chmod(0o700)


def test_the_marker_is_not_a_foreign_file(tmp_path):
    create_output(tmp_path / "x", "study")
    assert (tmp_path / "x" / MARKER).is_file()
    check_output(tmp_path / "x", "study")


KILLED_IN_THE_MARKER_WRITE = """
import os, signal, sys
from pathlib import Path
from encoderlab import atomic
from encoderlab.outdir import create_output
atomic.os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)  # the marker written, not yet renamed
create_output(Path(sys.argv[1]), "pretrain")
"""


def test_a_marker_write_killed_mid_way_leaves_a_folder_the_rerun_takes(tmp_path):
    """A SIGKILL while `create_output` wrote the marker (made the folder, not yet renamed its temporary file):
    every rerun refused the folder as someone else's."""
    import subprocess
    import sys

    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    killed = subprocess.run([sys.executable, "-c", KILLED_IN_THE_MARKER_WRITE, str(out)], env=env)
    assert killed.returncode == -9 and owner(out) is None and any(out.iterdir())  # the leftover alone
    assert check_output(out, "pretrain") == out
    create_output(out, "pretrain")
    assert owner(out)["kind"] == "pretrain" and sorted(p.name for p in out.iterdir()) == [MARKER]


def test_a_live_writers_marker_file_is_not_taken_for_a_leftover(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / f".{MARKER}.{os.getppid()}.tmp").write_text("")  # its writer (our parent) still runs
    with pytest.raises(UserError, match="being created by another command"):
        check_output(out, "pretrain")


def test_a_marker_write_killed_on_another_host_is_judged_by_age_as_a_locks_files_are(tmp_path):
    """On a shared file system the pid in the marker's temporary file means nothing here: one of another node,
    whose pid is not alive on this one, was taken for a leftover, and `create_output` removed it under its live
    writer. It is another command's until an hour old (`locks.writer_gone`), as a lock's temporary file is."""
    import subprocess
    import sys
    import time

    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    elsewhere = "from encoderlab import locks\nlocks.host_id = lambda *a, **k: '0badc0de'  # another node\n"
    killed = subprocess.run([sys.executable, "-c", elsewhere + KILLED_IN_THE_MARKER_WRITE, str(out)], env=env)
    assert killed.returncode == -9 and owner(out) is None
    before = _snapshot(out)
    with pytest.raises(UserError, match="being created by another command now"):
        check_output(out, "pretrain")
    assert _snapshot(out) == before
    (left,) = out.iterdir()
    os.utime(left, (time.time() - 7200, time.time() - 7200))  # two hours on: its writer is gone
    assert check_output(out, "pretrain") == out
    create_output(out, "pretrain")
    assert sorted(p.name for p in out.iterdir()) == [MARKER]
