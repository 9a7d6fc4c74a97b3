"""Tiny run configs for training tests (a few steps of the `tiny` model on synthetic data)."""

from __future__ import annotations

import json
from pathlib import Path

from encoderlab.data.batch import BatchLayout
from encoderlab.objectives import CLM, MLM
from encoderlab.train import CheckpointConfig, DataConfig, OptimConfig, Phase, RunConfig, Schedule
from encoderlab.train.config import ValidationConfig


def tiny_run(out: Path, phases=None, **overrides) -> RunConfig:
    phases = phases or (
        Phase(objective=CLM(), steps=3, schedule=Schedule(kind="constant", warmup=1)),
        Phase(objective=MLM(mask_ratio=0.3), steps=3, schedule=Schedule(kind="1-sqrt", end_fraction=0.1)),
    )
    base = dict(
        data=DataConfig(synthetic_vocab=128),
        layout=BatchLayout(seq_len=32, micro_batch_size=2, grad_accum=2),
        optim=OptimConfig(lr=3e-3),
        phases=tuple(phases),
        checkpoint=CheckpointConfig(every=2, keep_last=10),
        # 4 held-out rows, not the default 64: at the default, scoring the final model took two
        # thirds of a tiny run's time (3 losses x 32 micro-batches against 6 steps of 4); tests of
        # validation itself set their own rows
        validation=ValidationConfig(rows=4),
        out=str(out),
        device="cpu",
        progress=False,
        peak_tflops=1.0,
    )
    return RunConfig(**{**base, **overrides})


def metrics(run: Path) -> list[dict]:
    return [json.loads(line) for line in (Path(run) / "metrics.jsonl").read_text().splitlines()]
