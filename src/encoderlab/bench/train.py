"""`encoderlab bench train`: our training step against transformers' on the same config.

Both sides start from the same weights and run forward, backward and a torch AdamW step on the
same packed rows, alternating step by step so background load hits both alike:
  * encoderlab: the trainer's own `TrainStep` (objective `prepare` with seeded masks, document masks,
    sparse LM head, token-weighted loss) on the synthetic source;
  * transformers: `EuroBertForMaskedLM` + `DataCollatorForLanguageModeling` for MLM (80/10/10, the
    collator's default, so ours runs `80-10-10` too), `LlamaForCausalLM` + the collator with
    `mlm=False` for CLM (EuroBERT has no causal mode), full logits, attention over whole rows.
FLOPs are counted with `train/flops.py` for each side's actual work (ours: document-masked
attention and the sparse head; theirs: full-row attention and the dense head), and MFU is relative
to the device's peak: `--peak-tflops` when given, else a known GPU's datasheet bf16 value, else a
measured matmul. The headline is the tokens/s ratio.

This module is the measuring loop and the result it writes; transformers' side is
`bench/reference.py` (the only import of transformers, skipped with `--no-vs-hf`), and `bench table`,
which reads saved results without torch, is `bench/table.py`.

GPU runs: `--precision bf16 --compile` is the configuration the 45% MFU goal refers to (blocks
compiled, flex attention over packed documents); `--no-vs-hf` skips the reference, which at 610m
would double the run time. Peak memory is per side on CUDA (allocator peak over that side's steps);
on CPU only the process's peak RSS exists, which covers both sides and the benchmark itself.
"""

from __future__ import annotations

import math
import os
import resource
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import torch
import tyro

from encoderlab.atomic import print_json, write_text_atomic
from encoderlab.bench.reference import Reference
from encoderlab.data.batch import BatchLayout
from encoderlab.data.synthetic import MIN_MEAN_DOC_LEN, MIN_SYNTHETIC_VOCAB
from encoderlab.errors import UserError
from encoderlab.objectives import CLM, MLM
from encoderlab.outdir import check_output_file, json_result_with
from encoderlab.train.config import DataConfig, ModelSpec, OptimConfig, Phase, RunConfig, ScaleConfig
from encoderlab.train.flops import peak_flops, peak_flops_source
from encoderlab.train.step import StepResult, TrainStep


