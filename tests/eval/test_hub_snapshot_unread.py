"""Hub cache snapshots that `load_hub` does not read offline (`hub.Unread`): one of parquet or JSON files
that nothing tells complete (neither encoderlab's record of its fetch nor huggingface_hub's file list of
the repo, as `hf_hub_download` leaves it), and one of files of a kind encoderlab does not read there
(images, ...). Both are left to `datasets`' offline path, the copy it prepared with the hub reachable;
when it has none, one line says so and what to do (it was "check the name and your connection", the
files on disk).

The hub cache is written as huggingface_hub keeps it (`hub_snapshot_fixtures.downloaded_snapshot`: blobs,
snapshots/COMMIT/ symlinks, refs/main, and with `tree` the repo's file list trees/COMMIT.json).
Nothing downloads."""

from __future__ import annotations

import datasets
import pytest
from tests.eval import hub_snapshot_fixtures
from tests.eval.hub_snapshot_fixtures import (
    TREE_COMMIT,
    downloaded_snapshot,
    hub_online,
    hub_unreachable,
    unchecked_line,
)

from encoderlab.errors import UserError
from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hubsource import HubSource

cache = hub_snapshot_fixtures.cache  # the fixture: an empty hub cache of the test's own, offline
JSON = {"data/train.jsonl": '{"review": "fine"}\n{"review": "bad"}\n'}
# a PNG's signature and nothing else: no image is decoded before the refusal
IMAGES = {"train/cat.png": "\x89PNG\r\n\x1a\n", "train/dog.png": "\x89PNG\r\n\x1a\n"}
CSVS = {"train/a.csv": "review\nfine\n", "train/b.csv": "review\nbad\n"}


def _kind_line(repo: str, found: str) -> str:
    """The line for `repo`'s snapshot of a kind encoderlab does not read there; `found`: where it is seen."""
    return (
        f"cannot load {repo} from the hub cache: {found}, which encoderlab does not read there (it reads "
        "csv, json, parquet, arrow, text files), and `datasets` holds no copy of it prepared with the hub "
        "reachable; run once with the hub reachable (HF_HUB_OFFLINE unset), which prepares that copy, or "
        "set ENCODERLAB_HUB_DATA=DIR to read a local mirror"
    )


def test_an_unchecked_json_snapshot_without_a_prepared_copy_says_what_to_do(cache):
    # was: "check the name and your connection, or set ENCODERLAB_HUB_DATA=DIR to read a local mirror",
    # with the files on disk: the snapshot is left to `datasets`, which had prepared no copy
    snapshot = downloaded_snapshot(cache, "me/json", JSON, list(JSON), tree=False)
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/json"))
    assert str(err.value) == unchecked_line(snapshot, "me/json")
    downloaded_snapshot(cache, "me/json", JSON, [])  # the fix the line names: `hf download` caches the list
    assert load_hub(HubSource("me/json"))["train"]["review"] == ["fine", "bad"]


def test_an_unchecked_json_snapshot_is_read_from_the_copy_datasets_prepared_online(tmp_path, cache):
    # not refused for want of a list where `datasets`' offline path has what it prepared online, from
    # the files it fetched whole
    folder = tmp_path / "served" / "me" / "json"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "train.jsonl").write_text(JSON["data/train.jsonl"])
    with pytest.MonkeyPatch.context() as online:
        hub_online(online, tmp_path / "online-hub-cache", "me/json", folder)
        assert load_hub(HubSource("me/json"))["train"]["review"] == ["fine", "bad"]
    assert datasets.config.HF_HUB_OFFLINE
    downloaded_snapshot(cache, "me/json", JSON, list(JSON), tree=False)
    assert load_hub(HubSource("me/json"))["train"]["review"] == ["fine", "bad"]


def test_a_snapshot_of_a_kind_encoderlab_does_not_read_there_says_so_not_check_your_connection(cache):
    # was: "check the name and your connection", the files on disk and listed: an image folder is not
    # read from the hub cache, and `datasets` had prepared no copy of it
    snapshot = downloaded_snapshot(cache, "me/images", IMAGES, list(IMAGES))
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/images"))
    found = f"its snapshot {snapshot} holds files of `datasets`' imagefolder builder"
    assert str(err.value) == _kind_line("me/images", found)


def test_with_the_hub_unreachable_the_line_comes_after_one_try(cache, monkeypatch):
    # the hub unreachable without an offline setting: `datasets` found no copy it prepared on its one
    # try, so the line comes at once, not after a second round of its attempts
    tries = hub_unreachable(monkeypatch)
    downloaded_snapshot(cache, "me/images", IMAGES, list(IMAGES))
    with pytest.raises(UserError, match="holds files of `datasets`' imagefolder builder, which encoderlab"):
        load_hub(HubSource("me/images"))
    assert tries == ["me/images"]


def test_a_repo_mostly_of_images_fetched_for_its_csv_files_only_is_not_read_as_csv(cache):
    # was: `hf download --include "*.csv"` of a card-less repo of five PNG files and two CSV files read
    # the snapshot as a CSV dataset of those two files, where `datasets` reads the repo as the image
    # folder it is (it picks the builder of the extension most of the repo's files have)
    repo = IMAGES | {f"train/more{i}.png": "\x89PNG\r\n\x1a\n" for i in range(3)} | CSVS
    snapshot = downloaded_snapshot(cache, "me/mostly-images", repo, list(CSVS))
    with pytest.raises(UserError) as err:
        load_hub(HubSource("me/mostly-images"))
    listed = snapshot.parents[1] / "trees" / f"{TREE_COMMIT}.json"
    found = (
        f"the repo's file list ({listed}) names files of `datasets`' imagefolder builder for it (the "
        f"extension most of its files have; its snapshot is {snapshot})"
    )
    assert str(err.value) == _kind_line("me/mostly-images", found)


def test_a_repo_mostly_of_csv_files_beside_some_images_is_still_read_as_csv(cache):
    # the other side of the count: two PNG files and two CSV files are a draw, which `datasets` gives to
    # CSV; the snapshot of the CSV files is read as before
    downloaded_snapshot(cache, "me/some-images", IMAGES | CSVS, list(CSVS))
    assert load_hub(HubSource("me/some-images"))["train"]["review"] == ["fine", "bad"]
