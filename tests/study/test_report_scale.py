"""What a report says about its scale: the pretraining length as the runs train it, what the scale can and
cannot show, and why a claim it cannot test is not tested, in words (fake nodes, no model trained)."""

from __future__ import annotations

import json
from dataclasses import replace

from fake_study import backend, small_spec

from encoderlab.study.fidelity import departures, setup_text
from encoderlab.study.resolve import resolve_run
from encoderlab.study.runner import run_study
from encoderlab.study.spec import ClaimSpec, DataSpec, RunSpec


def detour_spec(**overrides):
    """Paper 2's demo shape: MiniLM continued by the detour and the MLM baseline for 20 scale steps
    (the recipes add their 10% decay: 22 steps as the runs train)."""
    shared = dict(init="minilm", data="biomed", group="biomed")
    runs = (
        RunSpec(name="detour", label="CLM detour", recipe="detour", **shared),
        RunSpec(name="baseline", label="MLM baseline", recipe="detour-baseline", **shared),
    )
    claim = ClaimSpec(
        id="detour", text="The detour beats the baseline", kind="beats", a="detour", b="baseline"
    )
    fields = dict(
        name="fake-detour",
        paper="paper2",
        size=None,
        steps=20,
        data=(DataSpec(name="biomed", corpus=("biomed",), tokenizer="minilm"),),
        runs=runs,
        baseline="baseline",
        cka=(),
        claims=(claim,),
    )
    return small_spec(**{**fields, **overrides})


def test_the_pretraining_departure_gives_the_steps_the_runs_train_as_resolved(tmp_path):
    # Before: "20 steps of 256 tokens" (the scale's steps) beside a Runs table of 22 (the recipe adds its
    # decay); paper 2's demo said 40 where its runs trained 44.
    spec = detour_spec()
    steps = resolve_run(spec, spec.run("baseline"), 0).steps
    assert steps == 22
    (pretraining,) = [d.here for d in departures(spec) if d.aspect == "pretraining"]
    assert pretraining == "22 steps of 256 tokens (4 x 64)"
    run_study(spec, tmp_path, backend(), progress=False)
    text = (tmp_path / "report" / "report.md").read_text()
    assert "pretraining: 22 steps of 256 tokens (4 x 64)" in text
    assert "## What this scale can and cannot show\n\nIt can show that the study runs end to end" in text
    assert "| MLM baseline | baseline | detour-baseline | – | minilm | biomed | 22 |" in text
    assert (
        "| 20 / 64 / 4 / 1 (the scale's settings; as resolved, the runs train 22 steps: Runs table) |" in text
    )


def test_a_continued_runs_length_counts_the_run_it_continues():
    runs = (
        RunSpec(name="base", label="base", recipe="pfs-mlm"),
        RunSpec(name="baseline", label="MLM baseline", recipe="detour-baseline", init="base"),
        RunSpec(name="detour", label="CLM detour", recipe="detour", init="base"),
    )
    spec = detour_spec(runs=runs, size="tiny", data=(DataSpec(name="main", corpus=("biomed",)),))
    (pretraining,) = [d.here for d in departures(spec) if d.aspect == "pretraining"]
    assert pretraining == "20 + 22 steps of 256 tokens (4 x 64)"


def _claims(out) -> dict[str, str]:
    found = json.loads((out / "report" / "results.json").read_text())["claims"]
    return {c["id"]: c["sentence"] for c in found}


def test_a_claim_the_study_cannot_test_says_why_in_a_sentence_not_a_raw_list(tmp_path):
    # Before: "(eval_steps: CLM: 20; MLM-40: none)" and "(MLM-40: sst; CLM: none)", internal k: v lists.
    sc = ClaimSpec(id="mlm-sc", text="MLM beats CLM on SC", kind="beats", a="mlm40", b="clm", family="sc")
    early = ClaimSpec(id="early", text="CLM learns faster early", kind="faster_early", a="clm", b="mlm40")
    tasks = {"mlm40": ("sst",), "clm": ("ner",)}
    runs = tuple(
        replace(r, tasks=tasks.get(r.name, r.tasks), eval_steps=() if r.name == "mlm40" else r.eval_steps)
        for r in small_spec().runs
    )
    run_study(small_spec(runs=runs, claims=(sc, early)), tmp_path, backend(), progress=False)
    said = _claims(tmp_path)
    assert said["mlm-sc"] == (
        "Not tested: MLM-40 is evaluated on sst, CLM on no SC task: the two runs share no SC task, so this claim "
        "cannot be tested (a comparison needs the same tasks)."
    )
    assert said["early"] == (
        "Not tested: the claim compares the runs at an intermediate checkpoint both are evaluated at; CLM is "
        "evaluated at step 20, MLM-40 at no intermediate checkpoint, so no checkpoint is shared and this claim "
        "cannot be tested (give both runs a step in eval_steps)."
    )
    assert not any(": none" in s for s in said.values())


