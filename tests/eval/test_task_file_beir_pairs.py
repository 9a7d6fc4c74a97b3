"""A test-only BEIR folder's training data (`data: {beir: FOLDER, train: ...}`, `eval/tasks/beir.py`,
`eval/tasks/irpairs.py`): a pairs file as an IR task file's train split holds them, msmarco-pairs' layout
through `columns:`, and a BEIR training folder whose corpus is streamed for the documents its train qrels
judge. Before, `data.train` had to name a BEIR folder (a pairs file was "neither a folder nor a hub
dataset id"), and a training folder's corpus was held whole (a full MS MARCO folder: 8.8M passages)."""

from __future__ import annotations

import csv
import json
import re

import pytest
from tests.eval.fixtures import model_folder
from tests.eval.test_task_file_beir import beir_task, write_beir
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli

from encoderlab.errors import UserError
from encoderlab.eval.tasks import beir
from encoderlab.eval.tasks.custom import task_from_file
from encoderlab.eval.tasks.splits import CUT_VALIDATION

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def _test_only(tmp_path, dev: bool = False):
    """`sci`, test-only: its train qrels removed (and its dev qrels unless `dev`)."""
    folder = write_beir(tmp_path / "sci")
    for name in ("train",) if dev else ("train", "dev"):
        (folder / "qrels" / f"{name}.tsv").unlink()
    return folder


def _pairs(n: int = 30) -> list[dict]:
    """`n` queries, each with one positive, query 0 with a second (a query of two judged documents)."""
    rows = [{"query": f"ms question {i}", "document": f"ms answer {i}"} for i in range(n)]
    return rows + [{"query": "ms question 0", "document": "ms other answer 0"}]


def _write_jsonl(path, rows: list[dict]):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_pairs_file_beside_a_test_only_beir_folder_trains_and_validates_on_its_pairs(tmp_path):
    """Its pairs are the training pairs, a query's two positives both judged; validation is a cut of its
    queries ranked against its documents, disjoint from train; the scored folder's test stays whole."""
    _test_only(tmp_path)
    _write_jsonl(tmp_path / "pairs.jsonl", _pairs())
    data = task_from_file(beir_task(tmp_path, data={"beir": "sci", "train": "pairs.jsonl"})).loader()
    given = {(r["query"], r["document"]) for r in _pairs()}
    val = {(data.val.queries[q], data.val.corpus[d]) for q, ds in data.val.qrels.items() for d in ds}
    assert {(p["query"], p["document"]) for p in data.train} | val == given
    assert data.counts[CUT_VALIDATION] == len(data.val.queries) > 0
    assert not {p["query"] for p in data.train} & set(data.val.queries.values())
    assert set(data.val.corpus.values()) == {r["document"] for r in _pairs()}
    scored = (tmp_path / "sci" / "qrels" / "test.tsv").read_text().splitlines()[1:]
    assert set(data.tests["test"].qrels) == {line.split("\t")[0] for line in scored}
    assert len(data.tests["test"].corpus) == 40 and not any(
        "ms " in d for d in data.tests["test"].corpus.values()
    )


def test_the_scored_folders_dev_qrels_are_validation_beside_a_pairs_file(tmp_path):
    _test_only(tmp_path, dev=True)
    _write_jsonl(tmp_path / "pairs.jsonl", _pairs())
    data = task_from_file(beir_task(tmp_path, data={"beir": "sci", "train": "pairs.jsonl"})).loader()
    assert len(data.train) == len(_pairs()) and CUT_VALIDATION not in data.counts
    dev = (tmp_path / "sci" / "qrels" / "dev.tsv").read_text().splitlines()[1:]
    assert set(data.val.qrels) == {line.split("\t")[0] for line in dev}


