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

Probing is opt-in (`study plan --probe`): it imports torch and builds and steps every shape, seconds
each, where a plan is otherwise a torch-free second or two (docs/benchmarks.md). Without it the plan's
`device:` line names the CPU, says the CPU time is not measured and how many shapes `--probe` would time.
A study folder with nothing left to run (`study plan --out`, every node finished) is not probed even with
`--probe`: its steps would time no step a run will take, and the line says nothing is left to time. In a
study folder partly run, only the runs still to run are timed (`done`: a run whose pretraining finished
there is not trained again), the shapes counted theirs; the line says how many finished runs were left out,
and their CPU column `done`, not a time the study will not spend.

Trade-offs, which the plan's line states: the probe costs a few seconds per shape; three steps give a
median, and their fastest and slowest give the range printed, which says how noisy the machine was, not how a long run drifts, and the load average
once measured says how busy it was (a run on a quieter machine steps somewhat faster); a run given
several threads (`--jobs` below the cores) spends more CPU time than one thread's, in less wall time;
validation passes, checkpoints, data preparation and the evaluation's fine-tuning are not timed. A run that starts from a
model outside the study (`model.init`: its size unknown until loaded) is not probed, and shows `?`; so
does one whose shape the probe could not step, the trainer's refusal (too large for its memory) or any
other error of its step (`_measured`: an allocation the memory estimate missed), with the reason in the
plan's line rather than a traceback that would end the plan: a probe is an estimate, not the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from encoderlab.study.graph import Node, Pretraining
from encoderlab.study.spec import DataSpec, StudySpec
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
    """Model id -> CPU seconds of its own steps (None: not timed, `untimed` says why); runs that train on a
    GPU are absent."""
    low: float
    """Total seconds of the probed runs at each shape's fastest measured step."""
    high: float
    """The same at each shape's slowest."""
    shapes: int
    """Training shapes timed: those of the runs timed, whose median steps the total is of (a shape whose
    probe failed, or one only of runs left `?` for another's, is not)."""
    untimed: dict[str, str] = dataclasses.field(default_factory=dict)
    """Model id -> why its `seconds` are None, in words (`UNTIMED_OUTSIDE`, or its shape's failed probe)."""
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


def model_vocab(spec: StudySpec, data: DataSpec, trained: Mapping[str, int] | None = None) -> int:
    """The embedding rows of a model from scratch on `data`, as the plan sizes it: the ids of the tokenizer
    the study trains (this dataset's, or the one whose tokenizer it reuses): those it was trained to where
    `trained` holds them (`trained_vocabs`), else the `vocab_size` asked; else the size of the tokenizer it
    names where that is readable here (`found_vocab`), else its `vocab_size` field. The field alone (8,192
    by default) sized a run on a 1,024-id tokenizer folder at 8,192 rows: its parameters, FLOPs and
    GPU-hours, and the shape `--probe` timed, were of a model it never trains; and a trained tokenizer
    that held fewer merges than asked (a small corpus) was sized at the size asked after it was trained."""
    if (trainer := spec.tokenizer_trainer(data)) is not None:
        return (trained or {}).get(trainer.name, trainer.vocab_size)
    return found_vocab(data.tokenizer) or data.vocab_size


def trained_vocabs(
    spec: StudySpec, counted: Mapping[str, int | None], study_dir: Path | None, nodes: Mapping[str, Node]
) -> dict[str, int]:
    """Dataset name -> the ids of the tokenizer the study trained on it, where its prepare node's output
    holds it: `counted`, the ids its prepared data was tokenized with (`plan.CorpusSize.tokenizer_ids`, of
    a finished node), else the node folder's tokenizer in `study_dir` where it is the node's (`_held_vocab`).
    A dataset left out is not trained yet: its models are sized at the `vocab_size` asked, as the plan says
    (`plantext`)."""
    out: dict[str, int] = {}
    for d in (d for d in spec.data if d.tokenizer == "train"):
        node = nodes.get(f"prepare/{d.name}")
        ids = counted.get(d.name) or (
            _held_vocab(study_dir, node) if study_dir is not None and node is not None else None
        )
        if ids is not None:
            out[d.name] = ids
    return out


