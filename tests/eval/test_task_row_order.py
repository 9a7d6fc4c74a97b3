"""A task file's refusal of a row names the FIRST bad row in file order, whatever split it went to.

Was: the rows were checked split by split after validation (and `test_fraction`'s test) had been cut
from train by `train_test_split`, which shuffles both parts; so a tc file whose every `tokens` cell
is a string ("The cat sat", as a CSV holds it) was refused at line 95 of the JSON lines file, or line
7 of the CSV, while line 2 was already wrong. Each test writes a bad cell in many rows, the first at
line 2, and checks the refusal names line 2 (the split it went to is either part of train).
"""

from __future__ import annotations

import json
import re

import pytest
from tests.eval.fixtures import write_task_file

from encoderlab.errors import UserError
from encoderlab.eval.tasks.custom import load_task_files

ROWS = 120  # enough that the 5% validation cut holds several rows, and train's shuffle moves line 2


def _refusal(tmp_path, **spec) -> str:
    path = write_task_file(tmp_path, name="order", **spec)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"task file {path}: "), message
    return message


def _jsonl(path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _tc_rows(n: int, bad_from: int) -> list[dict]:
    """`n` tagged sentences; from row `bad_from` on (0-based), tokens and tags are strings."""
    good = {"tokens": ["Paris", "is", "nice"], "tags": ["B-LOC", "O", "O"]}
    bad = {"tokens": "Paris is nice", "tags": "B-LOC O O"}
    return [dict(bad if i >= bad_from else good) for i in range(n)]


TC_NOT_LISTS = (
    "a row's tokens and tags must both be lists, got 'Paris is nice', 'B-LOC O O'; write one list each per "
    'row, in JSON lines or parquet (`{"tokens": ["Paris", "is"], "tags": ["B-LOC", "O"]}`, under your column '
    "names); a CSV or TSV cell is one text"
)


@pytest.mark.parametrize("fractions", [{}, {"test_fraction": 0.2}])
def test_tc_jsonl_strings_for_lists_name_the_first_bad_line(tmp_path, fractions):
    _jsonl(tmp_path / "train.jsonl", _tc_rows(ROWS, 1))  # the first row is good, every other bad
    data = {"train": "train.jsonl", **fractions}
    if not fractions:
        _jsonl(tmp_path / "test.jsonl", _tc_rows(10, 0))
        data["test"] = "test.jsonl"
    message = _refusal(tmp_path, family="tc", data=data)
    assert re.search(r": (train|validation|test) split, line 2 of train\.jsonl: ", message), message
    assert message.endswith(TC_NOT_LISTS)


def test_tc_csv_strings_for_lists_name_the_first_bad_line(tmp_path):
    # a CSV can hold no list: every row is bad, so the first row (line 2, after the header) is named
    body = "".join(f"Paris is nice {i},B-LOC O O\n" for i in range(ROWS))
    (tmp_path / "train.csv").write_text("tokens,tags\n" + body)
    (tmp_path / "test.csv").write_text("tokens,tags\nRome is far,B-LOC O O\n")
    message = _refusal(tmp_path, family="tc", data={"train": "train.csv", "test": "test.csv"})
    assert re.search(r": (train|validation) split, line 2 of train\.csv: a row's tokens and tags", message), (
        message
    )


def test_a_train_file_row_is_named_before_a_test_file_row(tmp_path):
    # file order is the train file's rows (wherever the cut put them), then validation's, then test's
    _jsonl(tmp_path / "train.jsonl", _tc_rows(ROWS, ROWS - 1))  # only the last line is bad
    _jsonl(tmp_path / "test.jsonl", _tc_rows(10, 0))
    message = _refusal(tmp_path, family="tc", data={"train": "train.jsonl", "test": "test.jsonl"})
    assert re.search(rf": (train|validation) split, line {ROWS} of train\.jsonl: ", message), message


def _sc_rows(n: int) -> list[dict]:
    return [{"text": f"review {i}", "other": f"reply {i}", "label": ("bad", "good")[i % 2]} for i in range(n)]


@pytest.mark.parametrize(
    ("family", "cell", "value", "said"),
    [
        ("sc", "text", "", "a row has an empty text; fill it in or remove the row"),
        ("pair-sc", "other", None, "a row has an empty text_pair; fill it in or remove the row"),
        ("sc", "label", "", "a row has an empty label; fill it in or remove the row"),
        ("sc", "label", ["bad"], "a row's label is a list (['bad'])"),
    ],
)
def test_sc_row_cells_name_the_first_bad_line(tmp_path, family, cell, value, said):
    rows = _sc_rows(ROWS)
    for row in rows[1:]:
        row[cell] = value
    _jsonl(tmp_path / "train.jsonl", rows)
    _jsonl(tmp_path / "test.jsonl", _sc_rows(10))
    spec = {"family": family, "data": {"train": "train.jsonl", "test": "test.jsonl"}}
    if family == "pair-sc":
        spec |= {"template": "{a} / {b}", "columns": {"text_pair": "other"}}
    message = _refusal(tmp_path, **spec)
    assert re.search(r": (train|validation) split, line 2 of train\.jsonl: ", message), message
    assert said in message, message


def test_a_label_example_names_the_first_line_holding_it(tmp_path):
    # the label checks read train's cells: a fractional score's example was a shuffled row's
    body = "".join(f"review {i},{0.5 + i / 1000}\n" for i in range(ROWS))
    (tmp_path / "train.csv").write_text("text,label\n" + body)
    (tmp_path / "test.csv").write_text("text,label\nlast,0.25\n")
    message = _refusal(tmp_path, family="sc", data={"train": "train.csv", "test": "test.csv"})
    assert "holds fractional numbers (e.g. " in message and ", line 2 of train.csv)" in message, message


def test_a_class_id_out_of_range_names_the_first_line_holding_one(tmp_path):
    rows = [{"text": f"review {i}", "label": 5 if i else 0} for i in range(ROWS)]
    _jsonl(tmp_path / "train.jsonl", rows)
    _jsonl(tmp_path / "test.jsonl", [{"text": "t", "label": 1}])
    spec = {"family": "sc", "labels": ["bad", "good"], "data": {"train": "train.jsonl", "test": "test.jsonl"}}
    message = _refusal(tmp_path, **spec)
    assert re.search(
        r"but 5 \((train|validation) split, line 2 of train\.jsonl\) is not one of 0 to 1", message
    ), message


def test_an_iob1_tag_names_the_first_line_holding_one(tmp_path):
    iob1 = {"tokens": ["Bob", "ran"], "tags": ["I-PER", "O"]}
    rows = [{"tokens": ["Bob", "ran"], "tags": ["B-PER", "O"]}] + [iob1] * (ROWS - 1)
    _jsonl(tmp_path / "train.jsonl", rows)
    _jsonl(tmp_path / "test.jsonl", rows[:3])
    message = _refusal(tmp_path, family="tc", data={"train": "train.jsonl", "test": "test.jsonl"})
    assert re.search(r": (train|validation) split, line 2 of train\.jsonl: tag 'I-PER' of word 1", message), (
        message
    )


def _qa_rows(n: int) -> list[dict]:
    return [
        {
            "question": f"who ran {i}?",
            "context": f"Bob ran {i}.",
            "answers": {"text": ["Bob"], "answer_start": [0]},
        }
        for i in range(n)
    ]


def _ir_rows(n: int) -> list[dict]:
    return [{"query": f"query {i}", "document": f"document {i}"} for i in range(n)]


@pytest.mark.parametrize(
    ("family", "rows", "cell", "value", "said"),
    [
        ("qa", _qa_rows, "question", "", "a row has an empty question; fill it in or remove the row"),
        ("qa", _qa_rows, "answers", {"text": "Bob", "answer_start": 0}, "a row's answers must be SQuAD's"),
        ("ir", _ir_rows, "document", None, "a row has an empty document; fill it in or remove the row"),
    ],
)
def test_qa_and_ir_row_cells_name_the_first_bad_line(tmp_path, family, rows, cell, value, said):
    train = rows(ROWS)
    for row in train[1:]:
        row[cell] = value
    _jsonl(tmp_path / "train.jsonl", train)
    _jsonl(tmp_path / "test.jsonl", rows(10))
    message = _refusal(tmp_path, family=family, data={"train": "train.jsonl", "test": "test.jsonl"})
    assert re.search(r": (train|validation) split, line 2 of train\.jsonl: ", message), message
    assert said in message, message


def _validation_lines(tmp_path, family: str, rows: list[dict], key) -> list[int]:
    """The lines of train.jsonl (`rows`, ids unique) that the validation cut takes, in file order: the cut
    depends on the row count and the seed only, so a file of as many rows is cut alike. `key(task data)`:
    the validation rows' indices."""
    _jsonl(tmp_path / "train.jsonl", rows)
    data = {"train": "train.jsonl", "test": "test.jsonl"}
    path = write_task_file(tmp_path, name="good", family=family, data=data, allow_overlap=True)
    return sorted(i + 1 for i in key(load_task_files([str(path)])[0].loader()))


def test_a_qa_id_twice_in_a_cut_validation_names_its_first_two_lines(tmp_path):
    _jsonl(tmp_path / "test.jsonl", [{**row, "id": f"t{i}"} for i, row in enumerate(_qa_rows(10))])
    rows = [{**row, "id": f"r{i}"} for i, row in enumerate(_qa_rows(ROWS))]
    lines = _validation_lines(tmp_path, "qa", rows, lambda data: [int(e["id"][1:]) for e in data.val])
    _jsonl(tmp_path / "train.jsonl", [{**row, "id": "q"} for row in rows])  # one id: validation repeats it
    message = _refusal(tmp_path, family="qa", data={"train": "train.jsonl", "test": "test.jsonl"})
    assert f"validation split, line {lines[1]} of train.jsonl: " in message, message
    assert f"(this one and line {lines[0]} of train.jsonl)" in message, message


def test_an_ir_id_of_two_texts_names_the_first_text_of_the_file_first(tmp_path):
    _jsonl(tmp_path / "test.jsonl", _ir_rows(10))
    rows = _ir_rows(ROWS)  # query i on line i + 1
    lines = _validation_lines(
        tmp_path, "ir", rows, lambda data: [int(q.split()[1]) for q in data.val.queries.values()]
    )
    _jsonl(tmp_path / "train.jsonl", [{"query_id": "1", **row} for row in rows])
    message = _refusal(tmp_path, family="ir", data={"train": "train.jsonl", "test": "test.jsonl"})
    first, second = (f"'query {n - 1}'" for n in lines[:2])
    assert f"validation split, line {lines[1]} of train.jsonl: " in message, message
    assert f"two different query texts ({first}, {second})" in message, message


def test_qa_answers_none_in_context_name_the_first_train_row_of_the_file(tmp_path):
    train = [{**row, "answers": {"text": ["Bob"], "answer_start": [3]}} for row in _qa_rows(ROWS)]
    _jsonl(tmp_path / "train.jsonl", train)
    _jsonl(tmp_path / "test.jsonl", _qa_rows(10))
    message = _refusal(tmp_path, family="qa", data={"train": "train.jsonl", "test": "test.jsonl"})
    found = re.search(r"\(first row, train split, line (\d+) of train\.jsonl: ", message)
    assert found, message
    cut = ROWS - int(ROWS * 0.95)  # the validation rows, which may hold the first lines
    assert int(found[1]) <= 2 + cut, message


@pytest.mark.parametrize(
    ("family", "rows"),
    [("sc", _sc_rows), ("tc", lambda n: _tc_rows(n, n)), ("qa", _qa_rows), ("ir", _ir_rows)],
)
def test_a_task_load_sorts_its_rows_into_file_order_once(tmp_path, monkeypatch, family, rows):
    """Every row's place was sorted into file order again for each use: sc twice, tc three times, qa and
    ir four times (a check of every row, then each split's ids), each sort of a million rows taking
    seconds. One sort now serves them all (a split's rows in it are in their file's order)."""
    from encoderlab.eval.tasks import custom_examples, rowplaces

    real, sorts = rowplaces.file_order, []

    def counted(places, splits):
        sorts.append(tuple(splits))
        return real(places, splits)

    monkeypatch.setattr(rowplaces, "file_order", counted)
    monkeypatch.setattr(custom_examples, "file_order", counted)
    _jsonl(tmp_path / "train.jsonl", rows(ROWS))
    _jsonl(tmp_path / "test.jsonl", rows(ROWS)[:4])
    spec = {"family": family, "allow_overlap": True, "data": {"train": "train.jsonl", "test": "test.jsonl"}}
    (task,) = load_task_files([str(write_task_file(tmp_path, name="once", **spec))])
    assert len(sorts) == 1, sorts
    assert task.name == "once"
