"""CPU time of a study's pretraining, from optimizer steps timed on this machine (`study plan`).

The GPU estimate (`plan.py`) counts FLOPs at 40% of an H100's peak, with a per-step floor: a figure that
says nothing to a user whose runs train on a laptop's cores. A run trains on the CPU when its config says
`device: cpu`, or `auto` with no CUDA device visible (`train.start.run_device`, the node's own choice),
and the study is not sized for GPUs planned from elsewhere (`runchecks.planned_elsewhere`: a gpu scale
planned on a login node runs on its GPUs, so its GPU figure stays the plan's).

For those runs the plan times real steps rather than assume a CPU's throughput: no FLOP rate of a CPU
can be looked up the way an H100's datasheet peak can (cores, vector units, threads and load all change
it tenfold), and `bench train` results are of the shapes a user chose to bench, not a run's, and kept
where the user saved them. The probe builds each distinct training shape of the plan (the run's model
size and vocabulary, its batch layout, precision, and each phase's objective and frozen layers: all that
changes a step's work) as `bench train` does, on synthetic rows of the same length, and runs
`PROBE_WARMUP` unmeasured then `PROBE_STEPS` measured optimizer steps through the trainer's own
`TrainStep` (forward, backward, AdamW), in this process on one torch thread (`one_thread`), each step
timed by the process's CPU clock (`cpu_clock`), not the wall clock. A run's time is its steps per phase x
that phase's median measured step, a branch counting only its own steps (as the GPU estimate).

Why one thread and the CPU clock: the figure is CPU time, which adds up over runs (`study run --jobs N` on
N cores runs N nodes of one thread each at once, as the CPU scales are sized: wall time about the total / N).
A step's wall time on a loaded machine is mostly its wait for a core, and several torch threads there
wait on each other besides: on a 2-core machine at load average 11, a step of the cpu scale's shape took
~2.9 s of wall time on one thread and ~10 s on two, where its CPU time was ~0.9 s (measured 2026-12-07),
near a quiet machine's. The CPU clock still runs slower beside other work (shared caches), which the load
average printed says.

Trade-offs, which the plan's line states: the probe costs a few seconds per shape (`--no-probe` skips
it, leaving the GPU figures alone); three steps give a median, and their fastest and slowest give the
range printed, which says how noisy the machine was, not how a long run drifts, and the load average
once measured says how busy it was (a run on a quieter machine steps somewhat faster); a run given
several threads (`--jobs` below the cores) spends more CPU time than one thread's, in less wall time;
validation passes, checkpoints, data preparation and the evaluation's fine-tuning are not timed. A run that starts from a
model outside the study (`model.init`: its size unknown until loaded) is not probed, nor one whose shape
the trainer refuses here (too large for its memory: the plan's checks then name it), and shows `?`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from encoderlab.study.graph import Pretraining
from encoderlab.study.spec import StudySpec
from encoderlab.words import count

if TYPE_CHECKING:
    from encoderlab.study.plan import StudyPlan
    from encoderlab.train.config import RunConfig

PROBE_WARMUP = 1
"""Unmeasured steps first (allocator warm-up, first-call overheads)."""
PROBE_STEPS = 3
"""Measured steps per shape: their median is the rate, their fastest and slowest the range."""


@dataclass(frozen=True, kw_only=True)
class StepRate:
    """Measured seconds of the optimizer steps of one training shape on this machine."""

    seconds: tuple[float, ...]
    """CPU time of each measured step (`cpu_clock`), on one thread."""
    tokens_per_step: int
    """Tokens one step trains on (`BatchLayout.tokens_per_step`)."""

    @property
    def tokens_per_s(self) -> float:
        """Tokens per second at the median step."""
        return self.tokens_per_step / statistics.median(self.seconds)

    def spread(self) -> tuple[float, float]:
        """(fastest, slowest) step as a fraction of the median: the range the plan states."""
        mid = statistics.median(self.seconds)
        return min(self.seconds) / mid, max(self.seconds) / mid


@dataclass(frozen=True, kw_only=True)
class CpuTime:
    """The CPU seconds of a plan's runs that train on the CPU, and how they were measured."""

    seconds: dict[str, float | None]
    """Model id -> CPU seconds of its own steps (None: not timed, a start model from outside the study or a
    shape the trainer refuses here);
    runs that train on a GPU are absent."""
    low: float
    """Total seconds of the probed runs at each shape's fastest measured step."""
    high: float
    """The same at each shape's slowest."""
    shapes: int
    """Training shapes probed."""
    load: float | None = None
    """The machine's 1-minute load average once measured (None: the platform has none): other work on
    its cores slows the steps timed, which the step range alone does not show."""

    def load_text(self) -> str:
        """`, load average 13.4 on 2 cores while measured` (a busier machine times slower steps), or ""."""
        if self.load is None:
            return ""
        return f", load average {self.load:.1f} on {os.cpu_count()} cores while measured"

    @property
    def total(self) -> float:
        """CPU seconds of the probed runs, at each shape's median step."""
        return sum(s for s in self.seconds.values() if s is not None)


