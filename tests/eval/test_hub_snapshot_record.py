"""encoderlab's record of the files fetched into the hub cache's snapshot of a dataset
(`$ENCODERLAB_HOME/cache/hub-snapshots/OWNER--NAME@COMMIT.json`), written by two loads at once.

Two threads stand for two processes: an `flock` is held per open descriptor, so two threads opening the
folder each wait for the other as two processes do. The interleaving is forced by hooks, not by timing:
load A, having read the record, lets load B run until B either waits for the lock or is done."""

from __future__ import annotations

import fcntl
import json
import threading
import types

from encoderlab import locks
from encoderlab.eval.tasks import hubcomplete
from encoderlab.eval.tasks.hubsource import HubSource

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_two_loads_recording_one_snapshot_at_once_keep_both_configs(tmp_path, monkeypatch):
    # was: each read the record, added its config and wrote it: the last writer won, and the other
    # config's files were no longer checked offline (a fetch of it cut short was read short)
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    source = HubSource("me/shards")
    b_waits_or_is_done, real_read = threading.Event(), hubcomplete._read_record
    errors: list[BaseException] = []

    def load_b():
        try:
            hubcomplete.record_snapshot(source, COMMIT, {"name": "b"}, ["b.csv"])
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)
        finally:
            b_waits_or_is_done.set()

    b = threading.Thread(target=load_b)

    def flock(fd, operation):  # B at the lock: from here it goes on only once A lets it
        if threading.current_thread() is b:
            b_waits_or_is_done.set()
        return fcntl.flock(fd, operation)

    def read_record(path, source):  # A, having read the record, lets B run as far as it can
        configs = real_read(path, source)
        if b.ident is None:  # A's read (B's comes after B started)
            b.start()
            b_waits_or_is_done.wait()
        return configs

    monkeypatch.setattr(locks, "fcntl", types.SimpleNamespace(flock=flock, LOCK_EX=fcntl.LOCK_EX))
    monkeypatch.setattr(hubcomplete, "_read_record", read_record)
    hubcomplete.record_snapshot(source, COMMIT, {"name": "a"}, ["a.csv"])
    b.join()
    assert errors == []
    record = tmp_path / "home" / "cache" / "hub-snapshots" / f"me--shards@{COMMIT}.json"
    assert json.loads(record.read_text())["configs"] == {
        json.dumps({"name": "a"}): ["a.csv"],
        json.dumps({"name": "b"}): ["b.csv"],
    }
