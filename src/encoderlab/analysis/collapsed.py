"""Layers constant across inputs in exact arithmetic that vary only by the model's rounding.

A block can hold nothing about its input and still give every text other features: fed a
token-constant state (all embedding rows equal, or a norm with zero weight before it), attention
averages identical values with weights whose float32 sum is 1 only to a few units in the last place,
and which ones depends on the text's length. The pooled features then differ across texts by about
1e-7 of their magnitude, and CKA of them, or a probe standardising them (which blows the rounding up to
unit scale, and the length it encodes can predict a label), was reported as a number: 0.31 and "1.3x
seed noise" for a tiny model of ours whose every embedding row is one vector.

How it is told from an honest layer. No tolerance of the features alone can do it soundly: the rounding of
a collapsed layer is a few ulps of its *intermediate* values (a cancelling residual makes that any share
of its output), and an honest layer may vary by less than float32 resolves (or, in half precision, by less
than its ulp). So the features only raise a suspicion, and float64 decides: a layer is *suspect* when every
feature's spread across inputs is within `SUSPECT_ULPS` units of the model precision's epsilon of the
layer's largest magnitude (1.2e-4 in float32; in float16 or bfloat16 every layer is suspect, since
their rounding is as large as real variation), and a suspect layer is *collapsed* when the same model,
copied to float64, gives features whose every spread is within `cka.ROUNDING` (1e-11) of that layer's
largest magnitude. A collapsed layer's float64 spread is float64 rounding (4e-16 on the test models), an
honest one keeps its real variation (the float32 and float64 spreads agree), so the verdict has eight
orders of magnitude of margin either way. The layer's largest magnitude, not each feature's own, is the
scale: a feature that is 0 in exact arithmetic is all rounding, so relative to itself it varies by 100%.

Trade-offs: a model with a suspect layer runs a second time, in float64, over the same inputs (on its
device; twice the memory of a float32 copy while it runs); no suspect layer, no second run. encoderlab's
RMSNorm normalises in float32 for float32 and half-precision models (as Llama's) but in float64 in the
copy, so the copy carries no float32 rounding (it did before 2026-12-07: 4e-8 of a layer's magnitude).
A part of another class written to compute in float32 whatever its dtype would keep float32 rounding in
the copy, which can only hide a collapse (a number as before), never invent one.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

SUSPECT_ULPS = 1024
"""Spread, in units of the model precision's epsilon relative to the layer's largest magnitude, at or below
which a layer is rerun in float64: a collapsed float32 layer's rounding spread is a few ulps times the
square root of its tokens, far below 1024 ulps (1.2e-4); a real layer of real texts varies by far more."""

COLLAPSED = 1e-11
"""Spread in float64, relative to the layer's largest magnitude, at or below which a layer is constant in
exact arithmetic (also `cka.ROUNDING`, per column: float64 rounding is about 1e-16, real variation above 1e-8)."""


def relative_spread(features: torch.Tensor | np.ndarray) -> float:
    """The largest spread across rows (max - min of a column), relative to the matrix's largest magnitude
    (0 for an all-zero or empty matrix)."""
    x = torch.as_tensor(features).to(torch.float64)
    if x.numel() == 0:
        return 0.0
    scale = float(x.abs().max())
    return float((x.amax(0) - x.amin(0)).max()) / scale if scale > 0 else 0.0


def suspect_layers(layers: Sequence[torch.Tensor | np.ndarray], dtypes: Sequence[torch.dtype]) -> list[int]:
    """The layers whose spread is within `SUSPECT_ULPS` epsilons of the coarsest of `dtypes` (the model's
    precision, and the precision the features were stored in)."""
    eps = max(torch.finfo(d).eps for d in dtypes)
    return [i for i, f in enumerate(layers) if relative_spread(f) <= SUSPECT_ULPS * eps]


def collapsed_layers(
    model: nn.Module,
    layers: Sequence[torch.Tensor | np.ndarray],
    features: Callable[[nn.Module], Sequence[torch.Tensor]],
    stored: torch.dtype = torch.float64,
    among: Sequence[int] | None = None,
) -> list[int]:
    """The layers of `model` (of `among`, all by default) constant across the inputs in exact arithmetic,
    given the features `layers` it gave (stored in `stored`); `features(m)` computes the same features with
    model `m` (the float64 copy). Empty without running anything when no layer is suspect."""
    model_dtype = next(model.parameters()).dtype
    wanted = set(range(len(layers)) if among is None else among)
    suspects = [i for i in suspect_layers(layers, (model_dtype, stored)) if i in wanted]
    if not suspects:
        return []
    exact = copy.deepcopy(model).to(torch.float64)
    try:
        again = features(exact)
    finally:
        del exact
    return [i for i in suspects if relative_spread(again[i]) <= COLLAPSED]
