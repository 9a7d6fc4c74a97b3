"""A relative path in a task file (its data files) or in a study file (its task files) is read from
that file's folder, never from the working directory. Before, a path written from the working
directory, as a user of lm-evaluation-harness or `run_glue.py` writes it, was "FOLDER/tasks/x.csv does
not exist" (or "task file FOLDER/tasks/x.yaml does not exist"): the folder it was looked for in, not
the rule, nor the path that reads it."""

from __future__ import annotations

import pytest
from tests.eval.fixtures import run_cli, write_task_file

from encoderlab.cli import main
from encoderlab.errors import UserError
from encoderlab.eval.tasks.custom import task_from_file
from encoderlab.study.files import load_study_file

pytestmark = pytest.mark.usefixtures("isolated_tasks")

ROWS = "review,stars\n" + "".join(
    f"item {i} is {'fine' if i % 2 else 'poor'},{'good' if i % 2 else 'bad'}\n" for i in range(20)
)
TEST = "review,stars\n" + "".join(
    f"thing {i} is {'fine' if i % 2 else 'poor'},{'good' if i % 2 else 'bad'}\n" for i in range(6)
)


def _project(tmp_path, monkeypatch):
    """project/tasks/{train,test}.csv and project/tasks/t.yaml naming them from project/ (the working
    directory), as `tasks/train.csv`."""
    project = tmp_path / "project"
    (project / "tasks").mkdir(parents=True)
    (project / "tasks" / "train.csv").write_text(ROWS)
    (project / "tasks" / "test.csv").write_text(TEST)
    monkeypatch.chdir(project)
    return write_task_file(
        project / "tasks",
        "t.yaml",
        name="reviews",
        family="sc",
        data={"train": "tasks/train.csv", "test": "test.csv"},
        columns={"text": "review", "label": "stars"},
    )