def cpu_runs(spec: StudySpec, trained: Iterable[Pretraining]) -> list[Pretraining]:
    """The runs of `trained` that train on this machine's CPU (module docstring); [] when the study is
    sized for GPUs and planned away from them."""
    from encoderlab.study.runchecks import planned_elsewhere
    from encoderlab.train.start import cuda_visible

    if planned_elsewhere(spec):
        return []
    visible = cuda_visible()
    # `device: cuda` with none visible is the node's refusal to make, not a CPU run
    return [
        p
        for p in trained
        if p.config is not None and p.config.device != "cuda" and not (visible and p.config.device == "auto")
    ]


def probe_configs(
    spec: StudySpec, runs: Iterable[Pretraining]
) -> dict[str, list[tuple[int, RunConfig]] | None]:
    """Model id -> (tokens it trains on itself, the probe's RunConfig) per phase it trains steps of; None
    for a run of a start model outside the study. A run continuing another of the study is probed at its
    base's size, every run at its dataset's vocabulary (`DataSpec.vocab_size`, as the plan counts its
    parameters), and one rank of a run over several processes (`layout.world_size`: its step refused in one
    process, the run was left untimed as a shape refused for its memory)."""
    from encoderlab.train.config import DataConfig, ModelSpec, RunConfig
    from encoderlab.train.schedule import Schedule

    sizes: dict[str, str | None] = {}  # model id -> its size; `runs` come in training order, bases first
    out: dict[str, list[tuple[int, RunConfig]] | None] = {}
    for p in runs:
        cfg, start = p.config, p.branch.step if p.branch else 0
        size = sizes.get(p.base) if p.base else None if cfg.model.init else cfg.model.size
        sizes[p.model] = size
        if size is None:
            out[p.model] = None
            continue
        vocab = spec.dataset(p.run.data).vocab_size
        phases = []
        for planned in cfg.plan():
            steps = max(0, planned.end - max(planned.start, start))
            if not steps:  # trained by the run it branches from: no shape to time for it
                continue
            phase = dataclasses.replace(
                planned.phase, steps=PROBE_WARMUP + PROBE_STEPS, tokens=0, schedule=Schedule(), name=""
            )
            probe = RunConfig(  # what changes a step's work, no more: no folder, checkpoint or validation
                model=ModelSpec(size=size),
                data=DataConfig(synthetic_vocab=vocab),
                # one rank's step (this process is no process group): a run over N processes spends N such
                # steps' CPU time a step, as its tokens over the rank's give (`estimate`)
                layout=dataclasses.replace(cfg.layout, world_size=1),
                optim=cfg.optim,
                phases=(phase,),
                scale=cfg.scale,
                device="cpu",
                precision=cfg.precision,
                progress=False,
            )
            phases.append((steps * cfg.layout.tokens_per_step, probe))
        out[p.model] = phases
    return out


def estimate(
    configs: Mapping[str, list[tuple[int, RunConfig]] | None], measure: Callable[[RunConfig], StepRate]
) -> CpuTime:
    """The CPU time of runs of `configs` (`probe_configs`), each distinct probe config measured once by
    `measure` (`probe`, or a rate a test gives): a phase's seconds are its tokens / the rate's tokens per
    second, so a run of twice the steps takes twice the time."""
    rates: dict[RunConfig, StepRate | None] = {}
    seconds: dict[str, float | None] = {}
    low = high = 0.0
    for model, phases in configs.items():
        for _, cfg in phases or ():
            if cfg not in rates:
                with one_thread():
                    rates[cfg] = _measured(measure, cfg)
        if phases is None or any(rates[cfg] is None for _, cfg in phases):
            seconds[model] = None  # a run timed in part has no time: its `?` says so
            continue
        parts = [(tokens / rates[cfg].tokens_per_s, rates[cfg].spread()) for tokens, cfg in phases]
        seconds[model] = sum(part for part, _ in parts)
        low += sum(part * fast for part, (fast, _) in parts)
        high += sum(part * slow for part, (_, slow) in parts)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return CpuTime(seconds=seconds, low=low, high=high, shapes=len(rates), load=load)


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one CPU thread while a shape is measured, its thread count restored after (module
    docstring: CPU time adds up over runs at one thread each, and threads on a loaded machine wait)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _measured(measure: Callable[[RunConfig], StepRate], cfg: RunConfig) -> StepRate | None:
    """`measure(cfg)`, or None where the trainer refuses the shape here (too large for this machine's
    memory): the plan's checks after it say why, in the run's words (`runchecks.check_runs`)."""
    from encoderlab.errors import UserError

    try:
        return measure(cfg)
    except UserError:
        return None


