"""`metrics.jsonl` on resume: cut back to the checkpoint's step without ever being half written.

The full disk is simulated where the bytes are written: every file opened for writing inside the
test's folder raises ENOSPC on its first write, after `open` has already truncated it. A cut written
in place (open with "w", then write) loses the log; one written beside it and renamed keeps it.
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os

import pytest

from encoderlab.train.metrics import JsonlSink


class _FullDisk:
    """A file object whose writes fail as on a full disk."""

    def __init__(self, fh):
        self._fh = fh

    def write(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), self._fh.name)

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()


@pytest.fixture
def full_disk(tmp_path, monkeypatch):
    real_open = io.open

    def opener(file, mode="r", *args, **kwargs):
        fh = real_open(file, mode, *args, **kwargs)
        inside = not isinstance(file, int) and str(os.fspath(file)).startswith(str(tmp_path))
        return _FullDisk(fh) if inside and any(m in mode for m in "wa+") else fh

    monkeypatch.setattr(io, "open", opener)
    monkeypatch.setattr(builtins, "open", opener)


def _log(steps) -> str:
    return "".join(json.dumps({"step": s, "loss": 1.0 / s}) + "\n" for s in steps)


def test_resume_cuts_the_log_back_to_the_checkpoint(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(_log(range(1, 6)))
    sink = JsonlSink(path, keep_until_step=3)
    sink.log({"step": 4, "loss": 9.0})
    sink.close()
    assert [json.loads(ln)["step"] for ln in path.read_text().splitlines()] == [1, 2, 3, 4]
    assert json.loads(path.read_text().splitlines()[-1])["loss"] == 9.0


def test_a_cut_that_runs_out_of_disk_keeps_the_old_log_whole(tmp_path, full_disk):
    path = tmp_path / "metrics.jsonl"
    before = _log(range(1, 6))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)  # below the patched open, which would refuse it
    os.write(fd, before.encode())
    os.close(fd)
    with pytest.raises(OSError) as exc:
        JsonlSink(path, keep_until_step=3)
    assert exc.value.errno == errno.ENOSPC
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.jsonl"]  # no temporary left behind


def test_non_finite_values_are_written_as_null_so_every_line_is_json(tmp_path):
    """A skipped step's NaN loss was written as a bare NaN, which strict JSON readers refuse."""
    path = tmp_path / "metrics.jsonl"
    sink = JsonlSink(path)
    sink.log({"step": 1, "loss": float("nan"), "grad_norm": float("inf"), "skipped": True})
    sink.log({"step": 2, "loss": 2.5, "lr": 1e-3})
    sink.close()

    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    rows = [json.loads(ln, parse_constant=refuse) for ln in path.read_text().splitlines()]
    assert rows == [
        {"step": 1, "loss": None, "grad_norm": None, "skipped": True},
        {"step": 2, "loss": 2.5, "lr": 1e-3},
    ]
