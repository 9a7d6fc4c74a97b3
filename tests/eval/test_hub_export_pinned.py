"""A task file pins a hub dataset's parquet export to one of its commits (`data: {hub: ..., revision: <sha>,
config: ...}`, the sha `refs/convert/parquet` resolved to), and gets the export's config as it would at the
branch (`eval/tasks/hubexport.py`, `export_commit`).

How the hub names the export: the converter's bot publishes its files "in the refs/convert/parquet branch"
(its notices on the hub, e.g. huggingface.co/datasets/acmc/beamit-annotated_full_texts_dataset/discussions/14);
`HfApi.list_repo_refs` lists that branch under `converts`, its `target_commit` the sha; its layout is
`[config]/[split]/[shard index: 0000 to 9999].parquet` since 2023 (huggingface/dataset-viewer#1463), before
that `<config>/<name>-<split>.parquet` (`duorc/resolve/refs%2Fconvert%2Fparquet/ParaphraseRC/duorc-train.parquet`,
huggingface/dataset-viewer#1526), with no dataset card. Before, only the branch's name was recognised: at its
commit, `datasets` read the export by its default patterns, so a config was refused ("it has configs default,
and no config 'nli'") and none named mixed both configs' rows."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest
from tests.eval.fixtures import write_task_file
from tests.eval.hub_snapshot_fixtures import SERVED_COMMIT as COMMIT
from tests.eval.hub_snapshot_fixtures import cache, dataset_storage, write_export, write_tree  # noqa: F401

from encoderlab.eval.tasks import load_task
from encoderlab.eval.tasks.custom import task_from_file
from encoderlab.eval.tasks.hubexport import export_commit, export_source
from encoderlab.eval.tasks.hubsource import HubSource, parquet_export

pytestmark = pytest.mark.usefixtures("isolated_tasks")
REPO = "someone/multi"
CONFIGS = {
    "sentiment": (("negative", "positive"), {"train": 40, "validation": 6, "test": 8}),
    "nli": (("entailment", "neutral", "contradiction"), {"train": 30, "validation": 5, "test": 7}),
}


def _task(tmp_path, config):
    data = {"hub": REPO, "revision": COMMIT, "config": config}
    path = write_task_file(tmp_path, "t.yaml", name="mine", family="sc", columns={"text": "text"}, data=data)
    return load_task(task_from_file(path))


def _read_only(config, task, data):
    labels, splits = CONFIGS[config]
    assert task.labels == labels  # this config's classes, not the other's
    assert len(data.tests["test"]) == splits["test"]
    read = [*data.train, *data.val, *data.tests["test"]]
    assert {r["text"].split()[0] for r in read} == {config}  # nothing of the other config


@pytest.mark.parametrize("config", list(CONFIGS))
def test_a_mirror_of_the_export_pinned_to_its_commit_reads_the_configs_files(tmp_path, monkeypatch, config):
    """A mirror `hf download --repo-type dataset --revision <sha> REPO --local-dir` wrote (its records under
    `.cache/huggingface/`, which are not the export's files)."""
    mirror = write_export(tmp_path / "mirrors" / REPO, CONFIGS)
    (mirror / ".cache" / "huggingface").mkdir(parents=True)
    (mirror / ".cache" / "huggingface" / ".gitignore").write_text("*\n")
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "mirrors"))
    _read_only(config, *_task(tmp_path, config))


def test_the_exports_commit_in_the_hub_cache_is_read_offline(tmp_path, cache):  # noqa: F811
    """`hf download --repo-type dataset --revision <sha> REPO` leaves the snapshot and its file list, and no
    ref of the branch: the commit alone names it."""
    storage = dataset_storage(cache, REPO)
    snapshot = write_export(storage / "snapshots" / COMMIT, CONFIGS)
    (snapshot / ".gitattributes").write_text("*.parquet filter=lfs diff=lfs merge=lfs -text\n")
    write_tree(
        storage, COMMIT, {p.relative_to(snapshot).as_posix(): p.read_bytes() for p in snapshot.rglob("*.*")}
    )
    _read_only("nli", *_task(tmp_path, "nli"))


def test_online_a_commit_is_an_exports_when_its_file_list_is_the_converters(monkeypatch):
    """The commit's file list (`HfApi.list_repo_files`, faked: nothing downloads) says which: the converter's
    layout and no card; a main branch's commit (a card, or files in another layout) is left to `datasets`."""
    import datasets
    import huggingface_hub

    monkeypatch.delenv("ENCODERLAB_HUB_DATA", raising=False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    export = [".gitattributes", "nli/train/0000.parquet", "nli/train/0001.parquet", "nli/test/0000.parquet"]
    listed = {COMMIT: export}

    def list_repo_files(self, repo_id, *, repo_type=None, revision=None, **kwargs):
        assert (repo_id, repo_type) == (REPO, "dataset")
        return listed[revision]

    monkeypatch.setattr(huggingface_hub.HfApi, "list_repo_files", list_repo_files)
    source = HubSource(REPO, "nli", COMMIT)
    assert export_source(source) == parquet_export(REPO, "nli", ("test", "train"), COMMIT)
    listed[COMMIT] = ["README.md", *export]  # the main branch: its card names the configs
    assert export_source(source) == source


@pytest.mark.parametrize(
    ("names", "export"),
    [
        (["default/train/0000.parquet", "default/test/0000.parquet"], True),
        (["ParaphraseRC/duorc-train.parquet", "ParaphraseRC/duorc-test.parquet"], True),  # the 2023 layout
        (["README.md", "default/train/0000.parquet"], False),  # a card: a main branch's commit
        (["sample/10BT/000_00000.parquet"], False),  # FineWeb-Edu's main: not the converter's shard names
        (["data/train-00000-of-00001.parquet"], False),  # push_to_hub's layout
        ([".gitattributes"], False),  # no parquet file
    ],
)
def test_which_commits_are_the_converters(names, export):
    assert export_commit([PurePosixPath(n) for n in names]) is export
