"""Counted FLOPs of DeBERTa (`train/flops.py`'s position terms) against torch's own FLOP counter.

DeBERTa's disentangled attention projects its relative-position table and scores every token against
the table's 2k rows in each of its terms (c2p, p2c), beside BERT's matmuls; counting BERT's alone read
MFU low. `FlopCounterMode` counts every matmul of a real forward and backward through transformers'
classes, so with one bidirectional document per row the two counts must agree exactly, for each way
the table's width is decided (v1: max relative positions, cut to the row; v2/v3: position buckets)
and for one term or two. Packed documents remove content pairs only: the position scores are computed
densely, and counted so. v2 with shared keys and one term also projects the table for the term it
lacks, which nothing uses (no backward reaches it): that forward projection is all torch counts more.
A config whose `embedding_size` is narrower than its hidden width projects every token's embedding up
(`embed_proj`) before the blocks; a whole MLM step of one counts it too.
"""

from __future__ import annotations

import pytest
import torch
from tests.model.model_fixtures import VOCAB, deberta_config, deberta_v1_config
from tests.train.flops_fixtures import LENGTH as T
from tests.train.flops_fixtures import ROWS as B
from tests.train.flops_fixtures import adapter_step
from torch.utils.flop_counter import FlopCounterMode

from encoderlab.model.hf_registry import ADAPTERS, hf_class
from encoderlab.objectives.base import IGNORE, ObjectiveInputs
from encoderlab.train.flops import train_flops

CONFIGS = {
    "v1, span over the row": ("deberta", lambda: deberta_v1_config()),  # max positions 64: cut to 32
    "v1, span within the row": ("deberta", lambda: deberta_v1_config(max_relative_positions=8)),
    "v1, c2p only": ("deberta", lambda: deberta_v1_config(pos_att_type=["c2p"])),
    "v3, buckets": ("deberta-v2", lambda: deberta_config()),
    "v3, shared keys": ("deberta-v2", lambda: deberta_config(share_att_key=True, position_buckets=12)),
    "v2, p2c only": ("deberta-v2", lambda: deberta_config(pos_att_type=["p2c"])),
}


def _inputs(doc_lengths: list[list[int]]) -> ObjectiveInputs:
    docs = torch.tensor([[d for d, n in enumerate(row) for _ in range(n)] for row in doc_lengths])
    ids = torch.randint(5, VOCAB, (B, T), generator=torch.Generator().manual_seed(0))
    # no targets: the head is not DeBERTa's concern here, and the body's count is then the whole count
    targets = torch.full((B, T), IGNORE)
    positions = torch.arange(T).expand(B, T)
    return ObjectiveInputs(
        input_ids=ids, position_ids=positions, doc_ids=docs, attention_mode="bidirectional", targets=targets
    )


def _counts(name: str, x: ObjectiveInputs, hf_config=None) -> tuple[int, int]:
    """torch's count of one forward and backward through the adapter (of `name`'s config, or
    `hf_config`), and ours."""
    family, config = CONFIGS[name]
    hf_config = config() if hf_config is None else hf_config
    hf_config._attn_implementation = ADAPTERS[family].attention_kernel
    model = ADAPTERS[family](hf_class(family)(hf_config)).train()
    with FlopCounterMode(display=False) as counter:
        model(x.input_ids, doc_ids=x.doc_ids).last_hidden_state.sum().backward()
    return counter.get_total_flops(), train_flops(model.config, [x])


@pytest.mark.parametrize("name", list(CONFIGS))
def test_one_document_per_row_counts_exactly_what_torch_counts(name):
    theirs, ours = _counts(name, _inputs([[T], [T]]))
    assert ours == theirs


@pytest.mark.parametrize("name", ["v1, span over the row", "v3, buckets"])
def test_packed_documents_remove_only_the_content_pairs(name):
    c = CONFIGS[name][1]()
    lengths = [[12, 20], [5, 7, 20]]
    theirs, ours = _counts(name, _inputs(lengths))
    removed = B * T * T - sum(n * n for row in lengths for n in row)
    assert theirs - ours == 3 * c.num_hidden_layers * 4 * c.hidden_size * removed


def test_an_unused_shared_key_projection_is_all_torch_counts_more():
    c = deberta_config(share_att_key=True, pos_att_type=["p2c"], position_buckets=12)
    theirs, ours = _counts("v3, buckets", _inputs([[T], [T]]), c)
    assert theirs - ours == c.num_hidden_layers * 2 * (2 * 12) * c.hidden_size * c.hidden_size


@pytest.mark.parametrize("family", ["deberta", "deberta-v2"])
def test_a_narrower_embeddings_projection_is_counted(family):
    """Was: `embed_proj` (the 16-wide embedding of every token up to the 32-wide hidden states, forward
    and backward) left out, so such a model's MFU read low. A whole MLM step, head included, now counts
    exactly what torch counts. The head is the legacy one (`cls.predictions`, its transform down to the
    embedding width): transformers' original head multiplies the hidden states by the embedding matrix,
    which fails when the two widths differ, so no such model has it."""
    config = {"deberta": deberta_v1_config, "deberta-v2": deberta_config}[family](
        embedding_size=16, legacy=True
    )
    model, torchs, ours = adapter_step(family, config)
    shape = model.config.matmul_shape()
    assert ours == torchs
    assert shape.input_projection == shape.head_transform == config.embedding_size < config.hidden_size
