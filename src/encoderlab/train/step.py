"""One optimizer update at a time: the training step, apart from the loop that drives it.

`TrainStep` owns what a step computes with: the model (and the module `parallelize` returns to
run its forward), the token stream, the phase's optimizer and the objective that prepares each
micro-batch. `Trainer` (trainer.py) owns everything around it: the run folder, resume, the
checkpoint cadence, the NaN policy, metrics sinks and MFU. The split follows OLMo-core's
`TrainModule` / `Trainer`: the step is usable without a run folder (benchmarks, tests, notebooks)
because building one writes nothing.

Design
  * A step prepares all micro-batches first, counts the targets of the whole global batch, and
    backpropagates each micro-batch's summed loss divided by that count: gradient accumulation
    and data parallelism give exactly the token-weighted mean of one big batch.
  * The step calls `objective.prepare` and the shared `batch_loss`; it never looks at the objective's
    name. `enter_phase` rebuilds the optimizer over the phase's trainable parameters and carries
    the moments by parameter name (unless the phase resets them); frozen parameters' moments are
    kept aside and come back when a later phase trains them again.
  * Because a step's batches are a pure function of the step, the next step's are prepared on a
    background thread while this one runs on the device (the GPU otherwise idles while the host
    reads, masks and packs); a prefetch for any other step than the one asked for is dropped.
  * A non-finite loss or gradient norm applies no update: `step` zeroes the gradients and says so
    in its result; what happens next (stop, skip, roll back) is the trainer's policy.
  * A global batch without a single target (MLM's `bernoulli` selection can draw none in a short
    batch) has no loss: `step` runs no forward pass and no update (AdamW would still decay the weights
    and move them by its momentum), and its result's loss and gradient norm are None, not 0.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from encoderlab.data.batch import BatchSource
from encoderlab.errors import UserError
from encoderlab.model.config import ModelConfig
from encoderlab.model.hub import ModelFiles
from encoderlab.model.protocol import LanguageModel
from encoderlab.objectives import ObjectiveInputs, batch_loss, objective_generator
from encoderlab.train.build import (
    build_model,
    build_source,
    check_data_tokenizer,
    data_tokenizer,
    prepared_meta,
    resumed_model,
    scratch_config,
    start_source,
)
from encoderlab.train.config import PlannedPhase, RunConfig
from encoderlab.train.distributed import (
    World,
    all_reduce_sum,
    backward,
    init_world,
    no_sync,
    shard_optim_state,
)
from encoderlab.train.flops import train_flops
from encoderlab.train.freeze import apply_freeze, check_unshared, phase_layers
from encoderlab.train.memory import check_fits
from encoderlab.train.optim import (
    StateByName,
    build_optimizer,
    load_state_by_name,
    state_by_name,
    state_mismatches,
)
from encoderlab.train.parallelize import parallelize, trainable_attn_impl
from encoderlab.train.start import resolve_device
from encoderlab.train.vocab import (
    add_mask_to_tokenizer,
    add_mask_token,
    planned_spec,
    refuse_start_without_mask,
    start_vocab,
)


@dataclass(frozen=True)
class StepResult:
    """What one call of `TrainStep.step` did."""

    loss: float | None
    """Token-weighted mean loss over the global batch; None when it had no target (no update)."""
    grad_norm: float | None
    """Norm of the trainable parameters' gradients before clipping; None when there were none."""
    lr: float
    """Learning rate of this update."""
    n_targets: int
    """Positions with a loss in the global batch (every micro-batch of every rank)."""
    flops: int
    """Counted matmul FLOPs of the global batch's forward and backward (`flops.py`)."""
    seconds: float
    """Wall time from preparing the batches to the end of the update."""

    @property
    def finite(self) -> bool:
        """False when the loss or gradient norm was NaN/inf (no update was applied)."""
        return all(v is None or math.isfinite(v) for v in (self.loss, self.grad_norm))


