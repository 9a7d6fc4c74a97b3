"""A task file's `columns:` naming a nested field by a dotted path (`text: meta.text`), as JSON lines exported
from a hub dataset nest it and lm-evaluation-harness's `{{meta.text}}` reads it: was refused as "no column
meta.text (it has meta, label)", with no way to read the data but rewriting it (`tasks/nestedcolumns.py`)."""

from __future__ import annotations

import pytest
from datasets import Dataset
from tests.eval.fixtures import write_jsonl, write_task_file

from encoderlab.errors import UserError
from encoderlab.eval.tasks.custom import task_from_file
from encoderlab.eval.tasks.registry import load_task

pytestmark = pytest.mark.usefixtures("isolated_tasks")

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]


def _nested(prefix: str, n: int) -> list[dict]:
    return [{"meta": {"text": f"{prefix} {WORDS[i % 6]} {i}", "source": "web"}, "y": i % 2} for i in range(n)]


def _flat(rows: list[dict]) -> list[dict]:
    return [{"text": r["meta"]["text"], "label": r["y"]} for r in rows]


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_a_dotted_column_reads_the_nested_field_as_a_flat_file_does(tmp_path, suffix):
    """The examples read through `meta.text` are those of the same rows written flat."""
    for folder, rows_of, columns in (
        ("nested", lambda r: r, {"text": "meta.text", "label": "y"}),
        ("flat", _flat, {}),
    ):
        (tmp_path / folder).mkdir()
        for split, rows in (("train", _nested("train", 30)), ("test", _nested("test", 6))):
            if suffix == "jsonl":
                write_jsonl(tmp_path / folder / f"{split}.jsonl", rows_of(rows))
            else:
                Dataset.from_list(rows_of(rows)).to_parquet(tmp_path / folder / f"{split}.parquet")
        data = {"train": f"train.{suffix}", "test": f"test.{suffix}"}
        write_task_file(
            tmp_path / folder, name="t", family="sc", data=data, **({"columns": columns} if columns else {})
        )
    nested, flat = (load_task(task_from_file(tmp_path / f / "task.yaml"))[1] for f in ("nested", "flat"))
    assert nested.tests == flat.tests and nested.labels == flat.labels
    assert sorted(map(str, nested.train + [nested.val])) == sorted(map(str, flat.train + [flat.val]))


def _refused(tmp_path, train: list[dict], columns: dict) -> str:
    """The line an sc task file of `train` rows (and a right test file), read through `columns`, is refused
    with."""
    write_jsonl(tmp_path / "train.jsonl", train)
    write_jsonl(tmp_path / "test.jsonl", _nested("test", 6))
    spec = {"data": {"train": "train.jsonl", "test": "test.jsonl"}, "columns": columns}
    path = write_task_file(tmp_path, name="t", family="sc", **spec)
    with pytest.raises(UserError) as refused:
        load_task(task_from_file(path))
    return str(refused.value)


def test_a_nested_null_is_an_empty_cell_named_by_its_row(tmp_path):
    rows = _nested("train", 30)
    rows[4] = {**rows[4], "meta": None}
    said = _refused(tmp_path, rows, {"text": "meta.text", "label": "y"})
    assert "train split, line 5 of train.jsonl: a row has an empty text" in said


def test_a_path_that_stops_is_the_missing_column_line(tmp_path):
    said = _refused(tmp_path, _nested("train", 30), {"text": "meta.txt", "label": "y"})
    assert "no column meta.txt (it has meta, y)" in said


def _ir_rows(split: str, n: int) -> list[dict]:
    return [
        {
            "query": f"{split} q {WORDS[i % 6]} {i}",
            "document": f"{split} doc {i}",
            "meta": {"qid": f"{split}-{i}"},
        }
        for i in range(n)
    ]


def test_an_optional_column_reads_a_nested_field_too(tmp_path):
    """`columns: {query_id: meta.qid}`, an optional IR field, was refused as "columns.query_id: no split has
    column 'meta.qid'" while a required field's dotted path was read: one rule for every column named."""
    for folder, rows_of, columns in (
        ("nested", lambda r: r, {"query_id": "meta.qid"}),
        (
            "flat",
            lambda rows: [
                {**{k: v for k, v in r.items() if k != "meta"}, "qid": r["meta"]["qid"]} for r in rows
            ],
            {"query_id": "qid"},
        ),
    ):
        (tmp_path / folder).mkdir()
        for split, n in (("train", 40), ("test", 8)):
            write_jsonl(tmp_path / folder / f"{split}.jsonl", rows_of(_ir_rows(split, n)))
        data = {"train": "train.jsonl", "test": "test.jsonl"}
        write_task_file(tmp_path / folder, name="t", family="ir", data=data, columns=columns)
    nested, flat = (load_task(task_from_file(tmp_path / f / "task.yaml"))[1] for f in ("nested", "flat"))
    assert repr(nested.tests) == repr(flat.tests) and "test-3" in repr(nested.tests)
