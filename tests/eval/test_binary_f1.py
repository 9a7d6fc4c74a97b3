"""A two-class task file scored by `metric: f1`, the positive class's F1 as GLUE reports it for MRPC and
QQP (scikit-learn's `f1_score` default): the score matches scikit-learn's on random predictions, the
positive class is the second (id 1) unless `options.positive_label` names it, and a task it does not fit
is one line before anything is written."""

from __future__ import annotations

import csv
import random

import pytest
from sklearn.metrics import f1_score
from tests.eval.fixtures import (
    SENTIMENT_LABELS,
    model_folder,
    run_cli,
    sentiment_files,
    write_csv,
    write_task_file,
)
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli

from encoderlab.eval.families import family_ops
from encoderlab.eval.metrics import binary_f1
from encoderlab.eval.tasks import load_task
from encoderlab.eval.tasks.custom import load_task_files

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
    options = {"options": {"positive_label": positive_label}} if positive_label else {}
    spec = {**sentiment_files(tmp_path), "metric": "f1", **options}
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


def test_check_names_the_class_f1_scores(tmp_path, capsys):
    # the second class of a label set read from the data, sorted, need not be the positive one: said
    spec = {**sentiment_files(tmp_path), "metric": "f1", "max_length": 64}  # the tiny model's 256 positions
    path = write_task_file(tmp_path, name="reviews", **spec)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--lrs", "1e-4", "--seeds", "0"]
    code, out, err = run_cli([str(a) for a in (*argv, "--out", tmp_path / "e", "--check")], capsys)
    assert code == 0, err
    assert "metric f1 (the F1 of class 'positive'), max_length" in out
