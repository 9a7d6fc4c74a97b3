"""A new user's likely mistakes in a task file, each one line naming where and what (from an audit that
wrote task files from docs/evaluation.md alone)."""

from __future__ import annotations

import pytest
from tests.eval.fixtures import write_task_file
from tests.eval.test_custom_tasks import _sentiment_files

from encoderlab.errors import UserError
from encoderlab.eval.tasks.custom import load_task_files

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def test_a_task_file_of_malformed_yaml_names_the_line_and_the_problem(tmp_path):
    # was: "cannot read it (ParserError); give a YAML task spec", which said neither where nor what
    path = tmp_path / "task.yaml"
    path.write_text("name: reviews\nfamily: sc\ndata:\n  train: train.csv\n test: test.csv\n")
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value) == (
        f"task file {path} is not valid YAML at line 5, column 2: expected <block end>, but found "
        "'<block mapping start>' (while parsing a block mapping); fix the syntax"
    )


@pytest.mark.parametrize(
    "finetune,got",
    [
        ({"max_steps": -3}, "max_steps must be >= 1, or null for `epochs`, got max_steps: -3"),
        ({"micro_batch_size": 0}, "must be >= 1, got batch_size: 16, micro_batch_size: 0"),
        ({"warmup_ratio": 1.5}, "warmup_ratio must be in [0, 1), got warmup_ratio: 1.5"),
    ],
)
def test_a_bad_finetune_value_is_named_with_its_value_not_the_whole_config(tmp_path, finetune, got):
    # was: "..., got FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=-3, epochs=1.0, ...)",
    # twelve fields to read for the one that is wrong
    path = write_task_file(tmp_path, name="reviews", **_sentiment_files(tmp_path), finetune=finetune)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value).endswith(got)
    assert "FinetuneConfig" not in str(err.value)