def test_paper2s_demo_report_says_the_scale_cannot_show_the_detours_effect():
    """Derived from the resolved study: the tokens the compared run trains as resolved, against paper 2's
    shortest run, and its one pretraining seed."""
    from encoderlab.study.catalog import get_study
    from encoderlab.study.fidelity import PAPERS
    from encoderlab.study.reach import reach_text
    from encoderlab.study.resolve import tokens

    spec = get_study("paper2-detour", "demo")
    trained = tokens(resolve_run(spec, spec.run("baseline-biomed"), 0))
    assert trained == 44 * 8 * 128
    text = reach_text(spec)
    assert f"after {trained:,} tokens of continued pretraining each" in text
    assert "It cannot show whether paper 2's findings hold" in text
    # paper 2's shortest run, decay included as in `trained`: 10B + 1B (it read 0.00045% of 10B, the decay left out)
    shortest = 10_000_000_000 + 1_000_000_000
    share = f"{100 * trained / shortest:.2g}%"
    assert f"trains {trained:,} tokens, {share} of the shortest run paper 2 trains (11B tokens)" in text
    assert "one pretraining seed, so a claim compares two checkpoints, not two objectives" in text
    assert reach_text(get_study("paper2-detour", "gpu-210m")) == ""  # paper 2's own budget
    longer = replace(spec, steps=PAPERS["paper2"].shortest_tokens // 1024)
    assert reach_text(longer) == ""


def test_a_start_model_at_the_ceiling_is_said_to_leave_no_room_for_a_gain(tmp_path):
    from types import SimpleNamespace

    from encoderlab.eval.stats import Estimate
    from encoderlab.study.reach import ceiling_text

    spec = detour_spec(
        runs=(
            RunSpec(name="start", label="minilm (start)", init="minilm", data="biomed"),
            *detour_spec().runs,
        )
    )
    data = SimpleNamespace(spec=spec, label=lambda m: spec.run(m).display)

    def table(mean: float, half: float):
        test = Estimate(mean=mean, sd=None, n=2, ci_low=mean - half, ci_high=mean + half, half_width=half)
        per_task = {m: {"pubmedqa-retrieval": SimpleNamespace(test=test)} for m in ("start", "detour")}
        return SimpleNamespace(models=["start", "detour"], per_task=per_task)

    said = ceiling_text(data, table(99.27, 0.78))
    assert said == (
        "Evaluated as it is, minilm (start) already scores 99.27 ± 0.78 on pubmedqa-retrieval, an interval that "
        "reaches the maximum of 100: no run continued from it can gain more than 0.73 points there, so a "
        "difference between such runs on pubmedqa-retrieval says which lost less of the start's score, not which "
        "objective adapts a model better."
    )
    assert ceiling_text(data, table(90.0, 3.0)) == ""


def test_paper2s_description_does_not_call_the_arms_equal_in_compute():
    # Before: "on identical data and compute", beside a compute table where the detour spent 1.5x the FLOPs.
    from encoderlab.study.catalog import get_study
    from encoderlab.study.reach import reach_text

    spec = get_study("paper2-detour", "demo")
    assert "identical data, steps and tokens (not FLOPs" in spec.description
    assert "compute" not in spec.description.split(";")[0]
    assert "compare against (MLM baseline (biomed)) trains" in reach_text(spec)  # its label, not its id


def test_a_study_that_trains_no_run_has_no_pretraining_departure_and_no_traceback():
    # was: a StopIteration traceback from `compared_run` (no trained run to compare against) in
    # `study list`, `study report` and the report's first section, for a study file that only evaluates
    # models as they are
    start = RunSpec(name="start", label="MiniLM", recipe=None, init="minilm", data="biomed", group="biomed")
    spec = detour_spec(runs=(start,), baseline="start", claims=())
    assert "pretraining" not in [d.aspect for d in departures(spec)]
    assert setup_text(spec)


def test_the_fine_tuning_departure_counts_one_lr_seed_and_step_in_the_singular():
    """It read "LRs 0.0001 x 1 seeds, at most 1 steps per run" beside paper 2's "LRs 5e-05 x 5 seeds"."""
    from encoderlab.study.spec import EvalSpec

    spec = detour_spec(eval=EvalSpec(suite="fake", lrs=(1e-4,), seeds=(0,), max_steps=1))
    (grid,) = [d for d in departures(spec) if d.aspect == "fine-tuning"]
    assert grid.here == "LR 0.0001 x 1 seed, at most 1 step per run"
    assert grid.paper == "LR 5e-05 x 5 seeds, the tasks' steps"
    spec = detour_spec(eval=EvalSpec(suite="fake", lrs=(1e-4, 2e-4), seeds=(0, 1), max_steps=2))
    (grid,) = [d for d in departures(spec) if d.aspect == "fine-tuning"]
    assert grid.here == "LRs 0.0001, 0.0002 x 2 seeds, at most 2 steps per run"


def test_the_tasks_departure_names_the_task_files_beside_the_suite():
    """A study scored on a suite and task files read "fake suite: all" (its own tasks left out), and on
    the paper's whole suite plus task files it was no departure at all."""
    from encoderlab.study.catalog import get_study

    ev = detour_spec().eval
    spec = detour_spec(eval=replace(ev, task_files=("/s/a.yaml",)))
    (tasks,) = [d.here for d in departures(spec) if d.aspect == "tasks"]
    assert tasks == "fake suite and task file /s/a.yaml: all"
    spec = detour_spec(eval=replace(ev, suite=None, task_files=("/s/a.yaml", "/s/b.yaml")))
    (tasks,) = [d.here for d in departures(spec) if d.aspect == "tasks"]
    assert tasks == "task files /s/a.yaml, /s/b.yaml only: all"
    paper = get_study("paper1-pfs", "gpu-210m")
    assert not departures(paper)
    spec = replace(paper, eval=replace(paper.eval, task_files=("/s/a.yaml",)))
    assert [d.sentence() for d in departures(spec)] == [
        "tasks: paper suite and task file /s/a.yaml: all, not the paper's 12 datasets (SC, TC, QA, IR) with "
        "EncodEval's protocol"
    ]


def test_a_stability_claim_over_other_lrs_than_the_papers_is_a_departure():
    """The demo and cpu scales measure "CLM fine-tunes more stably" over 1e-4 to 5e-4, paper 1 over 1e-5 to
    1e-4: only the claim's sentence named its range, and "What this scale is" left it out."""
    from encoderlab.study.catalog import get_study

    (stability,) = [d for d in departures(get_study("paper1-pfs", "demo")) if d.aspect == "LR stability"]
    assert stability.sentence() == "LR stability: measured over LRs 0.0001 to 0.0005, not 1e-05 to 0.0001"
    assert "LR stability" not in [d.aspect for d in departures(get_study("paper1-pfs", "gpu-210m"))]
    assert "LR stability" not in [d.aspect for d in departures(detour_spec())]  # paper 2 makes no such claim


def test_paper1s_from_scratch_demo_is_set_against_the_papers_shortest_from_scratch_run():
    """The demo's MLM-40 (from scratch, 409,600 tokens) read "0.0087% of the shortest run paper 1 trains (4.72B
    tokens)": that run is paper 1's +2k continued pretraining of a 42k base, not a run from scratch (12k steps
    and up), which put the demo 6x nearer the paper's scale than it is. Its CPT demo keeps the +2k run."""
    from encoderlab.study.catalog import get_study
    from encoderlab.study.fidelity import PAPERS
    from encoderlab.study.reach import reach_text
    from encoderlab.study.resolve import tokens

    spec = get_study("paper1-pfs", "demo")
    trained = tokens(resolve_run(spec, spec.run("mlm40"), 0))
    scratch = PAPERS["paper1"].shortest_scratch_tokens
    assert scratch == 12_000 * 2_359_296
    share = f"{100 * trained / scratch:.2g}%"
    assert (
        f"trains {trained:,} tokens, {share} of the shortest run paper 1 trains from scratch (28.3B tokens)"
        in (reach_text(spec))
    )
    cpt = reach_text(get_study("paper1-cpt", "demo"))
    assert "tokens of continued pretraining each" in cpt
    assert "of the shortest run paper 1 trains (4.72B tokens)" in cpt and "from scratch" not in cpt


def test_paper2s_demo_report_names_the_papers_findings_it_says_nothing_about(tmp_path):
    """The demo's report named neither the freezing claims the study tests from `cpu` up nor paper 2's
    experiments no study runs (its transplant), so a reader could take its two claims for the paper's."""
    from encoderlab.study.catalog import get_study
    from encoderlab.study.reach import untested_text

    demo, cpu = get_study("paper2-detour", "demo"), get_study("paper2-detour", "cpu")
    text = untested_text(demo)
    only_cpu = [c for c in cpu.claims if c.id not in {d.id for d in demo.claims}]
    assert only_cpu and all(f"{c.text} (at cpu, gpu-210m" in text for c in only_cpu)
    assert "layer transplant (2.8)" in text and "says nothing about them" in text
    assert "Claims the study tests at other scales only" not in untested_text(cpu)

    run_study(detour_spec(), tmp_path, backend(), progress=False)  # a study of one's own: no other scales
    md = (tmp_path / "report" / "report.md").read_text()
    section = md.split("## What this scale can and cannot show\n", 1)[1].split("\n## ", 1)[0]
    assert "No study runs paper 2's decay-length sweep" in section and "other scales only" not in section