def _held_vocab(study_dir: Path, node: Node) -> int | None:
    """The ids of the tokenizer in prepare `node`'s folder, where it is the node's: the node finished (its
    marker is of the node's key: the runs trained on it), or, interrupted after training it, the tokenizer
    records the sources it read and they are as they were (`freshness.source_change`), as its rerun reuses
    it (`checks.refuse_stale_data`). The folder is named by the key, which holds a corpus's paths, not its
    bytes: one trained on text the corpus no longer holds is none (the rerun refuses it; in another --out
    the tokenizer is trained anew, at the size asked). Cost: a stat per corpus file, as the rerun's check."""
    from encoderlab.data.freshness import source_change
    from encoderlab.data.tokenizer_training import trained_from
    from encoderlab.study.runner import node_dir, read_marker

    folder = node_dir(study_dir, node) / "tokenizer"
    if not folder.is_dir():
        return None
    if read_marker(study_dir, node) is None:
        record = trained_from(folder)  # None: no record (an earlier encoderlab's), refused by the rerun
        if record is None or source_change(record) is not None:
            return None
    return found_vocab(str(folder))


def found_vocab(name: str) -> int | None:
    """The ids of tokenizer `name` where it is found without downloading (a folder, a fetched asset, a hub
    mirror), else None: a plan never downloads."""
    from tokenizers import Tokenizer

    from encoderlab.data.tokenizer import tokenizer_folder

    try:
        folder = tokenizer_folder(name)
        return Tokenizer.from_file(str(folder / "tokenizer.json")).get_vocab_size() if folder else None
    except Exception:  # unreadable here (tokenizers raises a bare Exception): `data prepare` says why
        return None


def probe_configs(
    spec: StudySpec, runs: Iterable[Pretraining], vocabs: Mapping[str, int] | None = None
) -> dict[str, list[tuple[int, RunConfig]] | None]:
    """Model id -> (tokens it trains on itself, the probe's RunConfig) per phase it trains steps of; None
    for a run of a start model outside the study. A run continuing another of the study is probed at its
    base's size, every run at its dataset's vocabulary (`model_vocab` with `vocabs`, the plan's
    `trained_vocabs`, as the plan counts its parameters), and one rank of a run over several processes (`layout.world_size`: its step refused in one
    process, the run was left untimed as a shape refused for its memory)."""
    from encoderlab.train.config import DataConfig, ModelSpec, RunConfig
    from encoderlab.train.schedule import Schedule

    sizes: dict[str, str | None] = {}  # model id -> its size; `runs` come in training order, bases first
    out: dict[str, list[tuple[int, RunConfig]] | None] = {}
    vocab = functools.cache(lambda name: model_vocab(spec, spec.dataset(name), vocabs))  # once a dataset
    for p in runs:
        cfg, start = p.config, p.branch.step if p.branch else 0
        size = sizes.get(p.base) if p.base else None if cfg.model.init else cfg.model.size
        sizes[p.model] = size
        if size is None:
            out[p.model] = None
            continue
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
                data=DataConfig(synthetic_vocab=vocab(p.run.data)),
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
    rates: dict[RunConfig, StepRate | str] = {}  # a shape's rate, or why it could not be stepped
    seconds: dict[str, float | None] = {}
    untimed: dict[str, str] = {}
    low = high = 0.0
    for model, phases in configs.items():
        for _, cfg in phases or ():
            if cfg not in rates:
                with one_thread():
                    rates[cfg] = _measured(measure, cfg)
        failed = [rates[cfg] for _, cfg in phases or () if isinstance(rates[cfg], str)]
        if phases is None or failed:
            seconds[model] = None  # a run timed in part has no time: its `?` says so
            untimed[model] = UNTIMED_OUTSIDE if phases is None else failed[0]
            continue
        parts = [(tokens / rates[cfg].tokens_per_s, rates[cfg].spread()) for tokens, cfg in phases]
        seconds[model] = sum(part for part, _ in parts)
        low += sum(part * fast for part, (fast, _) in parts)
        high += sum(part * slow for part, (_, slow) in parts)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    # the shapes the total is of: counting every shape probed named a failed one the total leaves out
    timed = {cfg for model, phases in configs.items() if seconds[model] is not None for _, cfg in phases}
    return CpuTime(seconds=seconds, low=low, high=high, shapes=len(timed), untimed=untimed, load=load)


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