@dataclass(frozen=True, kw_only=True)
class TrainBench:
    """What `bench train` measures: one model size, batch shape, objective and device."""

    size: str = "mini"
    """Named model size (nano, micro, tiny, mini, small, 210m, 610m, 1b)."""
    seq_len: int = 256
    """Tokens per row."""
    batch: int = 8
    """Rows per step."""
    objective: Literal["mlm", "clm"] = "mlm"
    """Training objective of both sides."""
    mask_ratio: float | None = None
    """MLM mask ratio (both sides; default 0.30); CLM masks nothing and takes none."""
    vocab: int = 32768
    """Vocabulary size of the synthetic data and the model."""
    doc_len: int = 48
    """Document size of the packed synthetic rows: lengths uniform in [8, 2 x doc_len), so doc_len + 3.5
    on average (ours attends within each document; transformers' side attends over whole rows);
    `seq_len` or more: one document per row, where both sides do the same
    attention work and counted FLOPs include every pair, as in peers' MFU figures."""
    steps: int = 5
    """Measured steps (the median is reported)."""
    warmup: int = 2
    """Unmeasured steps first (compilation, allocator warm-up)."""
    device: Literal["auto", "cpu", "cuda"] = "cpu"
    """Where to run."""
    precision: Literal["fp32", "bf16"] = "fp32"
    """fp32, or bf16 autocast."""
    compile: bool = False
    """torch.compile each block (GPU runs; the first steps, excluded as warmup, compile)."""
    vs_hf: bool = True
    """Also run the transformers reference in the same process (--no-vs-hf: encoderlab only)."""
    peak_tflops: float = 0.0
    """Peak TFLOP/s for MFU (0: a known GPU's bf16 datasheet value, else a measured matmul)."""
    profile: Path | None = None
    """Also profile encoderlab's side for 3 more steps (PROFILE_STEPS) and write torch.profiler's op table
    here (a new file, or an earlier table, which is replaced; its folder is created); the JSON gains the
    device's busy time per step (CUDA), the ceiling on what compute can reach."""

    def __post_init__(self) -> None:
        if self.objective == "clm" and self.mask_ratio is not None:  # was ignored without a word
            raise UserError(
                f"--mask-ratio {self.mask_ratio} is an MLM setting, but --objective clm masks nothing; drop "
                "--mask-ratio, or use --objective mlm"
            )
        if self.objective == "mlm" and self.mask_ratio is None:
            object.__setattr__(self, "mask_ratio", 0.30)
        if self.mask_ratio is not None and not 0.0 < self.mask_ratio < 1.0:  # was `MLM`'s, naming no flag
            raise UserError(
                f"--mask-ratio must be between 0 and 1 (exclusive), got {self.mask_ratio}; e.g. --mask-ratio 0.3"
            )
        if self.objective == "clm" and self.seq_len == 1:  # was the run config's, fixed by `layout.seq_len`
            raise UserError("--seq-len 1 leaves CLM no next token to predict; pass --seq-len 2 or more")
        if self.steps < 1 or self.warmup < 0:
            raise UserError(
                f"--steps must be >= 1 and --warmup >= 0 (got {self.steps} and {self.warmup}); the median of "
                "the measured steps is the result, so measure at least one"
            )
        if not (math.isfinite(self.peak_tflops) and self.peak_tflops >= 0):  # was taken as 0, silently
            raise UserError(
                f"--peak-tflops must be a finite number >= 0 (0: a known GPU's datasheet value, else a measured "
                f"matmul), got {self.peak_tflops}"
            )
        for flag, value, least in (
            ("--seq-len", self.seq_len, 1),
            ("--batch", self.batch, 1),
            ("--vocab", self.vocab, MIN_SYNTHETIC_VOCAB),
        ):
            if value < least:  # was refused as the run config's field, with a `--set` fix bench lacks
                raise UserError(f"{flag} must be >= {least}, got {value}")
        if self.doc_len < MIN_MEAN_DOC_LEN:
            raise UserError(
                f"--doc-len must be at least {MIN_MEAN_DOC_LEN} (lengths are drawn from [8, 2x)), got {self.doc_len}; "
                f"use {MIN_MEAN_DOC_LEN} or more, or --seq-len for one document per row"
            )
        self._check_row_count()

    def _check_row_count(self) -> None:
        """Refuse a row count the reader's int64 cannot hold in bench's own flags (the run config's refusal
        counted the profiled steps too and named `layout.micro_batch_size`, a field bench has no flag for)."""
        steps = self.warmup + self.steps + PROFILE_STEPS
        if self.batch * steps >= 2**63:
            raise UserError(
                f"--batch {self.batch} x {steps} steps (--warmup {self.warmup} + --steps {self.steps} + "
                f"{PROFILE_STEPS} profiled) has more rows than int64 counts; lower --batch, --steps or --warmup"
            )


is_train_result = json_result_with("config.size", "config.seq_len", "encoderlab.tokens_per_s")
"""True for a file holding a `bench train` result, which `--out` may replace (what `bench table` reads)."""

PROFILE_STEPS = 3
"""Steps under torch.profiler with `--profile` (after the measured ones, so they stay unprofiled)."""

PROFILE_HEADER = "# encoderlab bench train --profile: torch.profiler op table, sorted by self time\n"
"""First line of a `--profile` table: how a rerun knows the file it would replace is one."""


def is_profile_table(path: Path) -> bool:
    """True if `path` holds a `--profile` table (ours, or torch's bare table from before the header)."""
    try:
        with open(path, encoding="utf-8") as fh:
            first, second = fh.readline(), fh.readline()
    except (OSError, UnicodeDecodeError):
        return False
    bare = first.strip() != "" and set(first.strip()) <= {"-", " "} and second.lstrip().startswith("Name")
    return first == PROFILE_HEADER or bare


