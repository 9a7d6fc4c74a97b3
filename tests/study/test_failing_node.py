"""A node failing while others run: the study says so at once, not only after they end; and the line a
node's refusal ends the study with names that node."""

from __future__ import annotations

import contextlib
import json
from concurrent.futures import Executor, Future

import fake_study
import pytest
from fake_study import backend, small_spec

import encoderlab.study.runner as runner
from encoderlab.errors import DiskFull, UserError
from encoderlab.study.graph import NodeKind, build_graph
from encoderlab.train.trainer import NonFiniteLoss


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
    with pytest.raises(DiskFull) as exc:
        runner.run_study(small_spec(), tmp_path / "s", backend(), progress=False, jobs=2)
    assert str(exc.value).startswith("study node pretrain/mlm20: disk full while writing ")
    err = capsys.readouterr().err
    assert "note: node pretrain/mlm20 failed; the study stops after the 1 node still running " in err
    assert "(pretrain/mlm40) finishes, and" in err


def _failing(name_part: str):
    """The first node of the small study whose name holds `name_part` (the one `FAIL_ON` fails)."""
    return next(n for n in build_graph(small_spec(), backend()) if name_part in n.name)


def test_a_node_refusal_names_the_node_in_its_one_line_with_the_same_exit_code(tmp_path, capsys, monkeypatch):
    """A refusal raised while a node runs (a truncated file) named the file alone: which of a study's many
    nodes broke was not said. Now its one line leads with the node, as `study status` names it."""
    from encoderlab.cli import main

    monkeypatch.setitem(fake_study.FAIL_ON, "node", "pretrain/clm")
    monkeypatch.setitem(fake_study.FAIL_ON, "as", "user")
    monkeypatch.setattr("encoderlab.study.cli.default_backend", backend)
    monkeypatch.setattr("encoderlab.study.cli.get_study", lambda name, scale: small_spec())
    with pytest.raises(SystemExit) as exc:
        main(["study", "run", "paper1-pfs", "--out", str(tmp_path)])
    assert exc.value.code == UserError.exit_code
    node = _failing("pretrain/clm")
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("encoderlab: error")] == [
        f"encoderlab: error: study node {node.name}: {runner.node_dir(tmp_path, node) / 'partial.bin'} is "
        "truncated; delete it and run again"
    ]
    assert "Traceback" not in err


def test_a_refusal_in_a_worker_names_its_node(tmp_path, monkeypatch):
    """With --jobs 2 the refusal comes back from a worker process, and is named the same way."""
    monkeypatch.setenv("FAKE_STUDY_FAIL_ON", "mlm40@")  # an eval node of the baseline, in a worker
    monkeypatch.setenv("FAKE_STUDY_FAIL_AS", "user")
    with pytest.raises(UserError) as exc:
        runner.run_study(small_spec(), tmp_path / "s", backend(), progress=False, jobs=2)
    node = _failing("mlm40@")
    assert str(exc.value) == (
        f"study node {node.name}: {runner.node_dir(tmp_path / 's', node) / 'partial.bin'} is truncated; "
        "delete it and run again"
    )


def test_a_refusal_subclass_keeps_its_class_and_exit_code(tmp_path):
    """The node is put in the line of the same exception: a non-finite loss still exits 4."""

    def diverges(ctx):
        raise NonFiniteLoss("loss is nan at step 3; lower the learning rate")

    b = backend()
    b.kinds["pretrain"] = NodeKind(run=diverges)
    with pytest.raises(NonFiniteLoss) as exc:
        runner.run_study(small_spec(), tmp_path, b, progress=False)
    node = next(n for n in build_graph(small_spec(), backend()) if n.kind == "pretrain")
    assert str(exc.value) == f"study node {node.name}: loss is nan at step 3; lower the learning rate"
    assert exc.value.exit_code == NonFiniteLoss.exit_code


def test_a_refusal_before_any_node_runs_names_no_node(tmp_path):
    """Checks of the folder and the study file come before any node: their lines are left as they were."""
    (tmp_path / "study.json").write_text(json.dumps({"name": "other", "scale": "tiny"}))
    with pytest.raises(UserError) as exc:
        runner.run_study(small_spec(), tmp_path, backend(), progress=False)
    assert str(exc.value).startswith(f"{tmp_path} holds study other (scale tiny); run ")
