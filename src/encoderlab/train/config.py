"""The run configuration: model, data, batch layout, optimizer, and a list of phases.

A run is a sequence of phases; each phase names an objective, a length (steps, or tokens that
become whole steps), a schedule that restarts at the phase's first step, whether to reset the
optimizer state (kept by default, as paper 2 keeps it across its detour), and which layers to
freeze. Everything a phase switch may change is here, and nothing else changes: data keep
flowing from the same position, so phase boundaries never replay or skip data.

Validation happens at construction, so a `RunConfig` that exists is runnable: lengths positive,
phase lengths summing to `total_steps` when one is declared, warmup + decay inside each phase.
Every failure is a `UserError` naming the field.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Literal

from encoderlab.config import FLOAT32_MAX, KEYED_WHEN_SET, MAX_LR, SEED_BOUND, decay_flips_weights
from encoderlab.data.batch import BatchLayout
from encoderlab.errors import UserError, did_you_mean
from encoderlab.objectives import CLM, Objective
from encoderlab.train.schedule import Schedule


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """Which model to train: a fresh named size, or an existing checkpoint."""

    size: str = "tiny"
    """Named size for a run from scratch (nano, micro, tiny, mini, small, 210m, 610m, 1b); ignored with `init`."""
    init: str = ""
    """Start from this model instead: encoderlab model/run/checkpoint folder, HF folder, asset name or hub id."""
    load: Literal["weights", "full"] = "weights"
    """With `init`: `weights` only (fresh optimizer), or `full` training state (an encoderlab checkpoint)."""
    mask_token: str = ""
    """With `init`: a mask token to add when the data's tokenizer has none (a decoder turned encoder), e.g.
    `<mask>`; its rows start at the mean of the existing ones (`train/vocab.py`). Empty: add nothing."""

    def __post_init__(self) -> None:
        from encoderlab.model.config import SIZES

        if not self.init and self.size not in SIZES:  # else refused only once the model was built, so
            raise did_you_mean(self.size, list(SIZES), "model size")  # `--dry-run` printed it as valid


@dataclass(frozen=True, kw_only=True)
class DataConfig:
    """Where the token stream comes from."""

    path: str = "synthetic"
    """A prepared data folder (`encoderlab data prepare`), or `synthetic` for generated documents."""

    seed: int = 0
    """Shuffle seed of the data order (kept apart from the training seed, as paper 2 does)."""
    step_offset: int = 0
    """Read the stream from this step on: step s is served the batch of step s + step_offset. Continued
    pretraining sets it past its base's last step (with the base's data and seed), so it reads rows the
    base never saw instead of replaying the base's batches."""
    synthetic_vocab: int = 512
    """Vocabulary size of the synthetic source."""
    synthetic_doc_len: int = 48
    """Mean document length of the synthetic source (uniform in [8, 2x)); a row's length or more: one
    document per row."""
    attend: Literal["document", "row"] = field(default="document", metadata=KEYED_WHEN_SET)
    """`document`: attention and positions stay inside each packed document (a CLM document's last
    token predicts nothing). `row`: a packed row is one sequence, attended over whole with positions
    0..T-1 and next-token targets across document ends, as Optimus (paper 1's EuroBERT code) packs
    by default (`var_len: False`)."""

    def __post_init__(self) -> None:
        from encoderlab.data.synthetic import MIN_MEAN_DOC_LEN, MIN_SYNTHETIC_VOCAB

        object.__setattr__(self, "path", os.path.expanduser(self.path))  # `path: ~/data`, from a file
        if self.step_offset < 0:
            raise UserError(f"data.step_offset must be >= 0, got {self.step_offset}")
        if self.seed < 0:  # numpy's generators, which order the prepared rows, take no negative seed
            raise UserError(f"data.seed must be >= 0, got {self.seed}; e.g. --set data.seed=0")
        if self.synthetic_vocab < MIN_SYNTHETIC_VOCAB:
            raise UserError(
                f"data.synthetic_vocab must be at least {MIN_SYNTHETIC_VOCAB} (5 special ids and a token to "
                f"draw), got {self.synthetic_vocab}; e.g. --set data.synthetic_vocab=512"
            )

        if self.synthetic_doc_len < MIN_MEAN_DOC_LEN:
            raise UserError(
                f"data.synthetic_doc_len must be at least {MIN_MEAN_DOC_LEN} (lengths are drawn from [8, 2x)), "
                f"got {self.synthetic_doc_len}; use {MIN_MEAN_DOC_LEN} or more, or the sequence length for one "
                "document per row"
            )


