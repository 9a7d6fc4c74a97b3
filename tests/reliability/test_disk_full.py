"""A full disk is exit 3 in every command that writes (docs/errors.md: "disk full while writing ...;
free space and rerun (completed work is kept and resumes)"), and the rerun then completes.

The full disk is simulated where each command writes its bytes (ENOSPC raised from inside the write,
as the kernel reports it). pretrain and export are in test_hostile_pretrain.py, test_hostile_inputs.py
and test_output_folders.py (there also on a real 64 KiB tmpfs); this file covers prepare, merge and
eval. Before, `data prepare` and `data merge` reported a full disk as bad input (exit 2).
"""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

import pytest
from tests.eval.conftest import make_tokenizer, vocabulary_texts
from tests.reliability.test_hostile_inputs import cli

from encoderlab.data import prepare as prep

FULL = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "tokens.bin")


def assert_exit_3(code: int, err: str, pattern: str) -> None:
    """Exit 3 and one error line, the last one (progress bars may come before it), no traceback."""
    errors = [line for line in err.splitlines() if line.startswith("encoderlab: error: ")]
    assert code == 3 and "Traceback" not in err, err
    assert len(errors) == 1 and err.strip().splitlines()[-1] == errors[0], err
    assert re.search(pattern, errors[0]), errors[0]


@pytest.fixture
def corpus(tmp_path) -> tuple[Path, Path]:
    texts = vocabulary_texts()
    src = tmp_path / "corpus.jsonl"
    src.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)))
    make_tokenizer(texts).save_pretrained(tmp_path / "tok")
    return src, tmp_path / "tok"


def _prepare(corpus, out: Path, *extra) -> list:
    src, tok = corpus
    return ["data", "prepare", "--source", src, "--tokenizer", tok, "--out", out,
            "--decontaminate", "none", "--workers", "1", *extra]  # fmt: skip


def _full_disk_in_writes(monkeypatch) -> None:
    def full(self, tokens, lengths):
        raise FULL

    monkeypatch.setattr(prep.SplitWriter, "append", full)


def test_prepare_disk_full_is_exit_3_and_the_rerun_completes(corpus, tmp_path, capsys, monkeypatch):
    out = tmp_path / "data"
    with monkeypatch.context() as mp:
        _full_disk_in_writes(mp)
        code, err = cli(_prepare(corpus, out), capsys)
    assert_exit_3(code, err, r"disk full while preparing .*data \(tokens.bin\); .*free space and rerun")
    assert not out.exists()
    assert cli(_prepare(corpus, out), capsys)[0] == 0
    assert (out / "meta.json").is_file()


def test_merge_disk_full_is_exit_3_and_the_rerun_completes(corpus, tmp_path, capsys, monkeypatch):
    out = tmp_path / "data"
    assert cli(_prepare(corpus, out, "--shard", "0/1"), capsys)[0] == 0  # one part: merge copies it
    with monkeypatch.context() as mp:
        _full_disk_in_writes(mp)
        code, err = cli(["data", "merge", "--out", out], capsys)
    assert_exit_3(code, err, r"disk full while merging into .*data; free space and run `data merge` again")
    assert not out.exists() and not out.with_name("data.tmp").exists()
    assert cli(["data", "merge", "--out", out], capsys)[0] == 0
    assert (out / "meta.json").is_file()


def test_eval_disk_full_is_exit_3_and_the_rerun_resumes(tmp_path, capsys, monkeypatch):
    """The disk fills up while the second node's result line is written: half a line is on disk."""
    from tests.reliability.reliability_fixtures import eval_fixture, quick_boolq

    from encoderlab.eval.protocol import ResultsStore
    from encoderlab.eval.tasks import TASKS

    model, env = eval_fixture(tmp_path)
    monkeypatch.setenv("ENCODERLAB_HOME", env["ENCODERLAB_HOME"])
    monkeypatch.setitem(TASKS, "boolq", TASKS["boolq"])  # restored after quick_boolq's change
    quick_boolq()
    argv = ["eval", model, "--tasks", "boolq", "--lrs", "1e-4", "--seeds", "0", "1", "--device", "cpu",
            "--out", tmp_path / "e"]  # fmt: skip
    real = ResultsStore.add

    def full_on_second(self, rec):
        if self.path.is_file() and self.path.read_text().count("\n") == 1:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write('{"model": "torn')
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
        real(self, rec)

    with monkeypatch.context() as mp:
        mp.setattr(ResultsStore, "add", full_on_second)
        code, err = cli(argv, capsys)
    assert_exit_3(code, err, r"disk full while writing .*results.jsonl; free space and rerun")
    assert cli(argv, capsys)[0] == 0
    lines = (tmp_path / "e" / "results.jsonl").read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(line)["seed"] in (0, 1) for line in lines)
