"""An output folder the file system will not rename a folder onto (a mount point as --out: EBUSY; EXDEV; EPERM)
is one line naming it and the fix, and leaves everything as it was (`atomic.UNRENAMABLE`); a mount point that
`os.path.ismount` tells is refused before the work (`atomic.check_renamable`).

It was an OSError traceback after the whole export, prepare or tokenizer training. No test can mount a file
system, so the rename that would meet the mount point raises what Linux raises there (and `ismount` says what it
would say of one); the functions are tested
rather than a command, since every command that renames a finished folder into place goes through it and each
command's run costs seconds.
"""

from __future__ import annotations

import errno
import os

import pytest
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab import atomic
from encoderlab.errors import UserError


def _refuse_renames_touching(out, code, monkeypatch):
    """Make every rename from or onto `out` fail with `code`, as the kernel does for a mount point."""
    real = os.rename

    def rename(src, dst, *args, **kwargs):
        if os.fspath(out) in (os.fspath(src), os.fspath(dst)):
            raise OSError(code, os.strerror(code), os.fspath(src), None, os.fspath(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "rename", rename)


@pytest.mark.parametrize("code", [errno.EBUSY, errno.EXDEV, errno.EPERM])
@pytest.mark.parametrize("replace", [False, True])
def test_a_folder_that_cannot_be_renamed_into_place_is_one_line_and_nothing_changes(
    tmp_path, monkeypatch, code, replace
):
    out = tmp_path / "mnt"
    out.mkdir()  # a mount point is an existing folder, empty or not
    if replace:
        (out / "old.txt").write_text("old")
    monkeypatch.chdir(tmp_path)
    before = world_state(tmp_path)
    _refuse_renames_touching(out, code, monkeypatch)
    with pytest.raises(UserError) as refused, atomic.atomic_folder(out, replace=replace) as tmp:
        (tmp / "new.txt").write_text("new")
    monkeypatch.undo()
    line = str(refused.value)
    assert "\n" not in line and line.startswith(f"cannot rename the finished output to {out} ")
    assert os.strerror(code) in line
    assert (str(out / "out") in line) == (code != errno.EPERM)  # EPERM: inside it would be no better
    assert_unchanged(before)


def test_a_mount_point_says_to_write_inside_the_mount(tmp_path, monkeypatch):
    out = tmp_path / "mnt"
    out.mkdir()
    tmp = tmp_path / "mnt.tmp"
    tmp.mkdir()
    _refuse_renames_touching(out, errno.EBUSY, monkeypatch)
    inside = r"is a mount point\); .* inside the mount, not the mount point itself"
    with pytest.raises(UserError, match=inside):
        atomic.replace_folder(tmp, out)


def test_other_rename_failures_keep_their_error(tmp_path, monkeypatch):
    out = tmp_path / "out"
    (tmp_path / "out.tmp").mkdir()
    _refuse_renames_touching(out, errno.EIO, monkeypatch)
    with pytest.raises(OSError) as failed:  # a failing disk is not the user's to fix: a traceback
        atomic.replace_folder(tmp_path / "out.tmp", out)
    assert failed.value.errno == errno.EIO and not isinstance(failed.value, UserError)


def _mount_point_at(out, monkeypatch):
    real = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda path: os.fspath(path) == os.fspath(out) or real(path))


def test_a_mount_point_is_refused_before_the_folder_is_written(tmp_path, monkeypatch):
    out = tmp_path / "mnt"
    out.mkdir()
    monkeypatch.chdir(tmp_path)
    before = world_state(tmp_path)
    _mount_point_at(out, monkeypatch)
    written = []
    refused = r"mnt is a mount point, and .* inside the mount, not the mount point"
    with pytest.raises(UserError, match=refused), atomic.atomic_folder(out):
        written.append(True)
    assert not written
    assert_unchanged(before)


def test_a_prepare_into_a_mount_point_is_refused_before_it_reads_anything(tmp_path, monkeypatch):
    from encoderlab.data.target import check_target

    out = tmp_path / "mnt"
    out.mkdir()
    _mount_point_at(out, monkeypatch)
    with pytest.raises(UserError, match=r"mnt is a mount point, .*nothing was changed"):
        check_target(out, None)


def test_a_tokenizer_into_a_mount_point_is_refused_before_the_training(tmp_path, monkeypatch):
    from encoderlab.data import tokenizer_training
    from encoderlab.data.sources import SourceConfig

    (tmp_path / "c.txt").write_text("some text\n")
    out = tmp_path / "mnt"
    out.mkdir()
    _mount_point_at(out, monkeypatch)
    monkeypatch.setattr(tokenizer_training, "_train_in_child", lambda job: pytest.fail("trained"))
    with pytest.raises(UserError, match=r"mnt is a mount point, .*nothing was changed"):
        tokenizer_training.train_tokenizer(
            SourceConfig(location=str(tmp_path / "c.txt")), 300, out, progress=False
        )
    assert not any(out.iterdir())
