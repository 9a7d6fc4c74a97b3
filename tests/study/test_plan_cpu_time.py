"""`study plan` on the CPU a study's runs train on: the device named, and with `--probe` (opt-in) CPU time
from steps timed here (`study/cputime.py`). Rates are given to the estimate, never read off a clock, except
in the tests that call `cputime.probe` itself, which check only that real steps were timed (or failed)."""

from __future__ import annotations

import dataclasses
import itertools
import json

import pytest
import torch

from encoderlab.cli import main
from encoderlab.study import cputime
from encoderlab.study.catalog import get_study
from encoderlab.study.graph import pretraining
from encoderlab.study.plan import plan_study
from encoderlab.study.plantext import CPU_COLUMN, plan_text


@pytest.fixture
def no_cuda(monkeypatch):
    """This machine as a laptop: no CUDA device visible, whatever the test machine has."""
    import encoderlab.train.start as start

    monkeypatch.setattr(start, "cuda_visible", lambda: False)


def _rate(seconds: float):
    """A measurement given to the estimate: every step of every shape takes `seconds`."""
    return lambda cfg: cputime.StepRate(seconds=(seconds,), tokens_per_step=cfg.layout.tokens_per_step)


def test_a_cpu_plan_names_the_cpu_and_where_its_time_comes_from(no_cuda):
    spec = get_study("paper1-pfs", "demo")
    trained = pretraining(spec)
    device = cputime.plan_device(spec, trained, measure=_rate(0.25))
    text = plan_text(dataclasses.replace(plan_study(spec, trained=trained), device=device))
    assert device.cpu == tuple(p.model for p in trained)
    line = next(x for x in text.splitlines() if x.startswith("device: "))
    assert line.startswith("device: this machine's CPU (no CUDA device is visible here): pretraining ~")
    assert f"measured here: {cputime.PROBE_STEPS} optimizer steps" in line and "not timed (`?`)" not in line
    assert device.time.load is None or f"load average {device.time.load:.1f} on " in line
    assert CPU_COLUMN in next(x for x in text.splitlines() if x.startswith("run "))


