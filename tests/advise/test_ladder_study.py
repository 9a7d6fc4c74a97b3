"""A tiny real ladder end to end: 3 schedules x 3 sizes x 2 seeds trained by the study runner (the
CLM 50% -> MLM-40 split branched from the pure-CLM trunk at its switch), read back from the study
folder, and advised on by `encoderlab advise` on `val/mlm15` (6 steps of 4 x 32 tokens each). And the
ladder's schedules at several budgets, planned: shorter budgets decay from the longest run's stable
phase, splits branch from the CLM trunk, and the compute counts each run's own steps."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from tests.study.fake_study import tiny_corpus

from encoderlab.advise.ladder import Schedule
from encoderlab.advise.study import LadderDesign, ladder_study
from encoderlab.advise.studyread import read_study
from encoderlab.cli import main
from encoderlab.errors import UserError
from encoderlab.study.files import dump_study, load_study_file
from encoderlab.study.graph import build_graph
from encoderlab.study.nodes import real_backend
from encoderlab.study.runner import run_study

MLM, CLM = Schedule.biphasic(0.0, 0.4), Schedule.biphasic(1.0, None)
SPLIT = Schedule.biphasic(0.5, 0.4)


def _design(corpus) -> LadderDesign:
    return LadderDesign(
        sizes=("nano", "micro", "tiny"),  # the three smallest: the test is about the wiring, not the fit
        schedules=(MLM, CLM, SPLIT),
        budgets=(2e-5,),  # far below min_steps: every run takes 6 steps of 4 x 32 tokens
        seeds=(0, 1),
        corpus=(str(corpus),),
        vocab_size=300,
        seq_len=32,
        micro_batch=4,
        min_steps=6,
        warmup_tokens_per_param=0.0,  # one warmup step
        decay_fraction=1 / 3,  # a 2-step decay: one of 1 step lowers no LR, and is refused
        run_overrides={"precision": "fp32", "checkpoint.every": 6},  # one checkpoint per run: the last
        decontaminate=False,
    )


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("ladder")
    corpus = tiny_corpus(root / "corpus.jsonl", 400)  # its 1% validation split holds a row: val/mlm15
    backend = real_backend()
    backend.required_assets = lambda spec: []  # a local corpus; nothing is fine-tuned
    spec = ladder_study(_design(corpus))
    run_study(spec, root / "study", backend, progress=False)
    return spec, root / "study"


def test_the_ladder_spec_is_sizes_x_budgets_x_schedules_x_seeds(tmp_path):
    design = _design(tmp_path / "corpus.jsonl")
    spec = ladder_study(design)
    assert len(spec.runs) == 9 and {r.group for r in spec.runs} == {
        "nano-x2e-05",
        "micro-x2e-05",
        "tiny-x2e-05",
    }
    assert {r.steps for r in spec.runs} == {6} and not any(r.evaluate for r in spec.runs)
    every_step = 2 * 3 * sum(6 * design.params(s) * 6 * 128 for s in design.sizes)
    assert design.flops(branched=False) == pytest.approx(every_step)
    # the split trains only its MLM half: its CLM half is the CLM run's (one sixth of the steps saved)
    assert design.flops() == pytest.approx(every_step * 5 / 6)
    with pytest.raises(UserError, match="two pretraining seeds"):
        LadderDesign(sizes=("tiny",), schedules=(MLM, CLM), seeds=(0,))


def _budgets_design(**changes) -> LadderDesign:
    """Paper 1's schedules at three budgets of one size (`mini`: 8, 16 and 32 steps of 128 tokens)."""
    schedules = (MLM, CLM, Schedule.biphasic(0.25, 0.4), SPLIT)
    return LadderDesign(
        **{
            "sizes": ("mini",),
            "schedules": schedules,
            "budgets": (2e-4, 4e-4, 8e-4),
            "seeds": (0, 1),
            "corpus": ("corpus.jsonl",),
            "vocab_size": 300,
            "seq_len": 32,
            "micro_batch": 4,
            "min_steps": 4,
            "warmup_tokens_per_param": 2e-5,  # 1 step
            "decay_fraction": 0.2,  # decays of 2, 3 and 6 steps (a 1-step decay lowers no LR, and is refused)
            **changes,
        }
    )


