"""A node failing while others run: the study says so at once, not only after they end."""

from __future__ import annotations

import contextlib
import errno
from concurrent.futures import Executor, Future

import fake_study
import pytest
from fake_study import backend, small_spec

import encoderlab.study.runner as runner


class _OneHangs(Executor):
    """Runs each node on submit, except `pretrain/mlm40`, which stays running (never finishes)."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        if args[0].node.name == "pretrain/mlm40":
            return future
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 -- surfaced through the future, as a pool does
            future.set_exception(exc)
        return future


def test_a_failing_node_names_the_nodes_the_study_still_waits_for(tmp_path, monkeypatch, capsys):
    """With --jobs 2, leaving the pool after a failure waits for the nodes still running (hours of
    pretraining, maybe): the failure is said the moment it happens, with those nodes' names."""
    monkeypatch.setattr(runner, "node_pool", lambda jobs: contextlib.nullcontext(_OneHangs()))
    monkeypatch.setitem(fake_study.FAIL_ON, "node", "pretrain/mlm20")
    with pytest.raises(OSError) as exc:
        runner.run_study(small_spec(), tmp_path / "s", backend(), progress=False, jobs=2)
    assert exc.value.errno == errno.ENOSPC
    err = capsys.readouterr().err
    assert "note: node pretrain/mlm20 failed; the study stops after the 1 node still running " in err
    assert "(pretrain/mlm40) finishes, and" in err
