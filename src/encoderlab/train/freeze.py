"""Freezing layers for a phase: out of the optimizer and out of autograd, never zeroed grads.

Zeroing gradients does not freeze a parameter under AdamW: carried moments keep moving it and
decoupled weight decay shrinks it (papers.md section 3). Here a frozen layer's parameters get
`requires_grad=False` (no gradient, no backward work for their weights) and the optimizer is built
over trainable parameters only, so neither Adam's update nor weight decay can touch them, and
gradient clipping sees only what is trained. Their AdamW moments, if any, are kept aside by name
and come back when a later phase unfreezes them. The mechanism is recorded in run metadata.

Layer specs: `""` (nothing), ranges and lists (`0-7`, `0-3,9`), or paper 2's presets measured
on its 22-layer base model, `paper2-low` = layers 0-7 and `paper2-mid` = layers 8-14. On a model
with fewer than 22 layers the presets scale proportionally (low = the first round(8/22 L) layers,
at least one; mid = up to round(15/22 L)), so `tiny` (4 layers) freezes {0} and {1, 2}.
"""

from __future__ import annotations

import re

from torch import nn

from encoderlab.errors import UserError

MECHANISM = "requires_grad=False and excluded from the optimizer (no Adam update, no weight decay)"
PAPER2_DEPTH = 22
PRESETS = {"paper2-low": (0, 8), "paper2-mid": (8, 15)}


def _preset(name: str, n_layers: int) -> range:
    lo, hi = PRESETS[name]
    if n_layers >= PAPER2_DEPTH:
        return range(lo, hi)
    low_end = max(1, round(8 * n_layers / PAPER2_DEPTH))
    if name == "paper2-low":
        return range(0, low_end)
    return range(low_end, max(low_end + 1, round(15 * n_layers / PAPER2_DEPTH)))


def parse_layers(
    spec: str, n_layers: int, *, what: str = "freeze spec", owner: str = "the model has"
) -> tuple[int, ...]:
    """The sorted layer indices a layer spec names, for a model of `n_layers` blocks.

    The one grammar for layer choices (freezing here, transplants in `analysis`); `what` names
    the option and `owner` the model(s) in error messages, so each caller's errors read right.
    """
    spec = spec.strip()
    if not spec:
        return ()
    if spec in PRESETS:
        return tuple(_preset(spec, n_layers))
    layers: set[int] = set()
    for part in spec.replace(" ", "").split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not match:
            raise UserError(
                f"{what} '{spec}' is not valid; write e.g. 0-7, 3, 0-3,9 or one of {', '.join(PRESETS)}"
            )
        first, last = int(match[1]), int(match[2] or match[1])
        if first > last:
            raise UserError(f"{what} '{part}' runs backwards; write it low-high, e.g. {last}-{first}")
        if last >= n_layers:
            raise UserError(
                f"{what} '{spec}': layer {max(first, n_layers)} is out of range: {owner} {n_layers} layers (0-{n_layers - 1})"
            )
        layers.update(range(first, last + 1))
    return tuple(sorted(layers))


def apply_freeze(model: nn.Module, layers: tuple[int, ...]) -> list[str]:
    """Make exactly `layers` of `model.layers` frozen (everything else trainable); their names.

    The blocks are taken from `model.layers` itself rather than matched by parameter name: an
    adapted checkpoint keeps its own names (MiniLM's block 0 is `hf.bert.encoder.layer.0.*`), and a
    name pattern would freeze nothing there without a word."""
    frozen_ids = {id(p) for i in layers for p in model.layers[i].parameters()}
    frozen = []
    for name, p in model.named_parameters():
        is_frozen = id(p) in frozen_ids
        p.requires_grad_(not is_frozen)
        if is_frozen:
            frozen.append(name)
    return frozen