@pytest.mark.parametrize("kind", ["jsonl", "tsv"])
def test_msmarco_triplets_read_through_columns_and_train_on_their_negatives(kind, tmp_path):
    """`query, positive, negative` (MS MARCO's triplets, sentence-transformers' names): `columns: {document:
    positive}` reads it; each training row keeps its negative (was: the column was not read), a pair given
    with two negatives is two rows, and a negative is neither a training document nor in validation's
    corpus (negatives are training-only)."""
    _test_only(tmp_path)
    rows = [{"query": f"q {i}", "positive": f"pos {i}", "negative": f"neg {i}"} for i in range(30)]
    rows.append({"query": "q 0", "positive": "pos 0", "negative": "another neg 0"})
    if kind == "jsonl":
        _write_jsonl(tmp_path / "pairs.jsonl", rows)
    else:
        with open(tmp_path / "pairs.tsv", "w", newline="") as f:
            writer = csv.DictWriter(f, ["query", "positive", "negative"], delimiter="\t")
            writer.writeheader()
            writer.writerows(rows)
    path = beir_task(
        tmp_path, data={"beir": "sci", "train": f"pairs.{kind}"}, columns={"document": "positive"}
    )
    data = task_from_file(path).loader()
    documents = {p["document"] for p in data.train} | set(data.val.corpus.values())
    assert documents == {f"pos {i}" for i in range(30)}
    held = set(data.val.queries.values())
    kept = [(r["query"], r["positive"], r["negative"]) for r in rows if r["query"] not in held]
    assert [(p["query"], p["document"], p["negative"]) for p in data.train] == kept
    assert len(kept) == len(rows) - len(held) - ("q 0" in held)  # q 0's two rows go together


def test_an_empty_negative_in_a_pairs_file_names_its_line(tmp_path):
    _test_only(tmp_path)
    rows = [{"query": f"q {i}", "document": f"d {i}", "negative": f"n {i}"} for i in range(30)]
    rows[4]["negative"] = ""
    _write_jsonl(tmp_path / "pairs.jsonl", rows)
    path = beir_task(tmp_path, data={"beir": "sci", "train": "pairs.jsonl"})
    with pytest.raises(UserError, match=r"train split, line 5 of pairs.jsonl: a row has an empty negative"):
        task_from_file(path)


def _refused(tmp_path, capsys, data: dict, expected: str, case: str | None = None, **extra) -> None:
    """`eval` and `eval --check` of the task file over `data` both print `expected` and write nothing."""
    path = beir_task(tmp_path, data=data, **extra)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--out", tmp_path / "e"]
    for check in ([], ["--check"]):
        code, err = cli([*argv, "--lrs", "1e-4", "--seeds", "0", *check], capsys)
        line = f"task file {path}: " + expected.replace("{w}", str(tmp_path))
        assert_one_line(code, err, "^encoderlab: error: " + re.escape(line) + "$")
        if case:
            assert_printed_as_documented(case, err, tmp_path)
        assert not (tmp_path / "e").exists()


def test_a_beir_corpus_file_named_as_data_train_says_to_name_its_folder(tmp_path, capsys):
    _test_only(tmp_path)
    write_beir(tmp_path / "ms")
    expected = (
        "data.train ms/corpus.jsonl is a BEIR corpus or queries file (_id, title, text), not query-document "
        "pairs; name the BEIR folder holding it (ms, with qrels/train.tsv), or a pairs file of columns query "
        "and document"
    )
    _refused(
        tmp_path,
        capsys,
        {"beir": "sci", "train": "ms/corpus.jsonl"},
        expected,
        "task-file-beir-train-not-pairs",
    )


def test_msmarco_pairs_layout_without_columns_names_the_mapping(tmp_path, capsys):
    _test_only(tmp_path)
    _write_jsonl(tmp_path / "pairs.jsonl", [{"query": "q", "positive": "p", "negative": "n"}])
    expected = (
        "data.train pairs.jsonl has columns query, positive, negative: msmarco-pairs' layout, whose relevant "
        "document is 'positive'; add `columns: {document: positive}` to the task file"
    )
    _refused(
        tmp_path,
        capsys,
        {"beir": "sci", "train": "pairs.jsonl"},
        expected,
        "task-file-beir-train-pairs-layout",
    )


def test_a_pairs_files_own_mistakes_are_the_task_files_lines(tmp_path):
    """The pairs file is read as an IR task file's train split: its refusals name its line."""
    _test_only(tmp_path)
    _write_jsonl(tmp_path / "pairs.jsonl", [*_pairs(3), {"query": "ms question 9", "document": ""}])
    path = beir_task(tmp_path, data={"beir": "sci", "train": "pairs.jsonl"})
    with pytest.raises(UserError, match=r"train split, line 5 of pairs.jsonl: .*document"):
        task_from_file(path)
    (tmp_path / "pairs.jsonl").unlink()
    with pytest.raises(
        UserError, match=r"data.train 'pairs.jsonl' is neither a folder, a pairs file \(looked"
    ):
        task_from_file(path)