def _measured(measure: Callable[[RunConfig], StepRate], cfg: RunConfig) -> StepRate | str:
    """`measure(cfg)`, or why it could not step the shape, in one line: the trainer's refusal (too large for
    this machine's memory, which the plan's checks after it name in the run's words) or any other error of
    its step, e.g. an allocation the memory estimate let through. Not a traceback: the plan's other figures
    stand without this one (module docstring). An interrupt still ends the plan."""
    from encoderlab.errors import UserError

    try:
        return measure(cfg)
    except UserError as e:
        return f"the trainer refuses its training shape here: {_first_line(e)}"
    except Exception as e:  # noqa: BLE001 - any failure of a step is this shape's `?`, said in words
        return f"its training shape failed in the probe ({type(e).__name__}: {_first_line(e)})"


def _first_line(error: Exception) -> str:
    """An error's message as one line of the plan, long ones cut (a torch error can run to pages)."""
    from encoderlab.errors import first_line

    line = first_line(error).strip()  # the one reading of a library's message; the cut is the plan's own
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 3] + "..."


REASON_CHARS = 200
"""The most characters of an error's first line the plan shows as a shape's reason."""


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


UNTIMED_OUTSIDE = "a start model outside the study, its size unknown until loaded"
"""Why a run of a start model from outside the study is not timed (`?`)."""


def untimed_text(untimed: Mapping[str, str]) -> str:
    """The runs shown `?` with why, grouped by reason: `clm, clm25-mlm40 (its training shape failed ...)`."""
    runs: dict[str, list[str]] = {}
    for model, why in untimed.items():
        runs.setdefault(why, []).append(model)
    return "; ".join(f"{', '.join(models)} ({why})" for why, models in runs.items())


@dataclass(frozen=True, kw_only=True)
class PlanDevice:
    """Where a study's runs train, as `study plan` says it, with their CPU time when measured."""

    cpu: tuple[str, ...]
    """Model ids of the runs that train on this machine's CPU (empty: on GPUs)."""
    why: str
    """Why there, in words (`no CUDA device visible here`, `device: cpu in their configs`)."""
    shapes: int = 0
    """Training shapes of the CPU runs, which `--probe` times (`probe_configs`)."""
    time: CpuTime | None = None
    """Their measured CPU time (None: on GPUs, or not probed: `--probe` is opt-in, or nothing is left)."""
    finished: bool = False
    """Nothing is left to run in the study folder (`study plan --out`): no run is timed, not even with
    `--probe`, whose seconds a shape would time steps no run will take."""
    done: tuple[str, ...] = ()
    """Model ids of the CPU runs whose pretraining finished in the study folder: not timed, not counted in
    `shapes` (a rerun trains them no more)."""

    def _done_text(self) -> str:
        """`; 2 runs finished in the study folder not timed`, or "" when none is."""
        return f"; {count(len(self.done), 'run')} finished in the study folder not timed" if self.done else ""

    def line(self) -> str:
        """The plan's device line, after its GPU figures."""
        if not self.cpu:
            return f"device: GPU ({self.why}); the GPU figures above are this plan's estimate"
        if self.finished:
            return (
                f"device: this machine's CPU ({self.why}); nothing is left to run in the study folder, so "
                "nothing is left to time (its CPU time not measured)"
            )
        if len(self.done) == len(self.cpu):
            return (
                f"device: this machine's CPU ({self.why}); the pretraining of its {count(len(self.done), 'run')} "
                "finished in the study folder, so no run is left to time (its CPU time not measured)"
            )
        if self.time is None:
            how = (
                f"`--probe` times each of its {count(self.shapes, 'training shape')} here "
                f"({PROBE_WARMUP + PROBE_STEPS} optimizer steps each, seconds a shape)"
                if self.shapes
                else f"no run can be timed here ({UNTIMED_OUTSIDE})"
            )
            return (
                f"device: this machine's CPU ({self.why}); its CPU time not measured, the GPU figures above are "
                f"an H100's, not this machine's: {how}{self._done_text()}"
            )
        t = self.time
        if len(t.untimed) == len(t.seconds):
            return (
                f"device: this machine's CPU ({self.why}); no run timed (`?`): {untimed_text(t.untimed)}"
                f"{self._done_text()}"
            )
        left = f"; not timed (`?`): {untimed_text(t.untimed)}" if t.untimed else ""
        left += self._done_text()
        return (
            f"device: this machine's CPU ({self.why}): pretraining ~{duration_text(t.total)} of CPU time "
            f"(range {duration_text(t.low)} to {duration_text(t.high)}), measured here: {PROBE_STEPS} optimizer "
            f"steps of {_each_timed(t.shapes)} after {PROBE_WARMUP} warm-up, on one CPU thread by "
            f"the CPU clock{t.load_text()}, each run's tokens at its shape's median "
            "step (range: the fastest and slowest step); validation, checkpoints, data preparation and "
            f"evaluation not timed{left}"
        )