def _step(ours: TrainStep, step: int) -> StepResult:
    result = ours.step(step)
    if not result.finite:
        raise UserError(
            f"the benchmark's step {step + 1} had a non-finite loss {result.loss} / grad norm {result.grad_norm}; "
            "try --precision fp32 or a smaller size"
        )
    return result


def _profile(ours: TrainStep, steps: range, table: Path) -> dict:
    """Run `steps` under torch.profiler; write the op table sorted by self time and sum device time.

    The profiler slows the host side, so its wall time per step is an upper bound; the device's busy
    time is not slowed and divided by the measured step time says how much of the step the GPU idles.
    """
    from torch.profiler import ProfilerActivity, profile

    cuda = ours.device.type == "cuda"
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])]
    t0 = time.perf_counter()
    with profile(activities=activities) as prof:
        for step in steps:
            _step(ours, step)
    wall = (time.perf_counter() - t0) / len(steps)
    events = prof.key_averages()
    sort = "self_device_time_total" if cuda else "self_cpu_time_total"
    Path(table).parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(Path(table), PROFILE_HEADER + events.table(sort_by=sort, row_limit=40) + "\n")
    summary = {"table": str(table), "profiled_step_s": wall}
    if cuda:
        # Kernels only: an aten op's row repeats the device time of the kernels it launched.
        kernels = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
        summary["device_busy_s_per_step"] = sum(e.self_device_time_total for e in kernels) / 1e6 / len(steps)
    return summary


FLAGS = {
    "layout.micro_batch_size": "--batch",
    "layout.seq_len": "--seq-len",
    "model.size": "--size",
    "device": "--device",
}
"""The run config's fields `bench train` sets by a flag of its own: a refusal names only these (the
memory check suggested `layout.grad_accum`, `scale.activation_checkpointing` and the like, and a missing
GPU `device=cpu`, which it lacks)."""


def _run_config(b: TrainBench) -> RunConfig:
    """The run our side steps through: one phase of the benchmark's objective on synthetic data."""
    obj = MLM(mask_ratio=b.mask_ratio, replacement="80-10-10") if b.objective == "mlm" else CLM()
    return RunConfig(
        model=ModelSpec(size=b.size),
        data=DataConfig(synthetic_vocab=b.vocab, synthetic_doc_len=b.doc_len),
        layout=BatchLayout(seq_len=b.seq_len, micro_batch_size=b.batch),
        optim=OptimConfig(),
        phases=(Phase(objective=obj, steps=b.warmup + b.steps + PROFILE_STEPS),),
        device=b.device,
        precision=b.precision,
        progress=False,
        scale=ScaleConfig(compile=b.compile),
    )


class _PeakMemory:
    """Each side's CUDA allocator peak (MiB), folded in after each of its steps."""

    def __init__(self, dev: torch.device):
        self.dev, self.mib = dev, {"encoderlab": 0.0, "transformers": 0.0}

    def track(self, side: str) -> None:
        if self.dev.type == "cuda":
            self.mib[side] = max(self.mib[side], torch.cuda.max_memory_allocated(self.dev) / 2**20)
            torch.cuda.reset_peak_memory_stats(self.dev)


def _measure(b: TrainBench, ours: TrainStep, ref: Reference | None, memory: _PeakMemory):
    """Per side, the measured steps' seconds and FLOPs (alternating sides step by step)."""
    sides = ("encoderlab", "transformers") if ref is not None else ("encoderlab",)
    times: dict[str, list[float]] = {side: [] for side in sides}
    flops: dict[str, list[int]] = {side: [] for side in sides}
    memory.track("transformers")  # start ours from a clean allocator peak
    for step in range(b.warmup + b.steps):
        rec = _step(ours, step)
        memory.track("encoderlab")
        if ref is not None:
            dt = ref.step(step)
            memory.track("transformers")
        if step < b.warmup:
            continue
        times["encoderlab"].append(rec.seconds)
        flops["encoderlab"].append(rec.flops)
        if ref is not None:
            times["transformers"].append(dt)
            flops["transformers"].append(ref.flops(step))
    return times, flops


