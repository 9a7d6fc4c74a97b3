# ruff: noqa: F811 (the fixture, imported)
"""A task file reading a hub dataset that the local hub cache holds, offline, as a user with a Hugging Face
cache runs it (`HF_HUB_OFFLINE=1`, the dataset fetched before by `datasets` or `hf download`).

The hub cache is huggingface_hub's layout (`datasets--OWNER--NAME/refs/main`, `snapshots/COMMIT/`, the
repo's file list in `trees/COMMIT.json`), read by the real `snapshot_download`; the repository is
`nyu-mll/glue` as the hub serves it (`hub_fixtures.glue`: `<config>/<split>-00000-of-00001.parquet`, a
card whose `configs` name them; the hub tree of nyu-mll/glue, e.g. `mrpc/train-00000-of-00001.parquet`,
`mrpc/validation-...`, `mrpc/test-...` at refs/pr/16). Nothing downloads."""

from __future__ import annotations

import pytest
from tests.eval import hub_fixtures as hub
from tests.eval.fixtures import write_task_file
from tests.eval.hub_snapshot_fixtures import SERVED_COMMIT, cache, cache_snapshot  # noqa: F401

from encoderlab.errors import UserError
from encoderlab.eval.tasks.custom import task_from_file

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def _glue_in_cache(tmp_path, cache) -> None:
    """nyu-mll/glue fetched whole into the hub cache (every file of the repo in its snapshot)."""
    folder = hub.glue(tmp_path / "served")
    names = [f.relative_to(folder).as_posix() for f in folder.rglob("*") if f.is_file()]
    cache_snapshot(cache, "nyu-mll/glue", folder, names)


@pytest.mark.parametrize(("config", "said"), [(None, "none was named"), ("sst-2", "no config 'sst-2'")])
def test_a_config_left_out_or_unknown_offline_names_the_configs_not_the_connection(
    tmp_path, cache, config, said
):
    """Was, offline with the dataset in the hub cache: "Couldn't reach 'nyu-mll/glue' on the Hub
    (OfflineModeIsEnabled); check the name and your connection", the snapshot on disk and the config the
    problem (a mirror of the same files said which configs it has: `test_custom_tasks`)."""
    _glue_in_cache(tmp_path, cache)
    data = {"hub": "nyu-mll/glue", "config": config, "splits": {"test": "validation", "validation": None}}
    fields = {"name": "my-sst2", "family": "sc", "columns": {"text": "sentence"}}
    spec = write_task_file(tmp_path, "sst2.yaml", **fields, data=data)
    with pytest.raises(UserError) as err:
        task_from_file(spec)
    assert str(err.value).endswith(
        f": it has configs sst2, mnli, qqp, and {said}; name one (a task file's data.config)"
    ), str(err.value)
    data["config"] = "sst2"  # the fix the line names: read from the same snapshot, offline
    task = task_from_file(write_task_file(tmp_path, "sst2.yaml", **fields, data=data))
    assert task.options.labels == ("negative", "positive")


@pytest.mark.parametrize("variable", ["HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"])
def test_a_revision_the_hub_cache_lacks_offline_names_what_it_holds_and_the_download(
    tmp_path, cache, monkeypatch, variable
):
    """Was: "Couldn't reach 'nyu-mll/glue' on the Hub (OfflineModeIsEnabled); check the name and your
    connection", the repo in the cache at main; as a model's pinned id offline, the line names the
    revisions held and the download of the one pinned. A revision held (its commit, or main) is read. The
    line names the variable that took `datasets` offline (it said HF_HUB_OFFLINE of HF_DATASETS_OFFLINE too)."""
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):  # as `datasets` read them: offline (`cache`)
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, "1")
    _glue_in_cache(tmp_path, cache)
    data = {"hub": "nyu-mll/glue", "config": "sst2", "splits": {"test": "validation", "validation": None}}
    fields = {"name": "my-sst2", "family": "sc", "columns": {"text": "sentence"}}
    spec = write_task_file(tmp_path, "sst2.yaml", **fields, data={**data, "revision": "v2"})
    with pytest.raises(UserError) as err:
        task_from_file(spec)
    assert str(err.value) == (
        f"cannot load nyu-mll/glue (config sst2) at v2: the hub is offline ({variable}=1) "
        "and the local hub cache has no revision 'v2' of nyu-mll/glue (it holds main); download it with the hub "
        "online (hf download --repo-type dataset --revision v2 nyu-mll/glue), or, in a task file, pin one it "
        "holds (data.revision: main)"
    )
    for held in ("main", SERVED_COMMIT):
        spec = write_task_file(tmp_path, "sst2.yaml", **fields, data={**data, "revision": held})
        assert task_from_file(spec).options.labels == ("negative", "positive")


@pytest.mark.parametrize("revision", [None, "v2"])
def test_a_dataset_the_hub_cache_holds_nothing_of_offline_names_the_download_and_the_variable(
    tmp_path, cache, monkeypatch, revision
):
    """Was: "Couldn't reach 'nyu-mll/glue' on the Hub (OfflineModeIsEnabled); check the name and your
    connection, or set ENCODERLAB_HUB_DATA=DIR to read a local mirror", which said neither that the hub was
    off by the user's own variable nor how to fetch the dataset (a study reads its task files' test splits
    before anything runs: tests/study/test_task_file_decontamination.py)."""
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)  # the variable named is HF_HUB_OFFLINE's
    data = {"hub": "nyu-mll/glue", "config": "sst2", "revision": revision}
    data |= {"splits": {"test": "validation", "validation": None}}
    fields = {"name": "my-sst2", "family": "sc", "columns": {"text": "sentence"}}
    with pytest.raises(UserError) as err:
        task_from_file(write_task_file(tmp_path, "sst2.yaml", **fields, data=data))
    pin, at = (f"--revision {revision} ", f" at {revision}") if revision else ("", "")
    assert str(err.value) == (
        f"cannot load nyu-mll/glue (config sst2){at}: the hub is offline (HF_HUB_OFFLINE=1) and the local hub "
        f"cache holds nothing of nyu-mll/glue; download it with the hub online (hf download --repo-type dataset "
        f"{pin}nyu-mll/glue), or unset HF_HUB_OFFLINE to fetch it, or set ENCODERLAB_HUB_DATA=DIR to read a "
        "local mirror"
    )
    _glue_in_cache(tmp_path, cache)  # the download the line names: read from the cache, offline
    data["revision"] = None
    assert task_from_file(write_task_file(tmp_path, "sst2.yaml", **fields, data=data)).options.labels == (
        "negative",
        "positive",
    )
