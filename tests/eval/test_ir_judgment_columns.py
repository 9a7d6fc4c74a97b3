"""An IR file's column of relevance judgments under a name other than the fixed list's (`qrel`, `rel`,
`relevance_score`, `isRelevant`): was dropped without a word, its 0 rows trained on and judged as relevant
pairs; and the columns beside pairs that are data, not judgments, which must still be read as before. A
negated name (`not_relevant`, `irrelevant`) marks a relevant row with 0 or false: a `not_relevant` column of
falses was refused, and an `irrelevant` one not judged.

The fixed list (`label`, `score`, ...) and its refusal are tests/eval/test_hard_negatives.py's."""

from __future__ import annotations

import pytest
from tests.eval.fixtures import write_jsonl, write_task_file

from encoderlab.errors import UserError
from encoderlab.eval.tasks import irpairs
from encoderlab.eval.tasks.custom import task_from_file
from encoderlab.eval.tasks.registry import load_task
from encoderlab.eval.tasks.splits import split_size

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def _rows(n: int) -> list[dict]:
    return [{"query": f"query about {i}", "document": f"document about {i}"} for i in range(n)]


def _task_file(tmp_path, train: list[dict], name: str):
    """An IR task file of `train` (train.jsonl) and a test.jsonl of plain pairs."""
    write_jsonl(tmp_path / "train.jsonl", train)
    write_jsonl(tmp_path / "test.jsonl", [{"query": f"test {i}", "document": f"text {i}"} for i in range(10)])
    spec = {"family": "ir", "data": {"train": "train.jsonl", "test": "test.jsonl"}, "max_length": 32}
    return write_task_file(tmp_path, name, name=name.removesuffix(".yaml"), **spec)


def _judged(n: int, column: str, no, yes) -> list[dict]:
    """`n` pairs whose `column` marks rows 4 and 9 with `no`, the others with `yes`."""
    return [{**r, column: no if i in (4, 9) else yes} for i, r in enumerate(_rows(n))]


@pytest.mark.parametrize(
    "column,no,yes",
    [
        ("qrel", 0, 1),
        ("rel", 0, 1),
        ("relevance_score", 0.0, 1.0),
        ("isRelevant", False, True),
        ("QRel", 2, 1),
        ("irrelevant", 1, 0),  # a negated name (`custom_data.NEGATED_WORDS`): its 1 marks a row not relevant
        ("is_not_relevant", True, False),
    ],
)
def test_a_judgment_column_of_another_name_is_refused(tmp_path, column, no, yes):
    """Named by a word of a judgment (`custom_data.RELEVANCE_WORDS`) and holding numbers or booleans: the
    first row it marks as other than 1 is named, in a task file and in a pairs file beside data.beir."""
    rows = _judged(30, column, no, yes)
    path = _task_file(tmp_path, rows, "judged.yaml")
    said = (
        rf"train split, line 5 of train.jsonl: column '{column}' holds {no!r}, but it is not read: every row"
    )
    with pytest.raises(UserError, match=rf"^task file {path}: {said}"):
        load_task(task_from_file(path))
    write_jsonl(tmp_path / "pairs.jsonl", rows)
    with pytest.raises(UserError, match=rf"^t: {said.replace('train.jsonl', 'pairs.jsonl')}"):
        irpairs.read_pairs("pairs.jsonl", {}, tmp_path, "t")


@pytest.mark.parametrize(
    "column,no,yes,columns",
    [
        (
            "ce_score",
            3.5,
            9.25,
            {},
        ),  # a cross-encoder's score of each positive: `score` is the whole name only
        ("qid", 7, 8, {}),  # MS MARCO's numeric ids, not read: ids, not judgments
        ("relevant_passage", "a text", "another text", {}),  # text: data, whatever its name
        ("is_impossible", True, False, {}),  # SQuAD 2's flag: a relevant context, whichever it holds
        ("not_relevant", False, False, {}),  # a negated judgment that marks every row relevant
        ("nonRelevant", 0, 0, {}),
        ("qrel", None, None, {"query_id": "qrel"}),  # read by `columns:` (the query's id, the row's number)
    ],
)
def test_a_column_beside_pairs_that_is_no_judgment_is_read_as_before(tmp_path, column, no, yes, columns):
    """Numbers of another name, text under a judgment's word, and a column `columns:` reads are data: a
    file of them is read, each of its rows a relevant pair."""
    rows = (
        _judged(30, column, no, yes)
        if no is not None
        else [{**r, column: i} for i, r in enumerate(_rows(30))]
    )
    path = _task_file(tmp_path, rows, "kept.yaml")
    if columns:
        path.write_text(path.read_text() + "".join(f"columns:\n  {f}: {c}\n" for f, c in columns.items()))
    _, data = load_task(task_from_file(path))
    assert len(data.train) + split_size(data.val) == 30  # every row a pair (one query each), none dropped


