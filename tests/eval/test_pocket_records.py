"""The pocket loaders parse an asset once per process and file version (`pocket._records`)."""

from __future__ import annotations

import os

from tests.eval.fixtures import write_asset

from encoderlab.eval.tasks import pocket


def _tweets(n: int, word: str) -> list[dict]:
    return [{"id": str(i), "text": f"{word} {i}", "meta": {"label": "positive"}} for i in range(n)]


def test_a_rewritten_asset_is_read_again(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path))
    write_asset(tmp_path, "tweets", _tweets(3, "old"))
    first = pocket._records("tweets")
    assert [r["text"] for r in first] == ["old 0", "old 1", "old 2"]
    assert pocket._records("tweets") == first  # the second read is the parsed copy

    data = tmp_path / "assets" / "tweets" / "data.jsonl"
    stat = data.stat()
    write_asset(tmp_path, "tweets", _tweets(3, "new"))  # same size, same path: a re-fetch
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert [r["text"] for r in pocket._records("tweets")] == ["new 0", "new 1", "new 2"]


def test_callers_get_their_own_list(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path))
    write_asset(tmp_path, "tweets", _tweets(2, "x"))
    pocket._records("tweets").clear()
    assert len(pocket._records("tweets")) == 2
