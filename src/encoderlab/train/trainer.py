"""The training loop: phases over one step counter, objective-agnostic steps, exact resume.

Design
  * One global step counter drives everything: the batch (`source.batch(step, micro, rank)`), the
    masks (generator seeded by (seed, step, slot)), the phase and its LR (closed-form schedule).
    Nothing else carries state except the weights and the AdamW moments, so a checkpoint of those
    two plus the counter resumes bit for bit on CPU.
  * A step prepares all micro-batches first, counts the targets of the whole global batch, and
    backpropagates each micro-batch's summed loss divided by that count: gradient accumulation
    and data parallelism give exactly the token-weighted mean of one big batch.
  * The step calls `objective.prepare` and the shared `lm_loss`; it never looks at the objective's
    name. A phase switch rebuilds the optimizer over the phase's trainable parameters and carries
    the moments by parameter name (unless the phase resets them).
  * Non-finite loss or gradient norm: `stop` raises with the last good checkpoint named and
    untouched; `skip` drops the batch and moves on; `rollback` reloads the last checkpoint and
    replays with the offending step skipped. Skipped steps keep their place on the step axis, so
    the schedule and the data order of later steps do not shift.
  * Because a step's batches are a pure function of the step, the next step's are prepared on a
    background thread while this one runs on the device (the GPU otherwise idles while the host
    reads, masks and packs); a prefetch for any other step than the one asked for is dropped.
  * Side effects (files, progress bar) happen on rank 0 only; `distributed.py` is the seam for DDP/FSDP.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from encoderlab.config import load_yaml, save_yaml, to_dict
from encoderlab.data.batch import BatchLayout, BatchSource, TokenSpec
from encoderlab.errors import UserError
from encoderlab.model.config import ModelConfig
from encoderlab.model.encoder import Encoder
from encoderlab.model.hub import check_compatible, load_pretrained
from encoderlab.model.io import is_model_folder, load_model_folder, save_model_folder
from encoderlab.objectives import lm_loss, objective_generator
from encoderlab.train import checkpoint as ckpt
from encoderlab.train.config import DataConfig, ModelSpec, PlannedPhase, RunConfig
from encoderlab.train.distributed import (
    World,
    all_reduce_sum,
    barrier,
    gathered_model,
    init_world,
    is_sharded,
    load_model_state,
    no_sync,
    resume_blockers,
    shard_optim_state,
    shutdown,
)
from encoderlab.train.flops import peak_flops, train_flops
from encoderlab.train.freeze import MECHANISM, apply_freeze, parse_layers
from encoderlab.train.memory import check_fits
from encoderlab.train.metrics import MetricSink, build_sinks, check_sinks
from encoderlab.train.optim import StateByName, build_optimizer, load_state_by_name, state_by_name
from encoderlab.train.parallelize import parallelize


class NonFiniteLoss(UserError):
    """Training stopped on a NaN/inf loss or gradient."""

    exit_code = 4


def build_source(data: DataConfig, layout: BatchLayout) -> BatchSource:
    """The configured token stream: a prepared folder's reader, or synthetic documents."""
    if data.path == "synthetic":
        from encoderlab.data.synthetic import SyntheticSource, synthetic_spec

        return SyntheticSource(
            layout, synthetic_spec(data.synthetic_vocab), seed=data.seed, mean_doc_len=data.synthetic_doc_len
        )
    if not data.path:
        raise UserError("data.path is empty; set it to a prepared data folder (or 'synthetic')")
    if not Path(data.path).is_dir():
        raise UserError(f"data.path {data.path} is not a folder; run `encoderlab data prepare` first")
    from encoderlab.data.reader import PackedReader

    return PackedReader(Path(data.path), layout, seed=data.seed, split="train")


def data_tokenizer(data: DataConfig):
    """The tokenizer stored with prepared data; for synthetic data a word-level one over its ids, so
    a synthetic run's models export and evaluate like any other (their words are `t<id>`)."""
    if data.path == "synthetic":
        from encoderlab.data.synthetic import synthetic_spec, synthetic_tokenizer

        return synthetic_tokenizer(synthetic_spec(data.synthetic_vocab))
    folder = Path(data.path) / "tokenizer"
    if not folder.is_dir():
        return None
    from encoderlab.data.tokenizer import load_tokenizer

    return load_tokenizer(str(folder))


