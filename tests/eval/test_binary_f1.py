"""A two-class task file scored by `metric: f1`, the positive class's F1 as GLUE reports it for MRPC and
QQP (scikit-learn's `f1_score` default): the score matches scikit-learn's on random predictions, the
positive class is the second (id 1) unless `options.positive_label` names it, two names read from the
data (which is positive they do not say) must name it, and a task it does not fit is one line before
anything is written."""

from __future__ import annotations

import csv
import random

import pytest
from datasets import ClassLabel, Dataset, Features, Value
from sklearn.metrics import f1_score
from tests.eval.fixtures import (
    SENTIMENT_LABELS,
    model_folder,
    run_cli,
    sentiment_files,
    sentiment_rows,
    write_csv,
    write_task_file,
)
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli

from encoderlab.eval.families import family_ops
from encoderlab.eval.metrics import binary_f1
from encoderlab.eval.tasks import load_task
from encoderlab.eval.tasks.custom import load_task_files, task_from_file

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def test_binary_f1_matches_scikit_learn_on_random_predictions():
    rng = random.Random(0)
    for _ in range(50):
        gold = [rng.choice("ab") for _ in range(rng.randrange(1, 20))]
        pred = [rng.choice("ab") for _ in gold]
        for positive in "ab":
            expected = 100 * f1_score(gold, pred, pos_label=positive, zero_division=0)
            assert binary_f1(gold, pred, positive) == pytest.approx(expected)


@pytest.mark.parametrize("positive_label", [None, "negative"])
def test_a_two_class_task_file_scores_the_positive_class_f1(tmp_path, positive_label):
    # was: refused, "f1 ... is not scored here; write macro_f1 ... or weighted_f1"
    said = (
        {"options": {"positive_label": positive_label}}
        if positive_label
        else {"labels": list(SENTIMENT_LABELS)}
    )
    spec = {**sentiment_files(tmp_path), "metric": "f1", **said}
    (task,) = load_task_files([str(write_task_file(tmp_path, name="reviews", **spec))])
    task, _ = load_task(task)
    assert task.metric == "f1" and task.labels == SENTIMENT_LABELS
    positive = positive_label or task.labels[1]  # GLUE's and scikit-learn's default: label 1
    rng = random.Random(1)
    gold = [rng.choice(task.labels) for _ in range(40)]
    predictions = [{"i": i, "gold": g, "pred": rng.choice(task.labels)} for i, g in enumerate(gold)]
    scores = family_ops(task).metrics(task, predictions)
    pred = [p["pred"] for p in predictions]
    assert scores["f1"] == pytest.approx(100 * f1_score(gold, pred, pos_label=positive))


def _three_classes(tmp_path) -> dict:
    spec = sentiment_files(tmp_path)
    rows = [{"sentence": f"so-so item {i} was fine", "polarity": "neutral"} for i in range(6)]
    with open(tmp_path / "train.csv", newline="") as f:
        kept = list(csv.DictReader(f))
    write_csv(tmp_path / "train.csv", kept + rows)
    return spec


@pytest.mark.parametrize(
    "case, file, fields, message",
    [
        (
            "task-file-f1-not-two-classes",
            "task_f1_three_classes.yaml",
            {"metric": "f1"},
            r"metric 'f1' is the F1 of one class of a two-class task \(GLUE's MRPC and QQP\), but this task "
            r"has 3 classes \(negative, neutral, positive\); write macro_f1, each class's F1 averaged, or weighted_f1$",
        ),
        (
            "task-file-positive-label-not-a-class",
            "task_positive_label_unknown.yaml",
            {"metric": "f1", "options": {"positive_label": "good"}},
            r"options.positive_label 'good' is not one of the task's classes \(negative, positive\); name one of them$",
        ),
        (
            "task-file-positive-label-without-f1",
            "task_positive_label_without_f1.yaml",
            {"options": {"positive_label": "positive"}},
            r"options.positive_label 'positive' is read only by `metric: f1` \(the F1 of that class\); set "
            r"`metric: f1`, or remove positive_label$",
        ),
    ],
)  # fmt: skip
def test_an_f1_the_task_does_not_fit_is_one_line_before_anything_is_written(
    tmp_path, capsys, case, file, fields, message
):
    spec = _three_classes(tmp_path) if case == "task-file-f1-not-two-classes" else sentiment_files(tmp_path)
    path = write_task_file(tmp_path, file, name="reviews", **spec, **fields)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--lrs", "1e-4", "--seeds", "0"]
    code, err = cli([*argv, "--out", tmp_path / "e"], capsys)
    assert_one_line(code, err, rf"^encoderlab: error: task file {path}: " + message)
    assert_printed_as_documented(case, err, tmp_path)
    assert not (tmp_path / "e").exists()


SELECT_F1 = {"metric": "accuracy", "finetune": {"select": "best_epoch", "select_metric": "f1"}}