def test_shorter_budgets_decay_from_the_longest_run_and_splits_branch_from_the_clm_trunk(tmp_path, capsys):
    """`study plan` on the ladder's study file: every run but the longest pure-MLM and pure-CLM runs
    (per seed) starts from another run's checkpoint; a shorter budget where its decay starts in the
    longest run of its schedule (or an equivalent earlier branch), a split at its switch or later in
    the CLM trunk; each run's GPU-hours and `LadderDesign.flops()` count its own steps only."""
    from encoderlab.model.config import SIZES
    from encoderlab.study.evalcost import BASE_LAYERS, STEP_FLOOR_S
    from encoderlab.study.graph import pretraining
    from encoderlab.study.plan import plan_study
    from encoderlab.study.scales import GPU_FLOPS

    design = _budgets_design()
    spec = ladder_study(design)
    (tmp_path / "ladder.yaml").write_text(dump_study(spec, "encoderlab.advise.study"))
    tiny_corpus(tmp_path / "corpus.jsonl", 40)  # beside the study file, where `study plan` looks for it
    main(["study", "plan", str(tmp_path / "ladder.yaml")])
    table = {
        line.split()[0]: line.split()[-1] for line in capsys.readouterr().out.splitlines() if "/s" in line
    }
    steps = {b: design.steps("mini", b) for b in design.budgets}
    assert list(steps.values()) == [8, 16, 32] and design.warmup("mini") == 1
    for seed in (0, 1):
        assert table[f"clm100-mini-x0.0008/s{seed}"] == table[f"clm0-mlm40-mini-x0.0008/s{seed}"] == "step"
        for budget in (2e-4, 4e-4):  # the stable phase, up to the first decay update (still at the peak)
            # ... and never its own last step, which it trains (its final validation; study/branch.py, whose
            # tests/study/test_branch.py case is a 1-step decay, all its base's prefix, which a design refuses)
            shared = min(steps[budget] - design.decay("mini", budget) + 1, steps[budget] - 1)
            assert (
                table[f"clm0-mlm40-mini-x{budget:g}/s{seed}"] == f"clm0-mlm40-mini-x0.0008/s{seed}@{shared}"
            )
            assert table[f"clm100-mini-x{budget:g}/s{seed}"] == f"clm100-mini-x0.0008/s{seed}@{shared}"
        for budget, n in steps.items():  # the 25% split's CLM phase is the trunk's
            assert table[f"clm25-mlm40-mini-x{budget:g}/s{seed}"] == f"clm100-mini-x0.0008/s{seed}@{n // 4}"
    models = pretraining(spec)
    assert sum(p.branch is not None for p in models) == 2 * (4 * 3 - 2)
    own = {p.model: p.config.steps - (p.branch.step if p.branch else 0) for p in models}
    plan = {r.model: r for r in plan_study(spec).runs}
    layers = SIZES["mini"].n_layers
    for model, n in own.items():  # at the longer of its FLOPs and its steps' floor (here the floor)
        flops = 6 * plan[model].params * n * design.tokens_per_step / GPU_FLOPS
        assert plan[model].gpu_hours == pytest.approx(
            max(flops, n * STEP_FLOOR_S * layers / BASE_LAYERS) / 3600
        )
    params = design.params("mini")
    assert design.flops() == pytest.approx(6 * params * design.tokens_per_step * sum(own.values()))
    assert design.flops(branched=False) == pytest.approx(6 * params * 128 * 2 * 4 * sum(steps.values()))
    assert design.flops() < 0.6 * design.flops(branched=False)
    unbranched = ladder_study(dataclasses.replace(design, branch=False))
    assert not any(p.branch for p in pretraining(unbranched))


