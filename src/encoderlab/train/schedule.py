"""Learning-rate schedules as closed-form functions of a phase's step count.

A schedule belongs to a phase and restarts at that phase's first step: `factor(s, total)` is the
multiplier of the peak LR for the update with index `s` (0 for the phase's first update) in a
phase of `total` updates. Being a pure function of (s, total), the LR needs no scheduler state in
checkpoints and resumes exactly.

Shapes (W = warmup, D = decay length, p = progress in [0, 1), floor = end_fraction):
  * every kind starts with a linear warmup `(s + 1) / W` (the first update is never wasted at LR 0);
  * `constant`: 1 after warmup;
  * `linear`, `cosine`, `1-sqrt`: decay from 1 to floor over the steps after warmup,
    `floor + (1 - floor) * g(p)` with g = 1 - p, (1 + cos(pi p)) / 2 or 1 - sqrt(p);
  * `wsd` (warmup-stable-decay): warmup, constant, then the last D updates decay with
    `decay_shape` (linear by default, as Optimus' WarmupStableDecayLR).
`p = s' / L` for the s'-th update of an L-update decay, so the first decay update runs at the
peak and the floor is reached right after the last one (the PyTorch LambdaLR convention and the
closed form lr(t) = end + (peak - end)(1 - sqrt(t / T)) of paper 2's decay;
ModernBERT's `OneMinusSqrtScheduler`, AnswerDotAI/ModernBERT `src/scheduler.py`).
The schedule steps once per optimizer update. Optimus steps per micro-batch, and before the optimizer
step, so its update k runs at its schedule's value after (k + 1) x accumulation micro-batches: divide its
counts by the accumulation to compare, and expect it one update ahead in the warmup and up to two in
the decay (`train/recipes.py` gives the numbers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from encoderlab.errors import UserError

Kind = Literal["constant", "linear", "cosine", "1-sqrt", "wsd"]
DecayShape = Literal["linear", "cosine", "1-sqrt"]


def _decay(shape: DecayShape, p: float) -> float:
    if shape == "linear":
        return 1.0 - p
    if shape == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * p))
    return 1.0 - math.sqrt(p)


@dataclass(frozen=True, kw_only=True)
class Schedule:
    """A phase's LR multiplier over its steps (the peak LR is `optim.lr`)."""

    kind: Kind = "constant"
    """constant | linear | cosine | 1-sqrt | wsd (warmup-stable-decay)."""
    warmup: int = 0
    """Updates of linear warmup at the phase start (0: start at the peak)."""
    decay: int = 0
    """wsd only: updates of the final decay."""
    decay_shape: DecayShape = "linear"
    """wsd only: shape of the final decay."""
    end_fraction: float = 0.0
    """The floor the decay reaches, as a fraction of the peak LR."""

    def __post_init__(self) -> None:
        if self.warmup < 0 or self.decay < 0:
            raise UserError(
                f"schedule warmup and decay must be >= 0, got {self.warmup} and {self.decay}; give 0 or more "
                "updates (0: none), e.g. warmup=100"
            )
        if not 0.0 <= self.end_fraction <= 1.0:
            raise UserError(f"schedule end_fraction must be in [0, 1], got {self.end_fraction}")
        if self.decay and self.kind != "wsd":
            raise UserError(
                f"schedule decay={self.decay} only applies to kind wsd (got {self.kind}); drop it"
            )

    def check(self, total: int, where: str) -> None:
        """Refuse a schedule whose warmup and decay do not fit in `total` updates."""
        if self.warmup + self.decay > total:
            raise UserError(
                f"{where}: warmup {self.warmup} + decay {self.decay} exceed the phase's {total} steps; "
                "shorten them or lengthen the phase"
            )

    def factor(self, s: int, total: int) -> float:
        """Multiplier of the peak LR for update `s` (0-based) of a `total`-update phase."""
        if s < self.warmup:
            return (s + 1) / self.warmup
        floor = self.end_fraction
        if self.kind == "constant":
            return 1.0
        if self.kind == "wsd":
            start = total - self.decay
            if s < start:
                return 1.0
            return floor + (1.0 - floor) * _decay(self.decay_shape, (s - start) / self.decay)
        return floor + (1.0 - floor) * _decay(self.kind, (s - self.warmup) / (total - self.warmup))
