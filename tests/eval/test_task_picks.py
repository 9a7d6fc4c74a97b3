"""`eval --task-file FOLDER --tasks NAME` runs only the named tasks of the task files, as
lm-evaluation-harness's `--tasks` picks a task of a folder of configs; task files none of whose tasks
`--tasks` names run whole beside the built-in tasks it names (unchanged), and a name that is no task's is
one line listing every such name."""

from __future__ import annotations

import pytest
from tests.eval.fixtures import model_folder, sentiment_files, write_task_file
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli

from encoderlab.errors import UserError
from encoderlab.eval.commands import planned_tasks

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def _folder(tmp_path):
    """tasks/ holding my_sst (readable data) and my_mrpc, whose data file is missing: read, it is refused."""
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    write_task_file(tasks, "sst.yaml", name="my_sst", **sentiment_files(tasks))
    broken = {**sentiment_files(tasks), "data": {"train": "gone.csv", "test": "test.csv"}}
    write_task_file(tasks, "mrpc.yaml", name="my_mrpc", **broken)
    return tasks


def test_tasks_picks_a_task_of_a_folder_of_task_files(tmp_path):
    # was: "--tasks my_sst: a task of your task files, which run whole; ... leave it out of --tasks"
    tasks = _folder(tmp_path)
    _, names, checked, _ = planned_tasks(None, ["my_sst"], (tasks,), (1e-4,), (0,))
    assert names == checked == ["my_sst"]  # my_mrpc's data was not read: it would be refused
    with pytest.raises(UserError, match="gone.csv"):
        planned_tasks(None, [], (tasks,), (1e-4,), (0,))  # the folder whole reads it
    with pytest.raises(UserError, match="^task my_sst given twice; give each once$"):
        planned_tasks(None, ["my_sst", "my_sst"], (tasks,), (1e-4,), (0,))


def test_unknown_names_in_tasks_beside_task_files_are_one_line(tmp_path, capsys):
    tasks = _folder(tmp_path)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", tasks, "--tasks", "my_sts", "nope"]
    code, err = cli([*argv, "--lrs", "1e-4", "--seeds", "0", "--out", tmp_path / "e"], capsys)
    assert_one_line(
        code,
        err,
        r"^encoderlab: error: --tasks my_sts nope: no tasks have these names in your task files \(my_mrpc, "
        r"my_sst\) or among the built-in tasks \(did you mean my_sts -> my_sst\?\); check the spelling$",
    )
    assert_printed_as_documented("eval-tasks-unknown-beside-task-files", err, tmp_path)
    assert not (tmp_path / "e").exists()
