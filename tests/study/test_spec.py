"""Built-in studies: every study builds at every scale; bad names are one line."""

from __future__ import annotations

import pytest

from encoderlab.errors import UserError
from encoderlab.study.catalog import STUDIES, built_in, get_study, list_studies
from encoderlab.study.scales import SCALES


@pytest.mark.parametrize("study,scale", built_in())
def test_every_builtin_study_builds_at_every_scale(study, scale):
    spec = get_study(study, scale)
    assert spec.name == study and spec.scale == scale and spec.claims
    names = {r.name for r in spec.runs}
    assert spec.baseline in names


def test_demo_pfs_has_the_minimum_grid_and_gpu_scales_use_paper_settings():
    demo = get_study("paper1-pfs", "demo")
    assert {"mlm40", "clm", "clm25-mlm40"} <= {r.name for r in demo.runs}
    assert demo.eval.tasks and len(demo.eval.tasks) < 10  # a subset of the pocket suite
    full = get_study("paper1-pfs", "gpu-610m")
    assert {r.name for r in full.runs} >= {
        "mlm20",
        "mlm30",
        "mlm40",
        "mlm50",
        "clm",
        "clm25-mlm40",
        "clm50-mlm40",
        "clm75-mlm40",
    }
    assert full.size == "610m" and full.steps is None  # recipe defaults: the paper's 42k steps
    assert full.eval.lrs == (1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4) and full.eval.seeds == (0, 1, 2, 3, 4)
    detour = get_study("paper2-detour", "gpu-210m")
    assert {"freeze-low-biomed", "freeze-mid-biomed", "freeze-low-decay-biomed"} <= {
        r.name for r in detour.runs
    }
    # paper 2, 2.7: freezing L8-14 during CLM (61.2) or L0-7 during the decay (61.2) keeps the gain,
    # freezing L0-7 during CLM loses it (59.3)
    claims = {c.id: (c.a, c.b) for c in detour.claims}
    assert claims["freeze-biomed"] == ("freeze-mid-biomed", "freeze-low-biomed")
    assert claims["freeze-decay-biomed"] == ("freeze-low-decay-biomed", "freeze-low-biomed")
    assert not [c for c in get_study("paper2-detour", "demo").claims if c.id.startswith("freeze")]


def test_unknown_study_or_scale_lists_the_valid_ones():
    with pytest.raises(UserError, match="unknown study 'nope'; valid: paper1-pfs, paper1-cpt, paper2-detour"):
        get_study("nope")
    with pytest.raises(
        UserError, match="unknown scale 'huge' .*valid: demo, cpu, gpu-210m, gpu-610m, gpu-1b"
    ):
        get_study("paper1-pfs", "huge")


def test_list_has_every_study_and_scale_with_a_time():
    rows = list_studies()
    assert [row[:2] for row in rows] == built_in()
    assert len(rows) == (len(STUDIES) - 1) * len(SCALES) + 3  # paper2-detour-code: the gpu scales only
    assert all(minutes > 0 for _, _, minutes, *_ in rows)


def test_demo_detour_evaluates_only_its_domain_tasks_and_not_the_noise_twin():
    demo = get_study("paper2-detour", "demo")
    start, twin = demo.run("start"), demo.run("baseline-biomed-s2")
    assert start.tasks == demo.run("detour-biomed").tasks == ("pubmedqa-retrieval",)  # one task, no code
    assert not twin.evaluate and demo.cka[0].noise == ("baseline-biomed-s2", "baseline-biomed")
    assert demo.cka[0].n_texts >= 50
    full = get_study("paper2-detour", "gpu-210m")
    assert full.run("baseline-biomed-s2").evaluate and full.run("start").tasks is None  # the whole suite
    assert (
        full.eval.suite == "biomed" and full.eval.lrs == (5e-5,) and full.eval.seeds == (42, 43, 44, 45, 46)
    )


@pytest.mark.parametrize("scale", ["cpu", "gpu-210m"])
def test_detour_seed_twin_is_the_papers_pair_of_training_seeds_17_and_42(scale):
    """Paper 2's seed-noise control compares MLM models trained with seeds 17 and 42 on one data order
    (Rian-T/thesis plots/chapter5/data/cka_mlm_control_heldout.json: "MLM s17 vs MLM s42")."""
    from encoderlab.study.resolve import resolve_run

    spec = get_study("paper2-detour", scale)
    baseline, twin = (resolve_run(spec, spec.run(name), 0) for name in spec.cka[0].noise[::-1])
    assert (baseline.seed, twin.seed) == (17, 42)
    assert baseline.data == twin.data and baseline.phases == twin.phases