def _config_record(b: TrainBench, ours: TrainStep, peak: float, inductor_env: dict) -> dict:
    dev = ours.device
    return {
        "size": b.size,
        "seq_len": b.seq_len,
        "batch": b.batch,
        "tokens_per_step": ours.cfg.layout.tokens_per_step,
        "objective": ours.plan[0].phase.objective.tag,
        "vocab": b.vocab,
        "doc_len": b.doc_len,
        "steps": b.steps,
        "device": str(dev),
        "precision": b.precision,
        "compile": b.compile,
        "attn_impl": ours.model.attn_impl,
        "threads": torch.get_num_threads(),
        "inductor_env": inductor_env,
        "peak_flops": peak,
        "peak_flops_source": peak_flops_source(dev, b.peak_tflops),
        "gpu": torch.cuda.get_device_name(dev) if dev.type == "cuda" else None,
    }


def bench_train(b: TrainBench = TrainBench()) -> dict:
    """Median tokens/s, MFU and peak memory of encoderlab (and of transformers with `vs_hf`), and their ratio."""
    # inductor's knobs (max-autotune, coordinate descent) change what compile produces; read before
    # anything compiles (inductor puts its cache folder into the environment itself)
    inductor_env = {
        k: v
        for k, v in sorted(os.environ.items())
        if k.startswith("TORCHINDUCTOR_") and k != "TORCHINDUCTOR_CACHE_DIR"
    }
    cfg = _run_config(b)
    ours = TrainStep(cfg, names=FLAGS)  # writes nothing: no run folder
    ours.enter_phase(ours.plan[0], 0)
    dev = ours.device
    ref = (
        Reference(ours, objective=b.objective, mask_ratio=b.mask_ratio, bf16=b.precision == "bf16")
        if b.vs_hf
        else None
    )
    peak = peak_flops(dev, torch.bfloat16 if b.precision == "bf16" else torch.float32, b.peak_tflops)
    memory = _PeakMemory(dev)
    times, flops = _measure(b, ours, ref, memory)
    result: dict = {"config": _config_record(b, ours, peak, inductor_env)}
    for side in times:
        t, work = statistics.median(times[side]), statistics.median(flops[side])
        result[side] = {  # mfu = flops_per_step / step_s / config.peak_flops, from the file alone
            "step_s": t,
            "tokens_per_s": cfg.layout.tokens_per_step / t,
            "flops_per_step": work,
            "mfu": work / t / peak,
        }
        if dev.type == "cuda":
            result[side]["peak_memory_mib"] = memory.mib[side]
    if b.profile is not None:
        measured = b.warmup + b.steps
        result["encoderlab"]["profile"] = _profile(ours, range(measured, measured + PROFILE_STEPS), b.profile)
    if dev.type == "cpu":  # ru_maxrss is KiB on Linux; one number for the whole process
        result["process_peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if ref is not None:
        result["speedup"] = result["encoderlab"]["tokens_per_s"] / result["transformers"]["tokens_per_s"]
    return result


def bench_train_command(
    bench: Annotated[TrainBench, tyro.conf.arg(name="")], out: Path | None = None
) -> None:
    """Training-step throughput (tokens/s, MFU, peak memory) of encoderlab vs transformers; JSON.

    Args:
        out: Also write the JSON result to this file.
    """
    # before minutes of measuring, not after
    if out is not None:
        check_output_file(out, is_train_result, what="a `bench train` result")
    if bench.profile is not None:
        check_output_file(
            bench.profile,
            is_profile_table,
            what="a `bench train --profile` table",
            flag="--profile",
            example="ops.txt",
        )
        if out is not None and Path(os.path.realpath(out)) == Path(os.path.realpath(bench.profile)):
            raise UserError(f"--profile and --out both name {out}; give the op table its own file")
    print_json(bench_train(bench), out)
