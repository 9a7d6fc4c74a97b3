"""Task files whose test split is cut from train (`data.test_fraction`), fractions that leave a split
empty, and a task file naming a key twice (split from test_custom_tasks.py, whose helpers it uses)."""

from __future__ import annotations

import re
from pathlib import Path

import datasets
import pytest
from tests.eval.fixtures import train_only_task, write_jsonl
from tests.eval.fixtures import write_task_file as _spec

from encoderlab.errors import UserError
from encoderlab.eval.tasks import load_task
from encoderlab.eval.tasks.custom import load_task_files, task_from_file

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def test_test_fraction_cuts_a_seeded_disjoint_test_split_from_train(tmp_path):
    # was: "unknown field(s) test_fraction", and a task needed a test file
    path = train_only_task(tmp_path, 100, test_fraction=0.2, validation_fraction=0.1)
    task, data = load_task(task_from_file(path))
    splits = [{e["text"] for e in part} for part in (data.train, data.val, data.tests["test"])]
    assert [len(s) for s in splits] == [72, 8, 20]  # 20% of train is test; 10% of the rest validation
    assert len(set.union(*splits)) == 100  # disjoint, and nothing lost
    assert task_from_file(path).data_version == task.data_version  # seeded: the same cut each time
    train_only_task(tmp_path, 100, test_fraction=0.2, validation_fraction=0.1, seed=7)
    _, other = load_task(task_from_file(path))
    assert {e["text"] for e in other.tests["test"]} != splits[2]


@pytest.mark.parametrize(
    ("case", "rows", "data", "pattern"),
    [
        (
            "task-file-fraction-leaves-no-train",
            5,
            {"test_fraction": 0.9},
            r"data.test_fraction 0.9 of the 5 train examples leaves none to train on; lower it or add examples",
        ),
        (
            None,
            5,
            {"test": "test.csv", "validation_fraction": 0.9},
            r"data.validation_fraction 0.9 of the 5 train examples leaves none",
        ),
        (
            None,
            3,
            {"test_fraction": 0.5},
            r"data.validation_fraction 0.05 of the 1 train example leaves none",
        ),
        (  # was "...; lower it or add examples": one example is cut whole at any fraction
            None,
            1,
            {"test": "test.csv"},
            r"data.validation_fraction 0.05 of the 1 train example leaves none to train on; one example cannot "
            r"be cut in two, whatever the fraction; add examples, or name a file \(data.validation\)$",
        ),
        (None, 5, {"test_fraction": 1.0}, r"data.test_fraction must be between 0 and 1"),
        (
            "task-file-test-and-test-fraction",
            5,
            {"test": "train.csv", "test_fraction": 0.2},
            r"data.test and data.test_fraction both give the test split; keep one",
        ),
        (  # was: the fraction ignored without a word, the file read as validation
            "task-file-validation-and-validation-fraction",
            5,
            {"test": "test.csv", "validation": "test.csv", "validation_fraction": 0.2},
            r"data.validation and data.validation_fraction both give the validation split; keep one",
        ),
        (
            None,
            5,
            {},
            r"data.test is missing; name a file \(or data.hub, or data.test_fraction to cut it from train\)",
        ),
    ],
)
def test_a_fraction_that_leaves_a_split_empty_is_one_line(tmp_path, capsys, case, rows, data, pattern):
    # was (validation_fraction 0.9 of 5 rows): datasets' "the resulting train set will be empty" traceback
    from tests.eval.fixtures import model_folder
    from tests.reliability.errors_doc import assert_printed_as_documented
    from tests.reliability.test_hostile_inputs import assert_one_line, cli

    file = tmp_path / f"task_{(case or 'fraction').removeprefix('task-file-')}.yaml".replace("-", "_")
    train_only_task(tmp_path, rows, **data).rename(file)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", file, "--lrs", "1e-4", "--seeds", "0"]
    bars = not datasets.utils.are_progress_bars_disabled()
    datasets.disable_progress_bars()  # "Generating train split" on stderr, above the one error line
    try:
        code, err = cli([*argv, "--out", tmp_path / "e"], capsys)
    finally:
        if bars:
            datasets.enable_progress_bars()
    assert_one_line(code, err, pattern)
    if case:
        assert_printed_as_documented(case, err, tmp_path)
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize(
    "family,header,row,pattern",
    [
        (
            "tc",
            "tokens,tags",
            "Paris is,B-LOC O",
            r"a row's tokens and tags must both be lists, got 'Paris is'",
        ),
        (
            "qa",
            "question,context,answers",
            "Where?,Paris is,Paris",
            r"a row's answers must be SQuAD's .*, got 'Paris'; a CSV or TSV cell is one text",
        ),
    ],
    ids=["tc", "qa"],
)
def test_a_csv_of_list_cells_is_refused_for_its_cells_before_its_size(tmp_path, family, header, row, pattern):
    """A tc or qa task's lists (tokens, tags, answers) cannot be a CSV's cells, at any number of rows: a
    one-row train CSV was refused as "data.validation_fraction 0.05 of the 1 train example leaves none to
    train on", and the user who added rows learnt only then that the file could never be read."""
    for split in ("train", "test"):
        (tmp_path / f"{split}.csv").write_text(f"{header}\n{row}\n")
    path = _spec(tmp_path, name="one", family=family, data={"train": "train.csv", "test": "test.csv"})
    with pytest.raises(
        UserError, match=rf"^task file {re.escape(str(path))}: train split, line 2 of train.csv: {pattern}"
    ):
        load_task(task_from_file(path))


