"""`encoderlab data prepare` of a sharded corpus folder (gzipped JSON lines, plain JSON lines and a parquet
file with FineWeb-Edu's extra columns, read in sorted order) killed with SIGKILL at seeded moments, then
rerun: the prepared folder is byte-identical to an uninterrupted prepare, every shard is read once
(none skipped, none read twice across the kills), and the counts are the records'.

test_prepare_kill.py kills a prepare of one small file; a large corpus is many shards, where a checkpoint
falls inside one file and the rerun must re-read the files before it and seek into that one. The kills land
after different checkpoints, so the runs stop in different shards. Large-data measurements (1.5 GB) are
scripts, not tests: this fixture is small and exercises the same code path."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from corpus_fixtures import corpus_records, tokenizer_dir  # noqa: F401 (fixture)
from prepare_kill_fixtures import assert_same_as_uninterrupted, kill_then_rerun


def _shards(root, n_docs: int, n_shards: int) -> list[dict]:
    """`n_docs` records over `n_shards` files, each kind in turn; the records in the order they are read."""
    records = corpus_records(n_docs)
    per = -(-n_docs // n_shards)
    root.mkdir()
    for s in range(n_shards):
        part = records[s * per : (s + 1) * per]
        lines = "".join(json.dumps(r) + "\n" for r in part)
        if s % 3 == 0:
            with gzip.open(root / f"part-{s:03d}.jsonl.gz", "wt", encoding="utf-8") as f:
                f.write(lines)
        elif s % 3 == 1:
            (root / f"part-{s:03d}.jsonl").write_text(lines, encoding="utf-8")
        else:  # FineWeb-Edu's layout: text and id, then columns the reader leaves alone
            table = pa.table(
                {
                    "text": [r["text"] for r in part],
                    "id": [r["id"] for r in part],
                    "url": [f"https://example.org/{r['id']}" for r in part],
                    "score": [float(i % 5) for i in range(len(part))],
                    "int_score": [i % 5 for i in range(len(part))],
                }
            )
            pq.write_table(table, root / f"part-{s:03d}.parquet", row_group_size=500)
    return records


@pytest.mark.slow
def test_sigkill_in_a_sharded_corpus_then_rerun_reads_every_shard_once(tmp_path, tokenizer_dir):  # noqa: F811
    corpus = tmp_path / "corpus"
    records = _shards(corpus, 12_000, n_shards=9)  # 47 chunks of 256; a checkpoint every chunk
    clean, out, done = kill_then_rerun(corpus, tokenizer_dir, tmp_path, seed=11)
    assert_same_as_uninterrupted(clean, out, done)
    meta = json.loads((out / "meta.json").read_text())
    (source,) = meta["sources"]
    files = [f["path"] for f in source["files"]]
    assert files == sorted(str(p) for p in corpus.iterdir()) and all(f["complete"] for f in source["files"])
    splits = meta["splits"]
    assert splits["train"]["docs"] + splits["val"]["docs"] == len(records) == source["docs"]
