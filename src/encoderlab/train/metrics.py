"""Metric sinks: `metrics.jsonl` always (the source of truth), TensorBoard and W&B optionally.

A sink has three methods, `log(record)`, `rewind(step)` and `close()`. Only rank 0 logs. The
optional sinks import their package lazily and raise a `UserError` naming the extra to install, so
nothing heavy loads unless asked. On resume, and when `nan_policy=rollback` reloads a checkpoint and
replays the steps after it, the sinks forget what they logged after the checkpoint's step: the JSONL
file is cut back to it, so a resumed or rolled-back run's file is line for line what an
uninterrupted run writes (one line per step, the replayed values); the cut replaces the file in one
rename (`atomic.write_text_atomic`), so a process killed or out of disk while cutting keeps the old
log whole. TensorBoard purges the later events (`SummaryWriter(purge_step=...)`). W&B cannot drop
logged steps: it keeps the first values of replayed steps and ignores the replays (it refuses steps
that go back), so after a rollback its history is the pre-rollback one up to the bad step.
A non-finite value (a skipped step's NaN loss) is written as `null`: Python's `json` would write a
bare `NaN`, which is no JSON, and jq, JavaScript and other strict readers refuse the whole file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from encoderlab.errors import UserError
from encoderlab.jsonlines import JsonlSink


class MetricSink(Protocol):
    """Where per-step records go."""

    def log(self, record: dict[str, Any]) -> None: ...

    def rewind(self, step: int) -> None:
        """Forget the records of steps after `step` (a rollback is about to replay them)."""
        ...

    def close(self) -> None: ...


def _missing(name: str) -> str:
    """The install hint for a sink package; `encoderlab[track]` alone would only work from an index."""
    return (
        f"the {name} sink needs the {name} package: pip install {name} "
        "(or both sinks' packages from a clone of encoderlab: pip install -e '.[track]')"
    )


def check_sinks(names: tuple[str, ...]) -> None:
    """Refuse, before anything is written, an optional sink whose package is missing."""
    import importlib.util

    for name in names:
        if importlib.util.find_spec(name) is None:
            raise UserError(_missing(name))


class TensorBoardSink:
    """Scalars of each record under their key, x-axis = step."""

    def __init__(self, run_dir: Path, keep_until_step: int | None = None):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            raise UserError(_missing("tensorboard")) from None
        self._open = lambda step: SummaryWriter(
            str(run_dir / "tensorboard"), purge_step=None if step is None else step + 1
        )
        self._writer = self._open(keep_until_step)

    def log(self, record: dict[str, Any]) -> None:
        for key, value in record.items():
            if isinstance(value, (int, float)) and key != "step":
                self._writer.add_scalar(key, value, record["step"])

    def rewind(self, step: int) -> None:
        self._writer.close()
        self._writer = self._open(step)  # events of later steps are purged (hidden) from TensorBoard

    def close(self) -> None:
        self._writer.close()


class WandbSink:
    """A W&B run (set WANDB_MODE=offline or disabled to keep it local)."""

    def __init__(self, run_dir: Path, config: dict[str, Any]):
        try:
            import wandb
        except ImportError:
            raise UserError(_missing("wandb")) from None
        self._run = wandb.init(dir=str(run_dir), name=run_dir.name, config=config)

    def log(self, record: dict[str, Any]) -> None:
        # None (a step without a target has no loss): no point, as TensorBoard draws none
        self._run.log({k: v for k, v in record.items() if k != "step" and v is not None}, step=record["step"])

    def rewind(self, step: int) -> None:
        """Nothing: W&B has no way to drop logged steps, and ignores the replays (module docstring)."""

    def close(self) -> None:
        self._run.finish()


def build_sinks(
    names: tuple[str, ...], run_dir: Path, config: dict[str, Any], keep_until_step: int | None
) -> list[MetricSink]:
    """The JSONL sink plus the requested optional ones."""
    sinks: list[MetricSink] = [JsonlSink(run_dir / "metrics.jsonl", keep_until_step)]
    for name in names:
        sinks.append(
            TensorBoardSink(run_dir, keep_until_step) if name == "tensorboard" else WandbSink(run_dir, config)
        )
    return sinks
