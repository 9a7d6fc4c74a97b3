"""A study's CKA node over a run whose hidden states are not finite (a diverged run): one line naming the
CKA and the run, nothing written. Before, the node wrote NaN CKA from the broken layer on, and the claim's
sentence said those layers' features were constant across the texts."""

from __future__ import annotations

import pytest
import torch
from fake_study import run_cka_node

from encoderlab.errors import UserError
from encoderlab.study.spec import CkaSpec


def test_a_cka_node_over_a_run_with_nan_weights_is_refused_naming_the_cka(tmp_path, monkeypatch):
    from tests.analysis.analysis_helpers import make_model, make_texts

    models = {m: make_model(seed) for seed, m in enumerate(("a", "b", "twin"))}
    with torch.no_grad():
        models["a"].layers[1].mlp.down_proj.weight.fill_(float("nan"))
    analysis = CkaSpec(a="a", b="b", noise=("twin", "b"), n_texts=50)
    with pytest.raises(UserError) as refused:
        run_cka_node(tmp_path, monkeypatch, analysis, models, make_texts(60))
    assert str(refused.value).startswith(
        "cka a-vs-b (A a, B b, B' twin): model A gives hidden states that are not finite (NaN or inf) in layers 1-2"
    )
    assert not (tmp_path / "cka.json").exists()
