"""How each recipe shrinks to N optimizer steps: the warmup and decay keep their share of the run.

Kept beside the recipes (`train/recipes.py`) rather than in the study code that calls it, so a recipe's
paper schedule and the rule that scales it are read together; apart from the recipe functions only to keep
each file short. Keys must match `RECIPES` (a test checks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, kw_only=True)
class Scaling:
    """How a recipe runs for N optimizer steps instead of its default length.

    Its warmup and decay keep their share of the run: paper 1's 2k warmup of 42k steps stays 2/42 of a
    1,000-step run. A study uses this to shrink a paper recipe to its scale, so the rule lives with the
    recipe, not with whoever calls it."""

    length: Literal["steps", "tokens"] = "steps"
    """The parameter that sets the run's length: `steps`, or `tokens` (paper 2 counts its budget in tokens)."""
    warmup: float = 0.0
    """Warmup as a fraction of the run (`warmup` or `warmup_tokens`); 0 leaves the recipe's own."""
    decay: float = 0.0
    """Decay as a fraction of the run (`decay`); 0 leaves the recipe's own."""

    def params(self, steps: int, tokens_per_step: int) -> dict[str, int]:
        """The recipe arguments for a run of `steps` optimizer steps of `tokens_per_step` tokens."""
        if self.length == "tokens":
            tokens = steps * tokens_per_step
            return {"tokens": tokens} | (
                {"warmup_tokens": _share(tokens, self.warmup)} if self.warmup else {}
            )
        out = {"steps": steps}
        if self.warmup:
            out["warmup"] = _share(steps, self.warmup)
        if self.decay:
            out["decay"] = _share(steps, self.decay)
        return out


def _share(total: int, fraction: float) -> int:
    return max(1, round(total * fraction))


_PAPER1_SCALING = Scaling(warmup=2 / 42, decay=2 / 42)
"""Paper 1: 2k warmup and 2k decay of 42k steps."""
_PAPER2_SCALING = Scaling(length="tokens", warmup=0.01)
"""Paper 2: a 100M-token warmup of 10B tokens; its decay phase is already a fraction (decay_fraction)."""

SCALING: dict[str, Scaling] = {
    "pfs-mlm": _PAPER1_SCALING,
    "pfs-clm": _PAPER1_SCALING,
    "pfs-clm-mlm": _PAPER1_SCALING,
    "cpt-mlm": Scaling(warmup=200 / 12_000, decay=2_000 / 12_000),
    "detour": _PAPER2_SCALING,
    "detour-baseline": _PAPER2_SCALING,
    "detour-freeze-low": _PAPER2_SCALING,
    "detour-freeze-mid": _PAPER2_SCALING,
    "detour-freeze-low-decay": _PAPER2_SCALING,
    "smoke-mlm": Scaling(),
    "smoke-clm": Scaling(),
    "smoke-clm-mlm": Scaling(),
    "smoke-detour": Scaling(length="tokens"),
}
"""Each recipe's rule for running N steps (the smoke recipes keep their few warmup and decay steps)."""
