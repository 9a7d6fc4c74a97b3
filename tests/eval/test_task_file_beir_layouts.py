"""BEIR folders as they arrive (`eval/tasks/beir.py`): a corpus compressed as task files do not read it, a
zip archive as BEIR's datasets are downloaded, and test-only sets (every BEIR set but MS MARCO has no
train qrels). Each is one line naming what the folder holds and what to do; before, the first two were
"has no corpus.jsonl" beside the very file, and the third named no way to evaluate such a set."""

from __future__ import annotations

import json
import re
import zipfile

import pytest
from tests.eval.fixtures import model_folder
from tests.eval.test_task_file_beir import beir_task, write_beir
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli

from encoderlab.eval.tasks.custom import task_from_file
from encoderlab.eval.tasks.splits import CUT_VALIDATION

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def _refused(tmp_path, capsys, expected: str, case: str, data: dict | None = None) -> None:
    """`eval` and `eval --check` of the task file over `sci` (or `data`) both print `expected` and write
    nothing."""
    path = beir_task(tmp_path, **({"data": data} if data else {}))
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
        "data.beir {w}/sci: {w}/sci/corpus.jsonl.zst is compressed as .zst, which task files do not read; "
        "unpack it first (`zstd -d {w}/sci/corpus.jsonl.zst`) or recompress it with gzip (corpus.jsonl.gz is read)"
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
        "other than msmarco are; name the BEIR folder whose train qrels give the training pairs in data.train "
        "(an msmarco folder, as paper 1 trains for NQ and MLDR: `--suite paper --tasks paper-nq paper-mldr`), "
        "or add qrels/train.tsv judging queries and documents of this folder"
    )
    _refused(tmp_path, capsys, expected, "task-file-beir-test-only")


def _test_only_and_training_folders(tmp_path):
    """`sci`, test-only (its train and dev qrels removed), and `ms`, a BEIR folder whose documents say so."""
    folder = write_beir(tmp_path / "sci")
    for name in ("train", "dev"):
        (folder / "qrels" / f"{name}.tsv").unlink()
    docs = [{"_id": f"d{i}", "title": "", "text": f"ms passage {i}"} for i in range(40)]
    return folder, write_beir(tmp_path / "ms", corpus=docs)


def test_test_only_beir_data_trains_on_the_pairs_of_the_beir_folder_data_train_names(tmp_path):
    """Was: `data.train: not read with data.beir`, so a test-only set (every BEIR set but MS MARCO) could not
    be a task file. Its pairs are the training folder's, its validation a cut of that folder's queries
    ranked against its corpus (the scored set has no qrels/dev), its test the scored folder's."""
    _test_only_and_training_folders(tmp_path)
    data = task_from_file(beir_task(tmp_path, data={"beir": "sci", "train": "ms"})).loader()
    assert data.train and all(p["document"].startswith("ms passage") for p in data.train)
    assert all(d.startswith("ms passage") for d in data.val.corpus.values())
    assert data.counts[CUT_VALIDATION] == len(data.val.queries) > 0
    assert not set(data.val.queries) & {q for q, _ in _judged(data.train, tmp_path / "ms")}
    scored = (tmp_path / "sci" / "qrels" / "test.tsv").read_text().splitlines()[1:]
    assert set(data.tests["test"].qrels) == {line.split("\t")[0] for line in scored}
    assert not any(d.startswith("ms passage") for d in data.tests["test"].corpus.values())


def _judged(pairs: list[dict], folder) -> set[tuple[str, str]]:
    """(query id, document id) of `pairs`, the query ids read back from the folder's queries.jsonl."""
    ids = {json.loads(line)["text"]: json.loads(line)["_id"] for line in (folder / "queries.jsonl").open()}
    return {(ids[p["query"]], p["doc_id"]) for p in pairs}


def test_data_train_beside_a_folder_with_its_own_train_qrels_is_one_line(tmp_path, capsys):
    _test_only_and_training_folders(tmp_path)
    write_beir(tmp_path / "sci")  # its train qrels back
    expected = (
        "data.beir {w}/sci has qrels/train and data.train names other training pairs; keep one (drop "
        "data.train to train on this folder's judged pairs)"
    )
    _refused(tmp_path, capsys, expected, "task-file-beir-train-twice", {"beir": "sci", "train": "ms"})


def test_a_data_train_folder_without_train_qrels_is_one_line(tmp_path, capsys):
    _test_only_and_training_folders(tmp_path)
    (tmp_path / "ms" / "qrels" / "train.tsv").unlink()
    expected = (
        "data.train {w}/ms has no qrels/train.tsv (or .jsonl); beside data.beir, data.train names the BEIR "
        "folder whose train qrels give the training pairs: name one that has them"
    )
    _refused(tmp_path, capsys, expected, "task-file-beir-train-no-qrels", {"beir": "sci", "train": "ms"})


def test_a_data_train_hub_id_is_among_the_task_files_hub_datasets(tmp_path):
    """A study report lists the hub datasets a task reads (`Task.hub_repos`); the training folder's too."""
    from encoderlab.eval.spec import HubRepo
    from encoderlab.eval.tasks.custom import file_hub_repos

    path = beir_task(tmp_path, data={"beir": "mteb/nq", "train": "mteb/msmarco", "revision": "main"})
    assert file_hub_repos([path]) == {"sci": (HubRepo("mteb/nq", "main"), HubRepo("mteb/msmarco"))}