def _test_rows() -> list[dict]:
    return [{"query": f"test {i}", "document": f"text {i}"} for i in range(10)]


def _text_file(path, rows: list[dict], sep: str) -> None:
    """`rows` as a CSV or TSV file written by hand, every cell as the text a spreadsheet saves."""
    names = list(rows[0])
    path.write_text(
        "".join(sep.join(str(r[c]) for c in names) + "\n" for r in [dict(zip(names, names))] + rows)
    )


@pytest.mark.parametrize("suffix,sep", [("csv", ","), ("tsv", "\t")])
@pytest.mark.parametrize(
    "column,no,yes",
    [("qrel", 0, 1), ("relevance_score", 0.0, 1.0), ("is_relevant", "False", "True"), ("not_relevant", 1, 0)],
)
def test_a_judgment_column_of_a_csv_or_tsv_is_judged_though_its_cells_are_text(
    tmp_path, suffix, sep, column, no, yes
):
    """A CSV or TSV cell is read as the text written, so a judgment column under a judgment's word there
    was text, not numbers, and never judged: its 0 rows were trained on and judged relevant, unsaid."""
    _text_file(tmp_path / f"train.{suffix}", _judged(30, column, no, yes), sep)
    _text_file(tmp_path / f"test.{suffix}", [{**r, column: yes} for r in _test_rows()], sep)
    spec = {"family": "ir", "data": {"train": f"train.{suffix}", "test": f"test.{suffix}"}, "max_length": 32}
    path = write_task_file(tmp_path, "judged.yaml", name="judged", **spec)
    said = rf"train split, line 6 of train.{suffix}: column '{column}' holds '{no}', but it is not read: every row"
    with pytest.raises(UserError, match=rf"^task file {path}: {said}"):
        load_task(task_from_file(path))


@pytest.mark.parametrize("column", ["y", "target", "Target", "gold"])
def test_a_label_column_of_a_plain_name_is_judged(tmp_path, column):
    """`y`, `target`, `gold`: the label column of an `(X, y)` export, with no judgment's word in its name,
    was dropped without a word, its 0 rows trained on as positives and judged relevant in test's qrels."""
    path = _task_file(tmp_path, _judged(30, column, 0, 1), "plain.yaml")
    said = rf"train split, line 5 of train.jsonl: column '{column}' holds 0, but it is not read: every row"
    with pytest.raises(UserError, match=rf"^task file {path}: {said}"):
        load_task(task_from_file(path))


@pytest.mark.parametrize(
    "column,cells",
    [
        ("target", ["a text", "another"]),  # a bitext file's other side: data, as `relevant_passage` is
        ("y", [1, 1]),  # every row relevant: a column of 1s passes
        ("qid", ["7", "8"]),  # a CSV's numeric ids: not a judgment's name
        ("is_impossible", ["True", "False"]),  # SQuAD 2's flag, written by a spreadsheet
    ],
)
def test_a_csv_column_that_is_no_judgment_is_read_as_before(tmp_path, column, cells):
    """Text under a label's plain name, a column of 1s, and numbers or flags of another name in a CSV are
    data: every row is a relevant pair."""
    rows = [{**r, column: cells[i % 2]} for i, r in enumerate(_rows(30))]
    _text_file(tmp_path / "train.csv", rows, ",")
    _text_file(tmp_path / "test.csv", [{**r, column: cells[0]} for r in _test_rows()], ",")
    spec = {"family": "ir", "data": {"train": "train.csv", "test": "test.csv"}, "max_length": 32}
    _, data = load_task(task_from_file(write_task_file(tmp_path, "kept.yaml", name="kept", **spec)))
    assert len(data.train) + split_size(data.val) == 30
