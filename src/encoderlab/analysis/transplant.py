"""Layer transplantation (paper 2, section 2.8): blocks of model A copied into model B.

The result is B's architecture with B's weights everywhere except the chosen parameters, which
are copied bit for bit from A. It is saved as an ordinary encoderlab model folder (plus a
`transplant.json` that records where every part came from), so evaluation, probing, CKA and
export treat it like any model.

What a choice covers (`TransplantSpec`):
  * `layers`: block indices, as in `model.layers[i]`, freezing and CKA;
  * `part`: the whole block, or only its attention or only its MLP sub-block. A pre-norm block is
    `x + attn(norm1(x))` then `x + mlp(norm2(x))`, and each RMSNorm scales only its sub-block's
    input, so `attention` = `self_attn.*` + `input_layernorm`, `mlp` = `mlp.*` +
    `post_attention_layernorm`; the two parts partition the block;
  * `embeddings` (input embedding) and `head` (final norm + LM head) come from B unless asked:
    the paper copies transformer blocks only. With tied embeddings both must be taken together.
Transplanting every layer with `embeddings` and `head` yields A exactly (tested on outputs).

The models must share the architecture: same config (ignoring the init scale and the special-token
ids and maximum length, which change no parameter) and the same parameter names and shapes.
Anything else is refused with one line: copying a block between different widths or depths has
no meaning. Sweeps (`sweep_specs`) enumerate the paper's low/mid/late groups, single layers, and
attention-only versus MLP-only over all layers (finer than the paper's table).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from tqdm.auto import tqdm

from encoderlab.config import to_dict
from encoderlab.errors import UserError
from encoderlab.model import Encoder
from encoderlab.train.freeze import paper2_groups
from encoderlab.train.freeze import parse_layers as shared_parse_layers

Part = Literal["block", "attention", "mlp"]
PARTS: dict[str, tuple[str, ...]] = {
    "block": ("",),
    "attention": ("self_attn.", "input_layernorm."),
    "mlp": ("mlp.", "post_attention_layernorm."),
}
EMBEDDING_KEYS = ("embed_tokens.",)
HEAD_KEYS = ("norm.", "lm_head.")
# Config fields that change no parameter and no computation of a transplanted block.
_IGNORED_CONFIG = {"init_std", "max_seq_len", "pad_id", "bos_id", "eos_id", "mask_id"}
SweepKind = Literal["groups", "layers", "parts", "all"]


@dataclass(frozen=True, kw_only=True)
class TransplantSpec:
    """Which parameters of the result come from model A (all others come from B)."""

    layers: tuple[int, ...]
    """Block indices to take from A."""
    part: Part = "block"
    """The whole block, or only its attention or MLP sub-block (with the pre-norm that feeds it)."""
    embeddings: bool = False
    """Also take the input embedding from A."""
    head: bool = False
    """Also take the final norm and the LM head from A."""

    def describe(self) -> str:
        extra = [name for name, on in (("embeddings", self.embeddings), ("head", self.head)) if on]
        return f"{format_layers(self.layers)} ({self.part})" + "".join(f" + {e}" for e in extra)


def parse_layers(text: str, n_layers: int) -> tuple[int, ...]:
    """'0-7', '3', '0-3,8,10-11' or a freezing preset ('paper2-low', 'paper2-mid', 'paper2-late': the
    same layers the detour-freeze recipes freeze) as sorted block indices, checked against the depth."""
    return check_layers(
        shared_parse_layers(text, n_layers, what="layer range", owner="the models have"), n_layers
    )


def check_layers(layers: tuple[int, ...], n_layers: int) -> tuple[int, ...]:
    bad = [i for i in layers if not 0 <= i < n_layers]
    if bad:
        raise UserError(
            f"layer {bad[0]} is out of range: the models have {n_layers} layers (0-{n_layers - 1})"
        )
    if not layers:
        raise UserError("no layers chosen for the transplant; give at least one, e.g. 0-7")
    return layers


def format_layers(layers: tuple[int, ...]) -> str:
    """Sorted indices as compact ranges: (0, 1, 2, 5) -> 'layers 0-2,5'."""
    runs, start = [], None
    for i, layer in enumerate(layers):
        if start is None:
            start = layer
        if i + 1 == len(layers) or layers[i + 1] != layer + 1:
            runs.append(f"{start}" if start == layer else f"{start}-{layer}")
            start = None
    return ("layer " if len(layers) == 1 else "layers ") + ",".join(runs)


def check_same_architecture(a: Encoder, b: Encoder) -> None:
    """Raise a one-line UserError unless A's blocks can replace B's."""
    for name, model in (("A", a), ("B", b)):
        if not isinstance(model, Encoder):
            raise UserError(
                f"model {name} is a {type(model).__name__}; transplants work on encoderlab models "
                "(EuroBERT, Llama, Qwen and encoderlab folders), so convert it first"
            )
    cfg_a, cfg_b = to_dict(a.config), to_dict(b.config)
    diff = [k for k in cfg_a if k not in _IGNORED_CONFIG and cfg_a[k] != cfg_b[k]]
    if diff:
        k = diff[0]
        raise UserError(
            f"models A and B have different architectures ({k} {cfg_a[k]} vs {cfg_b[k]}); "
            "a transplant needs two models of the same architecture"
        )


def chosen_keys(keys: list[str], spec: TransplantSpec, n_layers: int) -> set[str]:
    """The state-dict keys the spec takes from A."""
    check_layers(spec.layers, n_layers)
    prefixes = [f"layers.{i}.{p}" for i in spec.layers for p in PARTS[spec.part]]
    prefixes += list(EMBEDDING_KEYS if spec.embeddings else ()) + list(HEAD_KEYS if spec.head else ())
    return {k for k in keys if k.startswith(tuple(prefixes))}


def transplant(a: Encoder, b: Encoder, spec: TransplantSpec) -> Encoder:
    """A new model: B with the parameters chosen by `spec` copied from A."""
    check_same_architecture(a, b)
    if b.config.tie_embeddings and spec.embeddings != spec.head:
        raise UserError(
            "the models tie the LM head to the input embedding, so take both or neither "
            "(set embeddings and head to the same value)"
        )
    state_a, state_b = a.state_dict(), b.state_dict()
    take = chosen_keys(list(state_b), spec, b.config.n_layers)
    merged = {k: (state_a[k] if k in take else state_b[k]).detach().clone() for k in state_b}
    model = copy.deepcopy(b)
    model.load_state_dict(merged)
    return model


def save_transplant(
    a: Encoder,
    b: Encoder,
    spec: TransplantSpec,
    out: Path,
    *,
    tokenizer=None,
    sources: dict[str, str] | None = None,
) -> Path:
    """Build the transplant and save it as a model folder with its provenance in transplant.json."""
    from encoderlab.model.io import save_model_folder

    model = transplant(a, b, spec)
    save_model_folder(model, out, tokenizer=tokenizer)
    record = {"spec": to_dict(spec), "description": spec.describe(), "sources": sources or {}}
    (Path(out) / "transplant.json").write_text(json.dumps(record, indent=2))
    return Path(out)


def layer_groups(n_layers: int, n_groups: int = 3) -> list[tuple[int, ...]]:
    """Contiguous groups of blocks: for 3, paper 2's low/mid/late groups, the same the freezing
    presets name (`train.freeze.paper2_groups`: 22 -> 0-7, 8-14, 15-21; 28 -> 0-9, 10-18, 19-27);
    otherwise equal splits, earlier groups one larger when uneven."""
    if n_groups == 3:
        return [tuple(g) for g in paper2_groups(n_layers)]
    return [tuple(int(i) for i in g) for g in np.array_split(np.arange(n_layers), n_groups)]


def sweep_specs(n_layers: int, kind: SweepKind, n_groups: int = 3) -> list[tuple[str, TransplantSpec]]:
    """Named specs of a sweep: 'groups' (low/mid/late blocks), 'layers' (one block at a time),
    'parts' (all attention sub-blocks vs all MLP sub-blocks), or 'all' (groups then parts, the
    rows of the paper's table)."""
    everything = tuple(range(n_layers))
    specs: list[tuple[str, TransplantSpec]] = []
    if kind in ("groups", "all"):
        for group in layer_groups(n_layers, n_groups):
            specs.append((f"layers-{group[0]}-{group[-1]}", TransplantSpec(layers=group)))
    if kind == "layers":
        specs += [(f"layer-{i}", TransplantSpec(layers=(i,))) for i in everything]
    if kind in ("parts", "all"):
        specs += [(f"all-{p}", TransplantSpec(layers=everything, part=p)) for p in ("attention", "mlp")]
    return specs


def transplant_sweep(
    a: Encoder,
    b: Encoder,
    specs: list[tuple[str, TransplantSpec]],
    out: Path,
    *,
    tokenizer=None,
    sources: dict[str, str] | None = None,
    score: Callable[[Encoder], float] | None = None,
) -> list[dict]:
    """Save every transplant of a sweep as `out/<name>/`; with `score`, also score A, B and each
    transplant and report the share of the B -> A gap each one recovers."""
    rows: list[dict] = []
    for name, spec in tqdm(specs, desc="transplants"):
        folder = save_transplant(a, b, spec, Path(out) / name, tokenizer=tokenizer, sources=sources)
        rows.append({"name": name, "description": spec.describe(), "folder": str(folder)})
    if score is None:
        return rows
    score_a, score_b = score(a), score(b)
    from encoderlab.model.io import load_model_folder

    for row in rows:
        row["accuracy"] = score(load_model_folder(row["folder"]))
        row["gap_recovered"] = gap_recovered(row["accuracy"], score_b, score_a)
    ends = [
        {"name": k, "description": f"model {k}", "accuracy": v} for k, v in (("A", score_a), ("B", score_b))
    ]
    return ends + rows


def gap_recovered(score: float, score_b: float, score_a: float) -> float | None:
    """Share of the B -> A score gap that a transplant into B recovers (paper 2's last column)."""
    return None if score_a == score_b else (score - score_b) / (score_a - score_b)
