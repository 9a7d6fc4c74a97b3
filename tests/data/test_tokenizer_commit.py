# ruff: noqa: F811 (the tokenizer_dir fixture, imported)
"""Prepared data records the hub commit of a tokenizer named by a hub id (`meta.json`'s
`tokenizer.commit`), as a run records its start model's (`start_model`). The tokenizer hash tells two
vocabularies apart but not which commit of the repo they came from: two commits holding the same
tokenizer files hash the same, and an unpinned id names whatever the default branch holds when it is
read. The hub is simulated by the local hub cache (`snapshots/SHA/` under `models--OWNER--NAME`, refs
for `main` and a tag; tests/data/test_hubmodels.py), read offline through the same calls as a download.
Before, `meta.json` kept the id and the hash only."""

from __future__ import annotations

import shutil

from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from tests.data.hub_cache_fixtures import SHA_A, SHA_B, cache_two_commits

from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.sources import SourceConfig

HUB_ID = "someone/enc"  # the repo cache_two_commits lays out: main at SHA_B, tag v1 at SHA_A


def _prepare(tmp_path, tokenizer: str, out: str):
    corpus = write_jsonl(tmp_path / "c.jsonl", corpus_records(30))
    cfg = PrepareConfig(sources=(SourceConfig(location=str(corpus)),), tokenizer=tokenizer, decontaminate=())
    return read_meta(prepare(cfg, tmp_path / out, workers=1, progress=False))


def test_a_hub_tokenizer_records_the_commit_it_was_read_at(tmp_path, monkeypatch, tokenizer_dir):
    cache_two_commits(tmp_path, monkeypatch, lambda folder, sha: shutil.copytree(tokenizer_dir, folder))
    unpinned = _prepare(tmp_path, HUB_ID, "unpinned")["tokenizer"]
    pinned = _prepare(tmp_path, f"{HUB_ID}@v1", "pinned")["tokenizer"]
    assert unpinned["source"] == HUB_ID and unpinned["commit"] == SHA_B  # the default branch's commit
    assert pinned["source"] == f"{HUB_ID}@v1" and pinned["commit"] == SHA_A  # the tag's commit
    assert unpinned["hash"] == pinned["hash"]  # the same files: only the commit tells them apart


def test_a_tokenizer_folder_records_no_commit(tmp_path, tokenizer_dir):
    recorded = _prepare(tmp_path, str(tokenizer_dir), "local")["tokenizer"]
    assert set(recorded) == {"source", "hash"}
