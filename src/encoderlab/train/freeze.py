"""Freezing layers for a phase: out of the optimizer and out of autograd, never zeroed grads.

Zeroing gradients does not freeze a parameter under AdamW: carried moments keep moving it and
decoupled weight decay shrinks it (PyTorch's AdamW skips only parameters whose `.grad` is None).
Here a frozen layer's parameters get
`requires_grad=False` (no gradient, no backward work for their weights) and the optimizer is built
over trainable parameters only, so neither Adam's update nor weight decay can touch them, and
gradient clipping sees only what is trained. Their AdamW moments, if any, are kept aside by name
and come back when a later phase unfreezes them. The mechanism is recorded in run metadata.

Layer specs: `""` (nothing), ranges and lists (`0-7`, `0-3,9`), or paper 2's groups
`paper2-low`, `paper2-mid`, `paper2-late` (`paper2_groups`). The paper states them for its
22-layer base models only (ModernBERT-base, ModernCamemBERT-base: 0-7, 8-14, 15-21; thesis ch. 5,
and no grouping for large anywhere). For every other depth we scale the two boundaries
proportionally, round(8L/22) and round(15L/22): ModernBERT-large (28 layers) gets 0-9, 10-18,
19-27, a 12-layer BERT 0-3, 4-7, 8-11, `tiny` (4 layers) {0}, {1, 2}, {3}. That mapping is ours,
not the paper's. The same groups are the low/mid/late rows of transplant sweeps and the "low
layers" of the CKA claim, so the three analyses always name the same blocks.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from encoderlab.errors import UserError

if TYPE_CHECKING:  # the layer grammar is read without torch (`study plan`'s freeze check)
    from torch import nn

    from encoderlab.train.config import PlannedPhase, RunConfig

MECHANISM = "requires_grad=False and excluded from the optimizer (no Adam update, no weight decay)"
PAPER2_DEPTH = 22
PAPER2_BOUNDARIES = (8, 15)
"""First blocks of paper 2's mid and late groups on its 22-layer base (low = 0-7, mid = 8-14, late = 15-21)."""
PRESETS = ("paper2-low", "paper2-mid", "paper2-late")


def paper2_groups(n_layers: int) -> tuple[range, range, range]:
    """Paper 2's low, mid and late blocks for a model of `n_layers` blocks (see the module docstring)."""
    if n_layers < 3:
        raise UserError(
            f"paper 2's low/mid/late layer groups need at least 3 layers, the model has {n_layers}; "
            "give the layers explicitly, e.g. 0"
        )
    low_end = max(1, round(PAPER2_BOUNDARIES[0] * n_layers / PAPER2_DEPTH))
    mid_end = max(low_end + 1, round(PAPER2_BOUNDARIES[1] * n_layers / PAPER2_DEPTH))
    return range(0, low_end), range(low_end, mid_end), range(mid_end, n_layers)


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
        return tuple(paper2_groups(n_layers)[PRESETS.index(spec)])
    layers: set[int] = set()
    for part in spec.replace(" ", "").split(","):
        match = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", part)  # ASCII: \d read '١' (Arabic-Indic 1) as 1
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


def phase_layers(p: PlannedPhase, n_layers: int) -> tuple[int, ...]:
    """The layers phase `p` freezes in a model of `n_layers` blocks, its errors named by the phase."""
    return parse_layers(p.phase.freeze, n_layers, what=f"phase {p.name}: freeze spec")


def frozen_record(p: PlannedPhase, n_layers: int) -> str:
    """The blocks phase `p` freezes, as a checkpoint's state.json records them: `0-1 (paper2-low)` where
    the spec is a preset, whose blocks depend on the depth (our scaling of paper 2's 0-7 of 22), and the
    spec itself otherwise, as written (`0,1` is not `0-1 (0,1)`, which reads as a preset's name). It recorded
    the spec alone, so nothing said which blocks a `paper2-low` froze."""
    spec = p.phase.freeze
    if spec.strip() not in PRESETS:
        return spec
    return f"{format_layers(phase_layers(p, n_layers))} ({spec.strip()})"