@dataclass(frozen=True, kw_only=True)
class OptimConfig:
    """Optimizer and its hyperparameters (defaults: paper 1 / Optimus); rules in `train/optim.py`."""

    kind: Literal["adamw", "decoupled_adamw", "stable_adamw"] = "adamw"
    """`adamw`: torch's AdamW, decay scaled by the LR (paper 1); `decoupled_adamw`: Composer's
    DecoupledAdamW, decay scaled by lr_t / lr (paper 2); `stable_adamw`: optimi's StableAdamW with
    decouple_lr (ModernBERT), AdamW with a per-tensor RMS clip of the LR."""
    lr: float = 5e-4
    """Peak learning rate; each phase's schedule scales it."""
    betas: tuple[float, float] = (0.9, 0.95)
    """AdamW betas."""
    eps: float = 1e-5
    """AdamW epsilon."""
    weight_decay: float = 0.1
    """Weight decay: per step θ *= 1 - lr_t * wd (`adamw`) or 1 - wd * lr_t / lr (the decoupled kinds)."""
    decay_norms_and_biases: bool = True
    """Apply weight decay to norm weights and biases too (paper 2 excludes ndim <= 1 and `.bias`)."""
    clip: float = 1.0
    """Gradient-norm clipping threshold over trainable parameters (0: no clipping)."""
    fused: bool = True
    """Fused kernel of `adamw` on CUDA (CPU, and the other kinds, use foreach kernels)."""

    def __post_init__(self) -> None:
        if self.kind not in ("adamw", "decoupled_adamw", "stable_adamw"):
            raise UserError(f"optim.kind must be adamw, decoupled_adamw or stable_adamw, got {self.kind!r}")
        # NaN passes every comparison, and torch checks only some fields (its ValueError is a
        # traceback; a NaN weight decay or clip surfaces steps later as a non-finite loss).
        for name, low_included, note in (
            ("lr", False, ""),
            ("eps", False, ""),
            ("weight_decay", True, ""),
            ("clip", True, " (0: no clipping)"),
        ):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0 or (value == 0 and not low_included):
                raise UserError(
                    f"optim.{name} must be a finite number {'>=' if low_included else '>'} 0{note}, got {value}; "
                    f"e.g. --set optim.{name}={OptimConfig.__dataclass_fields__[name].default}"
                )
        if self.lr > MAX_LR:  # 1e38 was a RuntimeError traceback at the first update
            raise UserError(
                f"optim.lr must be at most {MAX_LR:g} (AdamW moves each weight by about the LR per step), "
                f"got {self.lr}; e.g. --set optim.lr={OptimConfig.lr}"
            )
        if self.eps > FLOAT32_MAX:  # inf in float32: every update was 0, silently
            raise UserError(
                f"optim.eps must be at most {FLOAT32_MAX:.3g} (float32's largest number), got {self.eps}; "
                f"e.g. --set optim.eps={OptimConfig.eps}"
            )
        # Each step multiplies the weights by 1 - lr_t x wd (adamw) or 1 - wd x lr_t / lr (the decoupled
        # kinds): past 1 they change sign every step, and the loss turns non-finite a step later.
        if decay_flips_weights(self.lr if self.kind == "adamw" else 1.0, self.weight_decay):
            scaled = " x optim.lr" if self.kind == "adamw" else ""
            raise UserError(
                f"optim.weight_decay{scaled} must be at most 1 with optim.kind={self.kind} (each step "
                f"multiplies the weights by 1 - {'lr x ' if scaled else ''}weight_decay at the peak LR), got "
                f"weight_decay={self.weight_decay}; e.g. --set optim.weight_decay={OptimConfig.weight_decay}"
            )
        if len(self.betas) != 2 or not all(math.isfinite(b) and 0 <= b < 1 for b in self.betas):
            raise UserError(
                f"optim.betas must be two numbers in [0, 1), got {tuple(self.betas)}; e.g. --set optim.betas=[0.9,0.95]"
            )


