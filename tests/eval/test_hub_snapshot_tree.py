"""A hub CSV/TSV dataset's snapshot that encoderlab did not fetch (no record of its files under
$ENCODERLAB_HOME/cache/hub-snapshots), read offline, checked against the repo's file list that
`huggingface_hub`'s `snapshot_download` (so `hf download`) caches beside the snapshot.

The hub cache is written in the layout huggingface_hub 2.4 keeps and reads (`datasets--OWNER--NAME/`:
`refs/main` holding the commit, `blobs/<git blob sha1>`, `snapshots/COMMIT/<repo path>` a relative
symlink to its blob, and `trees/COMMIT.json`, `{"format_version": 1, "files": {path: {"size",
"blob_id"}}}`, as `huggingface_hub._tree_cache.write_tree_cache` writes it), and read by the real
`snapshot_download` and `get_cached_repo_tree`, offline. Nothing downloads."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.eval import hub_snapshot_fixtures
from tests.eval.hub_snapshot_fixtures import (
    TREE_COMMIT,
    downloaded_snapshot,
    unchecked_line,
)
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.errors import UserError
from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hubsource import HubSource

cache = hub_snapshot_fixtures.cache  # the fixture: an empty hub cache of the test's own, offline
SHARD = "review,stars\n{}\n"
TWO_CONFIGS = """---
configs:
- config_name: a
  data_files:
  - split: train
    path: a/train-*.csv
- config_name: b
  data_files:
  - split: train
    path: b/train-*.csv
