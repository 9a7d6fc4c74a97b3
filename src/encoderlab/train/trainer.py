"""The training loop: phases over one step counter, checkpoints, exact resume, the NaN policy.

Design
  * One global step counter drives everything: the batch (`source.batch(step, micro, rank)`), the
    masks (generator seeded by (seed, step, slot)), the phase and its LR (closed-form schedule).
    Nothing else carries state except the weights and the AdamW moments, so a checkpoint of those
    two plus the counter resumes bit for bit on CPU.
  * The update itself is a `TrainStep` (step.py: model, phase optimizer, micro-batches,
    forward/backward, clipping, optimizer step). The `Trainer` here owns the run folder, resume,
    which phase each step enters, the checkpoint cadence, the NaN policy, metrics sinks and MFU.
    Building a step writes nothing; the trainer writes `config.yaml` and `env.json` only after
    every check has passed.
  * Non-finite loss or gradient norm: `stop` raises with the last good checkpoint named and
    untouched; `skip` drops the batch and moves on; `rollback` reloads the last checkpoint and
    replays with the offending step skipped. Skipped steps keep their place on the step axis, so
    the schedule and the data order of later steps do not shift.
  * Side effects (files, progress bar) happen on rank 0 only; `distributed.py` is the seam for DDP/FSDP.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

import encoderlab.train.checkpoint as ckpt
from encoderlab.config import load_yaml, save_yaml, to_dict
from encoderlab.data.batch import BatchSource
from encoderlab.errors import UserError
from encoderlab.model.io import load_model_folder, save_model_folder
from encoderlab.train.build import build_source, find_checkpoint, resolve_device
from encoderlab.train.config import PlannedPhase, RunConfig
from encoderlab.train.distributed import (
    World,
    barrier,
    gathered_model,
    init_world,
    is_sharded,
    load_model_state,
    resume_blockers,
    shutdown,
)
from encoderlab.train.flops import peak_flops
from encoderlab.train.freeze import MECHANISM
from encoderlab.train.metrics import MetricSink, build_sinks, check_sinks
from encoderlab.train.step import TrainStep
from encoderlab.train.vocab import ADDED_TOKENS


class NonFiniteLoss(UserError):
    """Training stopped on a NaN/inf loss or gradient."""

    exit_code = 4


@contextlib.contextmanager
def deterministic_mode(enabled: bool, device: torch.device):
    """`torch.use_deterministic_algorithms(True)` for the run when `enabled`, restored on exit.

    cuBLAS reads CUBLAS_WORKSPACE_CONFIG when it initialises, so setting it here would be too
    late: a CUDA run without it is refused (deterministic mode would raise mid-step otherwise).
    """
    if not enabled:
        yield
        return
    if device.type == "cuda" and not os.environ.get("CUBLAS_WORKSPACE_CONFIG"):
        raise UserError(
            "deterministic=true on CUDA needs CUBLAS_WORKSPACE_CONFIG; run `export CUBLAS_WORKSPACE_CONFIG=:4096:8` "
            "before starting encoderlab"
        )
    before, warn_only = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn_only)


def config_diff(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths whose values differ between two plain-data configs, with both values."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [
            d
            for k in sorted(set(old) | set(new))
            for d in config_diff(old.get(k), new.get(k), f"{prefix}{k}.")
        ]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new)) for d in config_diff(a, b, f"{prefix}{i}.")]
    return [] if old == new else [f"{prefix.rstrip('.')}: {old!r} -> {new!r}"]


def environment() -> dict[str, Any]:
    """Versions and hardware, written to env.json."""
    import transformers

    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "cpu_threads": torch.get_num_threads(),
        "cuda": torch.cuda.is_available(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name(0)
    return env


class Trainer:
    """Runs a `RunConfig` in its run folder; `run()` returns the final model folder.

    The step itself is `self.train_step` (a `TrainStep`); the trainer decides which steps run,
    when to checkpoint, what a non-finite step means, and where metrics go.
    """

    def __init__(
        self,
        cfg: RunConfig,
        *,
        source: BatchSource | None = None,
        resume: bool = False,
        force: bool = False,
    ):
        if not cfg.out:
            raise UserError("no run folder given; pass --out DIR (or set `out` in the config)")
        self.cfg, self.run_dir = cfg, Path(cfg.out)
        self.world: World = init_world(cfg.layout.world_size)
        self.plan = cfg.plan()
        self._check_run_folder(resume, force)
        self.train_step = TrainStep(
            cfg, source=source or build_source(cfg.data, cfg.layout), world=self.world
        )
        self.progress = ckpt.Progress()
        self._start_state(resume)
        check_sinks(cfg.sinks)
        self._write_run_files()  # only now: a refused start leaves the folder as it was

    @property
    def model(self):
        """The model being trained (the step's)."""
        return self.train_step.model

    # ---- setup -------------------------------------------------------------------------------
    def _check_run_folder(self, resume: bool, force: bool) -> None:
        saved = self.run_dir / "config.yaml"
        if saved.is_file():
            if not resume:
                raise UserError(
                    f"{self.run_dir} already holds a run; pass --resume to continue it or choose another --out"
                )
            old, new = to_dict(load_yaml(RunConfig, saved)), to_dict(self.cfg)
            diff = resume_blockers(config_diff(old, new), old["layout"], new["layout"])
            if diff and not force:
                raise UserError(
                    f"refusing to resume {self.run_dir} with a changed config ({'; '.join(diff[:6])}); "
                    "rerun with the original settings or pass --force"
                )

    def _write_run_files(self) -> None:
        """Config and environment into the run folder, once every check has passed."""
        barrier(self.world)  # every rank has looked at the folder before rank 0 writes to it
        if self.world.is_main:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            ckpt.remove_partial(self.run_dir)
            save_yaml(self.cfg, self.run_dir / "config.yaml")
            (self.run_dir / "env.json").write_text(json.dumps(environment(), indent=2))
            if self.train_step.added is not None:  # what the run changed in its start model's vocabulary
                record = [to_dict(self.train_step.added)]
                (self.run_dir / ADDED_TOKENS).write_text(json.dumps(record, indent=2))
        barrier(self.world)

    def _start_state(self, resume: bool) -> None:
        latest = find_checkpoint(self.run_dir) if resume else None
        if latest is not None:
            self._load(latest)
        elif self.cfg.model.init and self.cfg.model.load == "full":
            state, _, _ = ckpt.load_train_state(find_checkpoint(Path(self.cfg.model.init)))
            self.train_step.load_optimizer_state(state)

    def _load(self, path: Path) -> None:
        """Weights, optimizer state, counters and RNG from a checkpoint of this run."""
        saved = load_model_folder(path / "model")
        ckpt.check_model_matches(path, self.model, saved)
        load_model_state(self.model, saved.state_dict())
        state, self.progress, rng = ckpt.load_train_state(path)
        self.train_step.load_optimizer_state(state)
        ckpt.restore_rng(rng)

    # ---- checkpoints -------------------------------------------------------------------------
    def _meta(self, phase: PlannedPhase) -> dict[str, Any]:
        return {
            "phase": phase.name,
            "frozen_layers": phase.phase.freeze,
            "freeze_mechanism": MECHANISM,
            "config": to_dict(self.cfg),
        }

    def _save(self, phase: PlannedPhase) -> None:
        # Under FSDP2 gathering the shards is collective, so every rank takes part; rank 0 writes.
        gather = self.world.is_main or is_sharded(self.model)
        state = self.train_step.optimizer_state() if gather else {}
        model = gathered_model(self.model, self.world)
        if self.world.is_main:
            ckpt.save_checkpoint(
                self.run_dir, model, state, self.progress, self._meta(phase), self.train_step.tokenizer
            )
            ckpt.prune(self.run_dir, self.cfg.checkpoint.keep_last, self.cfg.checkpoint.keep_steps)
        barrier(self.world)  # nobody reads (rollback, resume) a checkpoint before it is complete

    def _should_save(self, step: int) -> bool:
        c = self.cfg.checkpoint
        return step == self.train_step.phase.end or (c.every and step % c.every == 0) or step in c.keep_steps

    def _on_bad_step(self, step: int, loss: float, grad_norm: float) -> bool:
        """Apply the NaN policy to the update of `step` (0-based); True after a rollback."""
        self.progress.bad_steps += 1
        phase = self.train_step.phase
        what = f"non-finite loss {loss} / grad norm {grad_norm} at step {step + 1} (phase {phase.name})"
        done = ckpt.complete_checkpoints(self.run_dir)
        last = (
            f"the last good checkpoint is step {done[-1]} in {self.run_dir}"
            if done
            else "no checkpoint was written yet"
        )
        policy = self.cfg.nan_policy
        if policy == "stop" or self.progress.bad_steps > self.cfg.max_bad_steps:
            why = "" if policy == "stop" else f" after {self.cfg.max_bad_steps} bad steps"
            raise NonFiniteLoss(
                f"stopped{why}: {what}; {last} (intact); lower optim.lr or set nan_policy=skip|rollback and --resume"
            )
        self.progress.skipped.append(step)
        if policy != "rollback":
            return False
        if not done:
            raise NonFiniteLoss(f"cannot roll back: {what}; {last}")
        skipped, bad = self.progress.skipped, self.progress.bad_steps
        self._load(ckpt.checkpoint_dir(self.run_dir, done[-1]))
        self.progress.skipped = sorted(set(skipped) | set(self.progress.skipped))
        self.progress.bad_steps = bad
        return True

    # ---- the loop ----------------------------------------------------------------------------
    def run(self, until_step: int | None = None) -> Path:
        """Train to the end (or to `until_step`, then checkpoint) and return the final model folder."""
        cfg, total = self.cfg, self.plan[-1].end
        stop_at = min(until_step or total, total)
        sinks: list[MetricSink] = (
            build_sinks(cfg.sinks, self.run_dir, to_dict(cfg), keep_until_step=self.progress.step)
            if self.world.is_main
            else []
        )
        bar = tqdm(total=total, initial=self.progress.step, disable=not (self.world.is_main and cfg.progress))
        peak = peak_flops(
            self.train_step.device,
            torch.bfloat16 if cfg.precision == "bf16" else torch.float32,
            cfg.peak_tflops,
        )
        if (
            cfg.nan_policy == "rollback"
            and self.progress.step == 0
            and not ckpt.complete_checkpoints(self.run_dir)
        ):
            self._save(
                self.train_step.phase_at(0)
            )  # a good state to roll back to before the first checkpoint
        try:
            while self.progress.step < stop_at:
                step = self.progress.step
                if not self.train_step.ready_for(step):
                    self.train_step.enter_phase(self.train_step.phase_at(step), step)
                record = self._run_step(step, peak)
                if record is None:  # rolled back: the loop resumes from the restored step
                    bar.n = self.progress.step
                    continue
                for sink in sinks:
                    sink.log(record)
                bar.update(1)
                bar.set_postfix(
                    phase=self.train_step.phase.name, loss=f"{record.get('loss', float('nan')):.4f}"
                )
                if self._should_save(self.progress.step) or self.progress.step == stop_at:
                    self._save(self.train_step.phase)
        finally:
            bar.close()
            for sink in sinks:
                sink.close()
        return self._finish(total)

    def _finish(self, total: int) -> Path:
        """The final model folder (written now), or the checkpoint's model when stopped early."""
        if self.progress.step < total:
            return ckpt.checkpoint_dir(self.run_dir, self.progress.step) / "model"
        final = self.run_dir / "final"
        model = gathered_model(self.model, self.world)
        if self.world.is_main:
            save_model_folder(model, final, self.train_step.tokenizer)
        barrier(self.world)
        return final

    def _run_step(self, step: int, peak: float) -> dict[str, Any] | None:
        """The update at `step` under the NaN policy; its metrics record, or None after a rollback."""
        phase, layout = self.train_step.phase, self.cfg.layout
        record: dict[str, Any] = {
            "step": step + 1,
            "phase": phase.name,
            "objective": phase.phase.objective.tag,
        }
        if step in self.progress.skipped:
            self.progress.step += 1
            return {**record, "skipped": True}
        result = self.train_step.step(step)
        if not result.finite:
            if self._on_bad_step(step, result.loss, result.grad_norm):
                return None
            self.progress.step += 1
            return {**record, "skipped": True, "loss": result.loss}
        self.progress.step += 1
        self.progress.tokens += layout.tokens_per_step
        return {
            **record,
            "loss": result.loss,
            "lr": result.lr,
            "grad_norm": result.grad_norm,
            "tokens": self.progress.tokens,
            "targets": result.n_targets,
            "tokens_per_s": layout.tokens_per_step / result.seconds,
            "flops": result.flops,
            "mfu": result.flops / result.seconds / (peak * layout.world_size),
        }


def pretrain(
    cfg: RunConfig,
    *,
    resume: bool = False,
    force: bool = False,
    until_step: int | None = None,
    source: BatchSource | None = None,
) -> Path:
    """Train `cfg` in `cfg.out` and return the run folder (final model in `final/`)."""
    try:
        with deterministic_mode(cfg.deterministic, resolve_device(cfg)):
            Trainer(cfg, source=source, resume=resume, force=force).run(until_step)
    except BaseException:
        shutdown(clean=False)  # the process group init_world created under torchrun, if any
        raise
    shutdown()
    return Path(cfg.out)