@pytest.mark.parametrize(
    "family,train,test,pattern",
    [
        (
            "tc",
            {"tokens": ["Paris", "is"], "tags": ["B-LOC", "O"]},
            {"tokens": "Rome is", "tags": "B-LOC O"},
            r"a row's tokens and tags must both be lists, got 'Rome is'",
        ),
        (
            "qa",
            {
                "question": "Where?",
                "context": "Paris is",
                "answers": {"text": ["Paris"], "answer_start": [0]},
            },
            {"question": "Where?", "context": "Rome is", "answers": "Rome"},
            r"a row's answers must be SQuAD's .*, got 'Rome'",
        ),
    ],
    ids=["tc", "qa"],
)
def test_a_test_file_of_text_cells_is_refused_before_a_one_row_train_file_is(
    tmp_path, family, train, test, pattern
):
    """A right one-row train file beside a test file whose lists are texts: the test file can never be read,
    at any number of train rows, so its cells are the first thing to fix; it was told to add train rows
    ("data.validation_fraction 0.05 of the 1 train example leaves none"), and named only after."""
    write_jsonl(tmp_path / "train.jsonl", [train])
    write_jsonl(tmp_path / "test.jsonl", [test, test])
    path = _spec(tmp_path, name="one", family=family, data={"train": "train.jsonl", "test": "test.jsonl"})
    with pytest.raises(
        UserError, match=rf"^task file {re.escape(str(path))}: test split, line 1 of test.jsonl: {pattern}"
    ):
        load_task(task_from_file(path))
    (tmp_path / "test.jsonl").unlink()
    write_jsonl(tmp_path / "test.jsonl", [train])  # the test file fixed: the size is said next
    with pytest.raises(UserError, match=r"of the 1 train example leaves none to train on"):
        load_task(task_from_file(path))


def test_a_task_file_naming_a_key_twice_is_refused(tmp_path):
    """Was: the second `metric:` (or `text:` of `columns`) replaced the first, silently."""
    path = tmp_path / "t.yaml"
    path.write_text("name: mine\nfamily: sc\nname: yours\n")
    with pytest.raises(UserError, match=r"task file .*t.yaml: key 'name' is given twice \(lines 1 and 3\)"):
        load_task_files([path])


def _quiet_cli(argv: list, capsys) -> tuple[int, str]:
    """The CLI's exit code and stderr, without datasets' progress bars ("Generating train split" on
    stderr, above the one error line)."""
    from tests.reliability.test_hostile_inputs import cli

    bars = not datasets.utils.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        return cli(argv, capsys)
    finally:
        if bars:
            datasets.enable_progress_bars()


