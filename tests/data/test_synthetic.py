"""The synthetic source (benchmarks, smoke runs, tests) and its tokenizer."""

from __future__ import annotations

import torch

from encoderlab.data.batch import BatchLayout
from encoderlab.data.synthetic import SyntheticSource, synthetic_spec, synthetic_tokenizer
from encoderlab.data.tokenizer import load_tokenizer

SPEC = synthetic_spec(300)


def _batch(seq_len: int, mean_doc_len: int):
    layout = BatchLayout(seq_len=seq_len, micro_batch_size=4)
    return SyntheticSource(layout, SPEC, mean_doc_len=mean_doc_len).batch(0, 0, 0)


def test_documents_are_delimited_and_positions_restart_at_each():
    b = _batch(256, 20)
    for ids, docs, pos in zip(b.input_ids, b.doc_ids, b.position_ids, strict=True):
        starts = torch.nonzero(pos == 0).flatten().tolist()
        assert starts[0] == 0 and len(starts) > 256 // 40  # short documents, many per row
        assert (docs[starts] == torch.arange(len(starts))).all()
        assert (ids[starts] == SPEC.bos_id).all()
        ends = [s - 1 for s in starts[1:]] + [255]
        lengths = [e - s + 1 for s, e in zip(starts, ends, strict=True)]
        # the last document is cut by the row's end (and may be its BOS alone)
        assert all(8 <= n < 40 for n in lengths[:-1])
        assert (ids[ends[:-1]] == SPEC.eos_id).all()


def test_a_mean_of_a_row_or_more_is_one_document_per_row():
    for mean in (64, 1000):
        b = _batch(64, mean)
        assert (b.doc_ids == 0).all() and (b.position_ids == torch.arange(64)).all()
        assert (b.input_ids[:, 0] == SPEC.bos_id).all() and (b.input_ids[:, -1] == SPEC.eos_id).all()


def test_synthetic_tokenizer_uses_the_source_ids(tmp_path):
    """The collator in `bench train` and exported tiny checkpoints rely on these ids being the source's."""
    spec = SPEC
    tok = synthetic_tokenizer(spec)
    assert (tok.mask_token_id, tok.pad_token_id, len(tok)) == (spec.mask_id, spec.pad_id, 300)
    assert sorted(tok.all_special_ids) == sorted(spec.special_ids)
    assert tok("t7 t299 [MASK]", add_special_tokens=False).input_ids == [7, 299, spec.mask_id]
    assert tok("t7 t299").input_ids == [spec.bos_id, 7, 299, spec.eos_id]  # framed like a document
    tok.save_pretrained(str(tmp_path))
    assert load_tokenizer(tmp_path).mask_token_id == spec.mask_id
