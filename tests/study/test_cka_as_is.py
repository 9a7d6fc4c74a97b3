"""A study's CKA of a run without a recipe: a start model compared as is (a detour against the
checkpoint it starts from).

The study file passed validation, but the graph gave the CKA node only the pretraining nodes of the runs
it compares, so a run evaluated as is was in none of its inputs and `run_cka` failed with a KeyError
traceback after every run had trained. The CKA node now holds that run's start model as its source
(`CkaNode.sources`, as an eval node's `EvalNode.source`) and loads it as is.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from fake_study import backend, small_spec

from encoderlab.study.graph import build_graph
from encoderlab.study.nodeconfig import CkaNode
from encoderlab.study.spec import CkaSpec, RunSpec


def _study(start: str):
    """The fake study with a start model evaluated as is, compared by CKA with mlm40 (mlm40-s2 the noise)."""
    spec = small_spec()
    runs = (*spec.runs, RunSpec(name="start", label="Start", init=start))
    cka = CkaSpec(a="start", b="mlm40", noise=("mlm40-s2", "mlm40"), texts="fake", n_texts=50)
    return replace(spec, runs=runs, cka=(cka,), claims=())


def test_the_cka_node_of_a_run_without_a_recipe_loads_its_start_model_as_is(tmp_path, monkeypatch):
    from tests.analysis.analysis_helpers import make_model, make_texts, make_tokenizer

    from encoderlab.analysis import inputs
    from encoderlab.study.nodes import run_cka
    from encoderlab.study.runner import NodeContext, NodeOutput

    start = str(tmp_path / "start-model")
    graph = build_graph(_study(start), backend())
    node = graph.nodes["cka/start-vs-mlm40"]
    assert node.deps == ("pretrain/mlm40", "pretrain/mlm40-s2")
    tok = make_tokenizer()
    models = {start: make_model(0, max_seq_len=16)}
    models |= {
        str(tmp_path / m / "run" / "final"): make_model(i, max_seq_len=16) for i, m in enumerate(node.deps, 1)
    }
    loaded: list[str] = []
    monkeypatch.setattr(inputs, "load_model", lambda path: (loaded.append(path), (models[path], tok))[1])
    monkeypatch.setattr(inputs, "read_texts", lambda texts: make_texts(60, lo=20, hi=30))
    ctx = NodeContext(
        node=node,
        out_dir=tmp_path / "out",
        inputs={d: NodeOutput(path=tmp_path / d, result={}, node=graph.nodes[d]) for d in node.deps},
        study_dir=tmp_path,
        spec=None,
    )
    (tmp_path / "out").mkdir()
    result = run_cka(ctx)  # was KeyError: 'start'
    assert loaded[0] == start and len(loaded) == 3
    assert result["a"] == "start" and len(result["divergence"]) == 3


def test_a_cka_of_trained_runs_only_keeps_its_config_and_key():
    """`sources` is in the config (and key) only when a run is compared as is: built-in studies keep theirs."""
    graph = build_graph(small_spec(), backend())
    assert "sources" not in graph.nodes["cka/clm-vs-mlm40"].config
    as_is = build_graph(_study("org/start"), backend()).nodes["cka/start-vs-mlm40"]
    assert as_is.config["sources"] == {"start": "org/start"}
    assert CkaNode.of(as_is).data() == as_is.config  # read back typed, as the node reads it


def test_a_cka_length_beyond_the_positions_of_a_model_compared_as_is_is_refused_before_anything_runs(
    tmp_path,
):
    """The start model's positions bound the CKA's `max_length` as a trained run's do (`check_runs`, which
    `study run` and `study plan` make first); 128 and the default pass."""
    from transformers import BertConfig, BertForMaskedLM

    from encoderlab.errors import UserError
    from encoderlab.study.runchecks import check_runs

    bert = tmp_path / "bert128"
    BertForMaskedLM(
        BertConfig(vocab_size=300, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                   intermediate_size=64, max_position_embeddings=128)
    ).save_pretrained(str(bert))  # fmt: skip
    spec = _study(str(bert))
    cka = replace(spec.cka[0], max_length=256)
    with pytest.raises(UserError) as refused:
        check_runs(replace(spec, cka=(cka,)), memory=False)
    assert str(refused.value) == (
        "study fake-pfs, cka start-vs-mlm40: max_length 256 is outside what the models take (1-128 tokens); "
        "pass max_length 128 or less"
    )
    for fine in (128, CkaSpec.max_length):
        check_runs(replace(spec, cka=(replace(cka, max_length=fine),)), memory=False)
