"""Segment ids (BERT's token types) through `LanguageModel.forward`: an adapter with a segment table
gives what transformers gives for the same `token_type_ids`; a model without one (encoderlab's
`Encoder`, ModernBERT, RoBERTa's single row, DeBERTa-v3's none) takes all-zero ids and refuses any other, never drops them.

The tiny configs are random in every parameter (`randomize`), so the two token-type rows differ and a
segment id left out changes the outputs.
"""

from __future__ import annotations

import pytest
import torch
from model_fixtures import (
    VOCAB,
    bert_config,
    deberta_config,
    deberta_v1_config,
    make_model,
    modernbert_config,
    randomize,
    roberta_config,
)

from encoderlab.model.hf_registry import ADAPTERS, hf_class


def _adapter(family: str, config):
    config._attn_implementation = ADAPTERS[family].attention_kernel
    return ADAPTERS[family](randomize(hf_class(family)(config)))


def _pair_batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Two rows of a question then a context (segment 1), the second row right-padded."""
    ids = torch.randint(5, VOCAB, (2, 12), generator=torch.Generator().manual_seed(2))
    segments = torch.tensor([[0] * 5 + [1] * 7, [0] * 4 + [1] * 5 + [0] * 3])
    mask = torch.ones(2, 12, dtype=torch.bool)
    mask[1, 9:] = False
    return ids, segments, mask


def test_a_bert_adapter_given_segment_ids_is_transformers_with_token_type_ids():
    model = _adapter("bert", bert_config())
    table = model.hf.bert.embeddings.token_type_embeddings.weight
    assert model.segment_types == 2 and not torch.equal(table[0], table[1])
    ids, segments, mask = _pair_batch()
    with torch.no_grad():
        ours = model(ids, padding_mask=mask, segment_ids=segments).last_hidden_state
        theirs = model.hf.bert(input_ids=ids, attention_mask=mask.long(), token_type_ids=segments)
        logits = model.hf(input_ids=ids, attention_mask=mask.long(), token_type_ids=segments).logits
        without = model(ids, padding_mask=mask).last_hidden_state
    real = mask.unsqueeze(-1)  # padded positions differ by the mask's form (additive vs 0/1), not read
    assert torch.allclose(ours * real, theirs.last_hidden_state * real, atol=1e-5)
    assert torch.allclose(model.lm_logits(ours) * real, logits * real, atol=1e-4)
    assert not torch.allclose(ours[:, 5:9], without[:, 5:9], atol=1e-3)  # segment 1 reached the model


@pytest.mark.parametrize("family", ["encoder", "roberta", "modernbert", "deberta", "deberta-v2"])
def test_a_model_without_a_segment_table_takes_zeros_and_refuses_other_ids(family):
    if family == "encoder":
        model = make_model(seed=3)
    else:
        configs = {
            "roberta": roberta_config,
            "modernbert": modernbert_config,
            "deberta": deberta_v1_config,
            "deberta-v2": deberta_config,
        }
        model = _adapter(family, configs[family]())
    assert model.segment_types == 1
    ids, segments, mask = _pair_batch()
    with torch.no_grad():
        plain = model(ids, padding_mask=mask).last_hidden_state
        zeros = model(ids, padding_mask=mask, segment_ids=torch.zeros_like(segments)).last_hidden_state
        assert torch.equal(plain, zeros)
        with pytest.raises(ValueError, match="without a segment table"):
            model(ids, padding_mask=mask, segment_ids=segments)
