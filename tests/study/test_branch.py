"""Branching: a run that shares its first steps with another starts from that run's checkpoint, and
ends exactly where it would have ended trained on its own."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from encoderlab.data.batch import BatchLayout
from encoderlab.objectives import CLM, MLM
from encoderlab.study.branch import (
    Branch,
    PlannedRun,
    plan_branches,
    seed_branch,
    shared_steps,
    with_branches,
)
from encoderlab.train import CheckpointConfig, DataConfig, OptimConfig, Phase, RunConfig, Schedule, pretrain
from encoderlab.train.recipes import make_recipe


def _run(out: Path, phases, **overrides) -> RunConfig:
    fields = dict(
        data=DataConfig(synthetic_vocab=128),
        layout=BatchLayout(seq_len=32, micro_batch_size=2, grad_accum=2),
        optim=OptimConfig(lr=3e-3),
        phases=tuple(phases),
        checkpoint=CheckpointConfig(every=100, keep_last=2),
        out=str(out),
        device="cpu",
        progress=False,
        peak_tflops=1.0,
    )
    return RunConfig(**{**fields, **overrides})


def _wsd(objective, steps: int, warmup: int = 4, decay: int = 4) -> Phase:
    return Phase(objective=objective, steps=steps, schedule=Schedule(kind="wsd", warmup=warmup, decay=decay))


def _weights(run: Path) -> dict[str, torch.Tensor]:
    return load_file(str(run / "final" / "model.safetensors"))


def test_a_shorter_wsd_budget_shares_the_long_runs_stable_phase():
    mlm = MLM(mask_ratio=0.4)
    long, short = _run(Path("a"), [_wsd(mlm, 42)]), _run(Path("b"), [_wsd(mlm, 12)])
    # everything before the short run's 4-step decay, and its first decay update, which runs at the
    # peak (train/schedule.py: the floor is reached after the last update)
    assert shared_steps(long, short) == 9
    # a budget that warms up and decays over its own share of steps differs from the first step
    assert shared_steps(long, _run(Path("c"), [_wsd(mlm, 12, warmup=1, decay=1)])) == 0


def test_what_breaks_a_shared_prefix():
    clm, mlm = CLM(), MLM(mask_ratio=0.4)
    base = _run(Path("a"), [_wsd(clm, 40)])
    switch = _run(Path("b"), [Phase(objective=clm, steps=10, schedule=Schedule(kind="constant", warmup=4)),
                              _wsd(mlm, 30, warmup=0)])  # fmt: skip
    assert shared_steps(base, switch) == 10  # the CLM phase, then another objective
    assert shared_steps(base, dataclasses.replace(base, seed=1)) == 0  # other init and masks
    assert shared_steps(base, dataclasses.replace(base, data=DataConfig(synthetic_vocab=128, seed=1))) == 0
    frozen = dataclasses.replace(
        switch, phases=(dataclasses.replace(switch.phases[0], freeze="0"), switch.phases[1])
    )
    assert shared_steps(base, frozen) == 0
    reset = dataclasses.replace(
        switch, phases=(switch.phases[0], dataclasses.replace(switch.phases[1], reset_optimizer=True))
    )
    assert shared_steps(switch, reset) == 10
    other_ratio = _run(Path("c"), [_wsd(MLM(mask_ratio=0.3), 40)])
    assert shared_steps(_run(Path("d"), [_wsd(mlm, 40)]), other_ratio) == 0
    # bookkeeping does not count
    assert shared_steps(base, dataclasses.replace(base, checkpoint=CheckpointConfig(every=3), out="x")) == 40


def test_paper1_recipes_at_the_papers_schedule_branch_where_the_paper_grid_repeats():
    """42k runs with 2k warmup and decay: the 12k/22k budgets decay from the long run's stable phase,
    CLM 25% -> MLM-40 is the CLM run until its switch."""
    args = {"data": "synthetic"}
    clm = make_recipe("pfs-clm", args)
    assert shared_steps(clm, make_recipe("pfs-clm", {**args, "steps": 12_000})) == 10_001
    assert shared_steps(clm, make_recipe("pfs-clm-mlm", {**args, "clm_fraction": 0.25})) == 10_500
    mlm = make_recipe("pfs-mlm", args)
    assert shared_steps(mlm, make_recipe("pfs-mlm", {**args, "steps": 22_000})) == 20_001
    assert shared_steps(mlm, clm) == 0


def test_plan_picks_the_longest_prefix_and_never_a_step_its_base_did_not_train():
    mlm, clm = MLM(mask_ratio=0.4), CLM()
    runs = [
        PlannedRun("clm", _run(Path("a"), [_wsd(clm, 40)]), ("data",)),
        PlannedRun("clm-12", _run(Path("b"), [_wsd(clm, 20)]), ("data",)),  # shares 17 with clm
        PlannedRun("clm-10", _run(Path("c"), [_wsd(clm, 18)]), ("data",)),  # shares 15 with both: clm's
        PlannedRun("clm-3", _run(Path("d"), [_wsd(clm, 40, decay=35)]), ("data",)),  # 6 of 40: too few
        PlannedRun("other", _run(Path("e"), [_wsd(clm, 20)]), ("other-data",)),  # other inputs
        PlannedRun("mlm", _run(Path("f"), [_wsd(mlm, 40)]), ("data",)),
    ]
    branches = plan_branches(runs)
    assert branches == {"clm-12": Branch("clm", 17), "clm-10": Branch("clm", 15)}
    kept = {r.name: r.config.checkpoint.keep_steps for r in with_branches(runs, branches)}
    assert kept["clm"] == (15, 17) and kept["clm-12"] == ()


def test_a_run_that_is_all_its_bases_prefix_branches_before_its_last_step():
    """A 1-step decay runs at the peak, so an 8-step run is the 40-step run's first 8 steps: it branched at step
    8, resumed finished, trained no step and never ran its last-step validation (a ladder study's runs had no
    val/mlm15, and `advise` told a finished study to finish)."""
    clm = CLM()
    runs = [
        PlannedRun("clm", _run(Path("a"), [_wsd(clm, 40)]), ("data",)),
        PlannedRun("clm-8", _run(Path("b"), [_wsd(clm, 8, decay=1)]), ("data",)),
    ]
    assert shared_steps(runs[0].config, runs[1].config) == 8
    assert plan_branches(runs) == {"clm-8": Branch("clm", 7)}


def test_a_branch_ends_where_the_same_run_trained_alone_ends(tmp_path):
    """MLM-40 for 20 steps: trained alone, and branched from a 40-step run at its decay start (17).
    Same masks, batches, LR and moments, so the same weights, bit for bit on CPU."""
    mlm = MLM(mask_ratio=0.4)
    long = _run(tmp_path / "long", [_wsd(mlm, 40)])
    short = _run(tmp_path / "alone", [_wsd(mlm, 20)])
    step = shared_steps(long, short)
    assert step == 17
    pretrain(_keep(long, step), until_step=step)  # its steps after the branch point are never read
    pretrain(short)
    branch = dataclasses.replace(short, out=str(tmp_path / "branch"))
    seed_branch(tmp_path / "branch", tmp_path / "long", step, branch)
    pretrain(branch, resume=True)
    alone, branched = _weights(tmp_path / "alone"), _weights(tmp_path / "branch")
    assert alone.keys() == branched.keys()
    assert all(torch.equal(alone[k], branched[k]) for k in alone)
    losses = [
        json.loads(line)["loss"] for line in (tmp_path / "alone" / "metrics.jsonl").read_text().splitlines()
    ]
    seeded = [
        json.loads(line)["loss"] for line in (tmp_path / "branch" / "metrics.jsonl").read_text().splitlines()
    ]
    assert seeded == losses  # the base's first 17 steps, then its own: the same curve


def _keep(cfg: RunConfig, step: int) -> RunConfig:
    return dataclasses.replace(cfg, checkpoint=dataclasses.replace(cfg.checkpoint, keep_steps=(step,)))


def test_seeding_leaves_the_base_untouched_and_is_done_once(tmp_path):
    clm = CLM()
    base = _keep(_run(tmp_path / "base", [_wsd(clm, 12)]), 6)
    pretrain(base)
    before = (tmp_path / "base" / "checkpoints" / "step_0000006" / "state.json").read_text()
    short = _run(tmp_path / "b", [_wsd(clm, 10)])
    seed_branch(tmp_path / "b", tmp_path / "base", 6, short)
    seed_branch(tmp_path / "b", tmp_path / "base", 6, short)  # a rerun finds it seeded
    assert (tmp_path / "base" / "checkpoints" / "step_0000006" / "state.json").read_text() == before
    state = json.loads((tmp_path / "b" / "checkpoints" / "step_0000006" / "state.json").read_text())
    assert state["config"]["phases"][0]["steps"] == 10 and state["progress"]["step"] == 6
    with pytest.raises(Exception, match="already holds a run"):
        pretrain(short)  # not a fresh folder: it holds the branch


@pytest.mark.slow
def test_a_study_trains_a_branch_from_its_base_and_counts_only_its_own_compute(tmp_path):
    """Real prepare and pretrain nodes on a tiny corpus: CLM 25% -> MLM-40 starts from the CLM run's
    checkpoint at its switch, and ends as the same run trained on its own (the study with branching off)."""
    from fake_study import backend as fake_backend
    from fake_study import record, tiny_corpus

    from encoderlab.config import load_yaml
    from encoderlab.study.graph import build_graph
    from encoderlab.study.nodes import real_backend
    from encoderlab.study.runner import node_dir, run_study
    from encoderlab.study.spec import DataSpec, EvalSpec, RunSpec, StudySpec
    from encoderlab.train.config import RunConfig

    corpus = tiny_corpus(tmp_path / "corpus.jsonl", 120)
    real, fake = real_backend(), fake_backend()
    real.kinds["eval"] = fake.kinds["eval"].__class__(run=lambda ctx: record(ctx.node.config, 50.0, 50.0))
    real.kinds["report"] = fake.kinds["report"]
    real.suite_tasks, real.task_signature = fake.suite_tasks, fake.task_signature
    real.required_assets = lambda spec: []
    spec = StudySpec(
        name="tiny-branch",
        scale="test",
        description="a branch on real nodes",
        size="tiny",
        seq_len=32,
        micro_batch=2,
        grad_accum=1,
        steps=8,
        data=(DataSpec(name="main", corpus=(str(corpus),), vocab_size=300, decontaminate=False),),
        runs=(RunSpec(name="clm", recipe="pfs-clm"), RunSpec(name="clm25", recipe="pfs-clm-mlm")),
        eval=EvalSpec(suite="fake", tasks=("sst",), lrs=(1e-4,), seeds=(0,)),
        baseline="clm",
        run_overrides={"precision": "fp32"},
    )
    finals = {}
    for branch in (True, False):
        study = dataclasses.replace(spec, branch=branch)
        graph = build_graph(study, real)
        run_study(study, tmp_path / f"study-{branch}", real, progress=False)
        node = graph.nodes["pretrain/clm25"]
        assert node.config.get("branch") == ({"from": "pretrain/clm", "step": 2} if branch else None)
        finals[branch] = _weights(node_dir(tmp_path / f"study-{branch}", node) / "run")
        # a branch is a from-scratch run that resumed its base's checkpoint, not a run continuing the base's
        # final model: its recorded config says so (advise reads such runs as from-scratch rungs)
        saved = load_yaml(RunConfig, node_dir(tmp_path / f"study-{branch}", node) / "run" / "config.yaml")
        assert saved.model.init == ""
        compute = {
            json.loads(line)["node"]: json.loads(line)
            for line in (tmp_path / f"study-{branch}" / "compute.jsonl").read_text().splitlines()
        }["pretrain/clm25"]
        assert compute["tokens"] == (6 if branch else 8) * 2 * 32
        assert compute.get("shared_tokens") == (2 * 2 * 32 if branch else None)
    assert all(torch.equal(finals[True][k], finals[False][k]) for k in finals[False])
    from encoderlab.study.report import write_report

    write_report(tmp_path / "study-True", figures=False)
    report = (tmp_path / "study-True" / "report" / "report.md").read_text()
    # the base's 128 tokens are said where they are counted: 6 x 2 x 32 beside a budget of 8 x 2 x 32 read as cut short
    assert "from clm at step 2 (128 tokens, in clm's row)" in report and "tokens seen differ" not in report
