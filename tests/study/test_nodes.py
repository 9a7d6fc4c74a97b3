"""The real node kinds on a tiny local corpus: prepare, pretrain (scratch and continued), compute.

Evaluation is faked here (the real one needs fetched assets and minutes); its adapter is covered by
the demo study. What this checks is the wiring: a study's scale turns into recipe parameters, the
budgets the graph compares are the ones training runs, and a continued run starts from its base.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml
from fake_study import backend as fake_backend
from fake_study import record, run_cka_node, tiny_corpus

from encoderlab.study.data import load_study
from encoderlab.study.graph import build_graph
from encoderlab.study.nodes import real_backend
from encoderlab.study.runner import node_dir, run_study
from encoderlab.study.spec import CkaSpec, DataSpec, EvalSpec, RunSpec, StudySpec


def _spec(corpus) -> StudySpec:
    return StudySpec(
        name="tiny-real",
        scale="test",
        description="real prepare and pretrain nodes on a tiny corpus",
        size="tiny",
        seq_len=32,
        micro_batch=2,
        grad_accum=2,
        steps=6,
        data=(
            DataSpec(name="main", corpus=(str(corpus),), vocab_size=300, decontaminate=False),
            # a second corpus in main's tokenizer, read by the run continued from one trained on main
            DataSpec(
                name="domain", corpus=(str(corpus),), tokenizer="main", max_docs=40, decontaminate=False
            ),
        ),
        runs=(
            RunSpec(name="mlm40", recipe="pfs-mlm", params={"ratio": 0.4}, eval_steps=(3,)),
            RunSpec(name="clm", recipe="pfs-clm"),
            RunSpec(name="clm+mlm", recipe="cpt-mlm", init="clm", steps=4, group="cpt", data="domain"),
            RunSpec(name="mlm40-s2", recipe="pfs-mlm", params={"ratio": 0.4}, seed=1, evaluate=False),
        ),
        cka=(
            CkaSpec(
                a="clm", b="mlm40", noise=("mlm40-s2", "mlm40"), texts=str(corpus), n_texts=50, max_length=16
            ),
        ),
        eval=EvalSpec(suite="fake", tasks=("sst",), lrs=(1e-4,), seeds=(0, 1)),
        baseline="mlm40",
        run_overrides={"precision": "fp32"},
    )


def _real_with_fake_eval():
    """The real prepare, pretrain and CKA nodes; evaluation and the report faked (they need assets)."""
    fake = fake_backend()
    real = real_backend()
    real.kinds["eval"] = fake.kinds["eval"].__class__(
        run=lambda ctx: record(ctx.node.config, 50.0, 50.0 + ctx.node.config["seed"])
    )
    real.kinds["report"] = fake.kinds["report"]
    real.suite_tasks = fake.suite_tasks
    real.task_signature = fake.task_signature
    real.required_assets = lambda spec: []
    return real


@pytest.mark.slow
def test_real_prepare_and_pretrain_nodes(tmp_path):
    corpus = tiny_corpus(tmp_path / "corpus.jsonl", 200)
    real = _real_with_fake_eval()
    spec = _spec(corpus)
    graph = build_graph(spec, real)
    assert graph.nodes["pretrain/mlm40"].config["tokens"] == 6 * 2 * 2 * 32  # steps x micro x accum x seq
    assert graph.nodes["pretrain/clm+mlm"].config["tokens"] == 4 * 2 * 2 * 32
    run_study(spec, tmp_path / "study", real, progress=False)
    records = {
        json.loads(line)["node"]: json.loads(line)
        for line in (tmp_path / "study" / "compute.jsonl").read_text().splitlines()
    }
    for name, steps in (("mlm40", 6), ("clm", 6), ("clm+mlm", 4)):
        node = graph.nodes[f"pretrain/{name}"]
        run = node_dir(tmp_path / "study", node) / "run"
        assert (run / "final" / "model.safetensors").exists()
        assert records[node.name]["tokens"] == steps * 128 and records[node.name]["flops"] > 0
    mlm_run = node_dir(tmp_path / "study", graph.nodes["pretrain/mlm40"]) / "run"
    assert (mlm_run / "checkpoints" / "step_0000003" / "model").is_dir()  # kept for the checkpoint eval
    cpt = yaml.safe_load(
        (node_dir(tmp_path / "study", graph.nodes["pretrain/clm+mlm"]) / "run" / "config.yaml").read_text()
    )
    assert cpt["model"]["init"] == str(
        node_dir(tmp_path / "study", graph.nodes["pretrain/clm"]) / "run" / "final"
    )
    assert cpt["precision"] == "fp32" and cpt["layout"]["seq_len"] == 32
    cka = json.loads((node_dir(tmp_path / "study", graph.nodes["cka/clm-vs-mlm40"]) / "cka.json").read_text())
    assert cka["layers"] and all(
        0.0 <= r["divergence"] <= 1.0 and r["baseline_divergence"] is not None for r in cka["layers"]
    )
    main, domain = (
        node_dir(tmp_path / "study", graph.nodes[f"prepare/{d}"]) / "data" for d in ("main", "domain")
    )
    hashes = [json.loads((d / "meta.json").read_text())["tokenizer"]["hash"] for d in (main, domain)]
    assert hashes[0] == hashes[1] and not (domain.parent / "tokenizer").exists()  # reused, not trained
    (result,) = load_study(tmp_path / "study").cka  # what the claim reads: the analysis's own summary
    assert result.low_layers == cka["low_layers"] and result.low_layers["low_layers"] == [0]
    assert result.low_layers["n_seeds"] == 3 and result.low_layers["holds"] in (True, False)


def test_flops_fallback_counts_parameters_of_encoders_and_continued_hf_models(tmp_path):
    import torch
    from transformers import BertConfig

    from encoderlab.model import Encoder, ModelConfig
    from encoderlab.model.hf_registry import adapter_from_hf_state, hf_class
    from encoderlab.model.io import save_model_folder
    from encoderlab.study.nodes import _flops

    cfg = ModelConfig.from_size("tiny", vocab_size=300)
    save_model_folder(Encoder(cfg), tmp_path / "enc")
    assert _flops(tmp_path / "enc", [], 10) == 6.0 * cfg.num_params() * 10
    bert = BertConfig(
        vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
    )
    torch.manual_seed(0)
    ref = hf_class("bert")(bert)
    adapter, _ = adapter_from_hf_state(bert, ref.state_dict(), "test")
    save_model_folder(adapter, tmp_path / "bert")
    # A continued MiniLM is an adapter with no ModelConfig; the count is torch's (tied head once).
    assert _flops(tmp_path / "bert", [], 10) == 6.0 * sum(p.numel() for p in ref.parameters()) * 10
    assert _flops(tmp_path / "bert", [{"flops": 5.0}, {"flops": 7.0}], 10) == 12.0  # logged FLOPs win


@pytest.mark.slow
def test_a_copied_study_resumes_its_unfinished_run(tmp_path):
    """A study folder copied (or moved) elsewhere resumes a run that was cut short: the saved run
    config differs only in paths under the study folder, which a study may rewrite (`study run` has
    no --force, which the trainer's refusal used to ask for)."""
    import shutil

    real = _real_with_fake_eval()
    spec = dataclasses.replace(
        _spec(tiny_corpus(tmp_path / "corpus.jsonl", 200)),
        runs=(RunSpec(name="mlm40", recipe="pfs-mlm", params={"ratio": 0.4}),),
        cka=(),
        steps=4,
    )
    run_study(spec, tmp_path / "study", real, progress=False)
    shutil.copytree(tmp_path / "study", tmp_path / "copy")
    node = node_dir(tmp_path / "copy", build_graph(spec, real).nodes["pretrain/mlm40"])
    (node / "node.json").unlink()  # as if the copy was taken while the run was still training
    shutil.rmtree(node / "run" / "final")
    run_study(spec, tmp_path / "copy", real, progress=False)
    saved = yaml.safe_load((node / "run" / "config.yaml").read_text())
    assert (node / "run" / "final" / "model.safetensors").is_file()
    assert saved["out"] == str(node / "run")  # the run now records where it lies


def test_required_assets_counts_only_evaluated_runs():
    """A run trained only as a base or a control (`evaluate=False`) reads no evaluation data, so a
    study whose evaluated runs use `tweets` does not ask for the pocket suite's other tasks' assets."""
    from encoderlab.study.needs import required_assets

    runs = (
        RunSpec(name="mlm40", recipe="pfs-mlm", params={"ratio": 0.4}, tasks=("tweets",)),
        RunSpec(name="base", recipe="pfs-clm", evaluate=False),  # the suite's every task, if evaluated
    )
    spec = StudySpec(
        name="assets",
        scale="test",
        description="evaluated and unevaluated runs",
        data=(DataSpec(name="main", corpus=("wiki-leads",), vocab_size=300),),
        runs=runs,
        eval=EvalSpec(suite="pocket", lrs=(1e-4,), seeds=(0,)),
        baseline="mlm40",
    )
    assert required_assets(spec) == ["wiki-leads", "tweets"]
    unevaluated = dataclasses.replace(spec, runs=(dataclasses.replace(runs[0], evaluate=False), runs[1]))
    assert required_assets(unevaluated) == ["wiki-leads"]


def test_a_start_model_shorter_than_the_rows_refuses_the_study_before_it_writes(tmp_path, capsys):
    """A run continuing a model with 64 positions in a study of 128-token rows: `study run` refuses in
    one line naming the run and the fix, before the study folder holds anything (the pretraining node
    would refuse only at its turn); the fix given, the check passes. A run continuing a study run is
    checked against its base's positions (tests/study/test_checks.py)."""
    from transformers import BertConfig, BertForMaskedLM

    from encoderlab.errors import UserError
    from encoderlab.study.positions import check_start_models

    bert = tmp_path / "bert64"
    BertForMaskedLM(
        BertConfig(vocab_size=300, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                   intermediate_size=64, max_position_embeddings=64)
    ).save_pretrained(str(bert))  # fmt: skip
    spec = dataclasses.replace(
        _spec(tiny_corpus(tmp_path / "corpus.jsonl", 20)),
        seq_len=128,
        runs=(
            RunSpec(name="mlm40", recipe="pfs-mlm", params={"ratio": 0.4}),
            RunSpec(name="bert+mlm", recipe="cpt-mlm", init=str(bert), steps=4, group="cpt"),
        ),
        cka=(),
    )
    study = tmp_path / "study"
    with pytest.raises(UserError, match=r"run bert\+mlm starts from .*bert64, which accepts 64 tokens, but its "
                       r"rows are 128 tokens; give run bert\+mlm `params: \{seq_len: 64\}`"):  # fmt: skip
        run_study(spec, study, _real_with_fake_eval(), progress=False)
    assert not study.exists()  # the folder made to hold the study's lock is gone with the refusal
    from tests.reliability.test_hostile_inputs import assert_one_line, cli

    from encoderlab.study.files import dump_study

    (tmp_path / "s.yaml").write_text(dump_study(dataclasses.replace(spec, eval=EvalSpec(suite="pocket"))))
    code, err = cli(["study", "plan", tmp_path / "s.yaml"], capsys)  # `study plan` says it too
    assert_one_line(code, err, r"run bert\+mlm starts from .*bert64, which accepts 64 tokens")
    fixed = dataclasses.replace(
        spec, runs=(spec.runs[0], dataclasses.replace(spec.runs[1], params={"seq_len": 64}))
    )
    check_start_models(fixed)


def test_the_cka_node_writes_strict_json_when_a_seed_noise_divergence_is_zero(tmp_path, monkeypatch):
    """A seed-noise divergence of 0 (a layer no run changed, a twin equal to b) makes the ratio infinite:
    the node's cka.json held `Infinity`, which strict JSON readers (jq, JavaScript) refuse."""
    from tests.analysis.analysis_helpers import make_model, make_texts

    models = {"a": make_model(0), "b": make_model(1), "twin": make_model(1)}  # the twin: b's very weights
    analysis = CkaSpec(a="a", b="b", noise=("twin", "b"), n_texts=50)
    result = run_cka_node(tmp_path, monkeypatch, analysis, models, make_texts(60))
    data = json.loads((tmp_path / "cka.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    assert all(r["baseline_divergence"] == 0 and r["ratio"] is None for r in data["layers"])
    # the node's result, which its marker and the report's results.json hold, is strict too (was Infinity)
    json.dumps(result, allow_nan=False)
    assert result["ratio"] == [None] * 3 and result["low_layers"]["low_ratio"] is None
    from encoderlab.config import from_dict
    from encoderlab.study.data import CkaResult

    assert from_dict(CkaResult, result, where="cka").ratio == [None] * 3  # and reads back as a study result
    # what the claim needs to say when CKA had no more texts than dimensions (only the node's log said it)
    width = models["a"].config.hidden_size
    assert (result["n_texts"], result["hidden_size"]) == (50, width)
    caveat = from_dict(CkaResult, result, where="cka").few_texts
    assert caveat == (
        f"; on 50 texts, no more than the models' {width} hidden dimensions, which inflates CKA"
        if width >= 50
        else ""
    )
