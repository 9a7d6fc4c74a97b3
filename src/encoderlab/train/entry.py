"""The `pretrain` entry point: the process around one `Trainer`, from joining the world to shutting it down.

Design
  * `Trainer` (trainer.py) is one run in its run folder: resume, the loop, checkpoints, the NaN policy.
    What happens around it, once per process, is here: joining the launcher's process group first (so
    a refusal on any rank stops every rank, `distributed.agreed`), deterministic mode for the run's
    duration, the order of the checks before anything is written (the run folder and its step, then
    `--until-step`, then whether a resumed run is finished, which builds no model, then the build), the
    caller's `before_start` hook, the ranks' agreement, and the process group's shutdown, clean or not;
    a collective that failed because a peer rank died becomes one line (`peerloss.lost_peer`).
  * Trade-off: the order of those checks is behaviour (which refusal a user sees first, whether a
    finished run reads its data), so it is written out here in one function rather than spread over
    the trainer's methods; the trainer exposes the steps (`Trainer.opened`, `stop_at`, `build`,
    `check_ranks_agree`, `run`) and this module only sequences them. Like the trainer, it never
    branches on an objective or a recipe.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

import torch

from encoderlab.data.batch import BatchSource
from encoderlab.errors import UserError
from encoderlab.train.config import RunConfig
from encoderlab.train.distributed import World, agreed, join_world, shutdown
from encoderlab.train.peerloss import lost_peer
from encoderlab.train.runfolder import finished
from encoderlab.train.start import resolve_device
from encoderlab.train.step import TrainStep
from encoderlab.train.trainer import Trainer


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


def pretrain(
    cfg: RunConfig,
    *,
    resume: bool = False,
    force: bool = False,
    until_step: int | None = None,
    source: BatchSource | None = None,
    before_start: Callable[[Trainer, int], None] | None = None,
    before_build: Callable[[TrainStep, int], None] | None = None,
) -> Path:
    """Train `cfg` in `cfg.out` and return the run folder (final model in `final/`).

    `before_start(trainer, stop_step)` runs once every check has passed and before anything is
    written (the CLI prints its notes and asks for `--yes` there); it may raise a `UserError`.
    `before_build(step, steps)` runs before the model is built, once the step's checks of the inputs
    have passed, with the steps the run has left (the CLI refuses a run too long for this machine there,
    from `step.planned_model`, in no time where the build takes seconds); it may raise a `UserError`.
    """
    world = World()  # until joined: a failure before then is no peer's death
    try:
        with contextlib.ExitStack() as run_scope:
            world = join_world()  # first: a refusal on any rank then stops every rank (`agreed`)
            with agreed(world):
                run_scope.enter_context(deterministic_mode(cfg.deterministic, resolve_device(cfg)))
                trainer = Trainer.opened(cfg, resume=resume, force=force)
                stop = trainer.stop_at(until_step)  # before "is finished; nothing was changed", not after it
                # a finished run builds nothing (its data and model were read before saying so); a forced resume
                # is built first, so a config it cannot resume with (another architecture) is refused alone
                left = stop - trainer.progress.step
                planned = (lambda step: before_build(step, left)) if before_build is not None else None
                if force:
                    trainer.build(source, planned)
                done = resume and finished(
                    trainer.run_dir, trainer.progress.step, trainer.plan[-1].end, say=world.is_main
                )
                if not (done or force):
                    trainer.build(source, planned)
                if until_step is not None and until_step > stop and world.is_main:  # as asked, but say so
                    print(f"encoderlab: note: --until-step {until_step} is past the run's last step {stop}; it "
                          "trains to the end", file=sys.stderr)  # fmt: skip
                if before_start is not None and not done:
                    before_start(trainer, stop)
            with agreed(world):
                trainer.check_ranks_agree()
            if not done:
                trainer.run(until_step)
    except BaseException as exc:
        lost = lost_peer(exc, world, Path(cfg.out) if cfg.out else None)  # gloo's words for a dead peer
        shutdown(clean=False)  # the process group init_world created under torchrun, if any
        if lost is not None:  # one line, not gloo's traceback; the error stays chained as its cause
            raise lost from exc
        raise
    shutdown()
    return Path(cfg.out)
