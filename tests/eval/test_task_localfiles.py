"""A task file's local data files (`eval/tasks/localfiles.py`): compressed CSV, TSV and JSON lines read
as the plain files are; zstd, lz4 and compressed parquet refused with the fix; a file cut short named."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
from pathlib import Path

import datasets
import pytest
import yaml
from tests.eval.conftest import sc_examples

from encoderlab.errors import UserError
from encoderlab.eval.tasks import load_task
from encoderlab.eval.tasks.custom import task_from_file

OPENERS = {"": open, ".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


pytestmark = pytest.mark.usefixtures("isolated_tasks")


def _rows(seed: int, n: int) -> list[dict]:
    return [
        {"sentence": e["text"], "polarity": ("negative", "positive")[e["label"]]}
        for e in sc_examples(n, seed)
    ]


def _write(path: Path, rows: list[dict]) -> str:
    fmt = Path(path.stem).suffix if path.suffix in OPENERS else path.suffix
    sep = "\t" if fmt == ".tsv" else ","
    if fmt == ".jsonl":
        text = "".join(json.dumps(r) + "\n" for r in rows)
    else:
        text = f"sentence{sep}polarity\n" + "".join(f"{r['sentence']}{sep}{r['polarity']}\n" for r in rows)
    with OPENERS.get(path.suffix, open)(path, "wt", encoding="utf-8") as f:
        f.write(text)
    return path.name


def _task(tmp_path: Path, train: str, test: str, name: str = "t"):
    spec = {
        "name": name,
        "family": "sc",
        "data": {"train": train, "test": test},
        "columns": {"text": "sentence", "label": "polarity"},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return task_from_file(path)


def _disjoint() -> tuple[list[dict], list[dict]]:
    train = _rows(0, 40)
    return train, [r for r in _rows(1, 40) if r not in train][:10]


@pytest.mark.parametrize("fmt", [".jsonl", ".csv", ".tsv"])
@pytest.mark.parametrize("packed", [".gz", ".bz2", ".xz"])
def test_compressed_files_give_the_examples_of_the_plain_ones(tmp_path, fmt, packed):
    train, test = _disjoint()
    plain = _task(tmp_path, _write(tmp_path / f"a{fmt}", train), _write(tmp_path / f"b{fmt}", test), "p")
    zipped = _task(
        tmp_path,
        _write(tmp_path / f"a{fmt}{packed}", train),
        _write(tmp_path / f"b{fmt}{packed}", test),
        "z",
    )
    assert zipped.data_version == plain.data_version  # a hash of the loaded examples
    _, data = load_task(zipped)
    assert (len(data.train) + len(data.val), len(data.tests["test"])) == (40, 10)


def test_a_compressed_file_cut_short_is_one_line(tmp_path):
    train, test = _disjoint()
    _write(tmp_path / "a.jsonl.gz", train * 20)
    whole = (tmp_path / "a.jsonl.gz").read_bytes()
    (tmp_path / "a.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(UserError, match=r"cannot read .*a\.jsonl\.gz \(.*\); download it again") as exc:
        _task(tmp_path, "a.jsonl.gz", _write(tmp_path / "b.jsonl", test))
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("a.jsonl.zst", r"compressed as \.zst, which task files do not read; unpack it first \(`zstd -d "),
        ("a.csv.lz4", r"compressed as \.lz4, .*\(`lz4 -d "),
        ("a.parquet.gz", r"data files must all be \.csv, .* one kind"),
        ("a.jsonl.gz", r"data files must all be .*, one kind"),  # mixed with a .csv test file
    ],
)
def test_unread_compressions_are_refused_with_the_fix(tmp_path, name, message):
    train, test = _disjoint()
    _write(tmp_path / "a.jsonl.gz", train)
    (tmp_path / name).write_bytes((tmp_path / "a.jsonl.gz").read_bytes())
    with pytest.raises(UserError, match=message):
        _task(tmp_path, name, _write(tmp_path / "b.csv", test))


def test_a_csv_beside_a_tsv_is_two_kinds_named_in_one_line(tmp_path):
    # was: a .tsv test file beside a .csv train file was read with commas, and refused as "the test
    # split has no column(s) sentence, polarity (it has sentence\tpolarity); fix `columns:`"
    train, test = _disjoint()
    with pytest.raises(UserError) as exc:
        _task(tmp_path, _write(tmp_path / "a.csv", train), _write(tmp_path / "b.tsv", test))
    assert str(exc.value).endswith("one kind (got train a.csv, test b.tsv)")


def test_a_compressed_csv_with_only_its_header_is_an_empty_split(tmp_path):
    train, _ = _disjoint()
    with gzip.open(tmp_path / "b.csv.gz", "wt") as f:
        f.write("sentence,polarity\n")
    with pytest.raises(UserError, match=r"the test split is empty \(.*b\.csv\.gz\)"):
        _task(tmp_path, _write(tmp_path / "a.csv", train), "b.csv.gz")


@pytest.mark.parametrize("empty", ["[]", "[ ]\n", "\n[\n]\n"])
def test_a_json_file_of_an_empty_array_is_an_empty_split(tmp_path, empty):
    # was: 'cannot read data.test (...b.json): Instruction "test" corresponds to no data!', datasets' words
    train, test = _disjoint()
    (tmp_path / "a.json").write_text(json.dumps(train))
    (tmp_path / "b.json").write_text(empty)
    with pytest.raises(UserError, match=r"the test split is empty \(.*b\.json\); add examples to it$"):
        _task(tmp_path, "a.json", "b.json")
    (tmp_path / "b.json").write_text(json.dumps(test, indent=1))  # an array of rows over many lines is read
    assert len(_task(tmp_path, "a.json", "b.json").loader().tests["test"]) == len(test)


def test_reading_a_task_files_data_prints_no_progress_bars_and_keeps_the_setting(tmp_path, capsys):
    """`datasets` drew "Generating train split" bars on stderr for files read in well under a second,
    so a command refused after the tasks were read printed them above its one error line."""
    train, test = _disjoint()
    datasets.enable_progress_bars()  # the default (another test in this process may have turned it off)
    _task(tmp_path, _write(tmp_path / "a.jsonl", train), _write(tmp_path / "b.jsonl", test))
    assert "Generating" not in capsys.readouterr().err
    assert datasets.is_progress_bar_enabled()  # a hub download after it still shows its bars


@pytest.mark.parametrize("packed", ["", ".gz"])
def test_a_file_that_is_not_utf8_is_one_line_naming_it(tmp_path, packed):
    # was: "cannot read data.train (...): An error occurred while generating the dataset", after a
    # `datasets` log line about a UnicodeDecodeError
    train, test = _disjoint()
    text = "sentence,polarity\n" + "".join(f"café {r['sentence']},{r['polarity']}\n" for r in train)
    with OPENERS[packed](tmp_path / f"a.csv{packed}", "wt", encoding="latin-1") as f:
        f.write(text)
    _write(tmp_path / f"b.csv{packed}", test)
    with pytest.raises(
        UserError, match=r"a\.csv(\.gz)? is not UTF-8 text \(byte 0xe9 .*\); save it as UTF-8"
    ) as exc:
        _task(tmp_path, f"a.csv{packed}", f"b.csv{packed}")
    assert "\n" not in str(exc.value)
    with OPENERS[packed](tmp_path / f"a.csv{packed}", "wt", encoding="utf-8-sig") as f:
        f.write(text)  # UTF-8 with a byte-order mark reads
    assert (
        load_task(_task(tmp_path, f"a.csv{packed}", f"b.csv{packed}"))[1].train[0]["text"].startswith("café")
    )


@pytest.mark.parametrize("packed", sorted(OPENERS))
def test_a_byte_order_mark_is_dropped_from_a_task_data_file_by_the_shared_reader(tmp_path, packed):
    """Windows tools write a UTF-8 byte order mark; the reader every task data file goes through
    (`text_lines`, a BEIR folder's too) kept it in the first line, so a JSON lines file's first row was no
    object to `rowplaces` and its rows lost their line numbers."""
    from encoderlab.eval.tasks.localfiles import text_lines
    from encoderlab.eval.tasks.rowplaces import _json_lines

    path = tmp_path / f"a.jsonl{packed}"
    with OPENERS[packed](path, "wt", encoding="utf-8-sig") as f:
        f.write('{"sentence": "a", "polarity": "positive"}\n\n{"sentence": "b", "polarity": "negative"}\n')
    with text_lines(path, "t") as lines:
        assert next(iter(lines)).startswith('{"sentence"')
    assert _json_lines(path, "t") == (1, 3)


def test_a_file_the_parser_refuses_names_the_parsers_reason_alone(tmp_path, capfd):
    # was: "An error occurred while generating the dataset", below datasets' own "Failed to read file" log
    train, test = _disjoint()
    _write(tmp_path / "a.tsv", train)
    lines = (tmp_path / "a.tsv").read_text().splitlines()
    lines[4] = '"a quote opened and never closed\tpositive'
    (tmp_path / "a.tsv").write_text("\n".join(lines) + "\n")
    verbosity = datasets.logging.get_verbosity()
    with pytest.raises(UserError, match=r"cannot read data.train \(.*a\.tsv\): .*EOF inside string") as exc:
        _task(tmp_path, "a.tsv", _write(tmp_path / "b.tsv", test))
    assert "\n" not in str(exc.value)
    assert "Failed to read file" not in capfd.readouterr().err
    assert datasets.logging.get_verbosity() == verbosity


def test_a_named_pipe_for_a_task_file_or_its_data_is_one_line(tmp_path):
    # was: "does not exist", of a pipe that does; a pipe in a folder of task files was read, waiting
    # for a writer forever
    import os

    from encoderlab.eval import load_task_files

    train, test = _disjoint()
    os.mkfifo(tmp_path / "pipe.csv")
    with pytest.raises(
        UserError, match=r"data.train .*pipe.csv is not a regular file \(a pipe, socket or device\)"
    ):
        _task(tmp_path, "pipe.csv", _write(tmp_path / "b.csv", test))
    os.mkfifo(tmp_path / "pipe.yaml")
    with pytest.raises(
        UserError, match=r"task file .*pipe.yaml is not a regular file \(a pipe, socket or device\)"
    ):
        load_task_files([tmp_path / "pipe.yaml"])


def test_one_task_file_given_twice_is_named_so(tmp_path):
    # was: "task file t.yaml: name 't' is also used by t.yaml; rename one", of one file
    from encoderlab.eval import load_task_files

    train, test = _disjoint()
    _task(tmp_path, _write(tmp_path / "a.csv", train), _write(tmp_path / "b.csv", test))
    with pytest.raises(UserError, match=r"task file .*t.yaml is given twice; give it once$"):
        load_task_files([tmp_path / "t.yaml", tmp_path / "t.yaml"])
    with pytest.raises(
        UserError, match=r"task file .*\.\./.*t.yaml is given twice \(also as .*t.yaml\); give it once$"
    ):
        load_task_files([tmp_path / "t.yaml", tmp_path / ".." / tmp_path.name / "t.yaml"])


def test_csv_cells_reading_na_or_null_are_text_and_only_an_empty_cell_is_missing(tmp_path):
    # was: pandas read "N/A", "NA", "NULL", "None" and "nan" as missing, so a class named N/A given in
    # `labels:` and a text saying None were refused as "a row has an empty label" / "an empty text"
    train, test = _disjoint()
    train = [{**r, "polarity": "N/A" if r["polarity"] == "negative" else r["polarity"]} for r in train]
    test = [{**r, "polarity": "N/A" if r["polarity"] == "negative" else r["polarity"]} for r in test]
    train[0]["sentence"] = "None"
    spec = {
        "name": "na",
        "family": "sc",
        "data": {"train": _write(tmp_path / "a.csv", train), "test": _write(tmp_path / "b.csv", test)},
        "columns": {"text": "sentence", "label": "polarity"},
        "labels": ["N/A", "positive"],
    }
    (tmp_path / "na.yaml").write_text(yaml.safe_dump(spec))
    task, data = load_task(task_from_file(tmp_path / "na.yaml"))
    gold = {r["sentence"]: ["N/A", "positive"].index(r["polarity"]) for r in train}
    assert all(e["label"] == gold[e["text"]] for e in data.train + data.val)
    assert "None" in {e["text"] for e in data.train + data.val}
    lines = (tmp_path / "a.csv").read_text().splitlines()
    (tmp_path / "a.csv").write_text(
        "\n".join([*lines[:3], lines[3].rsplit(",", 1)[0] + ",", *lines[4:]]) + "\n"
    )
    with pytest.raises(UserError, match="a row has an empty label; fill it in or remove the row"):
        task_from_file(tmp_path / "na.yaml")


def test_labels_written_as_signed_numbers_are_one_form(tmp_path):
    # "-1", "0" and "1" (JSON strings) are numbers alike: "-1" was taken for a name beside the
    # numbers "0" and "1", and the column refused as holding both
    train, test = _disjoint()
    sign = {"negative": "-1", "positive": "1"}
    for rows, name in ((train, "a.jsonl"), (test, "b.jsonl")):
        for i, r in enumerate(rows):
            r["polarity"] = "0" if i % 5 == 0 else sign[r["polarity"]]
        _write(tmp_path / name, rows)
    task, _ = load_task(_task(tmp_path, "a.jsonl", "b.jsonl"))
    assert task.labels == ("-1", "0", "1")


@pytest.mark.parametrize("name", ["train[1].csv", "train*.csv", "train?.jsonl"])
def test_a_data_file_named_with_glob_characters_is_read_itself_not_the_files_they_match(tmp_path, name):
    # was: `datasets` read data_files as glob patterns, so train[1].csv read train1.csv beside it and
    # train*.csv every CSV of the folder, silently (or refused its own file, "Please pass `features`")
    train, test = _disjoint()
    suffix = Path(name).suffix
    others = [r for r in _rows(2, 60) if r not in train and r not in test][:20]
    _write(tmp_path / f"train1{suffix}", others)  # matched by train[1], train* and train?
    test_file = _write(tmp_path / f"test{suffix}", test)
    wanted = _task(tmp_path, _write(tmp_path / name, train), test_file, "w")
    plain = _task(tmp_path, _write(tmp_path / f"plain{suffix}", train), test_file, "p")
    assert wanted.data_version == plain.data_version  # a hash of the loaded examples
    _, data = load_task(wanted)
    assert sorted(e["text"] for e in [*data.train, *data.val]) == sorted(r["sentence"] for r in train)


@pytest.mark.parametrize("packed", ["", ".gz"])
def test_a_jsonl_line_that_is_not_json_is_named_by_its_line(tmp_path, packed):
    """was: "cannot read data.test (...): JSON parse error: ... in row 3", pyarrow's words,
    its row counted from 0 (the bad line is the fourth), and no fix."""
    train, test = _disjoint()
    lines = [json.dumps(r) for r in test]
    lines[3] = lines[3][: len(lines[3]) // 2]  # a record cut in its middle, as a bad hand edit leaves it
    with OPENERS[packed](tmp_path / f"b.jsonl{packed}", "wt", encoding="utf-8") as f:
        f.write("\r\n".join(lines) + "\r\n")  # a Windows editor's line ends: the line count is the same
    with pytest.raises(UserError) as exc:
        _task(tmp_path, _write(tmp_path / "a.jsonl", train), f"b.jsonl{packed}")
    assert str(exc.value).startswith(f"task file {tmp_path / 't.yaml'}: cannot read data.test: ")
    assert f"b.jsonl{packed}:4: not valid JSON (" in str(exc.value)
    assert str(exc.value).endswith("); one JSON object per line") and "\n" not in str(exc.value)


def test_a_damaged_json_array_file_is_not_named_by_a_line(tmp_path):
    """A `.json` file is one JSON document over many lines (an array of rows), so no line of it is "not valid
    JSON" on its own: it is refused in the reader's words, not by a line scan that would blame its first line."""
    train, test = _disjoint()
    (tmp_path / "a.json").write_text(json.dumps(train))
    (tmp_path / "b.json").write_text(json.dumps(test, indent=1)[:-40])  # cut short: the array never closes
    with pytest.raises(UserError, match=r"cannot read data\.test \(.*b\.json\): ") as exc:
        _task(tmp_path, "a.json", "b.json")
    assert "not valid JSON" not in str(exc.value) and "\n" not in str(exc.value)
