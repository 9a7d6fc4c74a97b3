"""A model's size read from its files alone: parameters from the safetensors headers, blocks from its
config, without loading a weight (and without torch).

`study plan` prices a run by its start model's parameters and blocks (6ND, and the fine-tuning step
floor per 12 blocks). Its table (`study.scales.START_MODEL_PARAMS`) knows only the built-in studies'
start models, so a user's own (a local folder, a run, a fetched hub snapshot) was priced "?". Every
safetensors file begins with an 8-byte length and a JSON header giving each tensor's dtype and
shape, so counting a folder's parameters reads a few kilobytes per file, never the weights, and runs
no code (JSON only). The count is of what the files store: tied weights once (as the model cards
count them), a carried pooler included. A folder without safetensors (a hub snapshot whose weights
were never downloaded, a pickle-only repo) gives no count, and the plan says "?" as before.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

from encoderlab.model.sources import model_config

_HEADER_LIMIT = 100 * 2**20
"""safetensors' own cap on a header (100 MB): a larger length is no safetensors file."""


@dataclass(frozen=True)
class StoredSize:
    """What a model folder's files say of its size (None: not said)."""

    params: int | None
    """Parameters stored in its safetensors files."""
    layers: int | None
    """Transformer blocks (`n_layers` of an encoderlab config, `num_hidden_layers` of a transformers one)."""


def header_shapes(path: Path) -> dict[str, tuple[int, ...]] | None:
    """{tensor name: shape} of a safetensors file, from its header alone (no tensor data read); None for
    a file that is not one. Shared by the parameter count and `eval --check`'s embedding rows."""
    try:
        with path.open("rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            if not 0 < length <= _HEADER_LIMIT:
                return None
            header = json.loads(f.read(length))
    except (OSError, struct.error, ValueError, RecursionError):
        return None
    if not isinstance(header, dict):
        return None
    shapes = {k: v.get("shape") for k, v in header.items() if k != "__metadata__" and isinstance(v, dict)}
    if not all(isinstance(s, list) and all(isinstance(n, int) for n in s) for s in shapes.values()):
        return None
    return {k: tuple(s) for k, s in shapes.items()}


def header_params(path: Path) -> int | None:
    """The parameters a safetensors file stores, from its header alone; None for a file that is not one."""
    shapes = header_shapes(path)
    return None if shapes is None else sum(math.prod(s) for s in shapes.values())


def stored_size(folder: Path) -> StoredSize | None:
    """The size of the model folder, run or checkpoint `folder` (its model folder: itself, `final/` or
    `model/`, `sources.model_config`), or None when none of them has a config."""
    found = model_config(folder)
    if found is None:
        return None
    candidate, raw = found
    layers = raw.get("n_layers", raw.get("num_hidden_layers"))
    usable = isinstance(layers, int) and not isinstance(layers, bool) and layers > 0
    return StoredSize(_params(candidate), layers if usable else None)


def _params(folder: Path) -> int | None:
    """The parameters of every safetensors file of `folder` (one file, or a sharded model's shards)."""
    counts = [header_params(p) for p in sorted(folder.glob("*.safetensors"))]
    return sum(counts) if counts and None not in counts else None  # type: ignore[arg-type]
