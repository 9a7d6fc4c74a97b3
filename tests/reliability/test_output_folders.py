"""Nothing lost (issue 20, item 2): what output commands do with folders that are theirs, and what
they never do to anything else. The one-line refusals themselves are in the catalogue
(test_hostile_inputs.py); these tests cover the state around them: a file that is not ours is not
even trimmed, our own folders are resumed or replaced as documented, and a full disk during an
export is exit 3 with nothing half-written left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from safetensors import SafetensorError
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.errors import UserError
from encoderlab.eval.protocol import ResultsStore
from encoderlab.outdir import MARKER, owner

FULL = "Error while serializing: I/O error: No space left on device (os error 28)"
"""What safetensors raises when the disk fills up (measured on a 64 KiB tmpfs)."""


def test_a_foreign_results_file_is_refused_before_its_torn_line_is_cut(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"x": 1}\n{"unterminated": ')
    before = path.read_bytes()
    with pytest.raises(UserError, match="line 1 is not a result record"):
        ResultsStore(path)
    assert path.read_bytes() == before


def test_our_torn_results_line_is_still_cut(tmp_path):
    rec = {
        "model": "m", "task": "t", "family": "sc", "task_signature": "s", "metric": "accuracy", "lr": 0.1,
        "seed": 0, "val": {"accuracy": 50.0}, "test": {"test": {"accuracy": 50.0}}, "val_score": 50.0,
        "test_score": 50.0,
    }  # fmt: skip
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(rec) + "\n" + '{"model": "m", "ta')
    store = ResultsStore(path)
    assert len(store.records) == 1 and path.read_text() == json.dumps(rec) + "\n"


def test_eval_marks_its_folder_resumes_it_and_accepts_folders_from_before_markers(tmp_path, capsys):
    from tests.reliability.reliability_fixtures import eval_fixture, quick_boolq

    from encoderlab.eval.tasks import TASKS

    model, env = eval_fixture(tmp_path)
    saved = dict(TASKS)
    quick_boolq()
    try:
        os.environ.update(env)
        argv = ["eval", model, "--tasks", "boolq", "--lrs", "1e-4", "--seeds", "0", "--device", "cpu"]
        assert cli([*argv, "--out", tmp_path / "e"], capsys)[0] == 0
        assert owner(tmp_path / "e")["kind"] == "eval"
        (tmp_path / "e" / MARKER).unlink()  # as written by a version without markers
        assert cli([*argv, "--out", tmp_path / "e"], capsys)[0] == 0
        assert len((tmp_path / "e" / "results.jsonl").read_text().splitlines()) == 1  # resumed, not rerun
    finally:
        os.environ.pop("ENCODERLAB_HOME", None)
        TASKS.clear()
        TASKS.update(saved)


def test_a_refused_evaluation_leaves_no_folder_behind(tmp_path, capsys, monkeypatch):
    from tests.reliability.reliability_fixtures import eval_fixture

    from encoderlab.eval import protocol

    model, env = eval_fixture(tmp_path)
    monkeypatch.setenv("ENCODERLAB_HOME", env["ENCODERLAB_HOME"])

    def empty(task, tokenizer):
        raise UserError(f"task {task.name}: the test split is empty; check the data files")

    monkeypatch.setattr(protocol, "_prepared_task", empty)
    out = tmp_path / "evals" / "e"  # a parent to create too: it goes with the folder (it stayed behind)
    code, err = cli(["eval", model, "--tasks", "boolq", "--lrs", "1e-4", "--out", out], capsys)
    assert code == 2 and "split is empty" in err
    assert not (tmp_path / "evals").exists()


def test_export_replaces_only_its_own_earlier_export(tmp_path, capsys):
    from tests.reliability.hostile_world import TINY_RUN

    (tmp_path / "tiny.yaml").write_text(TINY_RUN)
    assert cli(["pretrain", "--config", tmp_path / "tiny.yaml", "--out", tmp_path / "run"], capsys)[0] == 0
    assert cli(["export", tmp_path / "run", "--out", tmp_path / "hf"], capsys)[0] == 0
    assert owner(tmp_path / "hf")["kind"] == "export"
    code, err = cli(["export", tmp_path / "run", "--out", tmp_path / "hf"], capsys)
    assert_one_line(code, err, r"already holds an export; pass --overwrite")
    assert cli(["export", tmp_path / "run", "--out", tmp_path / "hf", "--overwrite"], capsys)[0] == 0
    (tmp_path / "hf.tmp").mkdir()
    (tmp_path / "hf.tmp" / "mine.txt").write_text("a sibling the export must not delete")
    code, err = cli(["export", tmp_path / "run", "--out", tmp_path / "hf", "--overwrite"], capsys)
    assert_one_line(
        code, err, r"hf.tmp exists and is not a leftover of encoderlab .*nothing in it was changed"
    )
    assert (tmp_path / "hf.tmp" / "mine.txt").is_file()


def test_a_transplant_reruns_into_its_own_folder_and_never_into_model_b(tmp_path, capsys, monkeypatch):
    from tests.reliability.hostile_world import TINY_RUN

    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    (tmp_path / "tiny.yaml").write_text(TINY_RUN)
    for run in ("a", "b"):
        assert cli(["pretrain", "--config", tmp_path / "tiny.yaml", "--out", tmp_path / run], capsys)[0] == 0
    argv = ["analyze", "transplant", tmp_path / "a", tmp_path / "b", "--layers", "0"]
    assert cli([*argv, "--out", tmp_path / "t"], capsys)[0] == 0
    assert owner(tmp_path / "t")["kind"] == "transplant" and (tmp_path / "t" / "transplant.json").is_file()
    assert cli([*argv, "--out", tmp_path / "t"], capsys)[0] == 0
    before = world_state(tmp_path / "b", tmp_path)
    code, err = cli([*argv, "--out", tmp_path / "b" / "final"], capsys)
    assert_one_line(code, err, r"lies inside the source")
    assert_unchanged(before)


@pytest.fixture
def exportable(tmp_path, capsys):
    from tests.reliability.hostile_world import TINY_RUN

    (tmp_path / "tiny.yaml").write_text(TINY_RUN)
    assert cli(["pretrain", "--config", tmp_path / "tiny.yaml", "--out", tmp_path / "run"], capsys)[0] == 0
    return tmp_path / "run"


@pytest.mark.parametrize(
    ("message", "said"),
    [(FULL, "disk full while writing .*hf.tmp.*; free space and rerun"),
     (FULL.replace("No space left on device (os error 28)", "Disk quota exceeded (os error 122)"),
      "disk quota exceeded while writing .*hf.tmp.*; free space within your quota and rerun")],
)  # fmt: skip
def test_disk_full_during_export_is_exit_3_and_leaves_nothing(
    exportable, tmp_path, capsys, monkeypatch, message, said
):
    import safetensors.torch

    def full(*args, **kwargs):
        raise SafetensorError(message)

    monkeypatch.setattr(safetensors.torch, "save_file", full)  # the export's own writer reads it from there
    code, err = cli(["export", exportable, "--out", tmp_path / "hf"], capsys)
    assert_one_line(code, err, said, exit_code=3)
    assert not (tmp_path / "hf").exists() and not (tmp_path / "hf.tmp").exists()


@pytest.mark.skipif(
    os.geteuid() != 0 or sys.platform != "linux", reason="mounting a tmpfs needs root on Linux"
)
def test_a_real_full_disk_during_export_is_exit_3(exportable, tmp_path, capsys):
    """The same with a real ENOSPC: a 64 KiB tmpfs (skipped where mounting is not allowed). The export runs in
    this process (`cli`), as the cases above: the ENOSPC is the file system's, not the process's."""
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(small)]).returncode:
        pytest.skip("mount is not allowed here")
    try:
        code, err = cli(["export", exportable, "--out", small / "hf"], capsys)
        lines = err.strip().splitlines()
        assert code == 3 and len(lines) == 1 and "disk full while writing" in lines[0], err
        assert not any(small.iterdir())
    finally:
        subprocess.run(["umount", str(small)], check=True)


def test_other_write_errors_are_not_called_a_full_disk(exportable, tmp_path, capsys, monkeypatch):
    import safetensors.torch

    def broken(*args, **kwargs):
        raise SafetensorError("Error while serializing: some other failure")

    monkeypatch.setattr(safetensors.torch, "save_file", broken)
    with pytest.raises(SafetensorError):  # a bug keeps its traceback; only a full disk is translated
        cli(["export", exportable, "--out", tmp_path / "hf"], capsys)
