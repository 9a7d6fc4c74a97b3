"""A task file's `family:` is checked at load, first: one line naming the file, the field and the
families, for a value that is not one family's name, and for fields (columns, options, a metric) of
another family than the one named. The study's side (a study naming such a file) is
tests/study/test_study_task_file_family.py."""

from __future__ import annotations

import pytest
from tests.eval.fixtures import model_folder, sentiment_files, write_task_file
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli

from encoderlab.errors import UserError
from encoderlab.eval.tasks.custom import load_task_files

pytestmark = pytest.mark.usefixtures("isolated_tasks")

FAMILIES = "ir, pair-sc, qa, sc, tc"


@pytest.mark.parametrize(
    "family, got, fix",
    [
        (["sc"], "['sc']", "`family: sc`"),  # was: TypeError: unhashable type: 'list', a traceback
        ({"sc": 1}, "{'sc': 1}", "one of them, e.g. `family: sc`"),  # likewise ('dict')
        (["sc", "tc"], "['sc', 'tc']", "one of them, e.g. `family: sc`"),
        (None, "null", "one of them, e.g. `family: sc`"),  # was: "unknown family 'None'"
        (True, "true", "one of them, e.g. `family: sc`"),  # `family: yes`, as YAML 1.1 reads it
    ],
)
def test_a_family_that_is_not_one_name_is_one_line(tmp_path, family, got, fix):
    path = write_task_file(tmp_path, name="reviews", **{**sentiment_files(tmp_path), "family": family})
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert (
        str(err.value) == f"task file {path}: family must be one name of {FAMILIES}, got {got}; write {fix}"
    )


def test_a_family_that_is_not_one_name_is_refused_by_eval_before_anything_is_written(tmp_path, capsys):
    spec = {**sentiment_files(tmp_path), "family": ["sc"]}
    path = write_task_file(tmp_path, "task_family_list.yaml", name="reviews", **spec)
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--out", tmp_path / "e"]
    for check in ([], ["--check"]):
        code, err = cli([*argv, "--lrs", "1e-4", "--seeds", "0", *check], capsys)
        assert_one_line(code, err, rf"^encoderlab: error: task file {path}: family must be one name of ")
        assert_printed_as_documented("task-file-family-not-a-name", err, tmp_path)
        assert not (tmp_path / "e").exists()


QA = {"question": "q", "context": "c", "answers": "a"}


@pytest.mark.parametrize(
    "family, change, said",
    [
        ("sc", {"columns": QA}, "columns of a sc task: unknown fields answers, context, question; valid: label, text"),
        ("sc", {"options": {"stride": 64, "v2": True}}, "options: unknown fields stride, v2; valid: head, multilabel, pooling, positive_label, regression"),
        ("sc", {"metric": "exact_match"}, "metric 'exact_match' is not one of sc's: accuracy, macro_f1, weighted_f1, f1"),
        ("qa", {}, "columns of a qa task: unknown fields label, text; valid: answers, context, id, question"),
    ],
)  # fmt: skip
def test_another_familys_fields_name_that_family(tmp_path, family, change, said):
    # was: the fields were only unknown, which did not say that `family:` was the mistake
    spec = {**sentiment_files(tmp_path), "family": family, **change}
    path = write_task_file(tmp_path, name="reviews", **spec)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    owner = "qa" if family == "sc" else "sc"
    fix = (
        "(qa's: if the task is qa, write `family: qa`)"
        if owner == "qa"
        else "(sc's or pair-sc's: if the task is one of them, write its family, e.g. `family: sc`)"
    )
    assert str(err.value) == f"task file {path}: {said} {fix}"


def test_fields_no_family_has_get_no_family_named(tmp_path):
    spec = {**sentiment_files(tmp_path), "options": {"strid": 64}}
    path = write_task_file(tmp_path, name="reviews", **spec)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value).endswith("valid: head, multilabel, pooling, positive_label, regression")
