"""A label of a task file's label set that no training example holds (a class of `labels:` no train row
has, an `O` or a type no train word is tagged with): the model can never learn it, yet it is scored. It
trained on nothing without a word (as run_glue.py does); now one `encoderlab: note:` line on stderr names
those labels and the run goes on (`custom_examples.note_untrained_labels`)."""

from __future__ import annotations

import warnings

import pytest
from tests.eval.fixtures import write_jsonl, write_task_file

from encoderlab.errors import warnings_as_notes
from encoderlab.eval.tasks.custom import task_from_file

pytestmark = pytest.mark.usefixtures("isolated_tasks")
WORDS = ("alpha", "beta", "gamma", "delta", "omega")


def _sc(tmp_path, labels, multilabel=False, scored=("neg", "pos", "mid"), **extra):
    """An sc task file: train rows labelled `neg` and `pos` only, test rows `scored`."""

    def row(i, label):
        text = f"{WORDS[i % 5]} {WORDS[(i * 3) % 5]} number {i}"
        return {"text": text, "label": [label] if multilabel else label}

    train = write_jsonl(tmp_path / "train.jsonl", [row(i, ("neg", "pos")[i % 2]) for i in range(40)])
    test = write_jsonl(tmp_path / "test.jsonl", [row(100 + i, scored[i % len(scored)]) for i in range(9)])
    spec = {
        "name": "moods",
        "family": "sc",
        "labels": list(labels),
        "data": {"train": train, "test": test},
        **extra,
    }
    return write_task_file(tmp_path, options={"multilabel": True} if multilabel else {}, **spec)


def _loaded(path) -> list[str]:
    """The messages of the warnings loading the task file's data gives."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        task_from_file(path).loader()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize("multilabel", [False, True])
def test_a_class_of_labels_no_train_row_holds_is_named_and_the_task_loads(tmp_path, multilabel):
    path = _sc(tmp_path, ("neg", "mid", "pos"), multilabel)
    assert _loaded(path) == [
        f"task file {path}: 1 label of `labels:` ('mid') is held by no training example: the model never "
        "learns to predict it, yet it counts in the scores; add training rows that hold it, or drop it from "
        "the labels if it is no class of the task"
    ]


def test_labels_every_train_row_covers_are_not_noted(tmp_path):
    assert _loaded(_sc(tmp_path, ("neg", "pos"), scored=("neg", "pos"))) == []


def test_tags_no_train_word_has_are_named_and_the_task_loads(tmp_path):
    rows = [{"tokens": [WORDS[i % 5], "in", "town"], "tags": ["B-PER", "O", "O"]} for i in range(40)]
    data = {
        "train": write_jsonl(tmp_path / "train.jsonl", rows),
        "test": write_jsonl(tmp_path / "t.jsonl", rows[:5]),
    }
    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    path = write_task_file(tmp_path, name="ner", family="tc", labels=labels, data=data, allow_overlap=True)
    assert _loaded(path) == [
        f"task file {path}: 3 labels of `labels:` ('I-PER', 'B-LOC', 'I-LOC') are held by no training word: "
        "the model never learns to predict them, yet they count in the scores; add training rows that hold "
        "them, or drop them from the labels if they are no class of the task"
    ]


def test_the_cli_prints_it_as_one_note_line_on_stderr(tmp_path, capsys):
    # as `encoderlab eval` (and `eval --check`) load a task file: inside the CLI's `warnings_as_notes`
    path = _sc(tmp_path, ("neg", "mid", "pos"))
    with warnings.catch_warnings(), warnings_as_notes():
        warnings.simplefilter("always")
        task = task_from_file(path)
    err = capsys.readouterr().err
    assert task.labels == ("neg", "mid", "pos")  # the task loads: the run goes on
    assert err.count("\n") == 1 and err.startswith(f"encoderlab: note: task file {path}: 1 label of"), err