def find_checkpoint(path: Path) -> Path | None:
    """A checkpoint folder itself, or the latest complete checkpoint of a run folder."""
    if (path / "state.json").is_file():
        return path
    steps = ckpt.complete_checkpoints(path)
    return ckpt.checkpoint_dir(path, steps[-1]) if steps else None


def build_model(spec_cfg: ModelSpec, spec: TokenSpec, seq_len: int) -> tuple[torch.nn.Module, Any]:
    """A fresh model of the named size, or the `init` source's weights (and its tokenizer)."""
    if not spec_cfg.init:
        cfg = ModelConfig.from_size(
            spec_cfg.size,
            vocab_size=spec.vocab_size,
            max_seq_len=max(2048, seq_len),
            pad_id=spec.pad_id,
            bos_id=spec.bos_id,
            eos_id=spec.eos_id,
            mask_id=spec.mask_id,
        )
        return Encoder(cfg), None
    source = Path(spec_cfg.init)
    found = find_checkpoint(source) if source.is_dir() else None
    if spec_cfg.load == "full" and found is None:
        raise UserError(
            f"model.load=full needs an encoderlab checkpoint or run folder with checkpoints, got {source}; "
            "use model.load=weights for other sources"
        )
    if found is not None:
        source = found / "model"
    if is_model_folder(source):
        model, tokenizer = load_model_folder(source), None
    else:
        pre = load_pretrained(str(source))
        model, tokenizer = pre.model, pre.tokenizer
    check_compatible(model, spec, tokenizer="the data's tokenizer")
    if model.config.max_seq_len < seq_len:
        raise UserError(
            f"model {spec_cfg.init} accepts {model.config.max_seq_len} tokens but layout.seq_len is {seq_len}; "
            f"set layout.seq_len <= {model.config.max_seq_len}"
        )
    return model, tokenizer


