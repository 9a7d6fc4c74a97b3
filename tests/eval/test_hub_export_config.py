"""A task file picks a config of a hub dataset's parquet export (`data: {hub: ..., revision:
refs/convert/parquet, config: ...}`, `eval/tasks/hubexport.py`).

The fixture writes the export as the hub's parquet converter lays it out: one folder per config, one per
split in it, `<config>/<split>/0000.parquet`, no card (the converter's commits on that branch, e.g.
"Update parquet files" adding `default/train/0000.parquet`, `default/validation/0000.parquet`, or
`split_2/train/0000.parquet` for a config `split_2`; huggingface.co/datasets/<repo>/commit/... pages of
parquet-converter, 2026-12-06). The configs differ in their labels and split names (GLUE's mnli has
`validation_matched` and `validation_mismatched`). Before, a config was refused ("it has configs default,
and no config 'nli'"), and no config read both configs' rows as one dataset, unsaid."""

from __future__ import annotations

import pytest
from datasets import ClassLabel, Dataset, Features, Value
from tests.eval.fixtures import write_task_file
from tests.eval.hub_snapshot_fixtures import SERVED_COMMIT as COMMIT
from tests.eval.hub_snapshot_fixtures import cache, write_export, write_tree  # noqa: F401

from encoderlab.errors import UserError
from encoderlab.eval.tasks import load_task
from encoderlab.eval.tasks.custom import task_from_file

pytestmark = pytest.mark.usefixtures("isolated_tasks")
REPO = "someone/multi"
EXPORT = "refs/convert/parquet"
CONFIGS = {
    "sentiment": (("negative", "positive"), {"train": 40, "validation": 6, "test": 8}),
    "nli": (
        ("entailment", "neutral", "contradiction"),
        {"train": 30, "validation_matched": 5, "validation_mismatched": 7},
    ),
}


def _export(folder):
    """REPO's export at `folder` (a mirror: `hf download --repo-type dataset REPO --revision EXPORT --local-dir
    folder`, or a hub cache snapshot of the branch), each row's text naming its config and split."""
    return write_export(folder, CONFIGS)


def _spec(tmp_path, config, splits=None):
    data = {
        "hub": REPO,
        "revision": EXPORT,
        **({"config": config} if config else {}),
        **({"splits": splits} if splits else {}),
    }
    return write_task_file(tmp_path, "t.yaml", name="mine", family="sc", columns={"text": "text"}, data=data)


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    _export(tmp_path / "mirrors" / REPO)
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "mirrors"))


@pytest.mark.usefixtures("mirror")
@pytest.mark.parametrize("config", list(CONFIGS))
def test_a_config_of_a_parquet_export_reads_its_own_files_and_split_names(tmp_path, config):
    labels, splits = CONFIGS[config]
    test = "validation_mismatched" if config == "nli" else "test"
    mapped = {"test": test, "validation": None} if config == "nli" else None
    task, data = load_task(task_from_file(_spec(tmp_path, config, mapped)))
    assert task.labels == labels  # this config's classes, not the other's
    assert len(data.tests["test"]) == splits[test]
    read = [*data.train, *data.val, *data.tests["test"]]
    assert {r["text"].split()[0] for r in read} == {config}  # nothing of the other config
    assert len(data.train) + len(data.val) == splits["train"] + splits.get("validation", 0)


@pytest.mark.usefixtures("mirror")
@pytest.mark.parametrize(("config", "said"), [(None, "none was named"), ("sst2", "no config 'sst2'")])
def test_an_export_config_left_out_or_unknown_names_the_exports_configs(tmp_path, config, said):
    with pytest.raises(UserError) as err:
        load_task(task_from_file(_spec(tmp_path, config)))
    names = ", ".join(sorted(CONFIGS))
    assert str(err.value).endswith(
        f": it has configs {names}, and {said}; name one (a task file's data.config)"
    )
    assert "\n" not in str(err.value)


def test_a_config_of_an_export_in_the_hub_cache_is_read_offline(tmp_path, cache):  # noqa: F811
    """The branch's snapshot as huggingface_hub caches it (refs/refs/convert/parquet names the commit)."""
    storage = cache / f"datasets--{REPO.replace('/', '--')}"
    snapshot = _export(storage / "snapshots" / COMMIT)
    files = {p.relative_to(snapshot).as_posix(): p.read_bytes() for p in snapshot.rglob("*") if p.is_file()}
    write_tree(storage, COMMIT, files)  # as `hf download --revision refs/convert/parquet` leaves it
    (storage / "refs" / "refs" / "convert").mkdir(parents=True)
    (storage / "refs" / EXPORT).write_text(COMMIT)
    task, data = load_task(task_from_file(_spec(tmp_path, "sentiment")))
    assert (
        task.labels == CONFIGS["sentiment"][0] and len(data.tests["test"]) == CONFIGS["sentiment"][1]["test"]
    )


