"""A study's CKA on models of fewer positions than its `max_length` (the paper's 512 by default).

`analyze cka` reads texts at 512 tokens, or at the models' positions when fewer; the study's CKA node
passed 512 regardless, and a model continued from a 128-position one failed with the position check's
ValueError traceback after every run had trained. The default is now capped as `analyze cka`'s is
(one helper, `analysis.inputs.analysis_length`); a `max_length` set beyond the models' positions is
refused in one line before anything runs.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from fake_study import run_cka_node, small_spec

from encoderlab.errors import UserError
from encoderlab.study.runchecks import check_runs
from encoderlab.study.spec import CkaSpec, RunSpec


def _run_cka_node(tmp_path, monkeypatch, analysis: CkaSpec) -> dict:
    """The real CKA node on 16-position models and texts longer than that."""
    from tests.analysis.analysis_helpers import make_model, make_texts

    models = {m: make_model(seed, max_seq_len=16) for seed, m in enumerate(("a", "b", "twin"))}
    return run_cka_node(tmp_path, monkeypatch, analysis, models, make_texts(60, lo=20, hi=30))


def test_the_study_cka_node_caps_its_default_length_at_the_models_positions(tmp_path, monkeypatch):
    """Default max_length (512) on 16-position models: read at 16 tokens, as `analyze cka` does (was a
    ValueError traceback from the position check)."""
    result = _run_cka_node(tmp_path, monkeypatch, CkaSpec(a="a", b="b", noise=("twin", "b"), n_texts=50))
    assert len(result["divergence"]) == 3
    assert json.loads((tmp_path / "cka.json").read_text())["encoding"]["max_length"] == 16


def test_the_study_cka_node_refuses_a_set_length_beyond_the_models_positions(tmp_path, monkeypatch):
    """A max_length set beyond the positions is not silently capped: one line, in the study's words."""
    analysis = CkaSpec(a="a", b="b", noise=("twin", "b"), n_texts=50, max_length=100)
    with pytest.raises(UserError) as refused:
        _run_cka_node(tmp_path, monkeypatch, analysis)
    assert str(refused.value) == (
        "cka a-vs-b: max_length 100 is outside what the models take (1-16 tokens); pass max_length 16 or less"
    )


def test_a_study_cka_length_beyond_a_start_models_positions_is_refused_before_anything_runs(tmp_path):
    """A run continued from a 128-position BERT, compared with max_length 256: refused by the checks
    `study run` and `study plan` make first (the node failed after every run had trained); the default
    512 and 128 pass (the node caps the default at 128)."""
    from transformers import BertConfig, BertForMaskedLM

    bert = tmp_path / "bert128"
    BertForMaskedLM(
        BertConfig(vocab_size=300, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                   intermediate_size=64, max_position_embeddings=128)
    ).save_pretrained(str(bert))  # fmt: skip
    spec = small_spec()
    cont = RunSpec(name="bert+mlm", recipe="cpt-mlm", init=str(bert), steps=4, group="cpt")
    cka = CkaSpec(a="bert+mlm", b="mlm40", texts="fake", n_texts=50, max_length=256)
    spec = replace(spec, runs=(*spec.runs, cont), cka=(cka,), claims=())
    with pytest.raises(UserError) as refused:
        check_runs(spec, memory=False)
    assert str(refused.value) == (
        "study fake-pfs, cka bert+mlm-vs-mlm40: max_length 256 is outside what the models take (1-128 tokens); "
        "pass max_length 128 or less"
    )
    for fine in (128, CkaSpec.max_length):
        check_runs(replace(spec, cka=(replace(cka, max_length=fine),)), memory=False)
