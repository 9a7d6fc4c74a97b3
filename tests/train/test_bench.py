"""The training benchmark compares like with like: same weights, same function, same data ids."""

from __future__ import annotations

import pytest
import torch

from encoderlab.data.synthetic import synthetic_spec
from encoderlab.model import Encoder, ModelConfig
from encoderlab.train.bench import _hf_model


@pytest.mark.parametrize("objective,mode", [("mlm", "bidirectional"), ("clm", "causal")])
def test_transformers_side_starts_from_our_weights(objective, mode):
    spec = synthetic_spec(300)
    torch.manual_seed(0)
    ours = Encoder(
        ModelConfig.from_size("tiny", vocab_size=300, mask_id=3, pad_id=0, bos_id=1, eos_id=2)
    ).eval()
    hf = _hf_model(ours, spec, objective).eval()
    ids = torch.randint(5, 300, (2, 16))
    with torch.no_grad():
        ref = ours.lm_logits(ours(ids, attention_mode=mode).last_hidden_state)
        got = hf(input_ids=ids).logits
    torch.testing.assert_close(got, ref, atol=1e-4, rtol=1e-4)


def test_profile_writes_the_op_table(tmp_path):
    from encoderlab.train.bench import TrainBench, bench_train

    table = tmp_path / "profile.txt"
    result = bench_train(
        TrainBench(size="tiny", seq_len=32, batch=2, vocab=256, steps=1, warmup=1, vs_hf=False, profile=table)
    )
    profile = result["encoderlab"]["profile"]
    assert profile["table"] == str(table) and profile["profiled_step_s"] > 0
    assert "aten::mm" in table.read_text()  # the model's matmuls, by name
