"""A full disk is exit 3 in every command that writes (docs/errors.md: "disk full while writing ...;
free space and rerun (completed work is kept and resumes)"), and the rerun then completes.

The full disk is simulated where each command writes its bytes (ENOSPC raised from inside the write,
as the kernel reports it). pretrain and export are in test_hostile_pretrain.py, test_hostile_inputs.py
and test_output_folders.py (there also on a real 64 KiB tmpfs); this file covers prepare, merge and
eval. Before, `data prepare` and `data merge` reported a full disk as bad input (exit 2). A spent quota
(EDQUOT) and a file past the size limit (EFBIG: `ulimit -f`, here a real RLIMIT_FSIZE) are no room
either (`errors.NO_ROOM`): they were tracebacks outside a study.
"""

from __future__ import annotations

import errno
import json
import os
import re
import resource
import subprocess
import sys
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


def _full_disk_in_writes(monkeypatch, full_error: OSError = FULL) -> None:
    def full(self, tokens, lengths):
        raise full_error

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


@pytest.mark.parametrize(
    ("code", "said", "fix"),
    [(errno.EDQUOT, "disk quota exceeded", "free space within your quota"),
     (errno.EFBIG, "file too large", r"raise the file size limit \(`ulimit -f`\) or write to a disk that holds larger files")],
)  # fmt: skip
def test_a_spent_quota_or_file_size_limit_is_exit_3_and_the_rerun_completes(
    corpus, tmp_path, capsys, monkeypatch, code, said, fix
):
    out = tmp_path / "data"
    assert cli(_prepare(corpus, out, "--shard", "0/1"), capsys)[0] == 0  # for the merge below
    runs = (
        (_prepare(corpus, tmp_path / "other"), "preparing"),
        (["data", "merge", "--out", out], "merging into"),
    )
    for argv, where in runs:
        with monkeypatch.context() as mp:
            _full_disk_in_writes(mp, OSError(code, os.strerror(code), "tokens.bin"))
            exit_code, err = cli(argv, capsys)
        assert_exit_3(exit_code, err, rf"{said} while {where} .*; .*{fix} and (rerun|run `data merge` again)")
    assert not (tmp_path / "other").exists() and not out.exists() and not out.with_name("data.tmp").exists()
    assert cli(["data", "merge", "--out", out], capsys)[0] == 0
    assert (out / "meta.json").is_file()


def test_a_real_file_size_limit_is_one_line_and_leaves_nothing(corpus, tmp_path):
    """RLIMIT_FSIZE (`ulimit -f`) in a child: Python ignores SIGXFSZ, so a write past it fails with EFBIG,
    raised by tokenizers (Rust: "File too large (os error 27)") or by the token writer, whichever writes
    first. Both were tracebacks."""
    src, tok = corpus
    big = tmp_path / "big.jsonl"  # 20 copies: tokens.bin outgrows the tokenizer's file (about 12 KB)
    big.write_text(
        "".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(vocabulary_texts() * 20))
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    for limit in (4096, 16384):  # inside the tokenizer's file, then inside tokens.bin
        out = tmp_path / f"data{limit}"
        res = subprocess.run(
            [sys.executable, "-m", "encoderlab.cli", *map(str, _prepare((big, tok), out))],
            capture_output=True, text=True, env=env, cwd=tmp_path,
            preexec_fn=lambda limit=limit: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)),
        )  # fmt: skip
        assert_exit_3(
            res.returncode, res.stderr, r"file too large while preparing .*raise the file size limit"
        )
        assert not out.exists() and not out.with_name(out.name + ".tmp").exists(), res.stderr


def test_no_room_reads_a_rust_librarys_own_exception():
    from encoderlab.errors import no_room

    for code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        message = f"Error while serializing: I/O error: {os.strerror(code)} (os error {code})"
        assert no_room(Exception(message)).errno == code  # safetensors', tokenizers' own exceptions
        assert no_room(OSError(code, os.strerror(code))).errno == code
    assert no_room(OSError(errno.EACCES, "Permission denied")) is None  # a path to fix: exit 2 elsewhere
    assert no_room(Exception("Error while serializing: some other failure (os error 13)")) is None
    assert no_room(KeyboardInterrupt()) is None
    # a number merely quoted beside the words (a file name, a value echoed back) is no full disk
    assert (
        no_room(Exception("cannot open 'shard (os error 28).bin': Permission denied (os error 13)")) is None
    )
    assert no_room(ValueError("invalid value '(os error 28)' for field text")) is None


def test_a_rust_librarys_no_room_in_a_study_node_names_the_node():
    """A node's tokenizer save (tokenizers: a bare Exception "... (os error 27)") skipped the study's own table of
    write failures, which took OSErrors alone: the CLI's line then named no node, and said to rerun as any command."""
    from concurrent.futures import Future
    from types import SimpleNamespace

    from encoderlab.errors import DiskFull
    from encoderlab.study import runner

    failed: Future = Future()
    failed.set_exception(Exception(f"I/O error: {os.strerror(errno.EFBIG)} (os error {errno.EFBIG})"))
    with pytest.raises(DiskFull, match=r"^study node pretrain/x: file too large; raise the file size limit"):
        runner._marker(failed, SimpleNamespace(name="pretrain/x"))
    other: Future = Future()
    other.set_exception(Exception("some other failure"))
    with pytest.raises(Exception, match="^some other failure$"):
        runner._marker(other, SimpleNamespace(name="pretrain/x"))