def _each_timed(shapes: int) -> str:
    """`each of its 2 training shapes timed`, `its one training shape timed`: the shapes the line's total is of."""
    return "its one training shape timed" if shapes == 1 else f"each of its {shapes} training shapes timed"


def plan_device(
    spec: StudySpec,
    trained: Iterable[Pretraining],
    measure: Callable[[RunConfig], StepRate] | None = None,
    finished: bool = False,
    done: frozenset[str] = frozenset(),
    vocabs: Mapping[str, int] | None = None,
) -> PlanDevice:
    """Where `spec`'s runs train, and their CPU time measured by `measure` (`probe` for `study plan
    --probe`, or a rate a test gives); None: not measured, torch not imported (the plan's default).
    `finished`: nothing is left to run in the study folder, so nothing is measured either way; `done`:
    model ids whose pretraining finished there, neither timed nor counted among the shapes to time; `vocabs`:
    the ids of the tokenizers the study trained (`StudyPlan.trained_vocabs`), which size the shapes."""
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
    # every run's shapes are built, a finished base's too (its size is the one a run continuing it has),
    # and those of runs finished in the study folder dropped: a rerun takes none of their steps
    configs = {m: c for m, c in probe_configs(spec, runs, vocabs).items() if m not in done}
    shapes = {cfg for phases in configs.values() for _, cfg in phases or ()}
    cpu, skipped = tuple(p.model for p in runs), tuple(p.model for p in runs if p.model in done)
    device = PlanDevice(cpu=cpu, why=why, shapes=len(shapes), finished=finished, done=skipped)
    if measure is None or finished or not configs:  # finished: a probe would time steps no run will take
        return device
    if shapes and on_terminal():  # say why it waits, as a progress bar would: a refusal stays one line
        finished_runs = (
            f" ({count(len(skipped), 'run')} finished in the study folder skipped)" if skipped else ""
        )
        print(
            f"timing {count(len(shapes), 'training shape')} of the study's runs on this CPU "
            f"({PROBE_WARMUP + PROBE_STEPS} optimizer steps each) for the plan's CPU time{finished_runs}",
            file=sys.stderr,
            flush=True,
        )
    return dataclasses.replace(device, time=estimate(configs, measure))


def on_terminal() -> bool:
    """Whether stderr is a terminal: the probe's notice is progress, shown as a progress bar is, and a
    refusal after it (`study plan`'s checks) stays the one line on a captured stderr."""
    return sys.stderr.isatty()


def with_device(
    plan: StudyPlan,
    trained: Iterable[Pretraining],
    measure: Callable[[RunConfig], StepRate] | None = None,
    finished: bool = False,
    done: frozenset[str] = frozenset(),
) -> StudyPlan:
    """`plan` with where its runs train (`plan_device`, timed by `measure` where given and something is
    left to run: not `finished`, and of the runs not `done`), as `study plan` prints it."""
    device = plan_device(plan.spec, trained, measure, finished, done, plan.trained_vocabs)
    return dataclasses.replace(plan, device=device)


def duration_text(seconds: float) -> str:
    """A CPU time as the plan prints it: `45 s`, `12 min`, `3.4 h`."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
