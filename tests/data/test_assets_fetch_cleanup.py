"""A failed fetch leaves nothing it made (lock files, $ENCODERLAB_HOME and its folders), keeps what was
there before, and removing a lock file keeps concurrent fetches apart (`locks.waiting_lock`)."""

from __future__ import annotations

import fcntl
import os

import pytest
from assets_fixtures import failing_client, register_asset
from test_assets_fetch import home, package  # noqa: F401  (fixtures)

from encoderlab.cli import main
from encoderlab.data import assets
from encoderlab.data.assets import cache as fetch_mod
from encoderlab.errors import UserError
from encoderlab.locks import waiting_lock

OFFLINE = "WARNING: Retrying ... NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection>')"


def test_an_offline_fetch_leaves_no_home_folders_or_lock_files(home, package, monkeypatch, capsys):  # noqa: F811
    register_asset(monkeypatch, source=package[1])
    monkeypatch.setattr(fetch_mod, "client_command", failing_client(OFFLINE))
    with pytest.raises(SystemExit) as exit_:
        main(["assets", "fetch", "fake"])
    assert exit_.value.code == 2
    assert "could not reach PyPI" in capsys.readouterr().err
    # was: home/assets/.fake.lock and home/downloads/.fakepkg-1.0-py3-none-any.whl.lock left behind
    assert not home.exists()


def test_an_offline_fetch_keeps_what_was_there_before(home, package, monkeypatch):  # noqa: F811
    register_asset(monkeypatch, source=package[1])
    (home / "assets").mkdir(parents=True)
    earlier = home / "assets" / ".fake.lock"  # another fetch's, or one of an older version
    earlier.touch()
    monkeypatch.setattr(fetch_mod, "client_command", failing_client(OFFLINE))
    with pytest.raises(UserError):
        assets.fetch(["fake"])
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == ["assets", "assets/.fake.lock"]


def test_a_waiter_on_a_lock_file_removed_by_a_failed_holder_takes_the_new_one(tmp_path, monkeypatch):
    path = tmp_path / "locks" / ".x.lock"
    real_flock, replaced = fcntl.flock, []

    def flock_after_the_holder_failed(fd, op):
        if (
            not replaced
        ):  # while this waited, the holder failed (removing the file) and a newcomer took the name
            path.unlink()
            newcomer = os.open(path, os.O_RDWR | os.O_CREAT)
            replaced.append(newcomer)
        real_flock(fd, op)

    path.parent.mkdir()
    path.touch()
    monkeypatch.setattr(fcntl, "flock", flock_after_the_holder_failed)
    with waiting_lock(path), open(path) as other, pytest.raises(BlockingIOError):
        real_flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the file the name leads to now is the one held
    os.close(replaced[0])
    assert path.exists()  # not made by this block, and it did not fail: kept


def test_a_lock_whose_folder_a_failed_fetch_removed_makes_it_again(tmp_path):
    path = tmp_path / "gone" / ".x.lock"
    with pytest.raises(RuntimeError), waiting_lock(path):
        raise RuntimeError("the fetch failed")
    assert not path.exists()  # made by the failed block: removed
    with waiting_lock(path):
        assert path.exists()