def test_a_task_files_data_path_written_from_the_working_directory_names_the_rule_and_the_path(
    tmp_path, monkeypatch, capsys
):
    path = _project(tmp_path, monkeypatch)
    with pytest.raises(UserError) as err:
        task_from_file(path)
    assert str(err.value) == (
        f"task file {path}: data.train: tasks/train.csv is not beside the task file (in {path.parent}) but in "
        "the working directory, which a task file's paths are not read from; write train.csv or an absolute path"
    )
    out = tmp_path / "project" / "e"
    with pytest.raises(SystemExit) as code:  # the command: one line, nothing written
        main(["eval", "m", "--task-file", "tasks/t.yaml", "--lrs", "1e-4", "--seeds", "0", "--out", str(out)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code.value.code == 2 and len(lines) == 1 and "write train.csv or an absolute path" in lines[0]
    assert not out.exists()
    path.write_text(path.read_text().replace("tasks/train.csv", "train.csv"))  # the fix it names reads
    assert task_from_file(path).name == "reviews"


STUDY = """
name: mine
size: tiny
seq_len: 32
micro_batch: 2
steps: 4
data: [{name: main, corpus: [corpus.txt], vocab_size: 300, decontaminate: false}]
runs: [{name: mlm, recipe: pfs-mlm}]
baseline: mlm
eval: {suite: null, task_files: [tasks/t.yaml], lrs: [0.001], seeds: [0], max_steps: 2}
"""


def test_a_study_files_task_file_written_from_the_working_directory_names_the_rule_and_the_path(
    tmp_path, monkeypatch
):
    path = _project(tmp_path, monkeypatch)
    path.write_text(path.read_text().replace("tasks/train.csv", "train.csv"))
    studies = tmp_path / "project" / "studies"
    studies.mkdir()
    (studies / "corpus.txt").write_text("a few words\n\nand a few more\n")
    (studies / "s.yaml").write_text(STUDY)
    with pytest.raises(UserError) as err:
        load_study_file(studies / "s.yaml")
    assert str(err.value).splitlines()[1:] == [
        f"  eval.task_files[0]: tasks/t.yaml is not beside the study file (in {studies}) but in the working "
        "directory, which a study file's paths are not read from; write ../tasks/t.yaml or an absolute path"
    ]
    (studies / "s.yaml").write_text(STUDY.replace("tasks/t.yaml", "../tasks/t.yaml"))
    assert load_study_file(studies / "s.yaml").eval.task_files == (str(path),)


def test_a_task_folder_reads_upper_case_suffixes_and_leaves_hidden_files_out(tmp_path):
    # was: `B.YAML` left out of the folder (its task silently never run), while a data file's `.CSV` is
    # read; macOS's `._a.yaml` (an AppleDouble fork, binary) read as a task file, "not valid YAML", and
    # an editor's `.#a.yaml` lock (a dangling symlink) "not a regular file (a pipe, socket or device)"
    from encoderlab.eval import load_task_files

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tmp_path / "train.csv").write_text(ROWS)
    (tmp_path / "test.csv").write_text(TEST)
    data = {"train": "../train.csv", "test": "../test.csv"}
    spec = {"family": "sc", "data": data, "columns": {"text": "review", "label": "stars"}}
    write_task_file(tasks, "a.yaml", name="first", **spec)
    write_task_file(tasks, "B.YAML", name="second", **spec)
    (tasks / "._a.yaml").write_bytes(b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        ")
    (tasks / ".#a.yaml").symlink_to("user@host.1234:1700000000")
    assert [t.name for t in load_task_files([tasks])] == ["second", "first"]  # sorted by file name


def test_a_path_from_the_home_folder_is_read_there_in_task_and_study_files(tmp_path, monkeypatch):
    # was: `~/data/train.csv` read as a folder `~` beside the file ("FOLDER/~/data/train.csv does not
    # exist"), where a run config's `data.path: ~/data` and a model path on the command line are expanded
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    (home / "data" / "train.csv").write_text(ROWS)
    (home / "data" / "test.csv").write_text(TEST)
    (home / "data" / "corpus.txt").write_text("a few words\n\nand a few more\n")
    monkeypatch.setenv("HOME", str(home))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    spec = {"family": "sc", "columns": {"text": "review", "label": "stars"}}
    data = {"train": "~/data/train.csv", "test": "~/data/test.csv"}
    task = write_task_file(elsewhere, "t.yaml", name="reviews", data=data, **spec)
    assert task_from_file(task).name == "reviews"
    study = STUDY.replace("[corpus.txt]", "[~/data/corpus.txt]").replace("tasks/t.yaml", "~/t.yaml")
    (home / "t.yaml").write_text(task.read_text())
    (elsewhere / "s.yaml").write_text(study)
    spec = load_study_file(elsewhere / "s.yaml")
    assert spec.eval.task_files == (str(home / "t.yaml"),)
    assert spec.data[0].corpus == (str(home / "data" / "corpus.txt"),)


def test_a_local_folder_given_as_data_hub_names_the_task_file_and_the_ways_to_read_it(tmp_path, capsys):
    # was: "'/x/reviews' is not a dataset id of the form OWNER/NAME; fix it", without the task file, and
    # without saying how a folder in the hub's layout is read
    folder = tmp_path / "reviews" / "data"
    folder.mkdir(parents=True)
    (folder / "train-00000-of-00001.csv").write_text(ROWS)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    out = tmp_path / "out"
    for hub, kind in (
        (str(tmp_path / "reviews"), "folder"),
        ("../reviews/data/train-00000-of-00001.csv", "file"),
    ):
        path = write_task_file(tasks, name="reviews", family="sc", data={"hub": hub})
        argv = [
            "eval",
            "unused-model",
            "--task-file",
            str(path),
            "--lrs",
            "1e-4",
            "--seeds",
            "0",
            "--out",
            str(out),
        ]
        code, _, err = run_cli(argv, capsys)
        assert (code, err) == (
            2,
            f"encoderlab: error: task file {path}: data.hub {hub!r} is a local {kind}, not a hub dataset id "
            "(OWNER/NAME); name its files in data.train, data.test (and data.validation), e.g. "
            "data/train-00000-of-00001.parquet, or set ENCODERLAB_HUB_DATA to a folder holding it as OWNER/NAME "
            "and give that id\n",
        )
        assert not out.exists()
    path = write_task_file(tasks, name="reviews", family="sc", data={"hub": "my reviews"})
    with pytest.raises(
        UserError, match=r"data.hub 'my reviews' is not a hub dataset id \(OWNER/NAME\); fix it"
    ):
        task_from_file(path)