def test_a_pairs_file_in_a_subfolder_is_read_as_a_file_not_a_hub_id(tmp_path):
    """`pairs/train.jsonl` is OWNER/NAME-shaped: it was taken for a hub dataset id (listed among the task's
    hub datasets, looked up in the hub cache); a path that exists is the file. A folder without BEIR's
    files says a pairs file may be named instead."""
    from encoderlab.eval.tasks.custom import file_hub_repos

    _test_only(tmp_path)
    (tmp_path / "pairs").mkdir()
    _write_jsonl(tmp_path / "pairs" / "train.jsonl", _pairs())
    path = beir_task(tmp_path, data={"beir": "sci", "train": "pairs/train.jsonl"})
    assert file_hub_repos([path]) == {"sci": ()}
    assert len(task_from_file(path).loader().train) > 0
    folder = beir_task(tmp_path, data={"beir": "sci", "train": "pairs"})
    with pytest.raises(UserError, match=r"has no queries.jsonl; .* \(data.train may also name a pairs file"):
        task_from_file(folder)


def test_columns_beside_data_beir_without_a_pairs_file_is_one_line(tmp_path):
    write_beir(tmp_path / "sci")
    path = beir_task(tmp_path, columns={"document": "positive"})
    with pytest.raises(
        UserError, match=r"columns: not read with data.beir .*`columns:` names a pairs file's"
    ):
        task_from_file(path)


@pytest.mark.parametrize("train", ["pairs.csvv", "ms"])
def test_columns_beside_a_data_train_that_is_no_file_names_what_data_train_is(tmp_path, train):
    """A misspelt pairs file (or a folder) beside `columns:` was refused as "columns: not read with data.beir
    ...; drop it": dropping them, the next run stopped at the missing file, and naming it then needed them
    back. The line says what data.train names, so both fixes are in view."""
    _test_only(tmp_path)
    _write_jsonl(
        tmp_path / "pairs.jsonl", [{"query": r["query"], "positive": r["document"]} for r in _pairs()]
    )
    write_beir(tmp_path / "ms")
    data = {"beir": "sci", "train": train}
    path = beir_task(tmp_path, data=data, columns={"document": "positive"})
    what = "a folder" if train == "ms" else rf"not a file \(looked for {re.escape(str(tmp_path / train))}\)"
    with pytest.raises(UserError, match=rf"in data.train, and data.train '{train}' is {what}\); drop it"):
        task_from_file(path)


def _big_training_folder(tmp_path, extra: int = 300):
    """`ms`, a BEIR folder whose corpus holds `extra` documents its train qrels do not judge (d0-d25 are)."""
    docs = [{"_id": f"d{i}", "title": "", "text": f"ms passage {i}"} for i in range(40 + extra)]
    return write_beir(tmp_path / "ms", corpus=docs)


def test_a_training_folders_corpus_keeps_only_the_documents_its_train_qrels_judge(tmp_path, monkeypatch):
    """The training folder's documents no train judgment names are never built (`_document` is the one
    place a document's text is made), nor held by the task's data; the scored folder's corpus is whole."""
    _test_only(tmp_path)
    folder = _big_training_folder(tmp_path)
    judged = {line.split("\t")[1] for line in (folder / "qrels" / "train.tsv").read_text().splitlines()[1:]}
    built: list[str] = []
    document = beir._document
    monkeypatch.setattr(beir, "_document", lambda row: built.append(row["_id"]) or document(row))
    data = task_from_file(beir_task(tmp_path, data={"beir": "sci", "train": "ms"})).loader()
    assert set(data.val.corpus) == judged and len(judged) == 26
    assert len(built) == 40 + len(judged)  # the scored folder's 40, whole, and the judged training ones
    assert len(data.tests["test"].corpus) == 40


def test_a_judged_document_a_training_corpus_lacks_names_its_qrels_line(tmp_path, capsys):
    _test_only(tmp_path)
    folder = _big_training_folder(tmp_path, extra=0)
    with open(folder / "qrels" / "train.tsv", "a") as f:
        f.write("q3\tgone\t1\nq4\tgone2\t1\n")
    expected = (
        "line 74 of {w}/ms/qrels/train.tsv: document id 'gone' is not in corpus.jsonl; add it there, or "
        "remove the judgment"
    )
    _refused(tmp_path, capsys, {"beir": "sci", "train": "ms"}, expected)