@dataclass(frozen=True, kw_only=True)
class ScaleConfig:
    """Data parallelism and GPU fast paths (applied by `train/parallelize.py`); each has a CPU fallback."""

    data_parallel: Literal["ddp", "fsdp"] = "ddp"
    """Under torchrun: replicate the model (DDP) or shard it per block with FSDP2 (for 610m and 1b)."""
    compile: Literal["auto", True, False] = "auto"
    """`torch.compile` each block (after activation checkpointing, before sharding); auto = on CUDA
    (with Triton), off elsewhere, where compiling costs more start-up than it saves."""
    activation_checkpointing: bool = False
    """Recompute each block's activations in backward: less memory, about a third more compute."""
    attn_impl: Literal["auto", "sdpa", "flex"] = "auto"
    """Attention kernel for packed documents: flex (BlockMask) or sdpa (dense mask); auto = flex on CUDA, else sdpa."""

    def __post_init__(self) -> None:
        if self.data_parallel not in ("ddp", "fsdp"):
            raise UserError(f"scale.data_parallel must be ddp or fsdp, got {self.data_parallel!r}")


@dataclass(frozen=True, kw_only=True)
class Phase:
    """One stretch of training with a single objective and schedule."""

    objective: Objective
    """The objective (`type: mlm` with mask_ratio/replacement, or `type: clm`)."""
    steps: int = 0
    """Length in optimizer steps (give steps or tokens)."""
    tokens: int = 0
    """Length in tokens, rounded up to whole steps (give steps or tokens)."""
    schedule: Schedule = field(default_factory=Schedule)
    """LR schedule, restarted at this phase's first step."""
    reset_optimizer: bool = False
    """Drop the AdamW moments at this phase's start (default: carry them over)."""
    freeze: str = ""
    """Layers left out of the optimizer during this phase: `0-7`, `0-3,9`, `paper2-low|mid|late`."""
    name: str = ""
    """Label in metrics and logs (default: index and objective, e.g. `0-clm`)."""

    def __post_init__(self) -> None:
        if self.steps < 0 or self.tokens < 0:
            raise UserError(
                f"phase {self.name or self.objective.tag}: steps and tokens must be >= 0 (got steps={self.steps}, "
                f"tokens={self.tokens}); give one positive length, e.g. steps=1000"
            )
        if (self.steps > 0) == (self.tokens > 0):
            raise UserError(
                f"phase {self.name or self.objective.tag}: give exactly one positive length, steps or "
                f"tokens (got steps={self.steps}, tokens={self.tokens})"
            )

    def n_steps(self, layout: BatchLayout) -> int:
        """The phase length in optimizer steps."""
        return self.steps or math.ceil(self.tokens / layout.tokens_per_step)


@dataclass(frozen=True, kw_only=True)
class CheckpointConfig:
    """When checkpoints are written and which are kept."""

    every: int = 0
    """Write a checkpoint every this many steps (0: only at phase ends)."""
    keep_last: int = 2
    """Keep this many most recent checkpoints (phase ends included)."""
    keep_steps: tuple[int, ...] = ()
    """Steps whose checkpoints are never deleted (for later analysis); each is written."""

    def __post_init__(self) -> None:
        if self.every < 0:
            raise UserError(
                f"checkpoint.every must be >= 0 (0: only at phase ends), got {self.every}; "
                "e.g. --set checkpoint.every=1000"
            )
        if self.keep_last < 1:
            raise UserError(
                f"checkpoint.keep_last must be >= 1 (--resume continues from the newest), got {self.keep_last}; "
                "e.g. --set checkpoint.keep_last=2"
            )


MAX_VALIDATION_ROWS = 100_000
"""The most `validation.rows` accepted. 64 (the default) to a few thousand rows are what runs use; each
validation runs three forward passes over every row, so 100,000 rows of 512 tokens cost as much as
thousands of training steps, every `validation.every` steps, while the loss's noise over them is already
negligible. Above it a synthetic run's held-out stream has no end to cap the rows (5,000,000 rows stalled
a smoke run at its first validation for minutes, without a word); a prepared val split caps them at what
it holds (`Validator`)."""


@dataclass(frozen=True, kw_only=True)
class ValidationConfig:
    """Held-out loss during training (`train/validation.py`): CLM, the run's MLM and MLM at 15%."""

    every: int = 1000
    """Score every this many steps and at the run's last step (0: never)."""
    rows: int = 64
    """Held-out rows of `layout.seq_len` tokens scored each time (at most what the val split holds, and
    at most `MAX_VALIDATION_ROWS`)."""

    def __post_init__(self) -> None:
        if self.every < 0 or self.rows < 1:
            raise UserError(f"validation: every must be >= 0 (0: off) and rows >= 1, got {self}")
        if self.rows > MAX_VALIDATION_ROWS:
            raise UserError(
                f"validation.rows {self.rows:,} is above {MAX_VALIDATION_ROWS:,}, the most held-out rows scored "
                "(each validation scores every row three times, val/clm, val/mlm and val/mlm15, and a loss over "
                f"{MAX_VALIDATION_ROWS:,} rows is already far steadier than any difference between runs); lower "
                "validation.rows, e.g. 64, the default"
            )


