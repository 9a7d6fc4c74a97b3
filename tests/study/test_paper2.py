"""Paper 2's study against paper 2's setup: the gpu scales are its experiment, the others say they are not."""

from __future__ import annotations

import dataclasses
import functools

import pytest

from encoderlab.study.catalog import get_study, list_studies
from encoderlab.study.fidelity import departures, setup_text


@functools.cache
def _listed() -> tuple:
    """`list_studies()`, computed once for this file's tests (it resolves and plans every built-in study at
    every scale, ~2.5 s; the tests only read it, and nothing they do before changes it)."""
    return tuple(list_studies())


@pytest.mark.parametrize(
    "scale,model",
    [("gpu-210m", "ModernBERT-base"), ("gpu-610m", "ModernBERT-large"), ("gpu-1b", "ModernBERT-large")],
)
def test_gpu_scales_run_paper2s_design_on_its_open_part_and_say_it_is_not_the_experiment(scale, model):
    """Paper 2's start models, tokenizer and protocol, on the part of its data and tasks that is on the
    hub: the data (without the medical instructions and MIMIC-III notes) and the tasks (7 of 11) depart,
    so no gpu scale is called paper 2's experiment."""
    spec = get_study("paper2-detour", scale)
    (data,) = spec.data
    assert data.corpus == ("biomed-enriched",) and data.tokenizer == f"answerdotai/{model}"
    assert spec.run("baseline-biomed").init == f"answerdotai/{model}"
    assert spec.eval.suite == "biomed" and not spec.eval.tasks and spec.eval.max_steps is None
    gone = {d.aspect: d.here for d in departures(spec)}
    assert list(gone) == ["data", "tasks"]
    assert gone["data"].startswith("biomed-enriched") and "MIMIC-III" in gone["data"]
    # paper 2 read Biomed-Enriched's paragraphs of educational score >= 3 (50B), clinical ones upsampled (10B)
    assert "educational score >= 3" in gone["data"] and "clinical ones upsampled" in gone["data"]
    assert gone["tasks"].startswith("biomed suite: all, without 4 of the 11 tasks: the clinical")
    # JNLPBA and NCBI Disease are BLURB's files, not the bigbio versions paper 2's model cards name
    assert (
        "bigbio/jnlpba (5 types, no test split)" in gone["tasks"] and "bigbio/ncbi_disease" in gone["tasks"]
    )
    lines = {(row[0], row[1]): row[-1] for row in _listed()}
    assert lines["paper2-detour", scale] == "NOT paper 2's setup: data, tasks"
    assert "does not reproduce paper 2" in setup_text(spec)


@pytest.mark.parametrize(
    "scale,start", [("demo", "minilm"), ("cpu", "a tiny model the study pretrains (base)")]
)
def test_cpu_scales_name_every_way_they_are_not_paper2(scale, start):
    gone = {d.aspect: d.here for d in departures(get_study("paper2-detour", scale))}
    assert list(gone) == ["data", "tokenizer", "tasks", "model", "pretraining", "fine-tuning"]
    assert gone["model"] == start
    # both scales score pubmedqa-retrieval only: the demo names it per run, not in its EvalSpec
    assert gone["tasks"] == "domain suite: pubmedqa-retrieval"
    if scale == "cpu":  # the domain corpus in the base's own tokenizer, and the continued runs' length
        assert gone["tokenizer"].endswith("ids trained on general-en")
        assert gone["pretraining"].startswith("1,000 + 220 steps of 4,096 tokens")
    else:  # the steps the runs train: 40 of the scale's and the recipe's 4-step decay (was "40 steps")
        assert gone["pretraining"] == "44 steps of 1,024 tokens (8 x 128)"


def test_the_code_detour_is_paper2s_design_on_starcoderdata_and_code_retrieval_at_gpu_scales_only():
    """paper2-detour-code: the biomedical study's runs and freezing claims on Python from the hub, code
    retrieval at paper 2's LR and seeds, CKA on code; no cpt claim (the stdlib test functions are in The
    Stack); not built at the cpu scales, in one line."""
    from encoderlab.errors import UserError
    from encoderlab.eval.suites import PAPER2_LRS, PAPER2_SEEDS

    bio, code = get_study("paper2-detour", "gpu-210m"), get_study("paper2-detour-code", "gpu-210m")
    (data,) = code.data
    assert data.corpus == ("starcoderdata-python",) and data.tokenizer == "answerdotai/ModernBERT-base"
    assert [r.name.replace("biomed", "code") for r in bio.runs] == [r.name for r in code.runs]
    assert [r.recipe for r in bio.runs] == [r.recipe for r in code.runs]
    assert code.run("detour-code").params == bio.run("detour-biomed").params == {"tokens": 10_000_000_000}
    assert (code.eval.suite, code.eval.tasks) == ("domain", ("code-retrieval",))
    assert (code.eval.lrs, code.eval.seeds) == (PAPER2_LRS, PAPER2_SEEDS)
    assert code.cka[0].texts == "code-python" and code.baseline == "baseline-code"
    ids = [c.id for c in code.claims]
    assert ids == ["detour-code", "cka-code", "freeze-code", "freeze-decay-code"]
    assert [c.id.replace("biomed", "code") for c in bio.claims] == [*ids, "cpt-code"]
    gone = {d.aspect: d.here for d in departures(code)}
    assert gone == {"data": "starcoderdata-python", "tasks": "domain suite: code-retrieval"}
    for scale in ("demo", "cpu"):
        with pytest.raises(
            UserError, match="^study paper2-detour-code runs at scales gpu-210m, gpu-610m, gpu-1b only "
        ):
            get_study("paper2-detour-code", scale)
    assert {s for n, s, *_ in _listed() if n == "paper2-detour-code"} == {
        "gpu-210m",
        "gpu-610m",
        "gpu-1b",
    }