def test_cpu_detour_continues_its_own_mlm_base_at_three_pretraining_seeds():
    """The claim can be tested only from an MLM encoder below the evaluation's ceiling: the cpu scale
    pretrains one (`base`) and continues it, the detour and the baseline at three pretraining seeds."""
    from encoderlab.study.graph import build_graph
    from encoderlab.study.nodes import real_backend, run_config

    cpu = get_study("paper2-detour", "cpu")
    graph = build_graph(cpu, real_backend())
    base = run_config(graph.nodes["pretrain/base"])
    (phase,) = base.phases
    assert phase.objective.mask_ratio == 0.3 and phase.objective.selection == "bernoulli"
    assert base.model.size == "tiny" and graph.nodes["prepare/biomed"].deps == ("prepare/general",)
    for arm in ("detour-biomed", "baseline-biomed"):
        nodes = [graph.nodes[f"pretrain/{arm}/s{k}"] for k in (0, 1, 2)]
        assert all(n.deps == ("prepare/biomed", "pretrain/base") for n in nodes)
        assert len({run_config(n).seed for n in nodes}) == 3
    assert graph.nodes["pretrain/baseline-biomed-s2"].deps == ("prepare/biomed", "pretrain/base")
    assert not cpu.run("baseline-biomed-s2").evaluate  # the baseline's own seeds are evaluated instead
    assert {"freeze-low-biomed", "freeze-mid-biomed", "freeze-low-decay-biomed"} <= {r.name for r in cpu.runs}
    assert cpu.eval.tasks == ("pubmedqa-retrieval",) and len(cpu.eval.seeds) >= 3
    assert {c.kind for c in cpu.claims} == {"beats", "cka_low_layers"} and cpu.cka[0].texts == "pubmedqa"


def test_real_checkpoints_are_continued_at_gpu_scales_only():
    def real_runs(scale):
        return {r.name for r in get_study("paper1-cpt", scale).runs if r.group == "real"}

    assert real_runs("demo") == real_runs("cpu") == set()
    assert real_runs("gpu-210m") == {"smollm2+mlm", "minilm+mlm"}


@pytest.mark.parametrize("study,scale", built_in())
def test_every_pretraining_run_checkpoints_at_least_twice_before_its_end(study, scale):
    """A killed study resumes its pretraining from a checkpoint, not from step 0, at every scale."""
    from encoderlab.study.graph import build_graph
    from encoderlab.study.nodes import real_backend, run_config

    graph = build_graph(get_study(study, scale), real_backend())
    runs = {n.name: run_config(n) for n in graph if n.kind == "pretrain"}
    assert runs
    for name, run in runs.items():
        assert 0 < run.checkpoint.every <= run.steps // 2, (name, run.checkpoint.every, run.steps)


@pytest.mark.parametrize(
    "scale,model,tokens",
    [
        ("gpu-210m", "answerdotai/ModernBERT-base", 10_000_000_000),
        ("gpu-610m", "answerdotai/ModernBERT-large", 25_000_000_000),
        ("gpu-1b", "answerdotai/ModernBERT-large", 50_000_000_000),
    ],
)
def test_detour_gpu_scales_are_points_of_paper2s_grid(scale, model, tokens):
    """Base at 10B, Large at 25B and 50B tokens (Rian-T/thesis, chapter 5), each with a decay of a tenth."""
    from encoderlab.study.graph import build_graph
    from encoderlab.study.nodes import real_backend, run_config

    graph = build_graph(get_study("paper2-detour", scale), real_backend())
    runs = [run_config(n) for n in graph if n.kind == "pretrain"]
    assert len(runs) == 6  # detour, baseline, its seed twin and three freezes
    assert graph.nodes["prepare/biomed"].config["corpus"] == ["biomed-enriched"]
    for run in runs:
        assert run.model.init == model and run.optim.kind == "decoupled_adamw"
        assert (run.phases[0].tokens, run.phases[1].tokens) == (tokens, tokens // 10)


def test_a_claim_naming_no_run_lists_each_run_once_when_run_names_repeat():
    """Run names repeated (refused on a line of their own) were listed as often in the line of a claim
    naming no run: "runs: mlm30, mlm30"."""
    import dataclasses

    spec = get_study("paper1-pfs", "demo")
    runs = spec.runs + (spec.runs[0],)
    claim = dataclasses.replace(spec.claims[0], a="nothere")
    with pytest.raises(UserError) as info:
        dataclasses.replace(spec, runs=runs, claims=(claim, *spec.claims[1:]))
    problems = str(info.value).splitlines()
    line = next(p for p in problems if "names run 'nothere'" in p)
    listed = line.split("runs: ", 1)[1].split(", ")
    assert listed == list(dict.fromkeys(r.name for r in spec.runs))
    assert any(f"repeated: {spec.runs[0].name}" in p for p in problems)
