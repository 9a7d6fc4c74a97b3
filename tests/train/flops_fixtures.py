"""What the FLOP-count tests share (test_flops.py, test_flops_deberta.py): the batch they count over and
one whole MLM training step of a transformers adapter, counted by torch and by `train_flops`."""

from __future__ import annotations

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from encoderlab.data.batch import PackedBatch
from encoderlab.data.synthetic import positions_from_doc_ids, synthetic_spec
from encoderlab.objectives import MLM
from encoderlab.objectives.base import lm_loss
from encoderlab.train.flops import train_flops

ROWS, LENGTH = 2, 32
"""The batch every FLOP test counts: rows of one length, small enough for torch's counting mode."""


def adapter_step(family: str, config):
    """A whole MLM training step of `family`'s adapter over `config`, one document per row: the adapter,
    torch's count of the step's matmul FLOPs, and ours."""
    from encoderlab.model.hf_registry import ADAPTERS, hf_class

    config._attn_implementation = ADAPTERS[family].attention_kernel
    model = ADAPTERS[family](hf_class(family)(config)).train()
    spec = synthetic_spec(config.vocab_size)
    docs = torch.zeros(ROWS, LENGTH, dtype=torch.long)
    ids = torch.randint(5, spec.vocab_size, (ROWS, LENGTH), generator=torch.Generator().manual_seed(0))
    batch = PackedBatch(input_ids=ids, doc_ids=docs, position_ids=positions_from_doc_ids(docs))
    x = MLM(mask_ratio=0.3).prepare(batch, spec, torch.Generator().manual_seed(1))
    assert x.n_targets > 0
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        hidden = model(x.input_ids, attention_mode=x.attention_mode, doc_ids=x.doc_ids).last_hidden_state
        lm_loss(model, hidden, x.targets)[0].backward()
    return model, counter.get_total_flops(), train_flops(model.config, [x])
