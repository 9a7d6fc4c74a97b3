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


def test_a_nested_null_is_an_empty_cell_named_by_its_row(tmp_path):
    rows = _nested("train", 30)
    rows[4] = {**rows[4], "meta": None}
    write_jsonl(tmp_path / "train.jsonl", rows)
    write_jsonl(tmp_path / "test.jsonl", _nested("test", 6))
    spec = {
        "data": {"train": "train.jsonl", "test": "test.jsonl"},
        "columns": {"text": "meta.text", "label": "y"},
    }
    path = write_task_file(tmp_path, name="t", family="sc", **spec)
    with pytest.raises(UserError, match=r"train split, line 5 of train.jsonl: a row has an empty text"):
        load_task(task_from_file(path))


def test_a_path_that_stops_is_the_missing_column_line(tmp_path):
    write_jsonl(tmp_path / "train.jsonl", _nested("train", 30))
    write_jsonl(tmp_path / "test.jsonl", _nested("test", 6))
    spec = {
        "data": {"train": "train.jsonl", "test": "test.jsonl"},
        "columns": {"text": "meta.txt", "label": "y"},
    }
    path = write_task_file(tmp_path, name="t", family="sc", **spec)
    with pytest.raises(UserError, match=r"no column meta.txt \(it has meta, y\)"):
        load_task(task_from_file(path))