def test_a_ladder_refuses_what_cannot_branch_or_train(tmp_path):
    with pytest.raises(
        UserError, match=r"budgets 5e-05, 0.0001 tokens per parameter all give size mini 6 steps"
    ):
        _budgets_design(budgets=(5e-5, 1e-4), min_steps=6)
    with pytest.raises(
        UserError, match=r"schedule CLM 25% -> MLM-40 at size mini, 0.0002 .*its CLM phase is shorter"
    ):
        _budgets_design(warmup_tokens_per_param=1e-4)  # 4 warmup steps, a 2-step CLM phase
    with pytest.raises(UserError, match="decay_fraction must be in"):
        _budgets_design(decay_fraction=0.9)


def test_budgets_advise_would_read_as_one_rung_written_apart_are_refused_in_the_design():
    """Budgets whose runs differ by under `RUNG_RTOL` in steps (N the same) were accepted: the study trained, then
    `encoderlab advise` refused its folder (two rungs within 1% in both N and D). The design refuses them, by the
    same test (`study.rungs.rungs_apart`), naming the two budgets; budgets one step further apart are accepted."""
    from encoderlab.study.rungs import RUNG_RTOL, rungs_apart

    design = _budgets_design(budgets=(2e-4,), min_steps=1)  # 8 steps of mini: a budget per 1/8 of it
    per_step = 2e-4 / design.steps("mini", 2e-4)
    base = 200  # steps; the nearest count more than RUNG_RTOL away, and the one below it
    far = base + math.floor(RUNG_RTOL * base) + 1
    near = far - 1
    tokens = design.tokens_per_step
    assert rungs_apart([(1.0, base * tokens), (1.0, near * tokens)])  # advise refuses these two rungs
    assert not rungs_apart([(1.0, base * tokens), (1.0, far * tokens)])
    budgets = (base * per_step, near * per_step)
    assert [design.steps("mini", b) for b in budgets] == [base, near]
    with pytest.raises(UserError) as err:
        _budgets_design(budgets=budgets, decay_fraction=0.1)
    assert str(err.value) == (
        f"size mini at {budgets[0]:g} tokens per parameter ({base} steps) and size mini at {budgets[1]:g} "
        f"({near} steps) are within 1% of each other in both N and D, so `encoderlab advise` would refuse the "
        "study's folder (one rung written apart); spread the budgets more than 1% apart"
    )
    _budgets_design(budgets=(base * per_step, far * per_step), decay_fraction=0.1)