---
"""
REPO = {  # the repo at TREE_COMMIT: a card of two configs, each of two shards, and files no config reads
    "README.md": TWO_CONFIGS,
    ".gitattributes": "*.parquet filter=lfs\n",
    "a/train-00000-of-00002.csv": SHARD.format("a0,1"),
    "a/train-00001-of-00002.csv": SHARD.format("a1,0"),
    "b/train-00000-of-00002.csv": SHARD.format("b0,1"),
    "b/train-00001-of-00002.csv": SHARD.format("b1,0"),
    "notes/about.json": "{}\n",
}
NO_CARD = {  # a repo without a card: `datasets` infers its splits from the file names
    "data/train-00000-of-00002.csv": SHARD.format("fine,1\nbad,0"),
    "data/train-00001-of-00002.csv": SHARD.format("ok,1"),
    "data/test-00000-of-00001.csv": SHARD.format("so so,0"),
}


def _line(snapshot: Path, repo: str, source: str, missing: str) -> str:
    listed = snapshot.parents[1] / "trees" / f"{TREE_COMMIT}.json"
    return (
        f"cannot load {source} from the hub cache: its snapshot {snapshot} lacks {missing} of the files "
        f"the repo's file list ({listed}) names for it (a download cut short, or one of some files only), "
        "so its splits would miss rows; run once with the hub reachable (HF_HUB_OFFLINE unset), or "
        f"`hf download --repo-type dataset --revision {TREE_COMMIT} {repo}`"
    )


def test_a_snapshot_of_some_files_only_is_refused_offline_naming_those_the_repo_lists(cache):
    # was: `hf download --include "data/train-00000*"` (or one cut short) left one shard of two, and
    # offline the train split was read with the first shard's rows only, silently
    snapshot = downloaded_snapshot(cache, "me/nocard", NO_CARD, ["data/train-00000-of-00002.csv"])
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/nocard"))
    missing = "data/test-00000-of-00001.csv, data/train-00001-of-00002.csv"
    assert str(err.value) == _line(snapshot, "me/nocard", "me/nocard", missing)
    # the fix the line names (`hf download` of that commit fills the snapshot): read whole
    downloaded_snapshot(
        cache, "me/nocard", NO_CARD, ["data/train-00001-of-00002.csv", "data/test-00000-of-00001.csv"]
    )
    ds = load_hub(HubSource("me/nocard"))
    assert ds["train"]["review"] == ["fine", "bad", "ok"] and ds["test"]["review"] == ["so so"]


def test_a_config_never_fetched_beside_one_that_was_is_refused_not_read_short(cache):
    # was: config a downloaded whole and config b's first shard only (`--include "a/*" "b/*00000*"`):
    # b was read offline with half its rows
    fetched = ["README.md", *(f for f in REPO if f.startswith("a/")), "b/train-00000-of-00002.csv"]
    snapshot = downloaded_snapshot(cache, "me/configs", REPO, fetched)
    assert load_hub(HubSource("me/configs", "a"))["train"]["review"] == ["a0", "a1"]
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/configs", "b"))
    expected = _line(snapshot, "me/configs", "me/configs (config b)", "b/train-00001-of-00002.csv")
    assert str(err.value) == expected
    # files no config of it reads (.gitattributes, notes/about.json) are not asked for
    downloaded_snapshot(cache, "me/configs", REPO, ["b/train-00001-of-00002.csv"])
    assert load_hub(HubSource("me/configs", "b"))["train"]["review"] == ["b0", "b1"]


def test_data_files_patterns_are_matched_against_the_list(cache):
    source = HubSource("me/configs", data_files=(("train", "b/*.csv"),))
    snapshot = downloaded_snapshot(cache, "me/configs", REPO, ["README.md", "b/train-00001-of-00002.csv"])
    with pytest.raises(UserError) as err:
        load_hub(source)
    assert str(err.value) == _line(snapshot, "me/configs", source.describe(), "b/train-00000-of-00002.csv")


MIXED_CARD = """---
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train-*
---
"""


@pytest.mark.parametrize(
    ("kinds", "fetched"),
    [
        (("jsonl", "csv"), "data/train-00001-of-00002.csv"),  # was read: the CSV shard's rows only
        (("parquet", "jsonl"), "data/train-00001-of-00002.jsonl"),
        (("parquet", "parquet"), "data/train-00001-of-00002.parquet"),
        (("jsonl", "jsonl"), "data/train-00000-of-00002.jsonl"),
    ],
)
def test_a_config_of_other_or_mixed_file_kinds_is_checked_against_the_list(cache, kinds, fetched):
    # was: only the list's CSV and TSV files were looked for, so a config of two shards, one JSON lines
    # and one CSV, fetched with its CSV shard only was read as CSV with that shard's rows, silently; and
    # a snapshot of parquet or JSON shards lacking one ended in "check the name and your connection"
    files = {"README.md": MIXED_CARD, ".gitattributes": "*.parquet filter=lfs\n"}
    shards = [f"data/train-{i:05d}-of-00002.{kind}" for i, kind in enumerate(kinds)]
    files |= {name: SHARD.format(f"r{i},1") for i, name in enumerate(shards)}
    snapshot = downloaded_snapshot(cache, "me/kinds", files, ["README.md", fetched])
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/kinds"))
    missing = next(name for name in shards if name != fetched)
    assert str(err.value) == _line(snapshot, "me/kinds", "me/kinds", missing)


def test_a_repo_without_configs_is_checked_for_the_kind_datasets_reads_of_it(cache):
    # a repo publishing its splits both as parquet and as CSV, without card configs: `datasets` reads
    # the parquet files (the kind it infers from the whole list); was: a snapshot of the CSV files only
    # was read from the hub cache as CSV, where the repo is read as parquet
    kinds = ("csv", "parquet")
    both = {f"data/{split}.{kind}": SHARD.format("x,1") for split in ("train", "test") for kind in kinds}
    snapshot = downloaded_snapshot(cache, "me/both", both, ["data/train.csv", "data/test.csv"])
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/both"))
    assert str(err.value) == _line(snapshot, "me/both", "me/both", "data/test.parquet, data/train.parquet")


def test_a_snapshot_neither_fetched_by_encoderlab_nor_listed_is_refused_offline_not_read_as_it_is(cache):
    # was: read as it was. `hf_hub_download` (as `datasets` fetches a dataset's files, or `hf download
    # REPO FILE` of one file) writes no trees/COMMIT.json, and encoderlab recorded no fetch: a download
    # cut short after the first train shard gave its rows only, silently
    snapshot = downloaded_snapshot(cache, "me/nocard", NO_CARD, ["data/train-00000-of-00002.csv"], tree=False)
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/nocard"))
    listed = snapshot.parents[1] / "trees" / f"{TREE_COMMIT}.json"
    assert str(err.value) == unchecked_line(snapshot, "me/nocard")
    assert not listed.parent.exists()  # nothing written into the hub cache (huggingface_hub's)
    line = str(err.value)
    listed.parent.mkdir()
    listed.write_text('{"format_version": 1, "files": ')  # cut short: huggingface_hub ignores it
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/nocard"))
    assert str(err.value) == line
    # the fix the line names: `hf download` of the repo (`snapshot_download`) caches its file list
    # before it fetches, and the rest: read whole
    rest = ["data/train-00001-of-00002.csv", "data/test-00000-of-00001.csv"]
    downloaded_snapshot(cache, "me/nocard", NO_CARD, rest)
    assert load_hub(HubSource("me/nocard"))["train"]["review"] == ["fine", "bad", "ok"]


def test_a_snapshot_lacking_the_card_its_file_list_names_says_so_not_check_your_connection(cache):
    # was: `hf download --include "a/*"` left the data files without README.md, which the repo's list
    # names: huggingface_hub's `snapshot_download` raised IncompleteSnapshotError (a
    # LocalEntryNotFoundError), taken for "no snapshot", and `datasets`' offline path ended in "check
    # the name and your connection"
    snapshot = downloaded_snapshot(cache, "me/configs", REPO, [f for f in REPO if f.startswith("a/")])
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/configs", "a"))
    listed = snapshot.parents[1] / "trees" / f"{TREE_COMMIT}.json"
    assert str(err.value) == (
        f"cannot load me/configs (config a) from the hub cache: its snapshot {snapshot} lacks README.md "
        f"of the dataset card files the repo's file list ({listed}) names (a download cut short, or one "
        "of some files only), so `datasets` cannot resolve its configs and splits; run once with the hub "
        "reachable (HF_HUB_OFFLINE unset), or "
        f"`hf download --repo-type dataset --revision {TREE_COMMIT} me/configs`"
    )
    downloaded_snapshot(cache, "me/configs", REPO, ["README.md"])  # the fix the line names
    assert load_hub(HubSource("me/configs", "a"))["train"]["review"] == ["a0", "a1"]


def test_a_json_snapshot_lacking_the_card_its_file_list_names_is_refused_as_a_csv_one(cache):
    # was left to `datasets`' offline path ("check the name and your connection"): a JSON snapshot was
    # not read from the hub cache; now one checked complete is (`hubcomplete.SNAPSHOT_KINDS`), so its card is
    # looked for as a CSV snapshot's is
    files = {"README.md": "---\nlicense: mit\n---\n", "data/train.jsonl": '{"review": "fine"}\n'}
    snapshot = downloaded_snapshot(cache, "me/json", files, ["data/train.jsonl"])
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/json"))
    assert str(err.value).startswith(
        f"cannot load me/json from the hub cache: its snapshot {snapshot} lacks README.md of the dataset "
        "card files the repo's file list"
    )
    downloaded_snapshot(cache, "me/json", files, ["README.md"])  # the fix the line names
    assert load_hub(HubSource("me/json"))["train"]["review"] == ["fine"]


def test_a_refused_snapshot_leaves_no_lock_in_the_datasets_cache(cache, tmp_path, monkeypatch):
    # was: `datasets.load_dataset_builder(snapshot)`, read for the kind of its files alone, took a lock
    # file in the datasets cache and left it there when the snapshot was then refused
    snapshot = downloaded_snapshot(cache, "me/nocard", NO_CARD, ["data/train-00000-of-00002.csv"], tree=False)
    monkeypatch.chdir(tmp_path)
    before = world_state(tmp_path)
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/nocard"))
    assert str(err.value) == unchecked_line(snapshot, "me/nocard")
    assert_unchanged(before)