class TrainStep:
    """The model, the phase's optimizer and one optimizer update per `step(n)`; writes no files.

    Building one builds the token stream (unless `source` is given), checks every phase's objective
    against it, refuses a model that cannot fit, builds the model (seeded by `cfg.seed`) and checks
    the data's tokenizer against it and every phase's freeze spec: every refusal of a
    run's inputs happens here, before the trainer writes anything.
    """

    start_files: ModelFiles | None = None
    """What the plan read of the start model (`_start_tokenizer`), handed to its load (`build_model`)."""
    start_tokenizer: Any = None
    """The start model's tokenizer as a start's load read it (None: it has none, or the run resumed), whose
    class names the tokenizer files the run's record of its start model hashes (`build.InitIdentity`)."""
    planned_model: ModelConfig | None = None
    """The shape of a model built from scratch, known before it is built (`build.scratch_config`); None for
    an `init` model, whose shape its load reads."""
    from_checkpoint: bool = False
    """Whether the model was built from `resume_from` (a resumed `init` run): it holds its weights already."""

    def __init__(
        self,
        cfg: RunConfig,
        *,
        source: BatchSource | None = None,
        world: World | None = None,
        names: Mapping[str, str] | None = None,
        resume_from: Path | None = None,
        before_model: Callable[[TrainStep], None] | None = None,
    ):
        """`names`: how the caller's user sets the config's fields, where not `--set FIELD=`
        (`memory.check_fits`, `start.run_device`: a benchmark's refusal names its own flags).
        `resume_from`: the checkpoint a resume loads, whose model an `init` run is built from (`_start_model`).
        `before_model(self)`: the caller's checks of `planned_model` and `device`, run once every check of
        the inputs has passed and before the model is built (it may raise a `UserError`)."""
        self.cfg = cfg
        self.world = world if world is not None else init_world(cfg.layout)
        self.plan = cfg.plan()
        self.data_meta = prepared_meta(cfg.data) if source is None else None
        """The prepared data's meta.json (None: synthetic data, or a `source` handed in), read once for every
        reader of it (`build.prepared_meta`)."""
        self.source = source or build_source(cfg.data, cfg.layout, self.data_meta)
        # The vocabulary trained with: the data's, plus a mask token the config adds to a start model.
        self.spec = planned_spec(self.source.spec, cfg.model, self._start_vocab(resume_from))
        refuse_start_without_mask(self.plan, self.spec, cfg.model)  # the line that names model.mask_token
        for p in self.plan:
            p.phase.objective.check(self.spec)
        self._check_planned(names, before_model)
        torch.manual_seed(cfg.seed)
        self.checkpoint_tokenizer: Any = None
        """The tokenizer saved with `resume_from`, as `_start_model` read it (None: not read)."""
        model, tokenizer, resumed = self._start_model(resume_from)
        self.from_checkpoint = resumed
        for p in self.plan:  # every phase's layers and attention run, before the first phase starts
            chosen = phase_layers(p, model.config.n_layers)
            check_unshared(
                model, chosen, what=f"phase {p.name}: freeze spec '{p.phase.freeze}'", act="frozen"
            )
            model.check_attention_mode(p.phase.objective.attention_mode)
        self.tokenizer = tokenizer or self.data_tokenizer
        # a resumed checkpoint has the token's rows already (its tokenizer, the token too: `_start_model`)
        self.added = (
            None
            if resumed
            else add_mask_token(model, self.tokenizer, self.source.spec, self.spec, cfg.model.mask_token)
        )
        """The token added to the start model's vocabulary (`train/vocab.py`), None when none was."""
        # Loaders hand models over in eval mode; a wrapped BERT's dropout (0.1) belongs to its
        # training, as in transformers' own MLM scripts. Held-out scoring switches it off (validation.py).
        self.model = model.to(self.device).train()
        self.forward_model = parallelize(self.model, self.world, cfg.scale, self.device, cfg.precision)
        self.optim_state: StateByName = {}
        """Optimizer state not in the live optimizer: loaded, or kept aside for frozen parameters."""
        self.phase: PlannedPhase | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        self.frozen: list[str] = []
        self._prefetcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="encoderlab-batches")
        self._ahead: tuple[int, Future] | None = None

    def _check_planned(
        self, names: Mapping[str, str] | None, before_model: Callable[[TrainStep], None] | None
    ) -> None:
        """The device and the planned model's checks, before anything is allocated: its memory (memory.py; an
        `init` model's size is not known yet, so only its attention mask is counted), its attention kernel,
        then the caller's `before_model`. Each needs the config alone: made after the build, they cost it."""
        cfg = self.cfg
        self.device = resolve_device(cfg, names)
        self.planned_model = (
            None if cfg.model.init else scratch_config(cfg.model.size, self.spec, cfg.layout.seq_len)
        )
        check_fits(self.planned_model, cfg, str(self.device), names)
        trainable_attn_impl(cfg.scale, self.device)  # `parallelize`'s refusal, before the build
        if before_model is not None:
            before_model(self)

    def _start_model(self, resume_from: Path | None) -> tuple[LanguageModel, Any, bool]:
        """The model to train, its tokenizer (None: the data's) and whether it is a resumed checkpoint's.

        A resume of an `init` run builds the model from its checkpoint (`build.resumed_model`), not from
        `model.init`, which it never reads: the weights are the checkpoint's anyway. Its tokenizer is then
        the data's (with the run's added mask token), so the trainer's check of the checkpoint's tokenizer
        (`resumed.check_tokenizer`) still compares it with the data; on synthetic data, whose ids mean no
        words, or prepared data without a tokenizer, it is the checkpoint's."""
        cfg = self.cfg
        if resume_from is None or not cfg.model.init:
            model, tokenizer = build_model(cfg.model, self.source.spec, cfg.layout.seq_len, self.start_files)
            # before any token is added
            check_data_tokenizer(cfg.data, cfg.model.init, tokenizer, self.data_meta)
            self.start_tokenizer = tokenizer
            return model, tokenizer, False
        model, saved = resumed_model(resume_from, self.spec, cfg.layout.seq_len, self.start_files)
        self.checkpoint_tokenizer = saved  # checked against the data's by the trainer (not read again)
        ours = self.data_tokenizer if cfg.data.path != "synthetic" else None
        if ours is not None and self.spec != self.source.spec:
            add_mask_to_tokenizer(ours, self.source.spec, self.spec, cfg.model.mask_token)
        return model, ours or saved, True

    def _start_vocab(self, resume_from: Path | None) -> dict[str, int] | None:
        """`vocab.start_vocab` of this run; a resume's in its checkpoint's tokenizer (`_start_tokenizer`)."""
        cfg = self.cfg
        start = functools.partial(self._start_tokenizer, resume_from)
        vocab = start_vocab(cfg.data, cfg.model, self.source.spec, lambda: self.data_tokenizer, start)
        if resume_from is not None and vocab is not None:  # the token the run added: past the data's ids
            vocab = {token: i for token, i in vocab.items() if i < self.source.spec.vocab_size}
        return vocab

    def _start_tokenizer(self, resume_from: Path | None) -> Any:
        """The tokenizer of the model the run loads, read with its config (`model_files`) and kept in
        `start_files`: the load takes it from there, where it read it again (a CPT start on synthetic data read
        it twice). A start's is the start model's (`start_source`); a resumed `init` run's, its checkpoint's:
        the start model's with the run's token added (dropped again by `_start_vocab`, which plans it as the
        start did). `model.init` is never read on resume (`_start_model`): moved or deleted since, the resume
        failed here, "model source ... does not exist"."""
        from encoderlab.model.hub import model_files

        folder = start_source(self.cfg.model.init) if resume_from is None else resume_from / "model"
        self.start_files = model_files(folder)
        return self.start_files.tokenizer

    @functools.cached_property
    def data_tokenizer(self) -> Any:
        """The data's tokenizer (`build.data_tokenizer`; None: prepared data without one), read once and handed
        on: the vocabulary a mask token is planned in (`vocab.start_vocab`), the run's tokenizer where the start
        model has none, a resume's. Each of those read it anew: a CPT resume read it twice (and its checkpoint's
        twice: `checkpoint_tokenizer`), each read a `from_pretrained` of the whole vocabulary."""
        return data_tokenizer(self.cfg.data)

    # ---- phases and optimizer ----------------------------------------------------------------
    def phase_at(self, step: int) -> PlannedPhase:
        """The phase that step `step` (0-based) belongs to."""
        return next(p for p in self.plan if p.start <= step < p.end)

    def ready_for(self, step: int) -> bool:
        """True when the current phase and optimizer are the ones step `step` trains with."""
        p = self.phase
        return p is not None and self.optimizer is not None and p.start <= step < p.end

    def enter_phase(self, phase: PlannedPhase, step: int) -> None:
        """Apply `phase`'s freezing and (re)build the optimizer with the carried state, at `step`.

        The moments are dropped when the phase resets the optimizer and `step` is its first step
        (resuming in the middle of such a phase keeps the checkpoint's moments).
        """
        state = self.optimizer_state()
        if phase.phase.reset_optimizer and step == phase.start:
            state = {}
        self.frozen = apply_freeze(self.model, phase_layers(phase, self.model.config.n_layers))
        self.optimizer = build_optimizer(self.model, self.cfg.optim, self.device)
        load_state_by_name(self.optimizer, self.model, shard_optim_state(state, self.model))
        self.optim_state = {k: v for k, v in state.items() if k in set(self.frozen)}
        self.phase = phase

    def optimizer_state(self) -> StateByName:
        """Every parameter's optimizer state: live for trained ones, kept aside for frozen ones.

        Collective under FSDP2 (every rank must call it).
        """
        if self.optimizer is None:
            return self.optim_state
        return {**self.optim_state, **state_by_name(self.optimizer, self.model)}

    def load_optimizer_state(self, state: StateByName, where: str = "", fix: str = "") -> None:
        """Replace the optimizer state (resume, rollback, `load=full`); the next step re-enters its phase.

        A state that does not fit the model (`optim.state_mismatches`) is refused with `where` (the
        checkpoint) and `fix` named, before anything is written: it would fail at the first update."""
        bad = state_mismatches(state, self.model)
        if bad:
            grew = self.added is not None and self.added.rows_after != self.added.rows_before
            why = ", as the run added a mask token to the start model's vocabulary" if grew else ""
            raise UserError(
                f"{where}: its optimizer state does not fit this run's model ({'; '.join(bad[:3])}){why}; {fix}"
            )
        self.optim_state, self.optimizer, self.phase = state, None, None

    # ---- batches -----------------------------------------------------------------------------
    def micro_batches(self, step: int) -> list[ObjectiveInputs]:
        """Step `step`'s micro-batches of this rank, prepared by the objective of that step's phase."""
        objective, layout = self.phase_at(step).phase.objective, self.cfg.layout
        return [
            objective.prepare(
                self.source.batch(step, m, self.world.rank),
                self.spec,
                objective_generator(self.cfg.seed, step, layout.slot(m, self.world.rank)),
            )
            for m in range(layout.grad_accum)
        ]

    def batches_for(self, step: int) -> list[ObjectiveInputs]:
        """`micro_batches(step)`, taken from the prefetch when it is that step's; queues the next step's."""
        ahead, self._ahead = self._ahead, None
        xs = ahead[1].result() if ahead is not None and ahead[0] == step else self.micro_batches(step)
        if step + 1 < self.plan[-1].end:
            self._ahead = (step + 1, self._prefetcher.submit(self.micro_batches, step + 1))
        return xs

    @property
    def queued_step(self) -> int | None:
        """The step whose batches are being prepared in the background, if any."""
        return None if self._ahead is None else self._ahead[0]

    # ---- the update --------------------------------------------------------------------------
    def global_targets(self, xs: list[ObjectiveInputs]) -> int:
        """Positions with a loss in the global batch of which `xs` are this rank's micro-batches."""
        local = torch.tensor(sum(x.n_targets for x in xs), dtype=torch.int64)
        return int(all_reduce_sum(local, self.world))

    def forward_backward(
        self, xs: list[ObjectiveInputs], n_targets: int | None = None
    ) -> tuple[float, float]:
        """Accumulate gradients over micro-batches and clip; (mean loss, grad norm before clipping).
        `n_targets`: `global_targets(xs)`, when the caller has it already."""
        n = self.global_targets(xs) if n_targets is None else n_targets
        n_total = torch.tensor(float(max(n, 1)), device=self.device)
        loss_sum = torch.zeros((), device=self.device)
        for m, x in enumerate(xs):
            x = x.to(self.device)
            # backward inside no_sync too: FSDP2 reads the flag when a backward ends (DDP in forward),
            # and without it each micro-batch would reduce-scatter its gradients
            with no_sync(self.forward_model, sync=m == len(xs) - 1):
                with torch.autocast(self.device.type, torch.bfloat16, enabled=self.cfg.precision == "bf16"):
                    total, _ = batch_loss(self.model, x, self.forward_model)
                backward(total / n_total, self.world)
            loss_sum += total.detach()
        loss = all_reduce_sum(loss_sum, self.world) / n_total
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        clip = self.cfg.optim.clip or float("inf")
        grad_norm = torch.nn.utils.clip_grad_norm_(trainable, clip)
        return float(loss), float(grad_norm)

    def step(self, step: int) -> StepResult:
        """One optimizer update at `step` (0-based) in the entered phase; none when non-finite, and none
        (no forward either, loss None) when the global batch has no target."""
        phase = self.phase
        lr = self.cfg.optim.lr * phase.phase.schedule.factor(step - phase.start, phase.steps)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        t0 = time.perf_counter()
        xs = self.batches_for(step)
        n_targets = self.global_targets(xs)  # the same on every rank: all skip together
        if n_targets == 0:
            return StepResult(None, None, lr, 0, 0, time.perf_counter() - t0)
        loss, grad_norm = self.forward_backward(xs, n_targets)
        if not (math.isfinite(loss) and math.isfinite(grad_norm)):
            self.optimizer.zero_grad(set_to_none=True)
            return StepResult(loss, grad_norm, lr, n_targets, 0, time.perf_counter() - t0)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        flops = train_flops(self.model.config, xs) * self.cfg.layout.world_size
        return StepResult(loss, grad_norm, lr, n_targets, flops, dt)