def test_a_ladder_study_file_whose_runs_are_one_rung_written_apart_is_refused_by_study_plan(tmp_path, capsys):
    """A ladder study file written by hand (or before its design was refused) whose runs of one size train under
    `RUNG_RTOL` apart in tokens: `study plan` accepted it and `study run` trained it, then advise refused the folder.
    `study plan` refuses it in one line naming the two runs; the file at its design's steps is accepted."""
    per_step = 2e-4 / _budgets_design().steps("mini", 2e-4)
    low, high = 200 * per_step, 400 * per_step
    design = _budgets_design(budgets=(low, high), min_steps=1)
    assert [design.steps("mini", b) for b in (low, high)] == [200, 400]
    spec = ladder_study(design)
    near = dataclasses.replace(  # the shorter budget's runs at 399 steps: 0.25% below the longer's 400
        spec,
        name="near",
        runs=tuple(dataclasses.replace(r, steps=399) if r.steps == 200 else r for r in spec.runs),
    )
    tiny_corpus(tmp_path / "corpus.jsonl", 40)
    for study in (spec, near):
        (tmp_path / f"{study.name}.yaml").write_text(dump_study(study, "encoderlab.advise.study"))
    main(["study", "plan", str(tmp_path / "ladder.yaml")])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["study", "plan", str(tmp_path / "near.yaml")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    tokens, n = design.tokens_per_step, design.params("mini")
    assert err.endswith(
        f"runs clm100-mini-x{low:g} and clm100-mini-x{high:g} of ladder study near are at N={n:.6g}, "
        f"D={399 * tokens:.6g} and N={n:.6g}, D={400 * tokens:.6g}, within 1% of each other, so `encoderlab advise` "
        "would refuse the study's folder (one rung written apart); spread their steps more than 1% apart, or give "
        "them the same steps"
    )
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(SystemExit) as exit_:  # `study run` too, before it writes anything
        main(["study", "run", str(tmp_path / "near.yaml"), "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2 and sorted(tmp_path.rglob("*")) == before
    assert capsys.readouterr().err.strip().endswith("or give them the same steps")


def test_a_run_whose_decay_is_one_step_is_refused_naming_the_steps_it_needs():
    """A 1-step decay runs at the peak (the floor comes after the last update): the run's LR is never lowered, so it
    is not the annealed run the ladder's fit assumes. It was accepted (at 0.1, a run under 15 steps); the design
    refuses it naming the run and the fewest steps whose decay lowers the LR, and accepts that many."""
    design = _budgets_design()
    least = design.fewest_annealed_steps
    assert design.decay("mini", 2e-4) >= 2 and round(0.2 * least) >= 2 > round(0.2 * (least - 1))
    budget = (least - 1.5) * design.tokens_per_step / design.params("mini")  # rounded up: least - 1 steps
    assert design.steps("mini", budget) == least - 1
    with pytest.raises(UserError) as err:
        _budgets_design(budgets=(budget, 8e-4))
    assert str(err.value) == (
        f"size mini at {budget:g} tokens per parameter trains {least - 1} steps, so its decay (decay_fraction 0.2) "
        f"is 1 step, which runs at the peak: its LR is never lowered; give every run at least {least} steps "
        "(raise min_steps or the budget), or raise decay_fraction"
    )
    fixed = _budgets_design(budgets=(budget, 8e-4), min_steps=least)
    assert fixed.decay("mini", budget) == 2


def test_a_ladder_study_file_with_a_one_step_decay_is_refused_by_study_plan(tmp_path, capsys):
    """A ladder study file whose run was edited to a 1-step decay (or written before the design refused one):
    `study plan` planned it, a run whose LR is never lowered. It is refused in one line naming the run."""
    spec = ladder_study(_budgets_design())
    first = spec.runs[0]
    one = dataclasses.replace(first, params={**first.params, "decay": 1})
    edited = dataclasses.replace(spec, name="edited", runs=(one, *spec.runs[1:]))
    tiny_corpus(tmp_path / "corpus.jsonl", 40)
    (tmp_path / "edited.yaml").write_text(dump_study(edited, "encoderlab.advise.study"))
    with pytest.raises(SystemExit) as exit_:
        main(["study", "plan", str(tmp_path / "edited.yaml")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.endswith(
        f"run {first.name} of ladder study edited decays over 1 step of its {first.steps}, which runs at the peak: "
        "its LR is never lowered, so it is not an annealed rung; give it a decay of 2 steps or more (more steps, "
        "or a larger decay)"
    )


def test_a_split_whose_switch_is_off_its_share_on_a_whole_step_is_read_at_its_share(tmp_path):
    """CLM 25% of 31 steps switches at step 8 (26%), CLM 50% at step 16 (52%): advise read such runs as other
    schedules, so such a design was refused (2026-12-07); advise now reads each run's share off the study's
    record (study.json, as `study run` writes it), and every planned run reads as the schedule it was planned as."""
    from encoderlab.advise.studyread import _asked_shares, _run_name, _schedule
    from encoderlab.atomic import write_json_atomic
    from encoderlab.config import to_dict
    from encoderlab.outdir import STUDY_RECORD
    from encoderlab.study.graph import pretraining

    design = _budgets_design()
    budget = 31 * design.tokens_per_step / design.params("mini")
    design = _budgets_design(budgets=(2e-4, 4e-4, budget))
    assert design.steps("mini", budget) == 31
    spec = ladder_study(design)
    write_json_atomic(tmp_path / STUDY_RECORD, to_dict(spec))
    asked = _asked_shares(tmp_path)
    read = {
        p.model: _schedule(p.config, asked.get(_run_name(f"pretrain/{p.model}", asked))).name
        for p in pretraining(spec)
    }
    assert read == {p.model: p.run.label.split(",")[0] for p in pretraining(spec)}
    assert read["clm50-mlm40-mini-x" + f"{budget:g}/s1"] == "CLM 50% -> MLM-40"


@pytest.mark.parametrize("budgets", [(float("inf"),), (float("nan"), 4e-4), (), (0.0, 4e-4), (-2e-4, 4e-4)])
def test_budgets_that_are_no_tokens_per_parameter_are_refused(budgets):
    """inf and nan were tracebacks (OverflowError, ValueError), no budget an IndexError, and 0 or a negative
    budget read as a run shorter than its warmup."""
    with pytest.raises(UserError) as err:
        _budgets_design(budgets=budgets)
    assert str(err.value) == (
        f"budgets must be tokens per parameter, each finite and positive (Chinchilla: 20), got {budgets}"
    )


@pytest.mark.parametrize(
    "change,message",
    [
        ({"micro_batch": 0}, "micro_batch must be a whole number >= 1, got 0"),
        ({"seq_len": 0}, "seq_len must be a whole number >= 1, got 0"),
        ({"grad_accum": 0}, "grad_accum must be a whole number >= 1, got 0"),
        ({"vocab_size": 0}, "vocab_size must be a whole number >= 1, got 0"),
        (
            {"warmup_tokens_per_param": float("nan")},
            "warmup_tokens_per_param must be a finite number >= 0, got nan",
        ),
    ],
)
def test_a_layout_of_no_tokens_is_refused_in_one_line(change, message):
    """The first three were ZeroDivisionError tracebacks (0 tokens a step), a vocabulary of 0 a ValueError from
    the model's config, a nan warmup "cannot convert float NaN to integer"."""
    with pytest.raises(UserError) as err:
        _budgets_design(**change)
    assert str(err.value) == message


def test_a_ladder_round_trips_through_a_study_file(tmp_path):
    spec = ladder_study(_design(tmp_path / "corpus.jsonl"))
    path = tmp_path / "ladder.yaml"
    path.write_text(dump_study(spec, "encoderlab.advise.study"))
    assert load_study_file(path) == spec  # so `encoderlab study run ladder.yaml` runs this very ladder


@pytest.mark.slow
def test_a_tiny_real_ladder_trains_and_reads_back(study):
    spec, folder = study
    graph = build_graph(spec, real_backend())
    pretrains = [n for n in graph if n.kind == "pretrain"]
    assert len(pretrains) == 18
    branched = {n.name: n.config["branch"] for n in pretrains if "branch" in n.config}
    assert sorted(branched) == sorted(f"pretrain/clm50-mlm40-{s}-x2e-05/s{seed}" for s in ("nano", "micro", "tiny")
                                      for seed in (0, 1))  # fmt: skip
    assert all(b["from"].startswith("pretrain/clm100-") and b["step"] == 3 for b in branched.values())
    markers = [json.loads(p.read_text()) for p in folder.glob("nodes/pretrain/*/node.json")]
    own = {m["name"]: m["compute"]["tokens"] for m in markers}
    assert len(own) == 18  # the split's compute is its MLM half: the trunk's CLM half is counted there
    assert all(own[name] == 3 * 128 for name in branched) and sum(own.values()) == (18 - 3) * 6 * 128
    runs, notes = read_study(folder, "tokens")  # a key every run logs: its last value is D
    assert notes == [] and len(runs) == 18
    assert {o.schedule for o in runs} == {MLM, CLM, SPLIT} and {o.seed for o in runs} == {0, 1}
    design = _design(folder)
    assert sorted({o.params for o in runs}) == sorted(design.params(s) for s in design.sizes)
    # a branched run reads as a run of its own: all its tokens, and the FLOPs of all its steps
    assert all(o.value == o.tokens == 6 * 128 and o.flops > 0 for o in runs)
    flops = {(o.schedule, o.params, o.seed): o.flops for o in runs}
    for (schedule, params, seed), f in flops.items():
        if schedule == SPLIT:
            assert f == pytest.approx(flops[CLM, params, seed], rel=0.3)


def test_the_plans_n_column_is_the_size_advise_reads_each_run_at(study):
    """`study plan` printed only every parameter, embeddings included, which is not the N that advise fits
    and `--target-size` takes (a size copied from the plan was read as another model's); its N column is."""
    from encoderlab.study.plan import plan_study
    from encoderlab.study.plantext import plan_text

    spec, folder = study
    text = plan_text(plan_study(spec, folder))
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.split()[:2] == ["run", "dataset"])
    end = next(k for k, line in enumerate(lines) if line.startswith("pretraining:"))
    column = lines[start].split().index("N")
    printed = {line.split()[0]: line.split()[column] for line in lines[start + 1 : end]}
    runs, _ = read_study(folder, "tokens")
    read = {o.source.rsplit(":pretrain/", 1)[1]: o.params for o in runs}
    assert len(printed) == len(read) == 18
    assert all(float(printed[model]) == pytest.approx(n, rel=5e-3) for model, n in read.items())


@pytest.mark.slow
def test_advise_reads_the_tiny_ladder(study, tmp_path, capsys):
    _, folder = study
    runs, _ = read_study(folder, "val/mlm15")  # every run, whatever its objective, logs the yardstick
    assert len(runs) == 18 and all(o.value > 0 for o in runs)
    (scored,) = {o.scored_on for o in runs}  # on one prepared folder's held-out rows, which it names
    assert scored is not None and "val split" in scored.where
    main(
        [
            "advise",
            str(folder),
            "--target-size",
            "1e8",
            "--target-tokens",
            "2e9",
            "--out",
            str(tmp_path / "a"),
        ]
    )
    advice = json.loads((tmp_path / "a" / "advice.json").read_text())
    assert {p["schedule"] for p in advice["predictions"]} == {"MLM-40", "CLM", "CLM 50% -> MLM-40"}
    assert all(p["curve"] == "E + A*C^-a" for p in advice["predictions"]) and len(advice["runs"]) == len(runs)
    assert (
        tmp_path / "a" / "advise.png"
    ).exists() and "recommendation at the target" in capsys.readouterr().out


def test_the_cpu_ladder_script_writes_a_study_that_reads_back_and_fits_its_corpus(tmp_path):
    """scripts/cpu_ladder.py (issue 22's CPU ladder): its file loads as the design's study, every run
    reads at most 16 tokens per parameter of tiny (12.6M tokens, under general-en's ~15M unique ones),
    and the shorter budgets and splits start from other runs' checkpoints."""
    import runpy
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).parents[2] / "scripts" / "cpu_ladder.py"
    text = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True).stdout
    (tmp_path / "ladder.yaml").write_text(text)
    spec = load_study_file(tmp_path / "ladder.yaml")
    design = runpy.run_path(str(script))["DESIGN"]
    assert spec == ladder_study(design, name="ladder-cpu") and len(spec.runs) == 27
    assert max(r.steps for r in spec.runs) * design.tokens_per_step == 3077 * 4096 < 13e6
    from encoderlab.study.graph import pretraining

    models = pretraining(spec)
    # per size and seed, only the longest MLM-40 and CLM runs start at step 0 (3 x 2 x 2 = 12 of 54)
    assert len(models) == 54 and sum(p.branch is None for p in models) == 12
