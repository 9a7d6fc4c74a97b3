"""A validation split cut from train (no validation file, no qrels/dev) too small to pick an LR by is
said so: beside the task's score in `eval`'s output, in summary.md, and by `eval --check`, with the fix
(`tasks.splits.cut_validation_note`). Before, a 40-row train file's 5% cut left 2 validation examples to
rank the LRs and nothing said so. The sizes are counted from the files each test writes."""

from __future__ import annotations

import json
import math

import pytest
from tests.eval.fixtures import (
    model_folder,
    run_cli,
    sentiment_files,
    sentiment_rows,
    train_only_task,
    write_csv,
    write_task_file,
)
from tests.eval.test_task_file_beir import beir_task, write_beir

from encoderlab.eval.tasks.custom import task_from_file
from encoderlab.eval.tasks.splits import CUT_VALIDATION, MIN_CUT_VALIDATION

pytestmark = pytest.mark.usefixtures("isolated_tasks")
FINETUNE = {"max_steps": 1, "batch_size": 8, "micro_batch_size": 8}


def _rows(path) -> int:
    return len(path.read_text().splitlines()) - 1  # the header


def test_a_cut_validation_is_counted_and_a_given_one_is_not(tmp_path):
    spec = {**sentiment_files(tmp_path), "max_length": 32}
    cut = task_from_file(write_task_file(tmp_path, "cut.yaml", name="cut", **spec)).loader()
    assert (
        cut.counts[CUT_VALIDATION] == len(cut.val) == math.ceil(0.05 * _rows(tmp_path / "train.csv"))
    )  # `train_test_split` rounds up
    rows = (tmp_path / "train.csv").read_text().splitlines()
    (tmp_path / "val.csv").write_text("\n".join([rows[0], *rows[-3:]]) + "\n")
    (tmp_path / "train.csv").write_text("\n".join(rows[:-3]) + "\n")
    given = {**spec, "data": {**spec["data"], "validation": "val.csv"}}
    data = task_from_file(write_task_file(tmp_path, "given.yaml", name="given", **given)).loader()
    assert CUT_VALIDATION not in data.counts and len(data.val) == 3


def test_a_beir_folder_without_dev_qrels_counts_its_cut_queries(tmp_path):
    folder = write_beir(tmp_path / "sci")
    (folder / "qrels" / "dev.tsv").unlink()
    data = task_from_file(beir_task(tmp_path)).loader()
    assert data.counts[CUT_VALIDATION] == len(data.val.queries) < MIN_CUT_VALIDATION


@pytest.mark.parametrize("fraction", [0.05, 0.1, 0.3])
def test_a_beir_folder_and_a_task_files_rows_cut_the_same_share_alike(tmp_path, fraction):
    # was: BEIR rounded (round(0.05 * 24) = 1 query) where `train_test_split` rounds up (2 rows)
    folder = write_beir(tmp_path / "sci")
    (folder / "qrels" / "dev.tsv").unlink()
    beir = task_from_file(beir_task(tmp_path, data={"beir": "sci", "validation_fraction": fraction})).loader()
    train_queries = len(beir.val.queries) + len({p["query"] for p in beir.train})
    rows = task_from_file(
        train_only_task(tmp_path, train_queries, test="test.csv", validation_fraction=fraction)
    )
    assert len(beir.val.queries) == len(rows.loader().val) == beir.counts[CUT_VALIDATION]


def test_a_beir_folder_of_few_training_queries_cuts_one_as_a_task_files_rows_do(tmp_path):
    # was refused: round(0.05 * 10) = 0 queries "leaves no validation", where 10 rows gave 1
    folder = write_beir(tmp_path / "sci")
    (folder / "qrels" / "dev.tsv").unlink()
    lines = (folder / "qrels" / "train.tsv").read_text().splitlines()
    kept = [line for line in lines[1:] if int(line.split("\t")[0][1:]) < 10]
    (folder / "qrels" / "train.tsv").write_text("\n".join([lines[0], *kept]) + "\n")
    beir = task_from_file(beir_task(tmp_path)).loader()
    rows = task_from_file(train_only_task(tmp_path, 10, test="test.csv")).loader()
    assert len(beir.val.queries) == len(rows.val) == 1


def test_eval_and_check_say_the_cut_validation_is_too_small_and_summary_md_keeps_it(tmp_path, capsys):
    spec = {**sentiment_files(tmp_path), "max_length": 32, "finetune": FINETUNE}
    task = write_task_file(tmp_path, name="mine", **spec)
    n = math.ceil(0.05 * _rows(tmp_path / "train.csv"))  # `train_test_split` rounds up
    note = (
        f"validation is {n} examples cut from train, too few to pick among 2 LRs (one moves its score by "
        f"{100 / n:.0f} points; {MIN_CUT_VALIDATION} or more are not noted); give a validation split "
        "(data.validation, or a BEIR folder's qrels/dev.tsv) or raise data.validation_fraction"
    )
    out = tmp_path / "e"
    argv = ["eval", str(model_folder(tmp_path / "m")), "--task-file", str(task), "--out", str(out)]
    argv += ["--device", "cpu", "--seeds", "0"]
    code, said, err = run_cli([*argv, "--lrs", "1e-3", "2e-3", "--check"], capsys)
    assert code == 0 and f"  note: {note}" in said.splitlines(), (said, err)
    code, said, err = run_cli([*argv, "--lrs", "1e-3", "2e-3"], capsys)
    assert code == 0 and f"  note: {note}" in said.splitlines(), (said, err)
    assert f"- mine: {note}" in (out / "summary.md").read_text()
    record = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    assert record["counts"][CUT_VALIDATION] == n
    code, said, err = run_cli([*argv, "--lrs", "1e-3"], capsys)  # one LR: nothing is picked, nothing said
    assert code == 0 and "note:" not in said and "Small validation" not in (out / "summary.md").read_text()


def test_a_cut_of_enough_examples_is_not_noted(tmp_path, capsys):
    spec = {**sentiment_files(tmp_path), "max_length": 32, "data": {"train": "big.csv", "test": "test.csv"}}
    body = sentiment_rows(40, 0)
    copies = -(-MIN_CUT_VALIDATION * 20 // len(body))  # a 5% cut of them holds MIN_CUT_VALIDATION
    write_csv(
        tmp_path / "big.csv", [{**r, "sentence": f"{r['sentence']} {k}"} for k in range(copies) for r in body]
    )
    task = write_task_file(tmp_path, name="big", **spec)
    argv = ["eval", str(model_folder(tmp_path / "m")), "--task-file", str(task), "--out", str(tmp_path / "e")]
    code, said, err = run_cli([*argv, "--lrs", "1e-3", "2e-3", "--seeds", "0", "--check"], capsys)
    assert code == 0 and "note:" not in said, (said, err)
    assert task_from_file(task).loader().counts[CUT_VALIDATION] >= MIN_CUT_VALIDATION