def test_online_the_export_is_listed_from_the_hubs_file_list_of_the_branch(monkeypatch, tmp_path):
    """With the hub reachable, the branch's file list (`HfApi.list_repo_files`, faked: nothing downloads)
    gives the config's splits, in the converter's current layout and in its 2023 one."""
    import datasets
    import huggingface_hub

    from encoderlab.eval.tasks.hubexport import export_source
    from encoderlab.eval.tasks.hubsource import HubSource, parquet_export

    monkeypatch.delenv("ENCODERLAB_HUB_DATA", raising=False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    listed = [
        ".gitattributes",
        "nli/train/0000.parquet",
        "nli/train/0001.parquet",
        "nli/validation_matched/0000.parquet",
    ]
    listed += [
        "old/multi-train.parquet",
        "old/multi-test-00000-of-00002.parquet",
        "sentiment/test/0000.parquet",
    ]
    asked = []

    def list_repo_files(self, repo_id, *, repo_type=None, revision=None, **kwargs):
        asked.append((repo_id, repo_type, revision))
        return listed

    monkeypatch.setattr(huggingface_hub.HfApi, "list_repo_files", list_repo_files)
    for config, splits in (("nli", ("train", "validation_matched")), ("old", ("test", "train"))):
        source = export_source(HubSource(REPO, config, EXPORT))
        assert source == parquet_export(REPO, config, splits), source
    assert asked == [(REPO, "dataset", EXPORT)] * 2


def test_an_export_validation_split_named_dev_is_mapped_or_refused_never_left_unread(tmp_path, monkeypatch):
    """Before the export was listed, `datasets`' default patterns read a single-config export's `dev` folder
    as validation; read under its own name, `dev` was left unread and validation cut from train, unsaid.
    Now that is one line naming the split and both fixes, and each fix reads what it says."""
    features = Features({"text": Value("string"), "label": ClassLabel(names=["neg", "pos"])})
    for split, n in {"train": 40, "dev": 10, "test": 8}.items():
        path = tmp_path / "mirrors" / REPO / "default" / split / "0000.parquet"
        path.parent.mkdir(parents=True)
        rows = {"text": [f"{split} row {i}" for i in range(n)], "label": [i % 2 for i in range(n)]}
        Dataset.from_dict(rows, features=features).to_parquet(path)
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "mirrors"))
    with pytest.raises(UserError) as err:
        task_from_file(_spec(tmp_path, None))
    assert str(err.value) == (  # as docs/errors.md's row task-file-hub-validation-named-otherwise shows it
        f"task file {tmp_path}/t.yaml: {REPO} (config default of its parquet export) at {EXPORT} has no split "
        "'validation' but has 'dev' (it has dev, test, train), which validation cut from train would leave "
        "unread; map it (data.splits: {validation: dev}), or cut validation from train (data.splits: "
        "{validation: null})"
    )
    _, mapped = load_task(task_from_file(_spec(tmp_path, None, {"validation": "dev"})))
    assert {r["text"].split()[0] for r in mapped.val} == {"dev"} and len(mapped.val) == 10
    _, cut = load_task(task_from_file(_spec(tmp_path, None, {"validation": None})))
    assert {r["text"].split()[0] for r in cut.val} == {"train"} and len(cut.train) + len(cut.val) == 40


@pytest.mark.parametrize("fingerprint", ["", "-a09b74b3ef9c3b56"])
def test_a_mirror_in_the_hubs_data_layout_named_at_the_export_is_read_by_datasets_patterns(
    tmp_path, monkeypatch, fingerprint
):
    """A mirror of the main branch (`data/train-00000-of-00001.parquet`, as `push_to_hub` writes) named with
    `revision: refs/convert/parquet` was read by `datasets`' patterns before the export was listed; listed,
    its shard name was taken for the 2023 layout's `<name>-<split>` and the load stopped in an IndexError
    traceback. Files in neither of the converter's layouts are read as before. `datasets` 2.x's push_to_hub
    also wrote a fingerprint after the shard (`data/train-00000-of-00001-a09b74b3ef9c3b56.parquet`, as
    deepset/prompt-injections holds): that was taken for a split named `a09b74b3ef9c3b56` of a config
    `data`, and the task refused as having no split 'train'."""
    for split, n in {"train": 40, "test": 8}.items():
        path = tmp_path / "mirrors" / REPO / "data" / f"{split}-00000-of-00001{fingerprint}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = {"text": [f"{split} row {i}" for i in range(n)], "label": ["neg", "pos"] * (n // 2)}
        Dataset.from_dict(rows).to_parquet(path)
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "mirrors"))
    _, data = load_task(task_from_file(_spec(tmp_path, None)))
    assert (len(data.train) + len(data.val), len(data.tests["test"])) == (40, 8)
    assert {r["text"].split()[0] for r in data.tests["test"]} == {"test"}
