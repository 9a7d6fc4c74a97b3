"""A task file row's refusal names its split and the line of the file it was read from.

Was: "task file t.yaml: train split: a row has an empty label; ...", which left the user to search a
file of thousands of rows for it. JSON lines: the physical line, blank lines (which the reader skips)
counted; CSV/TSV: the line the row starts on, the header counted, a quoted cell's line breaks too.
"""

from __future__ import annotations

import json
import re

import pytest
from tests.eval.fixtures import write_task_file

from encoderlab.errors import UserError
from encoderlab.eval.tasks.custom import load_task_files
from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hubsource import HubSource


def _rows(n: int, prefix: str) -> list[dict]:
    return [{"text": f"{prefix} text number {i}", "label": ("bad", "good")[i % 2]} for i in range(n)]


def _refusal(tmp_path, data: dict, name: str = "lines") -> str:
    path = write_task_file(tmp_path, name=name, family="sc", data=data)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"task file {path}: ")
    return message


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_a_jsonl_row_is_named_by_its_physical_line_blank_lines_counted(tmp_path):
    train = _rows(20, "r")
    train[6]["label"] = ""  # row 7, written on line 11 below
    lines = _jsonl(train).splitlines(keepends=True)
    text = "\n" + "".join(lines[:3]) + "\n  \n" + "".join(lines[3:5]) + "\t\r\n" + "".join(lines[5:])
    (tmp_path / "train.jsonl").write_text(text)
    (tmp_path / "test.jsonl").write_text(_jsonl(_rows(6, "t")))
    message = _refusal(tmp_path, {"train": "train.jsonl", "test": "test.jsonl", "validation": "train.jsonl"})
    assert message.endswith(
        ": train split, line 11 of train.jsonl: a row has an empty label; fill it in or remove the row"
    )


def test_a_row_of_a_validation_split_cut_from_train_names_its_line_in_the_train_file(tmp_path):
    train = _rows(40, "r")
    train[29]["label"] = None
    (tmp_path / "train.jsonl").write_text("\n\n" + _jsonl(train))  # row 30 on line 32
    (tmp_path / "test.jsonl").write_text(_jsonl(_rows(6, "t")))
    data = {"train": "train.jsonl", "test": "test.jsonl", "validation_fraction": 0.5}
    message = _refusal(tmp_path, data)
    assert re.search(
        r": (train|validation) split, line 32 of train\.jsonl: a row has an empty label;", message
    )


def test_a_csv_row_after_a_quoted_cell_with_line_breaks_is_named_by_its_line(tmp_path):
    body = [
        '"a review\nover\nthree lines",good',
        "",
        "   ",
        '"plain ""quoted"", text",bad',
        "next one,",
        "last,good",
    ]
    (tmp_path / "train.csv").write_text("text,label\n" + "\n".join(body) + "\n")
    # header 1, the quoted cell 2-4, blank 5 and 6, 7, the empty label on 8
    (tmp_path / "test.csv").write_text("text,label\nt one,good\nt two,bad\n")
    data = {"train": "train.csv", "test": "test.csv", "validation": "test.csv"}
    message = _refusal(tmp_path, data)
    assert message.endswith(
        ": train split, line 8 of train.csv: a row has an empty label; fill it in or remove the row"
    )


def test_a_tsv_test_row_names_its_line_and_a_label_outside_the_set_its_file(tmp_path):
    (tmp_path / "train.tsv").write_text(
        "text\tlabel\n" + "".join(f"r {i}\t{('bad', 'good')[i % 2]}\n" for i in range(8))
    )
    (tmp_path / "test.tsv").write_text('text\tlabel\n"two\nlines"\tgood\n\nt\tugly\n')
    data = {"train": "train.tsv", "test": "test.tsv", "validation": "train.tsv"}
    message = _refusal(tmp_path, data)
    assert ": test split, line 5 of test.tsv: label 'ugly' is not in the label set ['bad', 'good']" in message


def test_a_json_array_file_counts_rows_as_its_lines_do_not_hold_one_each(tmp_path):
    train = _rows(12, "r")
    train[4]["label"] = None
    (tmp_path / "train.json").write_text(json.dumps(train, indent=1))
    (tmp_path / "test.json").write_text(json.dumps(_rows(4, "t")))
    message = _refusal(tmp_path, {"train": "train.json", "test": "test.json", "validation": "train.json"})
    assert ": train split, row 5 of train.json: a row has an empty label;" in message


def _tsv_opening_a_quote(folder) -> None:
    """A TSV whose row 5 opens a quote that the text of row 10 closes, after a row quoted over two lines."""
    rows = [f"the red code {i}\t{('bad', 'good')[i % 2]}" for i in range(30)]
    rows[1] = '"the red\ncode 1"\tgood'  # lines 3 and 4
    rows[4] = '"' + rows[4]  # line 7, as the file's reader numbers it
    rows[9] = 'he said "so" at 9\tgood'
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.tsv").write_text("review\tstars\n" + "\n".join(rows) + "\n")
    (folder / "test.tsv").write_text("review\tstars\n" + "".join(f"t {i}\tgood\n" for i in range(6)))


TAB = (
    "the row's 'review' holds a tab: a field starting with a double quote is read up to the next quote, "
    "across tabs and lines, so several rows became one; "
)


@pytest.mark.usefixtures("isolated_tasks")  # a private `datasets` cache
def test_a_tsv_cell_holding_a_tab_names_the_line_its_quote_opens_on(tmp_path):
    # was "data.train (.../train.tsv): row 5's 'review' holds a tab", counting rows, not lines
    _tsv_opening_a_quote(tmp_path)
    data = {"train": "train.tsv", "test": "test.tsv", "validation": "test.tsv"}
    path = write_task_file(
        tmp_path, name="quoted", family="sc", data=data, columns={"text": "review", "label": "stars"}
    )
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value) == (
        f'task file {path}: train split, line 7 of train.tsv: {TAB}quote that field whole ("..." with inner '
        "quotes doubled) or remove the leading quote, or write the data as JSON lines"
    )


@pytest.mark.usefixtures("isolated_tasks")  # a private `datasets` cache
def test_a_hub_mirror_tsv_cell_holding_a_tab_names_the_line_of_the_mirror_file(tmp_path, monkeypatch):
    mirror = tmp_path / "hub" / "me" / "quoted"
    _tsv_opening_a_quote(mirror)
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/quoted"))
    assert str(err.value).startswith(
        f"cannot load me/quoted: train split, line 7 of {mirror / 'train.tsv'}: {TAB}"
    )
