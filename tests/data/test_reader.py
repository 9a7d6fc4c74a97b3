"""PackedReader: rows are exact slices of the prepared stream, served by (step, micro, rank) alone."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)

from encoderlab.data.batch import BatchLayout
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.reader import PackedReader, check_compatible
from encoderlab.data.sources import SourceConfig
from encoderlab.errors import UserError

T = 32


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, tokenizer_dir):  # noqa: F811
    root = tmp_path_factory.mktemp("reader")
    src = write_jsonl(root / "c.jsonl", corpus_records(150))
    cfg = PrepareConfig(
        sources=(SourceConfig(location=str(src)),), tokenizer=str(tokenizer_dir), decontaminate=()
    )
    return prepare(cfg, root / "out", workers=1, progress=False)


def _stream(root):
    meta = read_meta(root)
    return np.fromfile(root / "tokens.bin", dtype=meta["dtype"]).astype(np.int64), np.load(
        root / "doc_offsets.npy"
    )


def _cat(batches):
    return {k: torch.cat([getattr(b, k) for b in batches]) for k in ("input_ids", "doc_ids", "position_ids")}


def test_rows_are_slices_with_document_ids_and_positions(prepared):
    stream, offsets = _stream(prepared)
    reader = PackedReader(prepared, BatchLayout(seq_len=T, micro_batch_size=4))
    starts = set()
    for step in range(reader.rows_per_epoch // 4):
        b = reader.batch(step, 0, 0)
        for row, where in enumerate(reader.row_starts(np.arange(4 * step, 4 * step + 4)).tolist()):
            assert b.input_ids[row].tolist() == stream[where : where + T].tolist()
            starts.add(where)
            # reference, position by position: which document each token is in, and its offset there
            doc = [int(np.searchsorted(offsets, where + k, side="right")) - 1 for k in range(T)]
            want_doc = [d - doc[0] for d in doc]
            want_pos = [where + k - max(offsets[d], where) for k, d in enumerate(doc)]
            assert b.doc_ids[row].tolist() == want_doc
            assert b.position_ids[row].tolist() == want_pos
    # every epoch row is distinct, a fixed shift plus a multiple of T: the epoch is a permutation
    shifts = {s % T for s in starts}
    assert len(starts) == (reader.rows_per_epoch // 4) * 4 and len(shifts) == 1


def test_long_documents_span_rows_and_boundaries_get_new_ids(prepared):
    reader = PackedReader(prepared, BatchLayout(seq_len=T, micro_batch_size=8))
    b = reader.batch(0, 0, 0)
    bos_inside = (b.input_ids[:, 1:] == reader.spec.bos_id) & (b.doc_ids[:, 1:] != b.doc_ids[:, :-1])
    assert bos_inside.any()  # several documents share a row
    assert ((b.input_ids[:, 1:] == reader.spec.bos_id) <= (b.doc_ids[:, 1:] == b.doc_ids[:, :-1] + 1)).all()
    assert (b.input_ids[:, 0] != reader.spec.bos_id).any()  # some rows start mid-document
    assert (b.position_ids[:, 0] == 0).all()


def test_same_tokens_for_any_layout_with_the_same_global_batch(prepared):
    single = PackedReader(prepared, BatchLayout(seq_len=T, micro_batch_size=4))
    split = PackedReader(prepared, BatchLayout(seq_len=T, micro_batch_size=1, grad_accum=2, world_size=2))
    for step in (0, 3, 11):
        whole = single.batch(step, 0, 0)
        # slot order: micro-step major, rank minor (BatchLayout.slot)
        parts = _cat([split.batch(step, m, r) for m in range(2) for r in range(2)])
        for key, value in parts.items():
            assert torch.equal(value, getattr(whole, key)), key


def test_ranks_partition_the_global_batch(prepared):
    layout = BatchLayout(seq_len=T, micro_batch_size=2, grad_accum=1, world_size=3)
    readers = [PackedReader(prepared, layout) for _ in range(3)]  # one per process
    rows = [tuple(x.tolist()) for r, reader in enumerate(readers) for x in reader.batch(5, 0, r).input_ids]
    one = PackedReader(prepared, BatchLayout(seq_len=T, micro_batch_size=6))
    assert rows == [tuple(x.tolist()) for x in one.batch(5, 0, 0).input_ids]
    starts = readers[0].row_starts(np.arange(5 * 6, 6 * 6))
    assert len(set(starts.tolist())) == 6


def test_resume_from_step_k_serves_the_following_batches(prepared):
    layout = BatchLayout(seq_len=T, micro_batch_size=3, grad_accum=2)
    first = PackedReader(prepared, layout, seed=7)
    run = [first.batch(s, m, 0) for s in range(12) for m in range(2)]  # runs past an epoch end
    resumed = PackedReader(prepared, layout, seed=7)
    again = [resumed.batch(s, m, 0) for s in range(8, 12) for m in range(2)]
    assert torch.equal(_cat(run[16:])["input_ids"], _cat(again)["input_ids"])
    other = PackedReader(prepared, layout, seed=8)
    assert not torch.equal(other.batch(0, 0, 0).input_ids, run[0].input_ids)


def test_epoch_wrap_is_a_new_permutation_and_logged_once(prepared, caplog):
    reader = PackedReader(prepared, BatchLayout(seq_len=T, micro_batch_size=1))
    r = reader.rows_per_epoch
    with caplog.at_level(logging.INFO, logger="encoderlab.data.reader"):
        epoch0 = reader.row_starts(np.arange(r))
        epoch1 = reader.row_starts(np.arange(r, 2 * r))
        reader.row_starts(np.arange(r, 2 * r))
    assert sorted(epoch0 - epoch0.min()) == sorted(epoch1 - epoch1.min()) == list(range(0, r * T, T))
    assert not np.array_equal(epoch0, epoch1)
    assert sum("starts epoch 1" in m for m in caplog.messages) == 1
    assert reader.epoch_of(r) == 1 and reader.epoch_of(r - 1) == 0


def test_validation_split(prepared):
    val = PackedReader(prepared, BatchLayout(seq_len=8, micro_batch_size=2), split="val")
    assert val.n_tokens == read_meta(prepared)["splits"]["val"]["tokens"]
    assert val.batch(0, 0, 0).input_ids.shape == (2, 8)
    with pytest.raises(UserError, match="unknown split"):
        PackedReader(prepared, BatchLayout(seq_len=8, micro_batch_size=2), split="test")


def test_refusals(prepared, tmp_path):
    with pytest.raises(UserError, match="fewer than one row"):
        PackedReader(prepared, BatchLayout(seq_len=10**7, micro_batch_size=1))
    meta = read_meta(prepared)
    with pytest.raises(UserError, match="512 ids but the model has 256"):
        check_compatible(meta, vocab_size=256, max_seq_len=1024)
    with pytest.raises(
        UserError, match="above the model.s max_seq_len 64; lower seq_len or use a model with a larger"
    ):
        check_compatible(prepared, vocab_size=512, max_seq_len=64, seq_len=128)
    with pytest.raises(UserError, match="another tokenizer"):
        check_compatible(meta, vocab_size=512, max_seq_len=64, tokenizer_hash="0" * 64)
    check_compatible(
        meta, vocab_size=512, max_seq_len=64, seq_len=64, tokenizer_hash=meta["tokenizer"]["hash"]
    )
    import shutil

    broken = shutil.copytree(prepared, tmp_path / "broken")
    with open(broken / "tokens.bin", "r+b") as f:
        f.truncate(100)
    with pytest.raises(UserError, match="truncated or corrupt"):
        PackedReader(broken, BatchLayout(seq_len=T, micro_batch_size=1))
    with pytest.raises(UserError, match="no meta.json"):
        PackedReader(tmp_path, BatchLayout(seq_len=T, micro_batch_size=1))
    (broken / "tokens.bin").unlink()  # said "holds -1 bytes, meta.json expects ..."
    with pytest.raises(UserError, match=r"broken/tokens.bin is missing; the folder is truncated or corrupt"):
        PackedReader(broken, BatchLayout(seq_len=T, micro_batch_size=1))


def test_an_epoch_evicted_by_another_thread_before_its_return_is_still_returned(prepared):
    """The prefetch thread and the main thread both read epochs (a rollback replays old steps while
    later ones are prefetched). Old code: the other thread's eviction, landing between this call's
    caching and its return, made the return a KeyError."""
    reader = PackedReader(prepared, BatchLayout(seq_len=T, micro_batch_size=4))
    want = {e: reader._epoch(e) for e in (4, 5, 6, 7)}

    class Interleaved(dict):
        """Runs the other thread's request for epoch 7 right after this thread caches its epoch."""

        def __setitem__(self, key, value):
            super().__setitem__(key, value)
            if key != 7:
                reader._epoch(7)

    reader._epochs = Interleaved({5: want[5], 6: want[6]})
    perm, shift = reader._epoch(4)  # a rollback asks for an old epoch
    assert np.array_equal(perm, want[4][0]) and shift == want[4][1]
    assert set(reader._epochs) <= {4, 6, 7} and len(reader._epochs) <= 2


def test_the_repeat_note_counts_rows_from_the_streams_start(prepared):
    from encoderlab.data.batch import StepOffset
    from encoderlab.data.reader import repeat_note

    reader = PackedReader(prepared, BatchLayout(seq_len=T, micro_batch_size=4))
    steps = reader.rows_per_epoch // 4  # the last step that reads no row twice
    assert repeat_note(reader, steps) is None
    assert "passes, so it trains on the same text more than once" in repeat_note(reader, steps + 1)
    # a continued run reading on from its base's rows reaches the second epoch sooner
    assert "more than once" in repeat_note(StepOffset(reader, 1), steps)
