"""transformers' side of `bench train` (`bench/reference.py`): our weights in its model, our rows in its
step, and its FLOPs counted for the work it does."""

from __future__ import annotations

import pytest
import torch

from encoderlab.bench.reference import hf_model
from encoderlab.bench.train import TrainBench, bench_train
from encoderlab.data.synthetic import synthetic_spec
from encoderlab.model import Encoder, ModelConfig


@pytest.mark.parametrize("objective,mode", [("mlm", "bidirectional"), ("clm", "causal")])
def test_transformers_side_starts_from_our_weights(objective, mode):
    spec = synthetic_spec(300)
    torch.manual_seed(0)
    ours = Encoder(
        ModelConfig.from_size("tiny", vocab_size=300, mask_id=3, pad_id=0, bos_id=1, eos_id=2)
    ).eval()
    hf = hf_model(ours, spec, objective).eval()
    ids = torch.randint(5, 300, (2, 16))
    with torch.no_grad():
        ref = ours.lm_logits(ours(ids, attention_mode=mode).last_hidden_state)
        got = hf(input_ids=ids).logits
    torch.testing.assert_close(got, ref, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("objective", ["mlm", "clm"])
def test_the_reference_steps_beside_ours_and_counts_at_least_our_work(objective):
    """No CPU test ran the reference side (every other one passes --no-vs-hf). Its FLOPs count whole-row
    attention and logits at every position, so they are at least ours (document-masked, sparse head)."""
    b = TrainBench(size="tiny", seq_len=32, batch=2, vocab=256, steps=1, warmup=0, objective=objective)
    result = bench_train(b)
    ours, theirs = result["encoderlab"], result["transformers"]
    assert theirs["flops_per_step"] >= ours["flops_per_step"] > 0
    assert result["speedup"] == ours["tokens_per_s"] / theirs["tokens_per_s"]