def _refused_sst2_task(
    tmp_path: Path, capsys, monkeypatch, name: str, data: dict, line: str, row: str
) -> None:
    """`eval` of an SST-2 task file `name` with `data` over the GLUE hub fixture is refused in one line matching
    `line`, as errors.md row `row` documents, and writes no --out."""
    from tests.eval import hub_fixtures as hub
    from tests.eval.fixtures import model_folder
    from tests.reliability.errors_doc import assert_printed_as_documented
    from tests.reliability.test_hostile_inputs import assert_one_line

    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))
    hub.glue(tmp_path / "hub")
    spec = {"name": "my-sst2", "family": "sc", "columns": {"text": "sentence"}}
    file = _spec(tmp_path, name, **spec, data=data)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", file, "--hub-data", tmp_path / "hub"]
    code, err = _quiet_cli([*argv, "--lrs", "1e-4", "--seeds", "0", "--out", tmp_path / "e"], capsys)
    assert_one_line(code, err, line)
    assert_printed_as_documented(row, err, tmp_path)
    assert not (tmp_path / "e").exists()


def test_a_validation_fraction_beside_a_hub_validation_split_is_refused(tmp_path, capsys, monkeypatch):
    """Was: the fraction ignored without a word, the hub's validation split read (a local validation
    file beside a fraction is refused the same way); with `validation: null` the fraction cuts."""
    data = {"hub": "nyu-mll/glue", "config": "sst2", "validation_fraction": 0.2}
    _refused_sst2_task(
        tmp_path,
        capsys,
        monkeypatch,
        "task_hub_fraction.yaml",
        data,
        r"data.validation_fraction cuts validation from train, but nyu-mll/glue",
        "task-file-hub-validation-and-validation-fraction",
    )
    spec = {"name": "my-sst2", "family": "sc", "columns": {"text": "sentence"}}
    splits = {"test": "validation", "validation": None}
    cut = _spec(tmp_path, **spec, data={**data, "splits": splits})
    _, loaded = load_task(task_from_file(cut))
    assert (len(loaded.train), len(loaded.val)) == (48, 12)  # 20% of the 60 train examples


def test_a_hub_validation_mapped_to_a_split_the_dataset_lacks_is_refused(tmp_path, capsys, monkeypatch):
    """Was: a typo in data.splits.validation cut validation from train, unsaid (train and test named
    so were refused already); left out, or null, validation is still cut where the dataset has none."""
    from tests.eval import hub_fixtures as hub
    from tests.eval.fixtures import model_folder
    from tests.reliability.errors_doc import assert_printed_as_documented
    from tests.reliability.test_hostile_inputs import assert_one_line

    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))
    hub.glue(tmp_path / "hub")
    data = {"hub": "nyu-mll/glue", "config": "sst2", "splits": {"test": "validation", "validation": "dev"}}
    spec = {"name": "my-sst2", "family": "sc", "columns": {"text": "sentence"}}
    file = _spec(tmp_path, "task_hub_split.yaml", **spec, data=data)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", file, "--hub-data", tmp_path / "hub"]
    code, err = _quiet_cli([*argv, "--lrs", "1e-4", "--seeds", "0", "--out", tmp_path / "e"], capsys)
    assert_one_line(
        code, err, r"nyu-mll/glue \(config sst2\) has no split 'dev' \(it has train, validation, test\)"
    )
    assert_printed_as_documented("task-file-hub-validation-split-missing", err, tmp_path)
    assert not (tmp_path / "e").exists()
    mnli = {"hub": "nyu-mll/glue", "config": "mnli", "splits": {"test": "validation_matched"}}
    cut = _spec(tmp_path, **{**spec, "columns": {"text": "premise"}}, data=mnli)  # MNLI has no `validation`
    _, loaded = load_task(task_from_file(cut))
    assert (len(loaded.train), len(loaded.val)) == (57, 3)


