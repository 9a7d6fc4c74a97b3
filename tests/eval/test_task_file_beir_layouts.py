"""BEIR folders as they arrive (`eval/tasks/beir.py`): a corpus compressed as task files do not read it, a
zip archive as BEIR's datasets are downloaded, and test-only sets (every BEIR set but MS MARCO has no
train qrels). Each is one line naming what the folder holds and what to do; before, the first two were
"has no corpus.jsonl" beside the very file, and the third named no way to evaluate such a set."""

from __future__ import annotations

import re
import zipfile

import pytest
from tests.eval.fixtures import model_folder
from tests.eval.test_task_file_beir import beir_task, write_beir
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def _refused(tmp_path, capsys, expected: str, case: str) -> None:
    """`eval` and `eval --check` of the task file over `sci` both print `expected` and write nothing."""
    path = beir_task(tmp_path)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--out", tmp_path / "e"]
    for check in ([], ["--check"]):
        code, err = cli([*argv, "--lrs", "1e-4", "--seeds", "0", *check], capsys)
        line = f"task file {path}: " + expected.replace("{w}", str(tmp_path))
        assert_one_line(code, err, "^encoderlab: error: " + re.escape(line) + "$")
        assert_printed_as_documented(case, err, tmp_path)
        assert not (tmp_path / "e").exists()


def test_a_corpus_compressed_as_zst_names_the_file_and_the_command_that_unpacks_it(tmp_path, capsys):
    folder = write_beir(tmp_path / "sci")
    (folder / "corpus.jsonl").rename(folder / "corpus.jsonl.zst")  # its bytes are not read: the name refuses
    expected = (
        "data.beir {w}/sci has corpus.jsonl.zst, compressed as .zst, which is not read; unpack it "
        "(`zstd -d {w}/sci/corpus.jsonl.zst`) or recompress it with gzip (corpus.jsonl.gz is read)"
    )
    _refused(tmp_path, capsys, expected, "task-file-beir-compressed")


def test_a_folder_holding_beirs_zip_archive_says_to_unzip_it(tmp_path, capsys):
    folder = write_beir(tmp_path / "sci")
    with zipfile.ZipFile(folder / "sci.zip", "w") as archive:  # BEIR's download: sci.zip holds sci/...
        for name in ("corpus.jsonl", "queries.jsonl"):
            archive.write(folder / name, f"sci/{name}")
    (folder / "corpus.jsonl").unlink()
    expected = (
        "data.beir {w}/sci has no corpus.jsonl but holds sci.zip, a zip archive, which is not read; unpack it "
        "(`unzip {w}/sci/sci.zip -d {w}/sci`) and name the folder holding corpus.jsonl"
    )
    _refused(tmp_path, capsys, expected, "task-file-beir-zip")


def test_test_only_beir_data_names_paper_1s_zero_shot_tasks_and_the_train_qrels(tmp_path, capsys):
    """Every BEIR set but MS MARCO publishes test qrels only (mteb/nq, mteb/quora); paper 1 scores NQ and
    MLDR zero-shot after msmarco-pairs (`Task.trains_as`). It said "BEIR's layout needs it" of train."""
    folder = write_beir(tmp_path / "sci")
    for name in ("train", "dev"):
        (folder / "qrels" / f"{name}.tsv").unlink()
    expected = (
        "data.beir {w}/sci has qrels/test but no qrels/train.tsv (or .jsonl): test-only data, as BEIR's sets "
        "other than msmarco are, and a task file trains only on its own folder's judged pairs; for paper 1's "
        "zero-shot NQ or MLDR after msmarco-pairs run `--suite paper --tasks paper-nq paper-mldr`, or add "
        "qrels/train.tsv judging queries and documents of this folder"
    )
    _refused(tmp_path, capsys, expected, "task-file-beir-test-only")
