"""A study naming a task file whose `family:` is not one name is refused in the task file's one line
before anything is written (was a TypeError traceback, which left the empty --out folder behind).
The task file's own checks are tests/eval/test_task_file_family.py."""

from __future__ import annotations

from fake_study import tiny_corpus
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.reliability.treestate import assert_unchanged, world_state
from tests.study.study_fixtures import MINE, polarity_task_file

from encoderlab.eval.tasks import TASKS


def test_a_study_naming_a_task_file_of_a_family_list_is_refused_and_writes_nothing(
    tmp_path, capsys, monkeypatch
):
    tiny_corpus(tmp_path / "corpus.jsonl", 300)
    polarity_task_file(tmp_path)
    task = tmp_path / "polarity.yaml"
    task.write_text(task.read_text().replace("family: sc", "family: [sc]"))
    (tmp_path / "my-study.yaml").write_text(MINE)
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    before = world_state(tmp_path)
    registered = dict(TASKS)
    line = rf"^encoderlab: error: task file {task}: family must be one name of ir, pair-sc, qa, sc, tc, got \['sc'\]"
    try:
        for argv in (
            ["run", tmp_path / "my-study.yaml", "--out", tmp_path / "s"],
            ["plan", tmp_path / "my-study.yaml"],
        ):
            code, err = cli(["study", *argv], capsys)
            assert_one_line(code, err, line + r"; write `family: sc`$")
            assert_unchanged(before)
    finally:
        TASKS.clear()
        TASKS.update(registered)
