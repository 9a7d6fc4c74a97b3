"""Each attention backend forced on CPU gives the same outputs; flex falls back when missing."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from model_fixtures import VOCAB, logits, make_model

from encoderlab.model import attention

pytestmark = pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")


def _batch():
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(4, VOCAB, (2, 20), generator=g)
    doc_ids = torch.tensor([[0] * 6 + [1] * 10 + [2] * 4, [0] * 13 + [1] * 7])
    pad = torch.ones_like(ids, dtype=torch.bool)
    pad[1, 16:] = False
    return ids, doc_ids, pad


@pytest.mark.skipif(not attention.flex_available(), reason="this torch has no flex_attention")
@pytest.mark.parametrize("mode", ["bidirectional", "causal"])
@pytest.mark.parametrize("masks", ["docs", "padding", "both"])
def test_flex_equals_sdpa(mode, masks):
    model = make_model()
    ids, doc_ids, pad = _batch()
    kwargs = {"attention_mode": mode}
    if masks in ("docs", "both"):
        kwargs["doc_ids"] = doc_ids
    if masks in ("padding", "both"):
        kwargs["padding_mask"] = pad
    sdpa = logits(model, ids, **kwargs)
    model.config = dataclasses.replace(model.config, attn_impl="flex")
    assert isinstance(
        attention.build_mask("flex", 20, mode, kwargs.get("doc_ids"), kwargs.get("padding_mask"), ids.device),
        attention.BlockMask,
    )
    flex = logits(model, ids, **kwargs)
    real = pad if masks != "docs" else torch.ones_like(pad)
    assert (flex - sdpa)[real].abs().max() <= 1e-5


def test_flex_falls_back_to_sdpa_with_a_warning(monkeypatch):
    ids, doc_ids, _ = _batch()
    model = make_model()
    expected = logits(model, ids, doc_ids=doc_ids)
    monkeypatch.setattr(attention, "flex_attention", None)
    model.config = dataclasses.replace(model.config, attn_impl="flex")
    with pytest.warns(UserWarning, match="flex_attention cannot run"):
        got = logits(model, ids, doc_ids=doc_ids)
    assert torch.equal(got, expected)


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="attn_impl"):
        make_model(attn_impl="flash")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("mode", ["bidirectional", "causal"])
def test_compiled_flex_equals_sdpa_on_cuda(mode):
    model = make_model().cuda()
    ids, doc_ids, pad = (t.cuda() for t in _batch())
    sdpa = logits(model, ids, attention_mode=mode, doc_ids=doc_ids, padding_mask=pad)
    model.config = dataclasses.replace(model.config, attn_impl="flex")
    flex = logits(model, ids, attention_mode=mode, doc_ids=doc_ids, padding_mask=pad)
    assert (flex - sdpa)[pad].abs().max() <= 1e-4
