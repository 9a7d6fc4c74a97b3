"""Where a task file's column problems are (`eval/tasks/rowplaces.py`): a column a split lacks names the
split's file and, for a CSV or TSV, its header line; a label column whose values do not fit gives each
example value with its split and line, as a row's refusal does. These named no file and no line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.eval.fixtures import write_task_file

from encoderlab.errors import UserError
from encoderlab.eval.tasks.custom import task_from_file

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def _file(path: Path, rows: list[dict]) -> str:
    """`rows` as CSV, TSV or JSON lines, by `path`'s suffix."""
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        sep = "\t" if path.suffix == ".tsv" else ","
        head = list(rows[0])
        path.write_text(
            sep.join(head) + "\n" + "".join(sep.join(str(r[k]) for k in head) + "\n" for r in rows)
        )
    return path.name


def _refusal(tmp_path: Path, train: list[dict], test: list[dict], ext: str, **spec) -> str:
    """The refusal of a task on these train and test files (and a validation file: no cut of train, whose
    rows the examples would then come from in a shuffled order), after `task file X: `."""
    data = {
        "train": _file(tmp_path / f"train.{ext}", train),
        "validation": _file(tmp_path / f"validation.{ext}", _rows(8, 200, label=lambda i: train[i]["label"])),
        "test": _file(tmp_path / f"test.{ext}", test),
    }
    path = write_task_file(tmp_path, name="reviews", family="sc", data=data, **spec)
    with pytest.raises(UserError) as refused:
        task_from_file(path)
    said = str(refused.value)
    assert "\n" not in said and said.startswith(f"task file {path}: ")
    return said.removeprefix(f"task file {path}: ")


def _rows(n: int, first: int = 0, label=lambda i: ("neg", "pos")[i % 2]) -> list[dict]:
    return [{"text": f"text {first + i} w{i % 5}", "label": label(i)} for i in range(n)]


@pytest.mark.parametrize(
    ("ext", "place"),
    [
        ("csv", "line 1 of test.csv (the header)"),
        ("tsv", "line 1 of test.tsv (the header)"),
        ("jsonl", "test.jsonl"),
    ],
)
def test_a_column_the_test_file_lacks_names_the_file_and_its_header_line(tmp_path, ext, place):
    # was: "the test split has no column label (it has text, stars)", which file and line unsaid
    test = [{"text": r["text"], "stars": r["label"]} for r in _rows(10, 100)]
    said = _refusal(tmp_path, _rows(40), test, ext)
    assert said == f"test split, {place}: no column label (it has text, stars); fix `columns:` or the data"


def test_a_csv_header_after_a_blank_line_is_named_on_its_own_line(tmp_path):
    _file(tmp_path / "test.csv", [{"text": r["text"], "stars": r["label"]} for r in _rows(10, 100)])
    (tmp_path / "test.csv").write_text("\n" + (tmp_path / "test.csv").read_text())
    data = {"train": _file(tmp_path / "train.csv", _rows(40)), "test": "test.csv"}
    with pytest.raises(
        UserError, match=r": test split, line 2 of test\.csv \(the header\): no column label "
    ):
        task_from_file(write_task_file(tmp_path, name="reviews", family="sc", data=data))


@pytest.mark.parametrize("ext", ["csv", "jsonl"])
def test_labels_in_two_forms_give_each_example_with_its_line(tmp_path, ext):
    # was: "holds both names (e.g. 'neg') and numbers (e.g. '1')", which rows unsaid
    train = _rows(40, label=lambda i: 1 if i == 30 else ("neg", "pos")[i % 2])
    said = _refusal(tmp_path, train, _rows(10, 100), ext)
    header = 1 if ext == "csv" else 0  # a CSV's rows start after its header line
    assert (
        f"holds both names (e.g. 'neg' in the train split, line {1 + header} of train.{ext}) and numbers "
        f"(e.g. '1' in the train split, line {31 + header} of train.{ext})"
    ) in said


def test_a_fractional_label_is_shown_with_its_line(tmp_path):
    # was: "holds fractional numbers (e.g. 0.5)", which row unsaid
    train = _rows(40, label=lambda i: 0.5 if i == 12 else i % 2)
    said = _refusal(tmp_path, train, _rows(10, 100, label=lambda i: i % 2), "jsonl")
    assert (
        "the label column 'label' holds fractional numbers (e.g. 0.5 in the train split, line 13 of train.jsonl)"
        in said
    )


def test_a_class_id_out_of_range_is_shown_with_its_split_and_line(tmp_path):
    # was: "but 2 is not one of 0 to 1", which row unsaid (here a test row: ids are read in every split)
    test = _rows(10, 100, label=lambda i: 2 if i == 4 else i % 2)
    said = _refusal(tmp_path, _rows(40, label=lambda i: i % 2), test, "csv", labels=["bad", "good"])
    assert "but 2 (test split, line 6 of test.csv) is not one of 0 to 1" in said
