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
  * A resume (and a rollback) refuses a tokenizer other than its checkpoint's, and prepared data
    other than its checkpoint's unless forced (`resumed.py`).
  * Side effects (files, progress bar) happen on rank 0 only; `distributed.py` is the seam for DDP/FSDP.
  * The process around one trainer (joining the world, deterministic mode, the order of the checks
    before anything is written, the caller's `before_start`, shutdown) is `entry.py:pretrain`; the
    trainer exposes those steps (`opened`, `stop_at`, `build`, `check_ranks_agree`, `run`).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

import encoderlab.train.checkpoint as ckpt
from encoderlab.atomic import json_text, write_json_atomic, write_text_atomic
from encoderlab.config import save_yaml, to_dict
from encoderlab.data.batch import BatchSource
from encoderlab.errors import UserError
from encoderlab.launchenv import env_rank
from encoderlab.locks import RUN_LEASE, folder_lock, refuse_live_holder
from encoderlab.model.io import load_model_folder, save_model_folder
from encoderlab.model.runlayout import ENV_FILE, recorded_start_model, start_model_record
from encoderlab.outdir import create_output
from encoderlab.train.build import (
    INIT_VERSION,
    InitIdentity,
    ReadTokenizer,
    data_identity,
    final_differs_note,
)
from encoderlab.train.config import PlannedPhase, RunConfig, check_until_step
from encoderlab.train.distributed import (
    World,
    agreed,
    all_gather,
    barrier,
    gathered_model,
    init_world,
    is_sharded,
    load_model_state,
    reshard,
    stopping_together,
)
from encoderlab.train.flops import peak_flops
from encoderlab.train.freeze import MECHANISM, freeze_note, frozen_record
from encoderlab.train.metrics import MetricSink, build_sinks, check_sinks
from encoderlab.train.resumed import check_tokenizer, data_note
from encoderlab.train.runfolder import (
    KIND,
    LOCK,
    check_run_folder,
    config_diff,
    environment,
    lock_holder,
)
from encoderlab.train.start import find_checkpoint
from encoderlab.train.step import TrainStep
from encoderlab.train.validation import VALIDATION, Validator
from encoderlab.train.vocab import ADDED_TOKENS


class NonFiniteLoss(UserError):
    """Training stopped on a NaN/inf loss or gradient."""

    exit_code = 4


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
        self._open(cfg, resume=resume, force=force)
        self.build(source)

    @classmethod
    def opened(cls, cfg: RunConfig, *, resume: bool = False, force: bool = False) -> Trainer:
        """A trainer whose run folder is checked and whose step is read (`_open`), nothing built yet: `build`
        does that. `pretrain` asks it first whether a resumed run is finished, which then builds no model."""
        trainer = cls.__new__(cls)
        trainer._open(cfg, resume=resume, force=force)
        return trainer

    def _open(self, cfg: RunConfig, *, resume: bool, force: bool) -> None:
        """The run folder's checks, the world, and the step a resume continues from (its state.json alone)."""
        # the start model's content (`build.init_identity`), hashed at most once, on rank 0, when first needed
        self._init_identity = InitIdentity(cfg.model)
        # a live holder first: its checkpoints may be rotated while they are read. Judged by rank 0 alone, as the lock
        # is taken (`_claim`): a rank on another node cannot tell a dead holder of rank 0's host from a live one
        # and refused every rank for a stale lock rank 0 takes over; `agreed` gives rank 0's refusal to every rank.
        # Only a folder holds a lock: an --out that is a file, under one or a looping link is `check_run_folder`'s
        if cfg.out and env_rank() == 0 and Path(cfg.out).is_dir():
            refuse_live_holder(Path(cfg.out) / LOCK, Path(cfg.out))
        self._had_run = check_run_folder(  # before anything is read
            cfg, resume=resume, force=force, say=True, init=self._init_identity
        )
        self.cfg, self.run_dir, self.resume, self.force = cfg, Path(cfg.out), resume, force
        self.world: World = init_world(cfg.layout)
        self.plan = cfg.plan()
        # the phase whose freezing `_enter_phase` said last: a rollback that re-enters it says nothing again
        self._noted_phase: PlannedPhase | None = None
        latest = self._resumed_from = find_checkpoint(self.run_dir) if resume else None
        # its state.json alone: the counters, for `stop_at` and `finished`, and the start model's record (`build`),
        # which loads the rest of the checkpoint
        self._latest_state = ckpt.read_state(latest) if latest else {}
        self.progress = ckpt.Progress(**self._latest_state["progress"]) if latest else ckpt.Progress()
        if self.progress.step > self.plan[-1].end:  # `final` would be that later model, without a word
            raise UserError(
                f"--resume: {self._resumed_from} is past the last step ({self.plan[-1].end}) of this config; "
                f"lengthen the phases to {self.progress.step} steps or more, delete the checkpoints after step "
                f"{self.plan[-1].end} to resume from an earlier one, or start a new run folder"
            )

    def build(
        self, source: BatchSource | None = None, before_model: Callable[[TrainStep], None] | None = None
    ) -> None:
        """The data, the model and the checkpoint's state (every remaining check of the run); writes nothing.
        `before_model`: `TrainStep`'s, the caller's checks of the planned model before it is built."""
        cfg, latest = self.cfg, self._resumed_from
        # the config's alone: checked after the model's build, a missing package cost the build first
        check_sinks(cfg.sinks)
        self.train_step = step = TrainStep(
            cfg, source=source, world=self.world, resume_from=latest, before_model=before_model
        )
        # what each checkpoint records and a resume compares (a source passed in is the caller's to vouch for)
        self._data = data_identity(cfg.data, step.data_meta) if source is None else None
        # what checkpoints record of the start model (rank 0 writes them): a resume keeps its run's record; a
        # start hashes it in `_claim`, once every refusal (`before_start`'s too) has passed
        kept = self._latest_state if self.world.is_main else {}
        self._init = kept.get("init")
        self._init_version = kept.get("init_version", 1 if kept else INIT_VERSION)  # 1: written before it
        self._start_state(latest)
        self.validator = Validator(cfg, step.spec, step.source.spec, step.data_meta)  # reads the val split
        # Nothing is written yet: `run` creates the folder once every check has passed.

    def start_model_identity(self) -> str | None:
        """The identity of the start model this run's checkpoints will record (`init`, `build.INIT_VERSION`), for
        a caller's `before_start` to compare with its own (a study's node key: `study.localmodels.check_loaded`):
        a start's, hashed from the files the build just loaded and kept, so `_claim` records this very value
        without reading them again. None where the run reads no start model now (a resume: its checkpoint holds
        the weights) or records none (no local `model.init`; a rank other than 0, which writes nothing)."""
        if self._resumed_from is not None or not self.world.is_main:
            return None
        return self._init_identity.of_start(self.train_step.start_tokenizer)

    def check_ranks_agree(self) -> None:
        """Refuse, on a rank started otherwise than rank 0, a run whose ranks would train different
        things: another --out or config (a node whose command or working folder differs), or another
        step to start from (a run folder this node does not see, or sees elsewhere). Rank 0 alone
        writes, so such a rank trained on without a word, from its own start, until the ranks' step
        counts parted and a collective hung. Collective (every rank calls it)."""
        gathered = all_gather({**to_dict(self.cfg), "start step": self.progress.step}, self.world)
        differences = config_diff(gathered[0], gathered[self.world.rank])  # both as JSON gives them back
        if differences:
            raise UserError(
                f"started otherwise than rank 0 ({'; '.join(differences[:3])}: rank 0's -> this rank's); start "
                "every rank with the same command, with a run folder every node sees at the same path"
            )

    @property
    def model(self):
        """The model being trained (the step's)."""
        return self.train_step.model

    # ---- setup -------------------------------------------------------------------------------
    def stop_at(self, until_step: int | None) -> int:
        """The step the run stops after: the end, or a checked `until_step` (refused before writing)."""
        total = self.plan[-1].end
        if until_step is None:
            return total
        check_until_step(until_step)
        if until_step <= self.progress.step:
            raise UserError(
                f"--until-step {until_step} is not after step {self.progress.step}, where {self.run_dir} already is; "
                "pass a later step or drop --until-step"
            )
        return min(until_step, total)

    @contextlib.contextmanager
    def _claimed(self):
        """The run folder created and locked by rank 0 for the duration, checked again under the
        lock (another run may have started in it since), with config.yaml and env.json written."""
        with contextlib.ExitStack() as held:
            with agreed(self.world):
                if self.world.is_main:
                    self._claim(held)
            self._write_run_files()
            yield

    def _claim(self, held: contextlib.ExitStack) -> None:
        if self._resumed_from is None:  # a start: every refusal has passed; an unreadable file writes nothing
            self._init = self._init_identity.of_start(self.train_step.start_tokenizer)
            read = ReadTokenizer(self.train_step.start_tokenizer)
            if (note := final_differs_note(self.cfg.model, self._init, read)) is not None:
                print(f"encoderlab: note: {note}", file=sys.stderr)
        create_output(self.run_dir, KIND)
        held.enter_context(
            folder_lock(
                self.run_dir / LOCK, lock_holder(self.world.world_size), use=self.run_dir, lease=RUN_LEASE
            )
        )
        check_run_folder(self.cfg, resume=self.resume, force=self.force, init=self._init_identity)
        latest = find_checkpoint(self.run_dir) if self.resume else None
        if latest != self._resumed_from:
            raise UserError(
                f"{self.run_dir} changed while this run started (another process wrote {latest}); "
                "rerun to resume from it"
            )
        if self.resume and not self._had_run:
            print(
                f"encoderlab: note: --resume: {self.run_dir} holds no run to resume; starting a new one",
                file=sys.stderr,
            )

    def _write_run_files(self) -> None:
        """Config and environment into the run folder, once every check has passed."""
        barrier(self.world)  # every rank has looked at the folder before rank 0 writes to it
        with agreed(self.world):  # a failed write (a full disk) stops every rank, as in `_save`
            if self.world.is_main:
                # the checkpoint found at the start, not "the one before": an older folder may be the emptied one
                start = f"resumes from {self._resumed_from}" if self._resumed_from else "starts from step 0"
                for gone in ckpt.remove_partial(self.run_dir):
                    print(
                        f"encoderlab: note: removed {gone}: no state.json, so not a complete checkpoint; "
                        f"the run {start}",
                        file=sys.stderr,
                    )
                save_yaml(self.cfg, self.run_dir / "config.yaml")
                env = {**environment(), **self._start_record()}
                write_text_atomic(self.run_dir / ENV_FILE, json_text(env, indent=2))
                if self.train_step.added is not None:  # what the run changed in its start model's vocabulary
                    record = [to_dict(self.train_step.added)]
                    write_text_atomic(self.run_dir / ADDED_TOKENS, json_text(record, indent=2))

    def _start_record(self) -> dict[str, Any]:
        """env.json's record of the start model: on a resume from a checkpoint, which reads none
        (`TrainStep._start_model`), the one the run recorded when it started; else (a start, or a folder
        without one: a study's branch, seeded from its base's checkpoint) the one `model.init` names now."""
        start = recorded_start_model(self.run_dir) if self._resumed_from is not None else None
        return {"start_model": start} if start else start_model_record(self.cfg.model.init)

    def _start_state(self, latest: Path | None) -> None:
        """Load `latest`, the checkpoint a resume continues, or else an `init` checkpoint's optimizer state.
        A resume reads nothing of `model.init` (`TrainStep._start_model`) and says so: another
        model put at that path since changes nothing, which the user who put it there may not expect."""
        if latest is not None:
            self._load(latest, weights=not self.train_step.from_checkpoint)
            notes = [data_note(latest, self._data, self.cfg.data.path, force=self.force)]
            if self.cfg.model.init and self.progress.step < self.plan[-1].end:  # finished: it says so instead
                notes.append(f"--resume: the model continues from {latest}; model.init {self.cfg.model.init} is not "
                             "read on resume (moved, deleted or replaced since, it changes nothing)")  # fmt: skip
            for note in notes:
                if note is not None and self.world.is_main:
                    print(f"encoderlab: note: {note}", file=sys.stderr)
        elif self.cfg.model.init and self.cfg.model.load == "full":
            found = find_checkpoint(Path(self.cfg.model.init))
            state, _, _ = ckpt.load_train_state(found)
            self.train_step.load_optimizer_state(
                state, str(found), "start from its weights with model.load=weights"
            )

    def _load(self, path: Path, *, weights: bool = True) -> None:
        """Weights, optimizer state, counters and RNG from a checkpoint of this run. `weights` False: the model
        holds the checkpoint's already (built from it: `TrainStep.from_checkpoint`), which a CPT resume read a
        second time here; a rollback always reloads them."""
        saved = load_model_folder(path / "model") if weights else None
        # before the model's shape: another tokenizer's size is no model setting
        read = self.train_step.checkpoint_tokenizer if path == self._resumed_from else None  # not read again
        check_tokenizer(path, self.train_step.tokenizer, self.cfg.data.path, saved=read)
        if saved is not None:
            ckpt.check_model_matches(path, self.model, saved)
            load_model_state(self.model, saved.state_dict())
        state, self.progress, rng = ckpt.load_train_state(path)
        self.train_step.load_optimizer_state(
            state, str(path), "resume from an earlier checkpoint or start a new run folder"
        )
        ckpt.restore_rng(rng)

    # ---- checkpoints -------------------------------------------------------------------------
    def _meta(self, phase: PlannedPhase) -> dict[str, Any]:
        return {
            "data": self._data,  # the prepared data's identity (None: synthetic), checked on --resume
            "init": self._init,  # a resume naming model.init's new place checks it holds the same model
            "init_version": self._init_version,  # what `init` covers (`build.INIT_VERSION`)
            "phase": phase.name,
            "frozen_layers": frozen_record(phase, self.model.config.n_layers),
            "freeze_mechanism": MECHANISM,
            "config": to_dict(self.cfg),
        }

    def _save(self, phase: PlannedPhase) -> None:
        # Under FSDP2 gathering the shards is collective, so every rank takes part; rank 0 writes.
        gather = self.world.is_main or is_sharded(self.model)
        state = self.train_step.optimizer_state() if gather else {}
        model = gathered_model(self.model, self.world)
        # agreed: nobody reads (rollback, resume) a checkpoint before it is complete, and a failed write
        # (a full disk) stops every rank, not rank 0 alone with the others dying in their next collective
        with agreed(self.world):
            if self.world.is_main:
                ckpt.save_checkpoint(
                    self.run_dir, model, state, self.progress, self._meta(phase), self.train_step.tokenizer
                )
                ckpt.prune(self.run_dir, self.cfg.checkpoint.keep_last, self.cfg.checkpoint.keep_steps)

    def _should_save(self, step: int) -> bool:
        c = self.cfg.checkpoint
        return step == self.train_step.phase.end or (c.every and step % c.every == 0) or step in c.keep_steps

    def _said_by_rank_zero(self, error: UserError) -> UserError:
        """`error`, which every rank raises alike (it follows from all-reduced numbers), printed by rank 0
        only: each rank printed it (8 lines on one 8-GPU node)."""
        error.quiet = not self.world.is_main
        stopping_together(self.world)
        return error

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
            raise self._said_by_rank_zero(
                NonFiniteLoss(
                    f"stopped{why}: {what}; {last} (intact); lower optim.lr or set nan_policy=skip|rollback and --resume"
                )
            )
        self.progress.skipped.append(step)
        if policy != "rollback":
            return False
        if not done:
            raise self._said_by_rank_zero(NonFiniteLoss(f"cannot roll back: {what}; {last}"))
        skipped, bad = self.progress.skipped, self.progress.bad_steps
        self._load(ckpt.checkpoint_dir(self.run_dir, done[-1]))
        self.progress.skipped = sorted(set(skipped) | set(self.progress.skipped))
        self.progress.bad_steps = bad
        return True

    # ---- the loop ----------------------------------------------------------------------------
    def run(self, until_step: int | None = None) -> Path:
        """Train to the end (or to `until_step`, then checkpoint) and return the final model folder."""
        stop_at = self.stop_at(until_step)
        with self._claimed():
            return self._train(stop_at)

    def _train(self, stop_at: int) -> Path:
        cfg, total = self.cfg, self.plan[-1].end
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
            # a good state to roll back to before the first checkpoint
            self._save(self.train_step.phase_at(0))
        try:
            while self.progress.step < stop_at:
                step = self.progress.step
                if not self.train_step.ready_for(step):
                    self._enter_phase(step)
                record = self._run_step(step, peak)
                if record is None:  # rolled back: the loop replays from the restored step
                    bar.n = self.progress.step
                    for sink in sinks:  # the replays' lines replace those logged since the checkpoint
                        sink.rewind(self.progress.step)
                    continue
                if self.validator.due(self.progress.step, total):
                    record.update(self._validate())
                for sink in sinks:
                    sink.log(record)
                bar.update(1)
                loss = record.get("loss")  # None: skipped, or a batch without a target
                bar.set_postfix(phase=self.train_step.phase.name, loss="-" if loss is None else f"{loss:.4f}")
                if self._should_save(self.progress.step) or self.progress.step == stop_at:
                    self._save(self.train_step.phase)
        finally:
            bar.close()
            for sink in sinks:
                sink.close()
        return self._finish(total)

    def _enter_phase(self, step: int) -> None:
        """Enter the phase of `step` (a start, a phase boundary, a resume, a rollback); a phase that freezes
        says which blocks, on rank 0, when the run enters it, not again when a rollback re-enters it."""
        phase = self.train_step.phase_at(step)
        self.train_step.enter_phase(phase, step)
        note = freeze_note(phase, self.model.config.n_layers)
        if note is not None and phase != self._noted_phase and self.world.is_main:
            tqdm.write(f"encoderlab: note: {note}", file=sys.stderr)  # the bar's line stays whole
        self._noted_phase = phase

    def _validate(self) -> dict[str, float]:
        """The held-out losses now, also written to RUN/validation.json (the latest scores; a loss that is
        not finite, a diverged model's, as null, as metrics.jsonl holds it: a bare NaN is no JSON)."""
        scores = self.validator.evaluate(self.model, self.train_step.device)
        reshard(self.model)  # FSDP2 leaves the root unsharded after a forward without backward
        if self.world.is_main:
            write_json_atomic(
                self.run_dir / VALIDATION,
                {"step": self.progress.step, "tokens": self.progress.tokens, **scores},
            )
        return scores

    def _finish(self, total: int) -> Path:
        """The final model folder (written now), or the checkpoint's model when stopped early."""
        if self.progress.step < total:
            return ckpt.checkpoint_dir(self.run_dir, self.progress.step) / "model"
        final = self.run_dir / "final"
        model = gathered_model(self.model, self.world)
        with agreed(self.world):  # as in `_save`
            if self.world.is_main:
                save_model_folder(model, final, self.train_step.tokenizer)
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
            # a step without targets ran no forward: its speed would be a figure of nothing
            "tokens_per_s": layout.tokens_per_step / result.seconds if result.n_targets else None,
            "flops": result.flops,
            "mfu": result.flops / result.seconds / (peak * layout.world_size) if result.n_targets else None,
        }
