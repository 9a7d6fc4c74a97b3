"""A hub dataset of CSV or TSV files read as its mirror is (`hub.load_hub` -> `hubsnapshot.hub_snapshot`): cells as
written, the task files' checks, from the local hub cache's snapshot of its files, online and offline.

The hub cache is the real layout `huggingface_hub` keeps (`datasets--OWNER--NAME/refs/main`,
`snapshots/COMMIT/<repo paths>`), read offline by the real `snapshot_download`. Online, the hub is
simulated at the calls that reach it: `huggingface_hub.hf_hub_download` (copying the asked-for file of a
fixture repo into that cache, as it downloads it), the `HfApi` calls that resolve a repo's metadata
(counted), `datasets`' resolution of a hub id (`dataset_module_factory`: the fixture folder's configs
with its files as `hf://datasets/REPO@COMMIT/...` URLs, which also records `refs/main` as its card
download does) and `cached_path` (what `datasets` downloads by itself: a parquet dataset's files).
Nothing downloads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasets
import datasets.load
import huggingface_hub
import huggingface_hub._snapshot_download
import pytest
from datasets import Dataset
from tests.eval import hub_fixtures as hub
from tests.eval import hub_snapshot_fixtures
from tests.eval.hub_snapshot_fixtures import (
    QRELS,
    REAL_FACTORY,
    SERVED_COMMIT,
    cache_snapshot,
    dataset_storage,
    hub_online,
    hub_unreachable,
    local_only,
    qrels_repo,
)

from encoderlab.errors import UserError
from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hubsource import HubSource

cache = hub_snapshot_fixtures.cache  # the fixture: an empty hub cache of the test's own, offline


def test_qrels_an_earlier_run_cached_are_read_offline_as_written(tmp_path, cache):
    # was: offline, `datasets` looked for a copy it had prepared and found none ("Couldn't reach
    # 'BeIR/msmarco-qrels' on the Hub"), although the hub cache held the TSV files
    folder = qrels_repo(tmp_path / "served")
    cache_snapshot(cache, QRELS, folder, ["train.tsv", "dev.tsv", "test.tsv"])
    ds = load_hub(HubSource(QRELS))
    assert sorted(ds) == ["test", "train", "validation"]
    assert ds["validation"]["query-id"] == ["000", "001", "002", "003"]  # as written: not 0, 1, 2, 3
    assert ds["test"]["corpus-id"][0] == "01000" and ds["test"]["score"] == ["0", "1", "0", "1"]


def test_offline_without_a_cached_snapshot_is_one_line_naming_the_download(tmp_path, cache, monkeypatch):
    # was "... from BeIR/msmarco-qrels: Couldn't reach ...; check the name and your connection, or set ..."
    # (tests/eval/test_hub_cache_task_files.py has the whole line)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    with pytest.raises(UserError) as err:
        load_hub(HubSource(QRELS))
    assert str(err.value).startswith(
        f"cannot load {QRELS}: the hub is offline (HF_HUB_OFFLINE=1) and the local hub cache holds nothing of "
        f"{QRELS}; download it with the hub online (hf download --repo-type dataset {QRELS})"
    )
    assert str(err.value).endswith("or set ENCODERLAB_HUB_DATA=DIR to read a local mirror")


def test_a_hub_csv_is_fetched_into_the_hub_cache_and_read_as_written_then_offline(
    tmp_path, cache, monkeypatch, capfd
):
    # was: read by `datasets` from the hub with pandas' defaults: 00123 the number 123, N/A missing
    datasets.enable_progress_bars()  # the default (another test in this process may have turned it off)
    folder = tmp_path / "served" / "me" / "reviews"
    folder.mkdir(parents=True)
    (folder / "train.csv").write_text("review,stars\n00123,N/A\nfine film,0123\n")
    (folder / "test.csv").write_text("review,stars\nNULL,00123\n")
    fetched = hub_online(monkeypatch, cache, "me/reviews", folder)
    ds = load_hub(HubSource("me/reviews"))
    assert ds["train"]["review"] == ["00123", "fine film"] and ds["train"]["stars"] == ["N/A", "0123"]
    assert ds["test"]["review"] == ["NULL"]
    assert fetched == {
        "resolved": ["dataset_module_factory"],  # the repo's metadata once, by `datasets`
        "hf_hub_download": ["README.md", ".huggingface.yaml", "test.csv", "train.csv"],
        "cached_path": [],  # `datasets` downloaded nothing itself
    }
    assert "Generating train split" in capfd.readouterr().err  # `datasets`' progress bars stay
    # offline, the real snapshot_download finds what the first load fetched; nothing resolves on the hub
    monkeypatch.setattr(datasets.load, "dataset_module_factory", local_only(REAL_FACTORY))
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    assert load_hub(HubSource("me/reviews"))["train"]["review"] == ["00123", "fine film"]


SHARDED_CARD = """---
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train-*.csv
---
"""


def test_a_snapshot_whose_fetch_was_cut_short_is_refused_offline_not_read_short(tmp_path, cache, monkeypatch):
    # was: offline, the hub cache's snapshot was read as it was: a train split of two shards, the second
    # never fetched (Ctrl-C), gave the first shard's rows, silently
    folder = tmp_path / "served" / "me" / "shards"
    (folder / "data").mkdir(parents=True)
    (folder / "README.md").write_text(SHARDED_CARD)
    (folder / "data" / "train-00000-of-00002.csv").write_text("review,stars\nfine,1\nbad,0\n")
    (folder / "data" / "train-00001-of-00002.csv").write_text("review,stars\nok,1\n")
    fetched = hub_online(monkeypatch, cache, "me/shards", folder)
    fetch = huggingface_hub.hf_hub_download

    def cut_short(repo_id, filename, **kwargs):
        if filename == "data/train-00001-of-00002.csv":
            raise KeyboardInterrupt
        return fetch(repo_id, filename, **kwargs)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", cut_short)
    monkeypatch.setattr(huggingface_hub._snapshot_download, "hf_hub_download", cut_short)
    with pytest.raises(KeyboardInterrupt):
        load_hub(HubSource("me/shards"))
    monkeypatch.setattr(datasets.load, "dataset_module_factory", local_only(REAL_FACTORY))
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/shards"))
    snapshot = dataset_storage(cache, "me/shards") / "snapshots" / SERVED_COMMIT
    assert str(err.value) == (
        f"cannot load me/shards from the hub cache: its snapshot {snapshot} lacks "
        "data/train-00001-of-00002.csv of the files the dataset was fetched with (a download cut short, or "
        "one of some files only), so its splits would miss rows; run once with the hub reachable "
        f"(HF_HUB_OFFLINE unset), or `hf download --repo-type dataset --revision {SERVED_COMMIT} me/shards`"
    )
    # the fix the line names: one load with the hub reachable fetches the rest, then offline reads it all
    hub_online(monkeypatch, cache, "me/shards", folder)
    assert load_hub(HubSource("me/shards"))["train"]["review"] == ["fine", "bad", "ok"]
    monkeypatch.setattr(datasets.load, "dataset_module_factory", local_only(REAL_FACTORY))
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    assert load_hub(HubSource("me/shards"))["train"]["review"] == ["fine", "bad", "ok"]
    assert fetched["resolved"] == ["dataset_module_factory"]  # the hub's metadata once per online load


def _sharded(root: Path) -> Path:
    folder = root / "served" / "me" / "shards"
    (folder / "data").mkdir(parents=True)
    (folder / "README.md").write_text(SHARDED_CARD)
    (folder / "data" / "train-00000-of-00002.csv").write_text("review,stars\nfine,1\nbad,0\n")
    (folder / "data" / "train-00001-of-00002.csv").write_text("review,stars\nok,1\n")
    return folder


@pytest.mark.parametrize("damage", ["truncated", "files not a list", "a folder"])
def test_a_damaged_snapshot_record_is_one_line_whose_fix_reads_the_dataset_whole(
    tmp_path, cache, monkeypatch, damage
):
    # was: untested, and the line said only "delete it", not what that loses; a record whose files were
    # not a list was rewritten online (other configs' files lost) and a TypeError traceback offline; a
    # folder in its place was "[Errno 21] Is a directory ...; check the name and your connection". Then
    # the line said deleting it lost only the check: the snapshot was read as it was, offline, short
    folder = _sharded(tmp_path)
    hub_online(monkeypatch, cache, "me/shards", folder)
    load_hub(HubSource("me/shards"))
    record = tmp_path / "encoderlab-home" / "cache" / "hub-snapshots" / f"me--shards@{SERVED_COMMIT}.json"
    record.unlink()
    if damage == "a folder":
        record.mkdir()
    else:
        config = json.dumps({"name": None})  # the key of the config `HubSource("me/shards")` loads
        record.write_text(json.dumps({"configs": {config: 3}}) if damage == "files not a list" else "{")
    expected = (
        f"cannot load me/shards: {record} is damaged (not the JSON encoderlab writes there); delete it, then "
        "fetch the dataset again, which records which files are in the hub cache's snapshot (offline, a "
        "snapshot without encoderlab's record or huggingface_hub's file list of the repo is refused: it may be "
        "cut short): run once with the hub reachable (HF_HUB_OFFLINE unset), or "
        "`hf download --repo-type dataset me/shards`"
    )
    for offline in (False, True):  # the same line online (before any fetch) and offline
        monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", offline)
        with pytest.raises(UserError) as err:
            load_hub(HubSource("me/shards"))
        assert str(err.value) == expected
    # deleted, a snapshot cut short is refused offline, not read short; the load online the line names
    # fetches the rest and records it again
    shutil.rmtree(record) if record.is_dir() else record.unlink()
    (
        dataset_storage(cache, "me/shards")
        / "snapshots"
        / SERVED_COMMIT
        / "data"
        / "train-00001-of-00002.csv"
    ).unlink()
    with pytest.raises(UserError, match="^cannot load me/shards from the hub cache: nothing tells its"):
        load_hub(HubSource("me/shards"))
    hub_online(monkeypatch, cache, "me/shards", folder)
    assert load_hub(HubSource("me/shards"))["train"]["review"] == ["fine", "bad", "ok"]
    assert "data/train-00001-of-00002.csv" in record.read_text()
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    assert load_hub(HubSource("me/shards"))["train"]["review"] == ["fine", "bad", "ok"]


def test_a_hub_dataset_of_parquet_files_is_read_by_datasets_as_before(tmp_path, cache, monkeypatch):
    rows = Dataset.from_dict({"text": ["00123", "N/A"], "label": [0, 1]})
    folder = hub.write_repo(
        tmp_path / "served",
        "me/tiny",
        {"default": {"train": ("data/train-00000-of-00001.parquet", rows)}},
        card=False,
    )
    fetched = hub_online(monkeypatch, cache, "me/tiny", folder)
    assert load_hub(HubSource("me/tiny"))["train"]["text"] == ["00123", "N/A"]
    assert fetched == {
        "resolved": ["dataset_module_factory"],
        "hf_hub_download": [],
        "cached_path": ["data/train-00000-of-00001.parquet"],
    }


def test_an_unreachable_hub_is_tried_once_then_the_hub_cache(tmp_path, cache, monkeypatch):
    # the hub unreachable without an offline setting: `datasets`' resolution fails once, the hub cache
    # is read, and `load_dataset` does not try the hub a second time
    tries = hub_unreachable(monkeypatch)
    with pytest.raises(UserError, match=f"cannot load {QRELS} from {QRELS}: Couldn't reach") as err:
        load_hub(HubSource(QRELS))
    assert tries == [QRELS] and "check the name and your connection" in str(err.value)
    cache_snapshot(cache, QRELS, qrels_repo(tmp_path / "served"), ["train.tsv", "dev.tsv", "test.tsv"])
    assert load_hub(HubSource(QRELS))["validation"]["query-id"] == ["000", "001", "002", "003"]


def test_a_malformed_csv_in_the_hub_cache_snapshot_says_so_not_check_your_connection(tmp_path, cache):
    # was: "...; check the name and your connection, or set ENCODERLAB_HUB_DATA=DIR to read a local
    # mirror", for a file the hub cache holds (fetched fine) whose quote is never closed
    folder = tmp_path / "served" / "me" / "reviews"
    folder.mkdir(parents=True)
    (folder / "train.csv").write_text('review,stars\nfine film,1\n"never closed,2\nok,3\n')
    cache_snapshot(cache, "me/reviews", folder, ["train.csv"])
    snapshot = dataset_storage(cache, "me/reviews") / "snapshots" / SERVED_COMMIT
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/reviews"))
    line = str(err.value)
    assert line.startswith(f"cannot load me/reviews from {snapshot}: ") and "\n" not in line
    assert "connection" not in line
    assert line.endswith(
        "the dataset's file in that hub cache snapshot is malformed as published; report it to the "
        "dataset's owner, or set ENCODERLAB_HUB_DATA=DIR to read a corrected local mirror"
    )


SNAPSHOT_FIX = (
    "the dataset's file in that hub cache snapshot is malformed as published; report it to the dataset's "
    "owner, or set ENCODERLAB_HUB_DATA=DIR to read a corrected local mirror"
)


@pytest.mark.parametrize(
    ("name", "text", "problem", "own_fix"),
    [
        ("train.csv", "review,review\nfine film,1\n", "header names the column 'review' twice", "rename one"),
        ("train.csv", "review,stars\nfine, film,1\n", "first row has 3 fields", "quote a field"),
        (
            "train.tsv",
            'review\tstars\n"Great\t1\nok\t0\nhe said "so"\t1\n',
            "holds a tab",
            "quote that field",
        ),
        ("train.csv", "review,stars\nfin\xe9,1\n", "is not UTF-8 text", "save it as UTF-8"),
    ],
)
def test_a_hub_cache_snapshot_failing_the_task_file_checks_is_said_malformed_as_published(
    tmp_path, cache, name, text, problem, own_fix
):
    # was the task files' fix ("rename one of them", "quote that field whole ..."): an edit of a file in
    # the hub cache, which is not the user's (the next fetch puts the dataset's own back)
    folder = tmp_path / "served" / "me" / "reviews"
    folder.mkdir(parents=True)
    (folder / name).write_bytes(text.encode("latin1"))
    cache_snapshot(cache, "me/reviews", folder, [name])
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/reviews"))
    line = str(err.value)
    assert line.startswith("cannot load me/reviews") and "\n" not in line and problem in line
    assert str(dataset_storage(cache, "me/reviews") / "snapshots" / SERVED_COMMIT) in line
    assert own_fix not in line and line.endswith(SNAPSHOT_FIX)


def test_an_empty_json_file_of_a_hub_dataset_names_no_mirror(tmp_path, cache, monkeypatch):
    # was "...; put the split's records in it, or re-download the mirror": there is no mirror, and the
    # file is the dataset's as published
    folder = tmp_path / "served" / "me" / "notes"
    folder.mkdir(parents=True)
    (folder / "train.jsonl").write_text("")
    (folder / "test.jsonl").write_text('{"text": "a", "label": 0}\n')
    hub_online(monkeypatch, cache, "me/notes", folder)
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/notes"))
    assert str(err.value) == (
        "cannot load me/notes from me/notes: a data file of it is empty as published; report it to the "
        "dataset's owner, or set ENCODERLAB_HUB_DATA=DIR to read a corrected local mirror"
    )