@pytest.mark.parametrize("case", ["three-classes", "positive-not-named"])
def test_a_refused_select_metric_f1_is_named_as_written(tmp_path, capsys, case):
    # was: "metric 'f1' ...", naming a key the file does not hold (it wrote finetune.select_metric)
    if case == "three-classes":
        spec = {**_three_classes(tmp_path), **SELECT_F1}
        told = r"finetune.select_metric 'f1' is the F1 of one class of a two-class task"
    else:
        spec = {**_mrpc_files(tmp_path, "names"), **SELECT_F1}
        told = r"finetune.select_metric 'f1' is the F1 of the positive class, and the two classes"
    path = write_task_file(tmp_path, name="reviews", **spec)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--lrs", "1e-4", "--seeds", "0"]
    code, err = cli([*argv, "--out", tmp_path / "e"], capsys)
    assert_one_line(code, err, rf"^encoderlab: error: task file {path}: {told} ")
    assert not (tmp_path / "e").exists()


def test_check_names_the_class_f1_scores(tmp_path, capsys):
    # the class scored is said: here the second of `labels:` (one read from the data is named, below)
    spec = {**sentiment_files(tmp_path), "metric": "f1", "max_length": 64}  # the tiny model's 256 positions
    spec["labels"] = list(SENTIMENT_LABELS)
    path = write_task_file(tmp_path, name="reviews", **spec)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--lrs", "1e-4", "--seeds", "0"]
    code, out, err = run_cli([str(a) for a in (*argv, "--out", tmp_path / "e", "--check")], capsys)
    assert code == 0, err
    assert "metric f1 (the F1 of class 'positive'), max_length" in out


MRPC_CLASSES = ("not_equivalent", "equivalent")  # GLUE's MRPC: id 0, id 1 (the positive class)


def _mrpc_files(tmp_path, form: str) -> dict:
    """A pair-sc task's train and test files whose classes are MRPC's, written as `form`: names in a CSV,
    ids 0/1 in a CSV (run_glue's export), or a ClassLabel column of those names in parquet."""
    for split, seed in (("train", 0), ("test", 1)):
        rows = sentiment_rows(40, seed)[: 40 if split == "train" else 10]
        ids = [int(r["polarity"] == "positive") for r in rows]
        table = {
            "sentence1": [f"{split} {i}: {r['sentence']}" for i, r in enumerate(rows)],
            "sentence2": [f"said again, {r['sentence']}" for r in rows],
            "label": ids if form != "names" else [MRPC_CLASSES[k] for k in ids],
        }
        if form == "classlabel":
            features = Features(
                {
                    "sentence1": Value("string"),
                    "sentence2": Value("string"),
                    "label": ClassLabel(names=MRPC_CLASSES),
                }
            )
            Dataset.from_dict(table, features=features).to_parquet(tmp_path / f"{split}.parquet")
        else:
            write_csv(tmp_path / f"{split}.csv", [dict(zip(table, r)) for r in zip(*table.values())])
    ext = "parquet" if form == "classlabel" else "csv"
    return {
        "family": "pair-sc",
        "data": {"train": f"train.{ext}", "test": f"test.{ext}"},
        "columns": {"text": "sentence1", "text_pair": "sentence2"},
        "template": "{a}\n{b}",
        "metric": "f1",
    }


@pytest.mark.parametrize("check", [False, True])
def test_two_names_read_from_the_data_must_say_which_is_positive(tmp_path, capsys, check):
    # was: the later of the two sorted names, not_equivalent, scored silently (MRPC's negative class)
    path = write_task_file(
        tmp_path, "task_f1_positive_not_named.yaml", name="mrpc", **_mrpc_files(tmp_path, "names")
    )
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--lrs", "1e-4", "--seeds", "0"]
    code, err = cli([*argv, "--out", tmp_path / "e", *(["--check"] if check else [])], capsys)
    assert_one_line(
        code,
        err,
        rf"^encoderlab: error: task file {path}: metric 'f1' is the F1 of the positive class, and the two "
        r"classes read from the data \(equivalent, not_equivalent\) do not say which it is; write `options: "
        r"\{positive_label: equivalent\}` or `options: \{positive_label: not_equivalent\}`, or `labels:` "
        r"with the positive class second$",
    )
    assert_printed_as_documented("task-file-f1-positive-not-named", err, tmp_path)
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize(
    "form, fields, positive",
    [
        ("names", {"options": {"positive_label": "equivalent"}}, "equivalent"),
        ("names", {"labels": list(MRPC_CLASSES)}, "equivalent"),  # the user's order: the second
        ("classlabel", {}, "equivalent"),  # the data's own order (ClassLabel names): the second, id 1
        ("ids", {}, "1"),  # run_glue's 0/1: 1 is GLUE's positive class
    ],
)
def test_a_positive_class_the_file_or_data_orders_is_scored_as_said(tmp_path, form, fields, positive):
    path = write_task_file(tmp_path, name="mrpc", **_mrpc_files(tmp_path, form), **fields)
    task, data = load_task(task_from_file(path))
    assert task.metric == "f1" and task.options.positive == positive
    assert {e["label"] for e in data.train} == {0, 1}
