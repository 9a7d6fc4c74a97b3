"""`treestate.world_state` and `assert_unchanged` see what the catalogue's refusal checks claim to: a file
merely touched, a leftover in $ENCODERLAB_HOME or a Hugging Face cache, an empty folder left behind; and
refuse a working folder that is not the test's own (it would be hashed whole)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.reliability.treestate import assert_unchanged, world_state


@pytest.fixture
def world(tmp_path, monkeypatch) -> Path:
    """A test folder holding a file, with $ENCODERLAB_HOME and HF_HOME outside it, the working folder in it."""
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "kept.txt").write_text("kept")
    for name in ("ENCODERLAB_HOME", "HF_HOME"):
        (tmp_path / name).mkdir()
        monkeypatch.setenv(name, str(tmp_path / name))
    monkeypatch.chdir(tmp_path / "w")
    return tmp_path / "w"


def _touch(path: Path) -> None:
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000))  # the same bytes, a later mtime
    # (a lease's heartbeat: a refused command that touched another's lock would keep it alive)


@pytest.mark.parametrize(
    "left",
    [
        lambda w: _touch(w / "kept.txt"),
        lambda w: (w / "empty").mkdir(),
        lambda w: (w.parent / "ENCODERLAB_HOME" / "assets.lock").write_text(""),
        lambda w: (w.parent / "HF_HOME" / "hub").mkdir(),
    ],
    ids=["touched", "empty-folder", "encoderlab-home", "hf-cache"],
)
def test_what_a_refused_command_may_not_leave_is_seen(world, left):
    before = world_state(world)
    left(world)
    with pytest.raises(AssertionError, match="a refused command left or changed"):
        assert_unchanged(before)


def test_nothing_changed_is_unchanged(world):
    before = world_state(world)
    (world / "kept.txt").read_text()
    assert_unchanged(before)


def test_a_working_folder_not_the_tests_own_is_refused(world, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the folder above the one named: it would be hashed whole
    with pytest.raises(AssertionError, match=r"change into the test's own folder first"):
        world_state(world)


def test_a_txt_scan_remembered_is_no_leftover_but_one_rewritten_is(world):
    """The memory of .txt scans is kept across commands by design (`data/txtscans.py`): a refused check of
    an older folder may add to it, and nothing else there."""
    memos = world.parent / "ENCODERLAB_HOME" / "cache" / "txt-scans"
    before = world_state(world)
    memos.mkdir(parents=True)
    (memos / "a.json").write_text("{}")
    assert_unchanged(before)
    before = world_state(world)
    _touch(memos / "a.json")
    with pytest.raises(AssertionError, match=r"changed: .*txt-scans/a.json"):
        assert_unchanged(before)
