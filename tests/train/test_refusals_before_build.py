"""`pretrain` refuses what the config alone decides before it builds the model (issue: refusals before
building are instant): a run too long for this machine was refused after a 210m model's initialisation
(seconds of CPU, twice that under load) and the synthetic tokenizer's import of transformers. Each test
makes the build fail loudly, so a refusal that still comes after it fails the test, however fast it is."""

from __future__ import annotations

import pytest
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.train.test_pretrain_cli import SMOKE, TOO_LONG, too_long

from encoderlab.data.batch import TokenSpec
from encoderlab.train.build import build_model
from encoderlab.train.config import ModelSpec


def _no_build(*args, **kwargs):
    raise AssertionError("built before refusing")


def test_a_run_too_long_is_refused_before_its_model_is_built(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("encoderlab.train.step.build_model", _no_build)
    code, err = cli(too_long(tmp_path), capsys)
    assert_one_line(code, err, TOO_LONG)
    assert not (tmp_path / "o").exists()


def test_a_sink_whose_package_is_missing_is_refused_before_the_model_is_built(tmp_path, capsys, monkeypatch):
    import importlib.util

    if importlib.util.find_spec("wandb") is not None:
        pytest.skip("wandb is installed: its sink is no refusal here")
    monkeypatch.setattr("encoderlab.train.step.build_model", _no_build)
    code, err = cli(
        [*SMOKE, "--param", "steps=12", "--set", "sinks=[wandb]", "--out", tmp_path / "o"], capsys
    )
    assert_one_line(code, err, r"the wandb sink needs the wandb package: pip install wandb")
    assert not (tmp_path / "o").exists()


def test_flex_attention_on_cpu_is_refused_before_the_model_is_built(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("encoderlab.train.step.build_model", _no_build)
    flex = ["--set", "device=cpu", "scale.attn_impl=flex"]
    code, err = cli([*SMOKE, "--param", "steps=12", *flex, "--out", tmp_path / "o"], capsys)
    assert_one_line(
        code, err, r"scale.attn_impl=flex cannot train on CPU \(flex_attention has no CPU backward\)"
    )
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("size", ["nano", "micro", "tiny"])
@pytest.mark.parametrize("vocab,mask", [(96, 3), (8_195, None)])
def test_the_planned_shape_is_the_built_models_and_counts_its_parameters(size, vocab, mask):
    """The duration line names the parameters of a model it no longer builds: the shape's arithmetic
    (`ModelConfig.num_params`) must be the built model's count. Small sizes, built for real (the meta device's
    first use imports 800 modules); that the arithmetic holds at every size is tests/model/test_encoder.py's."""
    from encoderlab.train.build import scratch_config  # the shape's one source, which the build reads too

    spec = TokenSpec(vocab_size=vocab, pad_id=0, bos_id=1, eos_id=2, mask_id=mask, special_ids=(0, 1, 2))
    planned = scratch_config(size, spec, seq_len=64)
    model, _ = build_model(ModelSpec(size=size), spec, 64)
    assert model.config == planned
    assert planned.num_params() == sum(p.numel() for p in model.parameters())