def freeze_note(p: PlannedPhase, n_layers: int) -> str | None:
    """What a run says as it enters phase `p`, None when the phase freezes nothing: the blocks it freezes of
    `n_layers`, and the preset that chose them, whose blocks depend on the depth. A `detour-freeze-low` run
    printed nothing of them; only its checkpoints' state.json (`frozen_record`) named `0-1 (paper2-low)`."""
    spec = p.phase.freeze.strip()
    if not spec:
        return None
    preset = f" (preset {spec})" if spec in PRESETS else ""
    return f"phase {p.name} freezes blocks {format_layers(phase_layers(p, n_layers))} of {n_layers}{preset}"


def check_scratch_freezes(cfg: RunConfig) -> None:
    """Refuse, without building the model, a phase's freeze spec that a model from scratch cannot take:
    its depth is its size's. `--dry-run` printed `freeze: abc` or `0-9` on `tiny` as a valid config, which
    the run then refused once it had built the model. An `init` model's depth is known once it is loaded,
    where `TrainStep` checks every spec again (shared layers included)."""
    if cfg.model.init:
        return
    from encoderlab.model.config import ModelConfig

    n_layers = ModelConfig.from_size(cfg.model.size, 1).n_layers
    for p in cfg.plan():
        phase_layers(p, n_layers)


def format_layers(layers: tuple[int, ...] | list[int]) -> str:
    """Sorted indices as a layer spec, the inverse of `parse_layers`: (0, 1, 2, 5) -> '0-2,5'."""
    runs: list[list[int]] = []
    for layer in layers:
        if runs and runs[-1][-1] == layer - 1:
            runs[-1].append(layer)
        else:
            runs.append([layer])
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def _sharing(blocks, i: int) -> list[int]:
    """The blocks holding a weight of block `i` (itself included)."""
    own = {id(p) for p in blocks[i].parameters()}
    return [j for j, block in enumerate(blocks) if any(id(p) in own for p in block.parameters())]


def check_unshared(model: nn.Module, layers: tuple[int, ...], *, what: str, act: str, also: str = "") -> None:
    """Refuse a choice of `model.layers` that takes a layer without another running the same weights.

    ALBERT applies one set of block weights at every depth (`hf_albert`): its layers are distinct
    applications but not distinct weights, so freezing or transplanting layer 0 would act on every
    layer. All of the layers sharing weights, or none, can be chosen; other models pass untouched.
    `also`: another fix, ending the line."""
    blocks, chosen = model.layers, set(layers)
    for i in sorted(chosen):
        sharing = _sharing(blocks, i)
        left = [j for j in sharing if j not in chosen]
        if left:
            family = getattr(model, "family", "") or type(model).__name__
            raise UserError(
                f"{what} takes layer {i} but not layer {left[0]}, which runs the same weights ({family}'s "
                f"layers share their weights across depth), so one cannot be {act} alone; "
                f"choose all of layers {format_layers(sharing)} or none of them{also}"
            )


def apply_freeze(model: nn.Module, layers: tuple[int, ...]) -> list[str]:
    """Make exactly `layers` of `model.layers` frozen (everything else trainable); their names.

    The blocks are taken from `model.layers` itself rather than matched by parameter name: an
    adapted checkpoint keeps its own names (MiniLM's block 0 is `hf.bert.encoder.layer.0.*`), and a
    name pattern would freeze nothing there without a word. Layers sharing weights with one left
    unfrozen are refused (`check_unshared`)."""
    check_unshared(model, layers, what=f"freeze spec '{format_layers(layers)}'", act="frozen")
    frozen_ids = {id(p) for i in layers for p in model.layers[i].parameters()}
    frozen = []
    for name, p in model.named_parameters():
        is_frozen = id(p) in frozen_ids
        p.requires_grad_(not is_frozen)
        if is_frozen:
            frozen.append(name)
    return frozen
