"""A task's CSV and TSV cells, read as written (`eval/tasks/localfiles.csv_options`): from the task's own
files and from a hub mirror holding CSV files (`eval/tasks/hub.load_hub`), which got none of the task
files' checks (a column named twice, a TSV text opening a quote, N/A read as missing) and pandas' dtype
inference (`00123` read as 123) in both."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.eval.fixtures import write_task_file

from encoderlab.errors import UserError
from encoderlab.eval.tasks import load_task
from encoderlab.eval.tasks.custom import task_from_file

pytestmark = pytest.mark.usefixtures("isolated_tasks")

WORDS = ("good day", "bad day", "fine film", "awful film")


def _rows(n: int, first: int, label=lambda i: ("neg", "pos")[i % 2]) -> list[tuple[str, str]]:
    return [(f"text {first + i} {WORDS[i % 4]}", label(i)) for i in range(n)]


def _write(folder: Path, name: str, header: str, rows: list[tuple[str, str]]) -> None:
    sep = "\t" if name.endswith(".tsv") else ","
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(header + "\n" + "".join(f"{t}{sep}{label}\n" for t, label in rows))


def _both(tmp_path: Path, monkeypatch, header: str, train: list, test: list, ext: str = "csv") -> dict:
    """{"local": task file path, "hub": task file path}: one task on local files and on a hub mirror of them."""
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))
    paths = {}
    for kind, folder in (("local", tmp_path / "local"), ("hub", tmp_path / "hub" / "me" / "reviews")):
        _write(folder, f"train.{ext}", header, train)
        _write(folder, f"test.{ext}", header, test)
        data = {"train": f"train.{ext}", "test": f"test.{ext}"} if kind == "local" else {"hub": "me/reviews"}
        columns = {"text": "review", "label": "stars"}
        paths[kind] = write_task_file(
            tmp_path / kind, name="reviews", family="sc", data=data, columns=columns
        )
    return paths


def _twice(rows: list) -> list:
    return [(t, f"{label},{label}") for t, label in rows]


def _quoted(rows: list) -> list:
    rows = list(rows)
    rows[3] = ('"' + rows[3][0], rows[3][1])
    rows[9] = ('he said "so" at 9', rows[9][1])  # the quote opened in row 4 closes here
    return rows


REFUSED = [
    ("review,stars,stars", _twice, "csv", r"train\.csv's header names the column 'stars' twice; rename one"),
    (
        "review\tstars",
        _quoted,
        "tsv",
        r"train split, line 5 of \S*train\.tsv: the row's 'review' holds a tab: a field starting with a "
        r"double quote",
    ),
    (
        "review,stars",
        lambda rows: [(t, label if i % 3 else "1") for i, (t, label) in enumerate(rows)],
        "csv",
        r"the label column 'stars' holds both names \(e\.g\. '\w+' in the train split, (line|row) \d+ of .*\) "
        r"and numbers \(e\.g\. '1' in the train split, (line|row) \d+ of .*\)",
    ),
]


@pytest.mark.parametrize(("header", "edit", "ext", "pattern"), REFUSED)
def test_a_hub_csv_mirror_is_checked_as_task_files_are(tmp_path, monkeypatch, header, edit, ext, pattern):
    # was: a mirror's CSV was read with pandas' defaults: its second `stars` column renamed `stars.1`,
    # and a TSV text opening a quote swallowed rows 4-10, each without a word
    paths = _both(tmp_path, monkeypatch, header, edit(_rows(24, 0)), edit(_rows(12, 100)), ext)
    for kind, path in paths.items():
        with pytest.raises(UserError) as err:
            task_from_file(path)
        line = str(err.value)
        assert "\n" not in line and re.search(pattern, line), (kind, line)
        mirror = (
            ("cannot load me/reviews: ",) if kind == "hub" else ()
        )  # a mirror's file, or the task's labels
        assert line.startswith((f"task file {path}: ", *mirror))


def test_the_hub_mirror_rows_of_the_catalogue_say_what_the_command_prints(tmp_path, monkeypatch):
    paths = _both(tmp_path, monkeypatch, "review,stars,stars", _twice(_rows(24, 0)), _twice(_rows(12, 100)))
    with pytest.raises(UserError) as err:
        task_from_file(paths["hub"])
    mirror = tmp_path / "hub" / "me" / "reviews"
    assert str(err.value) == (
        f"cannot load me/reviews: {mirror / 'train.csv'}'s header names the column 'stars' twice; rename one "
        "of them (a reader keeps the first as 'stars' and the second as 'stars.1')"
    )


def test_a_hub_mirror_csv_with_an_unclosed_quote_is_one_line(tmp_path, monkeypatch):
    # was: a DatasetGenerationError traceback ("An error occurred while generating the dataset")
    train = _rows(24, 0)
    train[5] = ('"never closed', "pos")
    paths = _both(tmp_path, monkeypatch, "review,stars", train, _rows(12, 100))
    with pytest.raises(UserError) as err:
        task_from_file(paths["hub"])
    mirror = tmp_path / "hub" / "me" / "reviews"
    assert str(err.value) == (
        f"cannot load me/reviews from {mirror}: Error tokenizing data. C error: EOF inside string starting at "
        "row 6; check the mirror's files against docs/evaluation.md"
    )


def test_na_null_and_none_are_cells_like_any_other_in_a_hub_mirror(tmp_path, monkeypatch):
    # was, in a mirror only: "a row has an empty label" for a class named N/A, and for a text saying NULL
    train = [("NULL" if i == 2 else t, "N/A" if i % 2 else "None") for i, (t, _) in enumerate(_rows(24, 0))]
    test = [(t, "N/A" if i % 2 else "None") for i, (t, _) in enumerate(_rows(12, 100))]
    for path in _both(tmp_path, monkeypatch, "review,stars", train, test).values():
        task, data = load_task(task_from_file(path))
        assert task.labels == ("N/A", "None")
        assert "NULL" in [e["text"] for e in (*data.train, *data.val)]


WRITTEN = ["00123", "0123", "1e5", "0x1F", " 12", "+7", "1_000", "12.50"]


def test_csv_texts_and_labels_are_read_as_written(tmp_path, monkeypatch):
    # was: pandas read `00123` as 123 (and `0123` too: two labels, one class), `1e5` as 100000.0,
    # `0x1F` as text and ` 12` as 12, in text and label columns alike
    train = [
        (f"{w} {i:03d}" if i % 2 else f"{i:05d}", ("00123", "0123")[i % 2]) for i, w in enumerate(WRITTEN * 3)
    ]
    test = [(w, ("00123", "0123")[i % 2]) for i, w in enumerate(WRITTEN)]
    for path in _both(tmp_path, monkeypatch, "review,stars", train, test).values():
        task, data = load_task(task_from_file(path))
        assert task.labels == ("00123", "0123")
        assert [e["text"] for e in data.tests["test"]] == WRITTEN
        assert [task.labels[e["label"]] for e in data.tests["test"]] == ["00123", "0123"] * 4
        assert {f"{i:05d}" for i in range(0, 24, 2)} <= {e["text"] for e in (*data.train, *data.val)}


def test_csv_labels_written_as_plain_numbers_are_numbers(tmp_path, monkeypatch):
    # as a column pandas read as numbers: `1.0` and `1` are one class, named 1, and whole numbers
    # beside named `labels:` are positions in them
    train = _rows(24, 0, lambda i: ("0.0", "1.0")[i % 2])
    test = _rows(12, 100, lambda i: ("0", "1")[i % 2])
    for path in _both(tmp_path, monkeypatch, "review,stars", train, test).values():
        task, data = load_task(task_from_file(path))
        assert task.labels == ("0", "1")
        assert [e["label"] for e in data.tests["test"]] == [0, 1] * 6
    spec = path.read_text() + "labels: [neg, pos]\n"
    path.write_text(spec)
    task, data = load_task(task_from_file(path))
    assert [task.labels[e["label"]] for e in data.tests["test"]] == ["neg", "pos"] * 6


@pytest.mark.parametrize("ext", ["csv", "tsv"])
@pytest.mark.parametrize("trailing", [False, True])
def test_a_first_row_wider_than_the_header_is_one_line(tmp_path, monkeypatch, ext, trailing):
    # was: pandas took the first column for row names and shifted the others left, so every text was
    # read as its label (a file whose lines all end with a separator), or every label as empty
    sep = "\t" if ext == "tsv" else ","
    train, test = _rows(24, 0), _rows(12, 100)
    edited = [(t, f"{label}{sep}" if trailing or i == 0 else label) for i, (t, label) in enumerate(train)]
    for kind, path in _both(tmp_path, monkeypatch, f"review{sep}stars", edited, test, ext).items():
        with pytest.raises(UserError) as err:
            task_from_file(path)
        assert re.search(
            rf"train\.{ext}'s first row has 3 fields but its header names 2 columns, so a reader takes the "
            rf"first for row names; quote a field that holds a {'tab' if ext == 'tsv' else 'comma'}, or remove "
            "the separator ending each line",
            str(err.value),
        ), (kind, str(err.value))


def test_a_utf16_file_is_told_to_be_converted_from_utf16(tmp_path, monkeypatch):
    # was: "save it as UTF-8, e.g. `iconv -f latin1 ...`", which turns a UTF-16 file (Excel's "Unicode
    # text" export, a TSV) into garbage with a NUL byte between letters
    paths = _both(tmp_path, monkeypatch, "review\tstars", _rows(24, 0), _rows(12, 100), "tsv")
    for folder in (tmp_path / "local", tmp_path / "hub" / "me" / "reviews"):
        text = (folder / "train.tsv").read_text()
        (folder / "train.tsv").write_bytes(text.encode("utf-16"))
    for path in paths.values():
        with pytest.raises(
            UserError, match=r"train\.tsv is UTF-16 text, not UTF-8; save it as UTF-8, e\.g\. "
        ):
            task_from_file(path)
        with pytest.raises(UserError, match=r"`iconv -f utf-16 -t utf-8 train\.tsv > utf8-train\.tsv`$"):
            task_from_file(path)


def test_a_refused_hub_mirror_csv_leaves_no_lock_in_the_datasets_cache(tmp_path, monkeypatch):
    """Its files were listed through a `datasets` builder, which took a lock file in its cache (HF_HOME/datasets)
    and left it there: the refusal that followed left it behind."""
    from tests.reliability.treestate import assert_unchanged, world_state

    paths = _both(tmp_path, monkeypatch, "review,stars,stars", _twice(_rows(24, 0)), _twice(_rows(12, 100)))
    monkeypatch.chdir(tmp_path)
    before = world_state(tmp_path)
    with pytest.raises(UserError, match=r"^cannot load me/reviews: .*header names the column 'stars' twice"):
        task_from_file(paths["hub"])
    assert_unchanged(before)