def resolve_device(cfg: RunConfig) -> torch.device:
    """The device `cfg.device` names: `auto` is CUDA when visible; `cuda` without one is refused."""
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise UserError("device=cuda but no CUDA device is visible; use device=cpu or auto")
    return torch.device("cuda" if cfg.device != "cpu" and torch.cuda.is_available() else "cpu")


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
    """Runs a `RunConfig` in its run folder; `run()` returns the final model folder."""

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
        self.source = source or build_source(cfg.data, cfg.layout)
        self.spec = self.source.spec
        for p in self.plan:
            p.phase.objective.check(self.spec)
        self.device = resolve_device(cfg)
        if not cfg.model.init:  # an impossible size is refused before allocating (see memory.py)
            check_fits(ModelConfig.from_size(cfg.model.size, self.spec.vocab_size), cfg, self.device)
        torch.manual_seed(cfg.seed)
        model, tokenizer = build_model(cfg.model, self.spec, cfg.layout.seq_len)
        self.tokenizer = tokenizer or data_tokenizer(cfg.data)
        self.model = model.to(self.device)
        self.forward_model = parallelize(self.model, self.world, cfg.scale, self.device, cfg.precision)
        self.progress = ckpt.Progress()
        self.optim_state: StateByName = {}
        self._start_state(resume)
        check_sinks(cfg.sinks)
        self._write_run_files()  # only now: a refused start leaves the folder as it was
        self.phase: PlannedPhase | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        self._prefetcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="encoderlab-batches")
        self._ahead: tuple[int, Future] | None = None
        self.frozen: list[str] = []

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
        barrier(self.world)

    def _start_state(self, resume: bool) -> None:
        latest = find_checkpoint(self.run_dir) if resume else None
        if latest is not None:
            self._load(latest)
        elif self.cfg.model.init and self.cfg.model.load == "full":
            self.optim_state, _, _ = ckpt.load_train_state(find_checkpoint(Path(self.cfg.model.init)))

    def _load(self, path: Path) -> None:
        """Weights, optimizer state, counters and RNG from a checkpoint of this run."""
        saved = load_model_folder(path / "model")
        ckpt.check_model_matches(path, self.model, saved)
        load_model_state(self.model, saved.state_dict())
        self.optim_state, self.progress, rng = ckpt.load_train_state(path)
        ckpt.restore_rng(rng)

    # ---- phases and optimizer ----------------------------------------------------------------
    def _current_state(self) -> StateByName:
        """Every parameter's optimizer state: live for trained ones, kept aside for frozen ones."""
        if self.optimizer is None:
            return self.optim_state
        return {**self.optim_state, **state_by_name(self.optimizer, self.model)}

    def _enter(self, phase: PlannedPhase) -> None:
        """Apply the phase's freezing and (re)build the optimizer with the carried state."""
        state = self._current_state()
        if phase.phase.reset_optimizer and self.progress.step == phase.start:
            state = {}
        self.frozen = apply_freeze(self.model, parse_layers(phase.phase.freeze, self.model.config.n_layers))
        self.optimizer = build_optimizer(self.model, self.cfg.optim, self.device)
        load_state_by_name(self.optimizer, self.model, shard_optim_state(state, self.model))
        self.optim_state = {k: v for k, v in state.items() if k in set(self.frozen)}
        self.phase = phase

    def _phase_at(self, step: int) -> PlannedPhase:
        return next(p for p in self.plan if p.start <= step < p.end)

    # ---- one step ----------------------------------------------------------------------------
    def _micro_batches(self, step: int) -> list:
        """Step `step`'s micro-batches of this rank, prepared by the objective of that step's phase."""
        objective, layout = self._phase_at(step).phase.objective, self.cfg.layout
        return [
            objective.prepare(
                self.source.batch(step, m, self.world.rank),
                self.spec,
                objective_generator(self.cfg.seed, step, layout.slot(m, self.world.rank)),
            )
            for m in range(layout.grad_accum)
        ]

    def _batches_for(self, step: int) -> list:
        """`_micro_batches(step)`, taken from the prefetch when it is that step's; queues the next step's."""
        ahead, self._ahead = self._ahead, None
        xs = ahead[1].result() if ahead is not None and ahead[0] == step else self._micro_batches(step)
        if step + 1 < self.plan[-1].end:
            self._ahead = (step + 1, self._prefetcher.submit(self._micro_batches, step + 1))
        return xs

    def _forward_backward(self, xs: list) -> tuple[float, float]:
        """Accumulate gradients over micro-batches; (mean loss, grad norm before clipping)."""
        n_total = all_reduce_sum(torch.tensor(float(sum(x.n_targets for x in xs))), self.world)
        n_total = n_total.clamp(min=1.0).to(self.device)
        loss_sum = torch.zeros((), device=self.device)
        for m, x in enumerate(xs):
            x = x.to(self.device)
            with (
                no_sync(self.forward_model, sync=m == len(xs) - 1),
                torch.autocast(self.device.type, torch.bfloat16, enabled=self.cfg.precision == "bf16"),
            ):
                hidden = self.forward_model(
                    x.input_ids,
                    attention_mode=x.attention_mode,
                    position_ids=x.position_ids,
                    doc_ids=x.doc_ids,
                ).last_hidden_state
                total, _ = lm_loss(self.model, hidden, x.targets)
            (total / n_total).backward()
            loss_sum += total.detach()
        loss = all_reduce_sum(loss_sum, self.world) / n_total
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        clip = self.cfg.optim.clip or float("inf")
        grad_norm = torch.nn.utils.clip_grad_norm_(trainable, clip)
        return float(loss), float(grad_norm)

    # ---- checkpoints -------------------------------------------------------------------------
    def _meta(self) -> dict[str, Any]:
        return {
            "phase": self.phase.name,
            "frozen_layers": self.phase.phase.freeze,
            "freeze_mechanism": MECHANISM,
            "config": to_dict(self.cfg),
        }

    def _save(self) -> None:
        # Under FSDP2 gathering the shards is collective, so every rank takes part; rank 0 writes.
        gather = self.world.is_main or is_sharded(self.model)
        state = self._current_state() if gather else {}
        model = gathered_model(self.model, self.world)
        if self.world.is_main:
            ckpt.save_checkpoint(self.run_dir, model, state, self.progress, self._meta(), self.tokenizer)
            ckpt.prune(self.run_dir, self.cfg.checkpoint.keep_last, self.cfg.checkpoint.keep_steps)
        barrier(self.world)  # nobody reads (rollback, resume) a checkpoint before it is complete

    def _should_save(self, step: int) -> bool:
        c = self.cfg.checkpoint
        return step == self.phase.end or (c.every and step % c.every == 0) or step in c.keep_steps

    def _on_bad_step(self, step: int, loss: float, grad_norm: float) -> bool:
        """Apply the NaN policy to the update of `step` (0-based); True if training goes on."""
        self.optimizer.zero_grad(set_to_none=True)
        self.progress.bad_steps += 1
        what = f"non-finite loss {loss} / grad norm {grad_norm} at step {step + 1} (phase {self.phase.name})"
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
        if policy == "rollback":
            if not done:
                raise NonFiniteLoss(f"cannot roll back: {what}; {last}")
            skipped, bad = self.progress.skipped, self.progress.bad_steps
            self._load(ckpt.checkpoint_dir(self.run_dir, done[-1]))
            self.progress.skipped = sorted(set(skipped) | set(self.progress.skipped))
            self.progress.bad_steps = bad
            self.optimizer, self.phase = None, None
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
            self.device, torch.bfloat16 if cfg.precision == "bf16" else torch.float32, cfg.peak_tflops
        )
        if (
            cfg.nan_policy == "rollback"
            and self.progress.step == 0
            and not ckpt.complete_checkpoints(self.run_dir)
        ):
            self.phase = self._phase_at(0)
            self._save()  # a good state to roll back to before the first checkpoint
        try:
            while self.progress.step < stop_at:
                step = self.progress.step
                if (
                    self.phase is None
                    or self.optimizer is None
                    or not (self.phase.start <= step < self.phase.end)
                ):
                    self._enter(self._phase_at(step))
                record = self._train_step(step, peak)
                if record is None:  # rolled back: the loop resumes from the restored step
                    bar.n = self.progress.step
                    continue
                for sink in sinks:
                    sink.log(record)
                bar.update(1)
                bar.set_postfix(phase=self.phase.name, loss=f"{record.get('loss', float('nan')):.4f}")
                if self._should_save(self.progress.step) or self.progress.step == stop_at:
                    self._save()
        finally:
            bar.close()
            for sink in sinks:
                sink.close()
        if self.progress.step < total:
            return ckpt.checkpoint_dir(self.run_dir, self.progress.step) / "model"
        final = self.run_dir / "final"
        model = gathered_model(self.model, self.world)
        if self.world.is_main:
            save_model_folder(model, final, self.tokenizer)
        barrier(self.world)
        return final

    def _train_step(self, step: int, peak: float) -> dict[str, Any] | None:
        """One optimizer update at `step`; its metrics record, or None after a rollback."""
        phase, cfg = self.phase, self.cfg
        record: dict[str, Any] = {
            "step": step + 1,
            "phase": phase.name,
            "objective": phase.phase.objective.tag,
        }
        if step in self.progress.skipped:
            self.progress.step += 1
            return {**record, "skipped": True}
        lr = cfg.optim.lr * phase.phase.schedule.factor(step - phase.start, phase.steps)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        t0 = time.perf_counter()
        xs = self._batches_for(step)
        loss, grad_norm = self._forward_backward(xs)
        if not (torch.isfinite(torch.tensor(loss)) and torch.isfinite(torch.tensor(grad_norm))):
            self._on_bad_step(step, loss, grad_norm)
            if self.phase is None:
                return None
            self.progress.step += 1
            return {**record, "skipped": True, "loss": loss}
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        self.progress.step += 1
        self.progress.tokens += cfg.layout.tokens_per_step
        flops = train_flops(self.model.config, xs) * cfg.layout.world_size
        return {
            **record,
            "loss": loss,
            "lr": lr,
            "grad_norm": grad_norm,
            "tokens": self.progress.tokens,
            "targets": sum(x.n_targets for x in xs),
            "tokens_per_s": cfg.layout.tokens_per_step / dt,
            "flops": flops,
            "mfu": flops / dt / (peak * cfg.layout.world_size),
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
