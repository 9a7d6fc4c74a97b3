"""The LM head's fused, chunked linear cross-entropy against `F.cross_entropy` over `F.linear`'s logits."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from encoderlab.model import Encoder, ModelConfig
from encoderlab.model import head as linear_ce
from encoderlab.model.head import linear_cross_entropy
from encoderlab.objectives import IGNORE, lm_loss


def _inputs(n=37, d=16, v=50, seed=0):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(n, d, generator=g, requires_grad=True)
    weight = (torch.randn(v, d, generator=g) * 0.3).requires_grad_()
    targets = torch.randint(0, v, (n,), generator=g)
    return hidden, weight, targets


def _grads(loss_fn, hidden, weight, targets, scale=0.25):
    hidden.grad = weight.grad = None
    loss = loss_fn(hidden, weight, targets)
    (loss * scale).backward()  # a non-unit incoming gradient, as the trainer's 1/n_targets is
    return loss.detach(), hidden.grad.clone(), weight.grad.clone()


def _plain(hidden, weight, targets):
    return F.cross_entropy(F.linear(hidden, weight).float(), targets, reduction="sum")


@pytest.mark.parametrize("rows_per_chunk", [1, 8, 1000], ids=["row", "ragged-chunks", "one-chunk"])
def test_loss_and_both_gradients_match_the_plain_path_in_fp32(monkeypatch, rows_per_chunk):
    hidden, weight, targets = _inputs()
    monkeypatch.setattr(linear_ce, "CHUNK_ELEMENTS", rows_per_chunk * weight.shape[0])
    got = _grads(linear_cross_entropy, hidden, weight, targets)
    want = _grads(_plain, hidden, weight, targets)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert got[1].dtype == hidden.dtype and got[2].dtype == weight.dtype


def test_bf16_autocast_matches_the_plain_path_under_autocast(monkeypatch):
    hidden, weight, targets = _inputs(n=64, d=32, v=96)
    monkeypatch.setattr(linear_ce, "CHUNK_ELEMENTS", 10 * weight.shape[0])
    with torch.autocast("cpu", torch.bfloat16):
        got = _grads(linear_cross_entropy, hidden, weight, targets)
        want = _grads(_plain, hidden, weight, targets)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=2e-2, atol=2e-3)
    assert got[2].dtype == torch.float32  # fp32 master weights get fp32 gradients


def test_frozen_head_gets_no_gradient_and_hidden_still_does():
    hidden, weight, targets = _inputs()
    weight.requires_grad_(False)
    linear_cross_entropy(hidden, weight, targets).backward()
    assert weight.grad is None and hidden.grad is not None


@pytest.mark.parametrize("tie", [False, True], ids=["separate-head", "tied-embeddings"])
def test_encoder_training_loss_and_every_gradient_match_the_unfused_head(tie):
    torch.manual_seed(0)
    model = Encoder(dataclasses.replace(ModelConfig.from_size("tiny", vocab_size=300), tie_embeddings=tie))
    ids = torch.randint(5, 300, (2, 24))
    targets = torch.where(torch.rand(2, 24) < 0.5, ids, torch.full_like(ids, IGNORE))

    def run(fused: bool):
        model.zero_grad(set_to_none=True)
        hidden = model(ids, attention_mode="bidirectional").last_hidden_state
        if fused:
            total, n = lm_loss(model, hidden, targets)
        else:
            keep = targets != IGNORE
            total = F.cross_entropy(model.lm_logits(hidden[keep]).float(), targets[keep], reduction="sum")
            n = int(keep.sum())
        (total / n).backward()
        return total.detach(), {k: p.grad.clone() for k, p in model.named_parameters()}

    (loss, grads), (ref_loss, ref_grads) = run(True), run(False)
    torch.testing.assert_close(loss, ref_loss, rtol=1e-5, atol=1e-5)
    assert grads.keys() == ref_grads.keys()
    for name in grads:
        torch.testing.assert_close(grads[name], ref_grads[name], rtol=1e-4, atol=1e-6, msg=name)


def test_head_gives_logits_or_its_loss_and_without_gradients_the_plain_loss():
    from encoderlab.model.head import LMHead

    hidden, weight, targets = _inputs()
    head = LMHead(weight.shape[1], weight.shape[0])
    head.weight.data.copy_(weight.detach())
    torch.testing.assert_close(head(hidden), F.linear(hidden, weight))
    with torch.no_grad():
        no_grad = head(hidden, targets)
    assert no_grad.grad_fn is None
    torch.testing.assert_close(no_grad, _plain(hidden, weight, targets))
    torch.testing.assert_close(head(hidden, targets), no_grad)
