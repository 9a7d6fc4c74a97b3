"""A refusal of a hub dataset's parquet export names the export's config and the configs or splits it has,
and the fix, never the globs encoderlab reads it with (`hubsource.parquet_export`, `hubexport.export_problem`).

Before, a task file's refusal described its source by our glob (`someone/multi (files default/dev/*.parquet,
...)`), which no task file holds; and a built-in task's export lacking its config or a split was `datasets`'
words of globs matching nothing ("No (supported) data files found in ...", "Couldn't infer the same data file
format for all splits. Got {'train': ('parquet', {}), 'validation': (None, {}), ...}") with "check the mirror's
files", naming neither what the export holds nor what to do."""

from __future__ import annotations

import pytest
from tests.eval.fixtures import write_task_file
from tests.eval.hub_snapshot_fixtures import write_export

from encoderlab.errors import UserError
from encoderlab.eval.tasks import load_task
from encoderlab.eval.tasks.custom import task_from_file
from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hubsource import parquet_export

pytestmark = pytest.mark.usefixtures("isolated_tasks")
REPO = "someone/multi"
EXPORT = "refs/convert/parquet"
CONFIGS = {
    "sentiment": (("negative", "positive"), {"train": 40, "test": 8}),
    "nli": (("entailment", "neutral", "contradiction"), {"train": 30, "validation_matched": 5}),
}
FIX = (
    "the dataset's layout is not the one docs/evaluation.md gives: set ENCODERLAB_HUB_DATA=DIR to read a "
    "mirror in it"
)


@pytest.fixture(autouse=True)
def mirror(tmp_path, monkeypatch):
    write_export(tmp_path / "mirrors" / REPO, CONFIGS)
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "mirrors"))


@pytest.mark.parametrize(
    ("config", "splits", "said"),
    [
        (
            "sst2",
            ("train", "test"),
            "its parquet export has no config 'sst2' (it has configs nli, sentiment)",
        ),
        (
            "nli",
            ("train", "validation", "test"),
            "it has no splits validation, test (it has train, validation_matched)",
        ),
        ("sentiment", ("train", "validation"), "it has no split validation (it has test, train)"),
    ],
)
def test_a_built_in_tasks_export_lacking_its_config_or_splits_names_what_it_has(config, splits, said):
    with pytest.raises(UserError) as err:
        load_hub(parquet_export(REPO, config, splits))
    assert (
        str(err.value)
        == f"cannot load {REPO} (config {config} of its parquet export) at {EXPORT}: {said}; {FIX}"
    )


def test_a_task_files_export_split_it_lacks_is_named_with_the_config_not_a_glob(tmp_path):
    data = {"hub": REPO, "revision": EXPORT, "config": "nli", "splits": {"test": "validation_mismatched"}}
    path = write_task_file(tmp_path, "t.yaml", name="mine", family="sc", columns={"text": "text"}, data=data)
    with pytest.raises(UserError) as err:
        load_task(task_from_file(path))
    assert str(err.value) == (
        f"task file {path}: {REPO} (config nli of its parquet export) at {EXPORT} has no split "
        "'validation_mismatched' (it has train, validation_matched); map it in data.splits"
    )