def probe(cfg: RunConfig) -> StepRate:
    """Time `PROBE_STEPS` optimizer steps of the probe config `cfg` after `PROBE_WARMUP` (module docstring)."""
    from encoderlab.train.step import TrainStep

    step = TrainStep(cfg)  # writes nothing: no run folder
    step.enter_phase(step.plan[0], 0)
    times = []
    for n in range(PROBE_WARMUP + PROBE_STEPS):
        start = cpu_clock()
        step.step(n)
        times.append(cpu_clock() - start)
    return StepRate(seconds=tuple(times[PROBE_WARMUP:]), tokens_per_step=cfg.layout.tokens_per_step)


cpu_clock = time.process_time
"""The clock a step is timed by: this process's CPU time, its batch-preparing thread's too (as a run's)."""


UNTIMED = (
    "(`?`: a start model outside the study, or a shape the trainer refuses here, which the checks below name)"
)
"""Why the plan's `device:` line leaves runs untimed."""


@dataclass(frozen=True, kw_only=True)
class PlanDevice:
    """Where a study's runs train, as `study plan` says it, with their CPU time when measured."""

    cpu: tuple[str, ...]
    """Model ids of the runs that train on this machine's CPU (empty: on GPUs)."""
    why: str
    """Why there, in words (`no CUDA device visible here`, `device: cpu in their configs`)."""
    time: CpuTime | None = None
    """Their measured CPU time (None: on GPUs, or the probe skipped)."""

    def line(self) -> str:
        """The plan's device line, after its GPU figures."""
        if not self.cpu:
            return f"device: GPU ({self.why}); the GPU figures above are this plan's estimate"
        if self.time is None:
            return (
                f"device: this machine's CPU ({self.why}); its CPU time not measured (--no-probe): the GPU "
                "figures above are an H100's, not this machine's"
            )
        t = self.time
        unprobed = [m for m, s in t.seconds.items() if s is None]
        if len(unprobed) == len(t.seconds):
            return f"device: this machine's CPU ({self.why}); no run timed {UNTIMED}: {', '.join(unprobed)}"
        left = f"; not timed {UNTIMED}: {', '.join(unprobed)}" if unprobed else ""
        return (
            f"device: this machine's CPU ({self.why}): pretraining ~{duration_text(t.total)} of CPU time "
            f"(range {duration_text(t.low)} to {duration_text(t.high)}), measured here: {PROBE_STEPS} optimizer "
            f"steps of each of its {t.shapes} training shapes after {PROBE_WARMUP} warm-up, on one CPU thread by "
            f"the CPU clock{t.load_text()}, each run's tokens at its shape's median "
            "step (range: the fastest and slowest step); validation, checkpoints, data preparation and "
            f"evaluation not timed; --no-probe skips it{left}"
        )


def plan_device(
    spec: StudySpec,
    trained: Iterable[Pretraining],
    probing: bool = True,
    measure: Callable[[RunConfig], StepRate] | None = None,
) -> PlanDevice:
    """Where `spec`'s runs train, and with `probing` their CPU time measured by `measure` (default
    `probe`; a test gives a rate of its own)."""
    trained = [p for p in trained if p.config is not None]
    runs = cpu_runs(spec, trained)
    if not runs:
        from encoderlab.study.runchecks import planned_elsewhere

        why = (
            f"sized for {spec.hardware}, planned here without one"
            if planned_elsewhere(spec)
            else "a CUDA device is visible"
        )
        return PlanDevice(cpu=(), why=why)
    said = all(p.config.device == "cpu" for p in runs)
    why = "device: cpu in their configs" if said else "no CUDA device is visible here"
    if not probing:
        return PlanDevice(cpu=tuple(p.model for p in runs), why=why)
    configs = probe_configs(spec, runs)
    shapes = {cfg for phases in configs.values() for _, cfg in phases or ()}
    if shapes and on_terminal():  # say why it waits, as a progress bar would: a refusal stays one line
        print(
            f"timing {count(len(shapes), 'training shape')} of the study's runs on this CPU "
            f"({PROBE_WARMUP + PROBE_STEPS} optimizer steps each) for the plan's CPU time; --no-probe skips it",
            file=sys.stderr,
            flush=True,
        )
    time = estimate(configs, measure or probe)
    return PlanDevice(cpu=tuple(p.model for p in runs), why=why, time=time)


def on_terminal() -> bool:
    """Whether stderr is a terminal: the probe's notice is progress, shown as a progress bar is, and a
    refusal after it (`study plan`'s checks) stays the one line on a captured stderr."""
    return sys.stderr.isatty()


def with_device(plan: StudyPlan, trained: Iterable[Pretraining], probing: bool = True) -> StudyPlan:
    """`plan` with where its runs train (`plan_device`), as `study plan` prints it."""
    return dataclasses.replace(plan, device=plan_device(plan.spec, trained, probing))


def duration_text(seconds: float) -> str:
    """A CPU time as the plan prints it: `45 s`, `12 min`, `3.4 h`."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
