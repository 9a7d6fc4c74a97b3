"""A wrapped BERT pretrains with its dropout on (as transformers' MLM scripts train it) and is scored
held-out with it off; the RNG that dropout draws from is touched by nothing else."""

from __future__ import annotations

import torch
from tests.train.helpers import save_tiny_bert, tiny_run

from encoderlab.objectives import MLM
from encoderlab.train import Phase
from encoderlab.train.config import ModelSpec, ValidationConfig
from encoderlab.train.flops import measured_peak_flops
from encoderlab.train.step import TrainStep
from encoderlab.train.validation import Validator


def test_a_bert_trains_with_dropout_and_is_scored_without(tmp_path):
    save_tiny_bert(tmp_path / "bert")  # BertConfig's default hidden and attention dropout: 0.1
    phases = (Phase(objective=MLM(mask_ratio=0.3), steps=2),)
    cfg = tiny_run(
        tmp_path / "run",
        phases,
        model=ModelSpec(init=str(tmp_path / "bert")),
        validation=ValidationConfig(rows=4),
    )
    step = TrainStep(cfg)
    assert step.model.training, "the loader's eval mode was kept: pretraining ran without dropout"
    x = step.micro_batches(0)
    torch.manual_seed(1)
    first = step.model(x[0].input_ids, attention_mode=x[0].attention_mode).last_hidden_state
    second = step.model(x[0].input_ids, attention_mode=x[0].attention_mode).last_hidden_state
    assert not torch.equal(first, second)  # dropout draws
    validator = Validator(cfg, step.spec, step.source.spec)
    scores = [validator.evaluate(step.model, step.device) for _ in range(2)]
    assert scores[0] == scores[1] and step.model.training  # held out: no dropout, mode given back


def test_measuring_the_peak_leaves_the_training_rng_alone():
    """It runs once per process, so on a resume after the RNG is restored: a draw from the global
    generator there made a resumed dropout run draw other masks than the uninterrupted one."""
    before = torch.get_rng_state()
    measured_peak_flops.__wrapped__("cpu", torch.float32)
    assert torch.equal(torch.get_rng_state(), before)