def test_a_hub_split_of_hidden_labels_is_refused_where_it_plays(tmp_path, capsys, monkeypatch):
    """Was: GLUE's test split, whose labels are -1 (not published), read as the task's test split by
    default, every -1 kept as a class id: each prediction scored wrong, without a word."""
    from tests.eval import hub_fixtures as hub
    from tests.eval.fixtures import model_folder
    from tests.reliability.errors_doc import assert_printed_as_documented
    from tests.reliability.test_hostile_inputs import assert_one_line

    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))
    hub.glue(tmp_path / "hub")
    spec = {"name": "my-sst2", "family": "sc", "columns": {"text": "sentence"}}
    file = _spec(tmp_path, "task_hub_hidden.yaml", **spec, data={"hub": "nyu-mll/glue", "config": "sst2"})
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", file, "--hub-data", tmp_path / "hub"]
    code, err = _quiet_cli([*argv, "--lrs", "1e-4", "--seeds", "0", "--out", tmp_path / "e"], capsys)
    assert_one_line(code, err, r"test split: 8 rows of 8 \(e.g. row 1\) have the label -1 in 'label'")
    assert_printed_as_documented("task-file-hub-hidden-labels", err, tmp_path)
    assert not (tmp_path / "e").exists()
    data = {"hub": "nyu-mll/glue", "config": "sst2", "splits": {"validation": "test", "test": "validation"}}
    with pytest.raises(UserError, match=r"validation split \(the dataset's 'test' split\): 8 rows of 8"):
        task_from_file(_spec(tmp_path, **spec, data=data))
    # a train split to be cut (validation) is refused before the cut, as read: all its rows, the first named
    data = {
        "hub": "nyu-mll/glue",
        "config": "sst2",
        "splits": {"train": "test", "test": "validation", "validation": None},
    }
    with pytest.raises(UserError) as err:
        task_from_file(_spec(tmp_path, **spec, data=data, allow_overlap=True))
    assert re.search(
        r"train split \(the dataset's 'test' split\): 8 rows of 8 \(e\.g\. row 1\)", str(err.value)
    )


def test_a_hub_test_split_mapped_beside_a_test_fraction_is_refused(tmp_path, capsys, monkeypatch):
    """Was: `splits: {test: validation}` ignored without a word when data.test_fraction cut test from
    train (a local data.test beside a test_fraction was one line already)."""
    data = {"hub": "nyu-mll/glue", "config": "sst2", "test_fraction": 0.25, "splits": {"test": "validation"}}
    _refused_sst2_task(
        tmp_path,
        capsys,
        monkeypatch,
        "task_hub_test_fraction.yaml",
        data,
        r"data.splits.test and data.test_fraction both give the test split; keep one",
        "task-file-hub-test-and-test-fraction",
    )


def test_hub_fields_beside_local_files_are_refused(tmp_path, capsys):
    """Was: `splits: {test: validation}` (or a `config`, a `revision`) beside local files ignored without
    a word: the files named were read as they are."""
    from tests.eval.fixtures import model_folder
    from tests.reliability.errors_doc import assert_printed_as_documented
    from tests.reliability.test_hostile_inputs import assert_one_line

    file = tmp_path / "task_local_splits.yaml"
    train_only_task(tmp_path, 20, test="test.csv", splits={"test": "validation"}).rename(file)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", file, "--lrs", "1e-4", "--seeds", "0"]
    code, err = _quiet_cli([*argv, "--out", tmp_path / "e"], capsys)
    assert_one_line(code, err, r": data.splits: read only with data.hub; .*so drop it$")
    assert_printed_as_documented("task-file-hub-fields-beside-local-files", err, tmp_path)
    assert not (tmp_path / "e").exists()
    train_only_task(tmp_path, 20, test="test.csv", config="sst2", revision="main")
    with pytest.raises(
        UserError, match=r": data.config, data.revision: read only with data.hub; .*drop them$"
    ):
        task_from_file(tmp_path / "task.yaml")


def test_a_right_train_file_beside_a_csv_test_file_is_told_which_kind_to_write(tmp_path):
    """A tc train.jsonl beside a test.csv: one kind is the first fix, and the line says which, as a CSV cell
    cannot hold the tc lists; "one kind" alone sent a user to convert train.jsonl to CSV, then refused."""
    write_jsonl(tmp_path / "train.jsonl", [{"tokens": ["Paris", "is"], "tags": ["B-LOC", "O"]}])
    (tmp_path / "test.csv").write_text("tokens,tags\nRome is,B-LOC O\n")
    path = _spec(tmp_path, name="one", family="tc", data={"train": "train.jsonl", "test": "test.csv"})
    with pytest.raises(UserError) as refused:
        load_task(task_from_file(path))
    assert str(refused.value).endswith(
        "one kind (got train train.jsonl, test test.csv); a CSV or TSV cell is one text, so write them all as "
        "JSON lines or parquet"
    )