@pytest.mark.parametrize(
    "name,scale,scored_on",
    [
        ("paper2-detour", "demo", "pubmedqa-retrieval"),
        ("paper2-detour", "cpu", "pubmedqa-retrieval"),
        ("paper2-detour", "gpu-210m", "the biomed suite (7 tasks)"),
        ("paper2-detour-code", "gpu-210m", "code-retrieval"),
    ],
)
def test_the_detour_claim_names_what_each_scale_scores(name, scale, scored_on):
    """It said "on the biomed domain suite" at every scale: the demo and cpu score one offline task, the
    gpu scales the hub's `biomed` suite (8 of paper 2's 11 tasks), the code study code-retrieval."""
    spec = get_study(name, scale)
    (claim,) = [c for c in spec.claims if c.id.startswith("detour-")]
    assert claim.text == f"The CLM detour beats the MLM baseline on {scored_on}"
    from encoderlab.study.fidelity import named_tasks

    assert named_tasks(spec) == (() if "suite" in scored_on else (scored_on,))


@pytest.mark.parametrize("scale", ["demo", "cpu", "gpu-210m"])
def test_the_cka_node_compares_the_detour_with_the_baseline_against_its_seed_17_and_42_twin(scale):
    """Paper 2's control: d(CLM, MLM_s1) / d(MLM_s2, MLM_s1), the MLM models trained at seeds 17 and 42
    (Rian-T/thesis, cka_mlm_control_heldout.json). Read off the built graph: the CKA node's models and the
    resolved configs of the pretraining nodes it reads."""
    from encoderlab.study.graph import build_graph
    from encoderlab.study.nodeconfig import CkaNode, PretrainNode
    from encoderlab.study.nodes import real_backend

    graph = build_graph(get_study("paper2-detour", scale), real_backend())
    (node,) = [n for n in graph if n.kind == "cka"]
    cka = CkaNode.of(node)
    pretrain = {n.name.split("/", 1)[1]: PretrainNode.of(n).run for n in graph if n.kind == "pretrain"}
    a, b, twin = cka.models[:3]
    assert (a.split("/")[0], b.split("/")[0], twin) == (
        "detour-biomed",
        "baseline-biomed",
        "baseline-biomed-s2",
    )
    assert cka.analysis.noise == ("baseline-biomed-s2", "baseline-biomed")  # (B', B): B is the reference
    assert sorted(node.deps) == sorted(f"pretrain/{m}" for m in (a, b, twin))
    runs = {m: pretrain[m] for m in (a, b, twin)}
    assert (runs[b].seed, runs[twin].seed) == (17, 42) and runs[a].seed == 17
    assert (
        runs[twin].data.seed == runs[b].data.seed == runs[a].data.seed
    )  # one data order: only the seed differs
    assert runs[twin].phases == runs[b].phases != runs[a].phases  # the twin is the baseline's recipe
    # nothing but the training seed differs, so the twin's masks are all it changes (docs/analysis.md)
    assert dataclasses.replace(runs[twin], seed=runs[b].seed) == runs[b]
    assert cka.analysis.max_length == 512


@pytest.mark.parametrize("name, scale", [("paper2-detour", "cpu"), ("paper2-detour-code", "gpu-210m")])
def test_the_claims_say_what_the_runs_test_and_attribute_the_papers_reading(name, scale):
    """The freezing claims led with the paper's reading ("the detour's gain lives in the low layers"), which
    one comparison of two freezing runs cannot show; and the CKA claim said the divergence is concentrated
    in the low layers, where the raw divergence is largest in the deep layers (the paper's own data) and
    what is tested is its ratio to seed noise."""
    spec = get_study(name, scale)
    dom = "biomed" if name == "paper2-detour" else "code"
    text = {c.id: c.text for c in spec.claims}
    assert text[f"freeze-{dom}"].startswith(
        "Freezing the middle layers during CLM beats freezing the low layers"
    )
    assert text[f"freeze-decay-{dom}"].startswith(
        "Freezing the low layers during the decay beats freezing them during CLM"
    )
    assert all("read there as" in text[k] for k in (f"freeze-{dom}", f"freeze-decay-{dom}"))
    assert text[f"cka-{dom}"].startswith("Relative to seed noise, CKA divergence")


def test_the_papers_start_model_pinned_to_a_commit_is_still_the_papers_model():
    """`answerdotai/ModernBERT-base@SHA` (a pinned revision: `data.hubmodels`) departed from paper 2 in
    its model and tokenizer, as if another model: any commit of the paper's model is the paper's."""
    import dataclasses

    spec = get_study("paper2-detour", "gpu-210m")
    pinned = "answerdotai/ModernBERT-base@" + "c" * 40
    spec = dataclasses.replace(
        spec,
        data=tuple(dataclasses.replace(d, tokenizer=pinned) for d in spec.data),
        runs=tuple(
            dataclasses.replace(r, init=pinned) if r.init == "answerdotai/ModernBERT-base" else r
            for r in spec.runs
        ),
    )
    assert spec.run("baseline-biomed").init == pinned
    assert [d.aspect for d in departures(spec)] == ["data", "tasks"]
