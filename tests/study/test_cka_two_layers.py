"""A study's CKA of models with fewer than 3 layers.

Paper 2's low-layer claim needs its low/mid/late groups (`train.freeze.paper2_groups`), which a 2-layer
model (the `nano` size) does not have. `analyze cka` then writes no low-layer summary; the study's CKA
node asked for one regardless and failed after every run had trained ("paper 2's low/mid/late layer
groups need at least 3 layers, ...; give the layers explicitly, e.g. 0", a choice a study has none of).
Now the node writes its divergences and ratios, and the claim is not tested, saying why.
"""

from __future__ import annotations

from types import SimpleNamespace

from fake_study import run_cka_node

from encoderlab.study.data import CkaResult
from encoderlab.study.measures import _cka_low_layers
from encoderlab.study.spec import CkaSpec, ClaimSpec


def test_the_study_cka_node_of_two_layer_models_writes_its_ratios_without_a_low_layer_summary(
    tmp_path, monkeypatch
):
    from tests.analysis.analysis_helpers import make_model, make_texts

    models = {m: make_model(seed, n_layers=2) for seed, m in enumerate(("a", "b", "twin"))}
    analysis = CkaSpec(a="a", b="b", noise=("twin", "b"), n_texts=50)
    result = run_cka_node(tmp_path, monkeypatch, analysis, models, make_texts(60))
    assert len(result["ratio"]) == 2 and result["low_layers"] is None
    assert (tmp_path / "cka.json").is_file()


def test_the_low_layer_claim_on_two_layer_models_is_not_tested_naming_the_depth():
    result = CkaResult(a="clm", b="mlm", divergence=[0.4, 0.5], noise_divergence=[0.3, 0.4], ratio=[1.3, 1.2])
    data = SimpleNamespace(cka=[result], label=lambda m: m, spec=SimpleNamespace(cka=[result]))
    outcome = _cka_low_layers(data, ClaimSpec(id="c", text="t", kind="cka_low_layers", a="clm", b="mlm"))
    assert outcome.status == "not tested"
    assert outcome.sentence == (
        "the models have 2 layers, and paper 2's low/mid/late groups need at least 3: there is no "
        "low group to compare with the others."
    )
