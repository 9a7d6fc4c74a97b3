"""A hub dataset of parquet or JSON-lines files that `hf download --repo-type dataset REPO` fetched whole
into the hub cache, read offline from that snapshot as a mirror is, with the splits, features and rows
an online load gives (`hubsnapshot._cached_snapshot`, `SNAPSHOT_KINDS`).

The hub cache is written as `snapshot_download` leaves it (`hub_snapshot_fixtures.cache_snapshot`: the files,
refs/main and the repo's file list, trees/COMMIT.json); the online load is the simulated hub of
`hub_snapshot_fixtures.hub_online`, into a `datasets` cache of its own (so the offline load cannot read a
copy `datasets` prepared online). Nothing downloads."""

from __future__ import annotations

import json

import datasets
import pytest
from datasets import ClassLabel, Dataset, Features, List, Value
from tests.eval import hub_fixtures as hub
from tests.eval import hub_snapshot_fixtures
from tests.eval.hub_snapshot_fixtures import REAL_FACTORY, cache_snapshot, hub_online, local_only

from encoderlab.errors import UserError
from encoderlab.eval.tasks.hub import load_hub
from encoderlab.eval.tasks.hubsource import HubSource

cache = hub_snapshot_fixtures.cache  # the fixture: an empty hub cache of the test's own, offline
FEATURES = Features(
    {
        "text": Value("string"),
        "label": ClassLabel(names=["negative", "positive"]),
        "tags": List(ClassLabel(names=["O", "B-PER", "I-PER"])),
        "answers": {"text": List(Value("string")), "answer_start": List(Value("int32"))},
    }
)


def _rows(n: int, offset: int) -> Dataset:
    rows = {
        "text": [f"review {offset + i}" for i in range(n)],
        "label": [(offset + i) % 2 for i in range(n)],
        "tags": [[0, 1, 2][: 1 + i % 3] for i in range(n)],
        "answers": [{"text": [f"a{i}"], "answer_start": [i]} for i in range(n)],
    }
    return Dataset.from_dict(rows, features=FEATURES)


def _parquet_repo(root):
    """A repo of one config, its splits parquet files written by `datasets` (features in their schema)
    and named by the card's `configs`, as `hub_fixtures.write_repo` writes the paper's datasets."""
    splits = {
        s: (f"data/{s}-00000-of-00001.parquet", _rows(4, i * 10)) for i, s in enumerate(("train", "test"))
    }
    return hub.write_repo(root, "me/parquet", {"default": splits})


def _jsonl_repo(root):
    """A repo without a card, its splits JSON-lines files of nested records (`datasets` infers them)."""
    folder = root / "me" / "jsonl"
    (folder / "data").mkdir(parents=True)
    for split, n in (("train", 3), ("test", 2)):
        records = [
            {"text": f"{split} {i}", "label": i, "meta": {"ids": [i, i + 1], "src": "x"}} for i in range(n)
        ]
        (folder / "data" / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def _text_repo(root):
    """A repo without a card, its splits text files (`datasets`' `text` builder: a line a row)."""
    folder = root / "me" / "text"
    (folder / "data").mkdir(parents=True)
    for split, n in (("train", 3), ("test", 2)):
        (folder / "data" / f"{split}.txt").write_text("".join(f"{split} line {i}\n" for i in range(n)))
    return folder


def _arrow_repo(root):
    """A repo without a card, its splits Arrow stream files as `save_to_disk` writes them (features in
    their schema's metadata), read by `datasets`' `arrow` builder."""
    folder = root / "me" / "arrow"
    (folder / "data").mkdir(parents=True)
    for i, split in enumerate(("train", "test")):
        _rows(3, i * 10).save_to_disk(root / "saved" / split)
        (root / "saved" / split / "data-00000-of-00001.arrow").rename(
            folder / "data" / f"{split}-00000-of-00001.arrow"
        )
    return folder


def _online_load(tmp_path, monkeypatch, repo, folder):
    """What a load with the hub reachable gives, prepared in a `datasets` cache of its own."""
    with monkeypatch.context() as online:
        online.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "online-cache"))
        fetched = hub_online(online, tmp_path / "online-hub-cache", repo, folder)
        ds = load_hub(HubSource(repo))
    assert fetched["resolved"] == ["dataset_module_factory"]  # it was the simulated hub's load
    return ds


KINDS = [
    ("me/parquet", _parquet_repo),
    ("me/jsonl", _jsonl_repo),
    ("me/text", _text_repo),  # these two were left to `datasets` offline too, after the others were not
    ("me/arrow", _arrow_repo),
]


@pytest.mark.parametrize(("repo", "write"), KINDS)
def test_a_snapshot_hf_download_fetched_whole_is_read_offline_as_online(
    tmp_path, cache, monkeypatch, repo, write
):
    # was: offline, a parquet or JSON snapshot was left to `datasets`, which reads only a copy it
    # prepared before: "check the name and your connection", although every file was on disk
    folder = write(tmp_path / "served")
    online = _online_load(tmp_path, monkeypatch, repo, folder)
    cache_snapshot(
        cache, repo, folder, [f.relative_to(folder).as_posix() for f in folder.rglob("*") if f.is_file()]
    )
    monkeypatch.setattr(datasets.load, "dataset_module_factory", local_only(REAL_FACTORY))
    offline = load_hub(HubSource(repo))
    assert sorted(offline) == sorted(online) == ["test", "train"]
    for split in online:
        assert offline[split].features == online[split].features
        assert offline[split].to_dict() == online[split].to_dict()
    if repo in ("me/parquet", "me/arrow"):  # the ClassLabel names and nested structs of the schema survive
        assert offline["train"].features == FEATURES
        assert offline["train"].features["label"].names == ["negative", "positive"]


def test_an_incomplete_parquet_snapshot_is_still_refused(tmp_path, cache):
    folder = _parquet_repo(tmp_path / "served")
    cache_snapshot(cache, "me/parquet", folder, ["README.md", "data/train-00000-of-00001.parquet"])
    with pytest.raises(UserError, match="lacks data/test-00000-of-00001.parquet of the files the repo's"):
        load_hub(HubSource("me/parquet"))