def test_the_cpu_time_is_each_runs_own_tokens_at_the_measured_rate(no_cuda):
    """mlm40 trains 400 steps of the mlm40 shape, clm25-mlm40 (a branch from clm@100) its 300: the same
    rate gives each its tokens / tokens per second, and the branch 3/4 of the run from scratch."""
    spec = get_study("paper1-pfs", "demo")
    trained = pretraining(spec)
    plan = plan_study(spec, trained=trained)
    per_step = 0.125
    time = cputime.plan_device(spec, trained, measure=_rate(per_step)).time
    own = {
        r.model: r.tokens - (int(r.branch.split("@")[1]) if r.branch else 0) * (r.tokens // 400)
        for r in plan.runs
    }
    tokens_per_s = (plan.runs[0].tokens // 400) / per_step
    assert time.seconds == pytest.approx({m: t / tokens_per_s for m, t in own.items()})
    assert time.seconds["clm25-mlm40"] == pytest.approx(time.seconds["mlm40"] * 300 / 400)
    assert time.total == pytest.approx(sum(own.values()) / tokens_per_s)
    slow = cputime.plan_device(spec, trained, measure=_rate(2 * per_step)).time
    assert slow.total == pytest.approx(2 * time.total)  # twice the step time, twice the time


def test_the_range_is_the_fastest_and_slowest_step(no_cuda):
    spec = get_study("paper1-pfs", "demo")
    rate = lambda cfg: cputime.StepRate(seconds=(0.5, 1.0, 2.0), tokens_per_step=cfg.layout.tokens_per_step)  # noqa: E731
    time = cputime.plan_device(spec, pretraining(spec), measure=rate).time
    assert (time.low, time.high) == pytest.approx((time.total / 2, time.total * 2))


def test_by_default_the_plan_times_nothing_and_says_how_to(no_cuda, monkeypatch, capsys):
    """Probing is opt-in: the plan names the CPU, says its time is not measured and what `--probe` would time."""

    def refuse(cfg):
        raise AssertionError("a plan without --probe timed a step")

    monkeypatch.setattr(cputime, "probe", refuse)
    monkeypatch.setattr(cputime, "on_terminal", lambda: True)
    main(["study", "plan", "paper1-pfs", "--scale", "demo"])
    out, err = capsys.readouterr()
    assert "timing" not in err
    steps = cputime.PROBE_WARMUP + cputime.PROBE_STEPS
    assert (
        "device: this machine's CPU (no CUDA device is visible here); its CPU time not measured, the GPU figures "
        f"above are an H100's, not this machine's: `--probe` times each of its 2 training shapes here ({steps} "
        "optimizer steps each" in out
    )  # one shape per objective: mlm40 and clm
    header = next(x for x in out.splitlines() if x.startswith("run "))
    assert (
        CPU_COLUMN not in header and "GPU-h" in header and "GPU-seconds" in out
    )  # the GPU figures as they were


def test_with_probe_the_plan_times_each_shape(no_cuda, monkeypatch, capsys):
    probed = []
    monkeypatch.setattr(cputime, "probe", lambda cfg: probed.append(cfg) or _rate(1.0)(cfg))
    monkeypatch.setattr(cputime, "on_terminal", lambda: True)  # its notice is for a terminal only
    main(["study", "plan", "paper1-pfs", "--scale", "demo", "--probe"])
    out, err = capsys.readouterr()
    assert len(probed) == 2  # one shape per objective: mlm40 and clm, each measured once
    steps = cputime.PROBE_WARMUP + cputime.PROBE_STEPS
    assert f"timing 2 training shapes of the study's runs on this CPU ({steps} optimizer steps each)" in err
    header = next(x for x in out.splitlines() if x.startswith("run "))
    assert (
        CPU_COLUMN in header
        and "device: this machine's CPU (no CUDA device is visible here): pretraining ~" in out
    )


def test_a_gpu_study_planned_without_a_gpu_keeps_its_gpu_estimate(no_cuda):
    spec = get_study("paper1-pfs", "gpu-210m")
    device = cputime.plan_device(
        spec, pretraining(spec), measure=lambda cfg: pytest.fail("a GPU study was probed on the CPU")
    )
    assert device.cpu == () and device.time is None
    assert device.line().startswith("device: GPU (sized for 8 GPUs (H100 class), planned here without one)")


def test_device_cpu_in_the_config_is_named(no_cuda):
    spec = dataclasses.replace(
        get_study("paper1-pfs", "demo"), run_overrides={"precision": "fp32", "device": "cpu"}
    )
    device = cputime.plan_device(spec, pretraining(spec))
    assert device.why == "device: cpu in their configs" and device.time is None


def test_the_probe_times_real_steps_of_the_runs_shape(no_cuda):
    spec = get_study("paper1-pfs", "demo")
    configs = cputime.probe_configs(spec, cputime.cpu_runs(spec, pretraining(spec)))
    _, cfg = configs["mlm40"][0]
    rate = cputime.probe(cfg)
    assert len(rate.seconds) == cputime.PROBE_STEPS and all(s > 0 for s in rate.seconds)
    assert rate.tokens_per_step == cfg.layout.tokens_per_step and cfg.model.size == "tiny"


def test_a_shape_the_trainer_refuses_is_not_timed(no_cuda):
    """A shape too large for this machine (the trainer's memory refusal) leaves its runs `?` with the
    refusal's words, the others timed; the plan's checks after it name the refusal in the run's words."""
    from encoderlab.errors import UserError

    def refuse_clm(cfg):
        if cfg.phases[0].objective.tag == "clm":
            raise UserError("too large for this machine")
        return _rate(1.0)(cfg)

    spec = get_study("paper1-pfs", "demo")
    device = cputime.plan_device(spec, pretraining(spec), measure=refuse_clm)
    seconds = device.time.seconds
    assert seconds["clm"] is None  # clm25-mlm40's clm steps are clm's (its branch): it trains mlm40 only
    assert seconds["mlm40"] + seconds["clm25-mlm40"] == pytest.approx(device.time.total)
    assert device.line().endswith(
        "; not timed (`?`): clm (the trainer refuses its training shape here: too large for this machine)"
    )
    assert device.time.untimed == {
        "clm": "the trainer refuses its training shape here: too large for this machine"
    }


def test_a_shape_whose_step_fails_is_a_question_mark_with_its_reason(no_cuda, monkeypatch, capsys):
    """Any error of a probed step (an allocation the memory estimate let through), not only the trainer's
    refusals: it ended `study plan` with a traceback; now that shape's runs show `?` and the error's first
    line, the other shape timed. The step fails where torch would, inside the trainer's own step."""
    from encoderlab.train.step import TrainStep

    step = TrainStep.step

    def failing(self, n):
        if self.cfg.phases[0].objective.tag == "clm":
            raise RuntimeError("DefaultCPUAllocator: not enough memory\n(a second line of torch's)")
        return step(self, n)

    monkeypatch.setattr(TrainStep, "step", failing)
    spec = get_study("paper1-pfs", "demo")
    device = cputime.plan_device(spec, pretraining(spec), measure=cputime.probe)
    why = "its training shape failed in the probe (RuntimeError: DefaultCPUAllocator: not enough memory)"
    assert device.time.untimed == {"clm": why} and device.time.seconds["mlm40"] > 0
    assert device.line().endswith(f"; not timed (`?`): clm ({why})")
    text = plan_text(dataclasses.replace(plan_study(spec), device=device))
    assert next(x for x in text.splitlines() if x.startswith("clm ")).split()[7] == "?"


def test_the_device_line_counts_only_the_shapes_it_timed(no_cuda):
    """The line said "3 optimizer steps of each of its 2 training shapes" where one shape's probe failed and
    its run was left out of the total: it counts the shapes the total is of, the failed one named as `?`."""

    def fail_clm(cfg):
        if cfg.phases[0].objective.tag == "clm":
            raise RuntimeError("DefaultCPUAllocator: not enough memory")
        return _rate(1.0)(cfg)

    spec = get_study("paper1-pfs", "demo")
    both = cputime.plan_device(spec, pretraining(spec), measure=_rate(1.0))
    device = cputime.plan_device(spec, pretraining(spec), measure=fail_clm)
    assert device.time.shapes == both.time.shapes - 1  # the failed clm shape left out
    line = device.line()
    assert f"{cputime.PROBE_STEPS} optimizer steps of its one training shape timed after " in line
    assert f"each of its {both.time.shapes} training shapes timed after " in both.line()
    assert "not timed (`?`): clm (its training shape failed in the probe (RuntimeError: " in line


def _every_node_finished(spec, folder) -> None:
    """`folder` as a study folder of `spec` whose every node `study plan` builds has finished (its marker)."""
    from encoderlab.study.cli import default_backend
    from encoderlab.study.graph import build_graph
    from encoderlab.study.marker import MARKER
    from encoderlab.study.runner import node_dir

    (folder / "report").mkdir(parents=True)
    (folder / "report" / "report.md").write_text("the report, written before its node's marker\n")
    for n in build_graph(spec, default_backend(), pretraining(spec)):
        result = {"path": "report/report.md"} if n.kind == "report" else {}  # else it runs again
        marker = {"name": n.name, "kind": n.kind, "key": n.key, "config": {}, "deps": [], "result": result}
        node_dir(folder, n).mkdir(parents=True)
        (node_dir(folder, n) / MARKER).write_text(json.dumps(marker))


def test_with_nothing_left_to_run_the_probe_times_nothing(no_cuda, monkeypatch, capsys, tmp_path):
    """`study plan --probe --out` of a study folder with every node finished probed every shape (seconds
    each) for steps no run will take; it times none and says nothing is left to time."""

    probed = []  # a probe's error is caught as the shape's `?`: the calls are counted instead

    def refuse(cfg):
        probed.append(cfg)
        raise AssertionError("a study with nothing left to run was probed")

    spec = get_study("paper1-pfs", "demo")
    device = cputime.plan_device(spec, pretraining(spec), measure=refuse, finished=True)
    nothing = "nothing is left to run in the study folder, so nothing is left to time"
    assert device.time is None and nothing in device.line()
    monkeypatch.setattr(cputime, "probe", refuse)
    _every_node_finished(spec, tmp_path / "study")
    main(["study", "plan", "paper1-pfs", "--scale", "demo", "--probe", "--out", str(tmp_path / "study")])
    out = capsys.readouterr().out
    assert f"device: this machine's CPU (no CUDA device is visible here); {nothing}" in out
    assert CPU_COLUMN not in next(x for x in out.splitlines() if x.startswith("run ")) and probed == []


def test_each_shape_is_measured_on_one_thread_and_the_threads_given_back(no_cuda):
    """CPU time adds up over runs at one thread each, and several threads on a loaded machine wait on each
    other (a plan under load said 53 h of a study expected at ~2 h 45 min): the probe measures on one, whatever torch had."""
    seen = []

    def measure(cfg):
        seen.append(torch.get_num_threads())
        return _rate(1.0)(cfg)

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        time = cputime.plan_device(
            get_study("paper1-pfs", "demo"), pretraining(get_study("paper1-pfs", "demo")), measure=measure
        ).time
        assert seen == [1] * time.shapes and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_probe_times_steps_by_the_cpu_clock(no_cuda, monkeypatch):
    """A step's wall time on a loaded machine is mostly its wait for a core: the probe reads the
    process's CPU clock, here a clock that ticks half a second a reading."""
    ticks = itertools.count(0.0, 0.5)
    monkeypatch.setattr(cputime, "cpu_clock", lambda: next(ticks))
    spec = get_study("paper1-pfs", "demo")
    _, cfg = cputime.probe_configs(spec, cputime.cpu_runs(spec, pretraining(spec)))["mlm40"][0]
    assert cputime.probe(cfg).seconds == (0.5,) * cputime.PROBE_STEPS


def test_a_run_over_several_processes_is_timed_one_rank_at_a_time(no_cuda):
    """A CPU run of layout.world_size 2 (torchrun over gloo) was probed as is, its step refused in one process
    and the run left `?` as a shape too large for memory; each rank's step is timed, and the run spends two."""
    overrides = {"precision": "fp32", "device": "cpu"}
    one = dataclasses.replace(get_study("paper1-pfs", "demo"), run_overrides=overrides)
    two = dataclasses.replace(one, run_overrides={**overrides, "layout.world_size": 2})
    ranks = []

    def measure(cfg):
        ranks.append(cfg.layout.world_size)
        return _rate(0.5)(cfg)

    time = cputime.plan_device(two, pretraining(two), measure=measure).time
    assert set(ranks) == {1}
    assert time.total == pytest.approx(
        2 * cputime.plan_device(one, pretraining(one), measure=_rate(0.5)).time.total
    )


def _nodes_finished(spec, folder, names) -> None:
    """`folder` as a study folder of `spec` whose nodes `names` have finished (their markers), no other."""
    from encoderlab.study.marker import MARKER
    from encoderlab.study.runner import node_dir

    for n in _graph(spec):
        if n.name in names:
            marker = {"name": n.name, "kind": n.kind, "key": n.key, "config": {}, "deps": [], "result": {}}
            node_dir(folder, n).mkdir(parents=True)
            (node_dir(folder, n) / MARKER).write_text(json.dumps(marker))


def test_a_partly_run_study_folder_probes_only_the_runs_still_to_run(no_cuda, monkeypatch, capsys, tmp_path):
    """`study plan --probe --out` of a folder where clm's pretraining finished timed clm's shape too, steps
    a rerun never takes: only the runs still to run are probed (clm25-mlm40 branches from clm but trains
    mlm40's shape), the finished run's CPU cell is `done`, and the line and the notice count it skipped."""
    probed = []
    monkeypatch.setattr(cputime, "probe", lambda cfg: probed.append(cfg) or _rate(1.0)(cfg))
    monkeypatch.setattr(cputime, "on_terminal", lambda: True)
    spec = get_study("paper1-pfs", "demo")
    deps = {d for n in _graph(spec) if n.name == "pretrain/clm" for d in n.deps}  # its data prepared
    _nodes_finished(spec, tmp_path / "study", {"pretrain/clm", *deps})
    main(["study", "plan", "paper1-pfs", "--scale", "demo", "--probe", "--out", str(tmp_path / "study")])
    out, err = capsys.readouterr()
    assert [cfg.phases[0].objective.tag for cfg in probed] == ["mlm40"]
    assert "timing 1 training shape of the study's runs on this CPU" in err and "(1 run finished in" in err
    row = next(x for x in out.splitlines() if x.startswith("clm "))
    assert row.split()[7] == "done"
    line = next(x for x in out.splitlines() if x.startswith("device: "))
    assert "its one training shape timed" in line and line.endswith(
        "; 1 run finished in the study folder not timed"
    )


def test_a_folder_whose_every_run_is_trained_times_none(no_cuda, tmp_path):
    """Every run's pretraining finished (its evaluation still to run): no shape is left to time."""
    spec = get_study("paper1-pfs", "demo")
    models = frozenset(p.model for p in pretraining(spec))
    device = cputime.plan_device(
        spec, pretraining(spec), measure=lambda cfg: pytest.fail("a finished run was probed"), done=models
    )
    assert device.time is None and device.shapes == 0
    assert "finished in the study folder, so no run is left to time" in device.line()


def _graph(spec):
    """The graph `study plan` builds of `spec`."""
    from encoderlab.study.cli import default_backend
    from encoderlab.study.graph import build_graph

    return build_graph(spec, default_backend(), pretraining(spec))
