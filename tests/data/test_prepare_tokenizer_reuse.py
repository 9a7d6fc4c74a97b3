"""`data prepare` loads and hashes its tokenizer once a process while the tokenizer's files stay as they are.

A study prepares each of its datasets in one process, and a paper's tokenizer (EuroBERT's 128k vocabulary)
took about a second a load and hash; each prepare loaded and hashed it again. The read is now remembered
(`tokenizer.held_tokenizer`, the memory a study's `--prepared` check reads too); a tokenizer saved again since
is read again, and a hub id still to download is loaded each time. Loads and hashes are counted, not timed.
"""

from __future__ import annotations

import shutil

import pytest
from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from tests.data.prepare_fixtures import prepared_bytes

from encoderlab.data import tokenizer as tokenizers
from encoderlab.data import txtscans
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.sources import SourceConfig


@pytest.fixture(autouse=True)
def _remembered_at_once(monkeypatch):
    """The tokenizers here were just written: remembered at once, not after `txtscans.SETTLE_NS` (whose own
    test is the last one)."""
    monkeypatch.setattr(txtscans, "SETTLE_NS", 0)


def _counted(monkeypatch) -> tuple[list, list]:
    """(the tokenizers loaded, the tokenizers hashed) from here on, as lists the caller reads."""
    load, digest, loads, hashes = tokenizers.load_tokenizer, tokenizers.tokenizer_hash, [], []
    monkeypatch.setattr(tokenizers, "load_tokenizer", lambda name: loads.append(str(name)) or load(name))
    monkeypatch.setattr(
        tokenizers, "tokenizer_hash", lambda tok, *state: hashes.append(1) or digest(tok, *state)
    )
    return loads, hashes


def test_a_second_prepare_reuses_the_tokenizer_until_it_is_saved_again(
    tmp_path,
    monkeypatch,
    tokenizer_dir,  # noqa: F811 (fixture)
):
    tok = tmp_path / "tok"
    shutil.copytree(tokenizer_dir, tok)  # a folder of its own: no other test's read of it is remembered
    src = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(40))
    cfg = PrepareConfig(sources=(SourceConfig(location=str(src)),), tokenizer=str(tok), decontaminate=())
    want = tokenizers.tokenizer_hash(tokenizers.load_tokenizer(tok))
    loads, hashes = _counted(monkeypatch)

    first = prepare(cfg, tmp_path / "one", workers=1, progress=False)
    second = prepare(cfg, tmp_path / "two", workers=1, progress=False)
    assert loads == [str(tok)] and len(hashes) == 1  # the old code: two loads, two hashes
    assert prepared_bytes(first) == prepared_bytes(second)
    assert read_meta(first)["recipe"] == read_meta(second)["recipe"]
    assert read_meta(second)["tokenizer"]["hash"] == want

    changed = tokenizers.load_tokenizer(tok)  # counted: a third load
    changed.add_tokens(["zzzextra"])
    changed.save_pretrained(tok)
    third = prepare(cfg, tmp_path / "three", workers=1, progress=False)
    assert loads == [str(tok)] * 3 and len(hashes) == 2  # read again: its files moved
    assert read_meta(third)["tokenizer"]["hash"] == tokenizers.tokenizer_hash(changed) != want


def test_a_hub_id_still_to_download_is_loaded_each_time(tmp_path, monkeypatch, tokenizer_dir):  # noqa: F811
    """No folder to watch (`tokenizer_folder` is None until the download): nothing is remembered."""
    folder = tokenizers.tokenizer_folder
    monkeypatch.setattr(
        tokenizers, "tokenizer_folder", lambda name: None if name == "org/tok" else folder(name)
    )
    real, loads = tokenizers.load_tokenizer, []
    monkeypatch.setattr(tokenizers, "load_tokenizer", lambda name: loads.append(name) or real(tokenizer_dir))
    first = tokenizers.held_tokenizer("org/tok")
    second = tokenizers.held_tokenizer("org/tok")
    assert loads == ["org/tok"] * 2 and first.digest == second.digest
    assert first.tok is not second.tok


@pytest.mark.parametrize("again", ["same", "changed"])
def test_the_held_read_is_the_load_and_hash_of_the_files_now(tmp_path, tokenizer_dir, again):  # noqa: F811
    tok = tmp_path / "tok"
    shutil.copytree(tokenizer_dir, tok)
    first = tokenizers.held_tokenizer(tok)
    assert first.digest == tokenizers.tokenizer_hash(tokenizers.load_tokenizer(tok))
    assert tokenizers.held_tokenizer(tok) is first
    saved = tokenizers.load_tokenizer(tok)
    if again == "changed":
        saved.add_tokens(["zzzextra"])
    saved.save_pretrained(tok)  # the same tokenizer saved again is read again too: its files moved
    now = tokenizers.held_tokenizer(tok)
    assert now is not first and now.digest == tokenizers.tokenizer_hash(tokenizers.load_tokenizer(tok))
    assert (now.digest == first.digest) == (again == "same")


def test_only_the_latest_reads_are_kept(tmp_path, monkeypatch, tokenizer_dir):  # noqa: F811 (fixture)
    # a long-lived process (a test session, a notebook) reading many folders must not hold every tokenizer
    monkeypatch.setattr(tokenizers, "_HELD", {})
    folders = [shutil.copytree(tokenizer_dir, tmp_path / f"tok{i}") for i in range(tokenizers.HELD_MOST + 2)]
    for folder in folders:
        tokenizers.held_tokenizer(folder)
    assert [k[0] for k in tokenizers._HELD] == [str(f) for f in folders[-tokenizers.HELD_MOST :]]
    loads, _ = _counted(monkeypatch)
    tokenizers.held_tokenizer(folders[-1])  # still held: not read again
    tokenizers.held_tokenizer(folders[0])  # let go of: read again
    assert loads == [str(folders[0])]


def test_a_tokenizer_saved_again_within_its_filesystems_tick_is_read_again(
    tmp_path,
    monkeypatch,
    tokenizer_dir,  # noqa: F811 (fixture)
):
    # on a filesystem of coarse times (1 s; FAT's 2 s) a save just after a read can leave every stat as it was
    # (size too, here); the read was remembered and the old tokenizer's hash served for the new files (found
    # by review, 2026-12-07). A read is remembered only once every file's last change lies SETTLE_NS before.
    import time

    monkeypatch.setattr(txtscans, "SETTLE_NS", 2_000_000_000)
    tok = shutil.copytree(tokenizer_dir, tmp_path / "tok")
    second = time.time_ns() // 10**9 * 10**9  # this second, as a 1 s filesystem stamps every write in it
    coarse = ((0, str(tok / "tokenizer.json"), 1, 2, 3, second, second),)
    monkeypatch.setattr(tokenizers, "tree_stats", lambda folder: coarse)  # the save moves no stat
    before = tokenizers.held_tokenizer(tok).digest
    changed = tokenizers.load_tokenizer(tok)
    changed.add_tokens(["zzzextra"])
    changed.save_pretrained(tok)
    assert tokenizers.held_tokenizer(tok).digest != before  # was: the first read's hash
