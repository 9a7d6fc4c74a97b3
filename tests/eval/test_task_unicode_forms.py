"""A task file's texts and labels in Unicode's two forms of one accented letter: composed (`é`, NFC) and
decomposed (`e` + a combining accent, NFD, as macOS and some exports write it). They look the same in
every editor and message, so they are one label and one input."""

from __future__ import annotations

import unicodedata

import pytest
from tests.eval.fixtures import write_jsonl, write_task_file

from encoderlab.errors import UserError
from encoderlab.eval.tasks.custom import load_task_files

pytestmark = pytest.mark.usefixtures("isolated_tasks")

NFC, NFD = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")


def _rows(n: int, start: int, labels: list[str]) -> list[dict]:
    return [{"text": f"a drink {i}", "label": labels[i % len(labels)]} for i in range(start, start + n)]


def test_a_label_in_both_forms_is_one_class(tmp_path):
    # was: four classes, 'café', 'café', 'thé', 'thé', trained and scored apart without a word
    data = {
        "train": write_jsonl(tmp_path / "train.jsonl", _rows(40, 0, [NFC, NFD, "thé"])),
        "test": write_jsonl(tmp_path / "test.jsonl", _rows(10, 100, [NFD, "thé"])),
    }
    task = load_task_files([str(write_task_file(tmp_path, name="drinks", family="sc", data=data))])[0]
    assert task.options.labels == (NFC, "thé")
    examples = task.loader()
    assert {e["label"] for e in examples.tests["test"]} == {0, 1}


def test_labels_given_in_the_other_form_name_the_datas_classes(tmp_path):
    # was: "label 'café' is not in the label set ['café', 'thé']", the two names alike on screen
    data = {
        "train": write_jsonl(tmp_path / "train.jsonl", _rows(40, 0, [NFC, "thé"])),
        "test": write_jsonl(tmp_path / "test.jsonl", _rows(10, 100, [NFC, "thé"])),
    }
    path = write_task_file(tmp_path, name="drinks", family="sc", data=data, labels=[NFD, "thé"])
    assert load_task_files([str(path)])[0].options.labels == (NFC, "thé")


def test_a_test_input_in_the_other_form_of_a_train_input_is_an_overlap(tmp_path):
    # was: passed the overlap check, though it reads as the train text and most tokenizers make it the same
    train = [{"text": f"{NFC} au lait {i}", "label": "ab"[i % 2]} for i in range(40)]
    test = [{"text": unicodedata.normalize("NFD", r["text"]), "label": r["label"]} for r in train[:5]]
    data = {
        "train": write_jsonl(tmp_path / "train.jsonl", train),
        "test": write_jsonl(tmp_path / "test.jsonl", test),
    }
    path = write_task_file(tmp_path, name="drinks", family="sc", data=data)
    with pytest.raises(UserError, match=r"5 inputs of test also appear in train \(first: 'café au lait 0'\)"):
        load_task_files([str(path)])
