"""A prepared folder's token files are held to what meta.json records of them (`split_files`: bytes,
sha256, mtime; `data/packed.py`): a tokens.bin or doc_offsets.npy replaced by another of the same size
and valid contents was read as the prepared data, silently, by training, `data merge` and a study given
the folder with `--prepared` (whose key, the folder's meta.json, stayed the same)."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)

from encoderlab.data import packed
from encoderlab.data.merge import merge
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.shard import Shard
from encoderlab.data.sources import SourceConfig
from encoderlab.errors import UserError

RUN = dict(workers=1, progress=False)


def _cfg(src, tok) -> PrepareConfig:
    return PrepareConfig(sources=(SourceConfig(location=str(src)),), tokenizer=str(tok), decontaminate=())


@pytest.fixture(scope="module")
def good(tmp_path_factory, tokenizer_dir):  # noqa: F811
    root = tmp_path_factory.mktemp("packed-files")
    src = write_jsonl(root / "c.jsonl", corpus_records(120))
    return prepare(_cfg(src, tokenizer_dir), root / "good", **RUN)


def _copy(good, tmp_path):
    return shutil.copytree(good, tmp_path / "copy")  # copy2: the files keep their mtimes


def _reversed(path, dtype) -> None:
    """The same tokens in reverse: the same size, every id valid, other rows."""
    np.fromfile(path, dtype=dtype)[::-1].tofile(path)


def test_meta_records_each_split_file_as_written(good):
    meta = read_meta(good)
    for split, where in packed.SPLITS.items():
        for name in ("tokens.bin", "doc_offsets.npy"):
            path = good / where / name
            entry = meta["split_files"][split][name]
            assert entry["bytes"] == path.stat().st_size and entry["mtime_ns"] == path.stat().st_mtime_ns
            assert entry["sha256"] == packed.hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_swapped_tokens_file_of_valid_ids_is_refused(good, tmp_path):
    """Was read as the prepared data: the size and every id fit, and the ids scan passed (the CLI's
    line: docs/errors.md, `swapped-tokens-valid-ids`)."""
    data = _copy(good, tmp_path)
    _reversed(data / "tokens.bin", read_meta(data)["dtype"])
    with pytest.raises(UserError, match="tokens.bin now holds other bytes"):
        packed.open_split(data, "train", read_meta(data))


def test_swapped_offsets_that_still_run_from_0_to_the_end_are_refused(good, tmp_path):
    """Was read: the offsets start at 0, never decrease and end at the token count, so documents were
    cut at other places without a word."""
    data = _copy(good, tmp_path)
    offsets = np.load(data / "doc_offsets.npy")
    offsets[1] += 1  # a document boundary moved by one token
    assert (np.diff(offsets) >= 0).all()
    np.save(data / "doc_offsets.npy", offsets)
    with pytest.raises(
        UserError, match=r"doc_offsets.npy now holds other bytes, not those meta.json records"
    ):
        packed.open_split(data, "train", read_meta(data))


def test_a_file_touched_or_copied_without_its_mtime_still_opens(good, tmp_path):
    data = _copy(good, tmp_path)
    for name in ("tokens.bin", "val/tokens.bin", "doc_offsets.npy"):
        os.utime(data / name, ns=(1, 1))  # another mtime, the same bytes: hashed once and found the same
    meta = read_meta(data)
    for split in packed.SPLITS:
        tokens, offsets = packed.open_split(data, split, meta)
        want, _ = packed.open_split(good, split, meta)
        assert np.array_equal(tokens, want)


def test_a_folder_from_before_split_files_opens_as_before(good, tmp_path):
    data = _copy(good, tmp_path)
    meta = read_meta(data)
    del meta["split_files"]
    tokens, _ = packed.open_split(data, "train", meta)
    assert len(tokens) == meta["splits"]["train"]["tokens"]


def test_a_record_without_its_digest_still_has_the_ids_scanned(good, tmp_path):
    """A `split_files` entry edited past use is no proof the file is as written: ids are read, as in a
    folder from before it."""
    data = _copy(good, tmp_path)
    meta = read_meta(data)
    vocab = meta["spec"]["vocab_size"]
    np.full(meta["splits"]["train"]["tokens"], vocab + 1, dtype=meta["dtype"]).tofile(data / "tokens.bin")
    del meta["split_files"]["train"]["tokens.bin"]["sha256"]
    with pytest.raises(UserError, match=rf"tokens.bin holds token id {vocab + 1} at position 0"):
        packed.open_split(data, "train", meta)


def test_a_resumed_prepare_records_the_digest_of_the_whole_file(tmp_path, tokenizer_dir):  # noqa: F811
    """The writer reopened at a checkpoint hashes the tokens it keeps before appending more."""
    dtype = np.dtype(np.uint16)
    whole = packed.SplitWriter(tmp_path / "whole", dtype)
    part = packed.SplitWriter(tmp_path / "part", dtype)
    first, second = np.arange(10, dtype=dtype), np.arange(10, 30, dtype=dtype)
    for w in (whole, part):
        w.append(first, np.array([4, 6]))
    at = part.sync()
    part.append(np.arange(5, dtype=dtype), np.array([5]))  # written after the checkpoint: cut away
    part.close()
    part = packed.SplitWriter(tmp_path / "part", dtype, at=at)
    for w in (whole, part):
        w.append(second, np.array([20]))
        w.finish()
    assert {k: v["sha256"] for k, v in part.files().items()} == {
        k: v["sha256"] for k, v in whole.files().items()
    }
    assert (tmp_path / "part" / "tokens.bin").read_bytes() == (tmp_path / "whole" / "tokens.bin").read_bytes()


def test_a_merge_refuses_a_part_whose_tokens_were_swapped(tmp_path, tokenizer_dir):  # noqa: F811
    src = write_jsonl(tmp_path / "c.jsonl", corpus_records(80))
    out = tmp_path / "o"
    for i in range(2):
        prepare(_cfg(src, tokenizer_dir), out, shard=Shard(i, 2), **RUN)
    part = out.with_name("o.shards") / "00001-of-00002"
    _reversed(part / "tokens.bin", read_meta(part)["dtype"])
    with pytest.raises(UserError, match=r"00001-of-00002/tokens.bin now holds other bytes"):
        merge(out)
    assert not out.exists() or not (out / "meta.json").exists()