@dataclass(frozen=True)
class PlannedPhase:
    """A phase placed on the run's global step axis."""

    index: int
    """Position in the run's phase list, from 0."""
    name: str
    """The phase's name (its own, else a default from its position)."""
    phase: Phase
    """The phase as configured."""
    start: int
    """The global step the phase starts at."""
    steps: int
    """How many steps it lasts."""

    @property
    def end(self) -> int:
        return self.start + self.steps


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Everything a pretraining run needs; the resolved copy is saved as `config.yaml`."""

    model: ModelSpec = field(default_factory=ModelSpec)
    """The model to train."""
    data: DataConfig = field(default_factory=DataConfig)
    """The token stream."""
    layout: BatchLayout = field(default_factory=lambda: BatchLayout(seq_len=128, micro_batch_size=8))
    """Sequence length, micro-batch size, gradient accumulation and data-parallel world size."""
    optim: OptimConfig = field(default_factory=OptimConfig)
    """AdamW settings."""
    phases: tuple[Phase, ...] = ()
    """The phases, run in order."""
    total_steps: int = 0
    """If > 0, the phase lengths must add up to this (guards recipe arithmetic)."""
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    """Checkpoint frequency and retention."""
    validation: ValidationConfig = field(default_factory=ValidationConfig)
    """Held-out CLM and MLM losses during training (metrics.jsonl `val/*`, validation.json)."""
    scale: ScaleConfig = field(default_factory=ScaleConfig)
    """Data parallelism (DDP/FSDP2), compile, activation checkpointing and the attention kernel."""
    seed: int = 0
    """Training seed: model init and MLM masks."""
    out: str = ""
    """Run folder."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """Where to train (auto: CUDA if available)."""
    precision: Literal["fp32", "bf16"] = "fp32"
    """fp32, or bf16 autocast (weights and optimizer stay fp32)."""
    nan_policy: Literal["stop", "skip", "rollback"] = "stop"
    """On a non-finite loss or gradient: stop, skip the batch, or reload the last checkpoint and skip it."""
    max_bad_steps: int = 3
    """With skip/rollback: stop after this many non-finite steps in one run."""
    sinks: tuple[Literal["tensorboard", "wandb"], ...] = ()
    """Extra metric sinks besides metrics.jsonl (need their package: `pip install -e '.[track]'` in a clone)."""
    progress: bool = True
    """Show a tqdm bar (rank 0)."""
    peak_tflops: float = 0.0
    """Peak TFLOP/s for MFU (0: known GPU table, else measured matmul throughput)."""
    deterministic: bool = False
    """Run with `torch.use_deterministic_algorithms(True)` (restored afterwards); on CUDA this needs
    CUBLAS_WORKSPACE_CONFIG set before the process starts, and the run is refused without it."""

    def __post_init__(self) -> None:
        # `out: ~/runs/x` in a config file meets no shell: it made a folder named `~` in the working folder
        object.__setattr__(self, "out", os.path.expanduser(self.out))
        if not self.phases:
            raise UserError("a run needs at least one phase; add one under `phases`")
        if self.seed < 0:  # torch takes -1 as 2**64 - 1 (the same model), and a seed below -2**63 not at all
            raise UserError(f"seed must be >= 0, got {self.seed}; e.g. --set seed=0")
        if self.seed >= SEED_BOUND:
            raise UserError(
                f"seed must be below 2**64 (torch's generators take no larger one), got {self.seed}"
            )
        if self.max_bad_steps < 0:
            raise UserError(
                f"max_bad_steps must be >= 0, got {self.max_bad_steps}; e.g. --set max_bad_steps=3"
            )
        if not (math.isfinite(self.peak_tflops) and self.peak_tflops >= 0):  # NaN MFU in every metrics line
            raise UserError(
                f"peak_tflops must be a finite number >= 0 (0: known GPU table or measured), got {self.peak_tflops}"
            )
        for name in ("seq_len", "micro_batch_size", "grad_accum", "world_size"):
            if getattr(self.layout, name) < 1:
                raise UserError(f"layout.{name} must be >= 1, got {getattr(self.layout, name)}")
        plan = self.plan()
        self._check_masks(plan)
        total = plan[-1].end
        self._check_stream(total)
        if outside := sorted(
            k for k in set(self.checkpoint.keep_steps) if not 1 <= k <= total
        ):  # never written
            raise UserError(
                f"checkpoint.keep_steps {outside} lie outside this run's steps 1-{total}, so no checkpoint would "
                "be kept there; give steps of the run"
            )
        if self.total_steps and total != self.total_steps:
            lengths = " + ".join(f"{p.steps} ({p.name})" for p in plan)
            raise UserError(
                f"phase lengths add up to {lengths} = {total} steps, not total_steps={self.total_steps}; "
                "fix the phase lengths or total_steps"
            )

    def _check_stream(self, total: int) -> None:
        """Refuse a data stream whose row numbers overflow (a traceback at the first step, after the run
        folder was made): rows are int64 in the reader, and a synthetic row's generator takes
        seed x ROW_SEED_STRIDE + row, which torch wants below 2**64."""
        from encoderlab.data.synthetic import ROW_SEED_STRIDE

        data, rows = self.data, self.layout.global_batch_size
        if rows >= 2**63:  # one step alone overflows: "lower its steps (at most 0)" was no fix
            raise UserError(
                f"a step of {rows} rows (layout.micro_batch_size x layout.grad_accum x world size) has more "
                "rows than int64 counts; lower layout.micro_batch_size or layout.grad_accum"
            )
        if total * rows >= 2**63:  # the run alone: "step_offset must be below -9...", a fix no one can take
            raise UserError(
                f"a run of {total} steps of {rows} rows has more rows than int64 counts; lower its steps "
                f"(at most {(2**63 - 1) // rows})"
            )
        if (data.step_offset + total) * rows >= 2**63:
            raise UserError(
                f"data.step_offset must be below {2**63 // rows - total} for this run ({total} steps of {rows} "
                f"rows, counted in int64), got {data.step_offset}; set it to the base run's step count"
            )
        limit = (SEED_BOUND - (data.step_offset + total) * rows) // ROW_SEED_STRIDE
        if data.path == "synthetic" and data.seed >= limit:
            raise UserError(
                f"data.seed must be below {limit} on synthetic data (a row's generator takes seed x "
                f"{ROW_SEED_STRIDE} + row, below 2**64), got {data.seed}; e.g. --set data.seed=0"
            )

    def _check_masks(self, plan: list[PlannedPhase]) -> None:
        """Refuse a phase that has a target in no row, which trained without a word (every step's loss
        null, no update): an MLM phase whose exact masking selects no position, as round(ratio x
        maskable) is 0 for every row when round(ratio x seq_len) is, and a CLM phase on 1-token rows,
        whose one token has no next token in its row (rows are read apart, `data.attend` either way)."""
        for p in plan:
            mlm = p.phase.objective
            if isinstance(mlm, CLM) and self.layout.seq_len < 2:
                raise UserError(
                    f"phase {p.name}: a {self.layout.seq_len}-token row has no next token to predict, so CLM "
                    "trains nothing; set layout.seq_len to 2 or more"
                )
            if getattr(mlm, "selection", None) == "exact" and round(mlm.mask_ratio * self.layout.seq_len) < 1:
                raise UserError(
                    f"phase {p.name}: mask_ratio {mlm.mask_ratio} of a {self.layout.seq_len}-token row rounds "
                    "to 0 positions, so exact masking predicts nothing; raise the mask_ratio or layout.seq_len, "
                    "or use selection: bernoulli"
                )

    def plan(self) -> list[PlannedPhase]:
        """The phases on the global step axis, each schedule checked against its length."""
        out, start = [], 0
        for i, phase in enumerate(self.phases):
            name = phase.name or f"{i}-{phase.objective.tag}"
            steps = phase.n_steps(self.layout)
            phase.schedule.check(steps, f"phase {name}")
            out.append(PlannedPhase(index=i, name=name, phase=phase, start=start, steps=steps))
            start += steps
        if len({p.name for p in out}) != len(out):
            raise UserError(f"phase names must be unique, got {[p.name for p in out]}")
        return out

    @property
    def steps(self) -> int:
        """Total optimizer steps of the run."""
        return self.plan()[-1].end


def check_until_step(until_step: int | None) -> None:
    """Refuse an `--until-step` below 1, whatever the run: the command checks it first, before the config
    and data are read (their notes, "no validation loss", came before the refusal's line), and the
    trainer again for callers from Python."""
    if until_step is not None and until_step < 1:
        raise UserError(
            f"--until-step must be >= 1 (the step to stop after, with a checkpoint), got {until_step}"
        )
