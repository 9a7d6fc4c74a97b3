"""Layer transplantation (paper 2, section 2.8): blocks of model A copied into model B.

The result is B's architecture with B's weights everywhere except the chosen parameters, which
are copied bit for bit from A. It is saved as an ordinary encoderlab model folder (plus a
`transplant.json` that records where every part came from), so evaluation, probing, CKA and
export treat it like any model.

What a choice covers (`TransplantSpec`):
  * `layers`: block indices into `model.layers`, the list freezing and CKA index (the
    `LanguageModel` protocol's `layers`), so "layers 0-7" are the same blocks everywhere;
  * `part`: the whole block, or only its attention or only its MLP sub-block, each with the norm
    that belongs to it. Each model class says where those live (its `anatomy`, a member of the
    `LanguageModel` protocol), so this module never asks which class it holds:
      - encoderlab `Encoder` (Llama body, pre-norm): attention = `input_layernorm` + `self_attn`,
        mlp = `post_attention_layernorm` + `mlp`;
      - ModernBERT (pre-norm): attention = `attn_norm` (Identity in block 0) + `attn`,
        mlp = `mlp_norm` + `mlp`;
      - BERT family (post-norm): attention = `attention` (self-attention, output projection and
        the LayerNorm after its residual), mlp = `intermediate` + `output` (with its LayerNorm).
    The two parts partition a block (tested for each class);
  * `embeddings` (input embedding; BERT's also holds learned positions and token types) and
    `head` (final norm and LM head) come from B unless asked: the paper copies transformer blocks
    only. When the LM head is tied to the input embedding both must be taken together.
Transplanting every layer with `embeddings` and `head` yields A exactly (tested on outputs).

Parameters are chosen by identity, from the modules above, and then named through B's state dict:
no key prefix is assumed, so an adapted checkpoint (MiniLM's block 0 is
`hf.bert.encoder.layer.0.*`) is handled by the same code as our own models.

The models must share the architecture: the same class, the same config (ignoring the fields that
change no parameter and no computation of a block: special-token ids, maximum length, init scale,
names and versions) and the same parameter names and shapes. Anything else is refused with one
line: copying a block between different widths or depths has no meaning. Sweeps (`sweep_specs`)
enumerate the paper's low/mid/late groups, single layers, and attention-only versus MLP-only over
all layers (finer than the paper's table).
"""

from __future__ import annotations

import copy
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from tqdm.auto import tqdm

from encoderlab.atomic import json_text, write_text_atomic
from encoderlab.config import to_dict
from encoderlab.errors import UserError
from encoderlab.model.protocol import LanguageModel
from encoderlab.train.freeze import check_unshared, paper2_groups
from encoderlab.train.freeze import format_layers as freeze_spec
from encoderlab.train.freeze import parse_layers as shared_parse_layers
from encoderlab.words import noun

Part = Literal["block", "attention", "mlp"]
SweepKind = Literal["groups", "layers", "parts", "all"]


# Config fields that change no parameter and no computation of a transplanted block.
_IGNORED_CONFIG = {
    "init_std", "max_seq_len", "max_position_embeddings", "initializer_range", "pad_id", "bos_id", "eos_id",
    "mask_id", "pad_token_id", "bos_token_id", "eos_token_id", "cls_token_id", "sep_token_id",
    "mask_token_id", "_name_or_path", "architectures", "transformers_version", "torch_dtype", "dtype",
}  # fmt: skip
# Config fields that size only the embedding and the LM head, which a transplant of blocks alone keeps B's.
_VOCABULARY_CONFIG = {"vocab_size"}


@dataclass(frozen=True, kw_only=True)
class TransplantSpec:
    """Which parameters of the result come from model A (all others come from B)."""

    layers: tuple[int, ...]
    """Block indices to take from A."""
    part: Part = "block"
    """The whole block, or only its attention or MLP sub-block (with the norm that belongs to it)."""
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
    return f"{noun(len(layers), 'layer')} {freeze_spec(layers)}"


def _family(model: LanguageModel) -> str:
    return getattr(model, "family", "") or "encoderlab"


def _config(model: LanguageModel) -> dict:
    """The architecture entries of the config a model folder would store (`folder_state`: encoderlab's
    `model` section, an adapter's `hf_config`), without those a transplant may differ in."""
    _, entries = model.folder_state()
    cfg = {k: v for part in entries.values() if isinstance(part, dict) for k, v in part.items()}
    return {k: v for k, v in cfg.items() if k not in _IGNORED_CONFIG}


def architecture_difference(a: LanguageModel, b: LanguageModel, *, vocabulary: bool = True) -> str | None:
    """The first way A's architecture differs from B's, as "hidden_size 32 vs 64" (None: the same):
    the model class, then a config entry, then a weight's shape. One rule for a transplant's two
    models and for CKA's seed twin, which must be B's architecture too. `vocabulary=False` (blocks
    alone moved, as in paper 2's transplants) passes over the vocabulary's size and the embedding and
    head weights it shapes: the result keeps B's, so two tokenizers of other sizes do not matter
    (docs/analysis.md said such blocks are moved; the check refused them)."""
    if type(a) is not type(b):
        return f"{_family(a)} vs {_family(b)}"
    skip = set() if vocabulary else _VOCABULARY_CONFIG
    cfg_a, cfg_b = _config(a), _config(b)
    diff = [k for k in sorted((set(cfg_a) | set(cfg_b)) - skip) if cfg_a.get(k) != cfg_b.get(k)]
    if diff:
        return f"{diff[0]} {cfg_a.get(diff[0])} vs {cfg_b.get(diff[0])}"
    shapes_a, shapes_b = _shapes(a, vocabulary), _shapes(b, vocabulary)
    if shapes_a != shapes_b:
        k = next(k for k in sorted(set(shapes_a) | set(shapes_b)) if shapes_a.get(k) != shapes_b.get(k))
        return f"weights {k}: {shapes_a.get(k)} vs {shapes_b.get(k)}"
    return None


def _shapes(model: LanguageModel, vocabulary: bool) -> dict[str, tuple[int, ...]]:
    """Each weight's shape; without `vocabulary`, not those of the embedding and head modules (chosen by
    module, as a transplant chooses, never by key prefix)."""
    parts = model.anatomy
    outer = set() if vocabulary else _param_ids(model.get_submodule(n) for n in parts.embeddings + parts.head)
    return {k: tuple(v.shape) for k, v in model.state_dict(keep_vars=True).items() if id(v) not in outer}


def check_same_architecture(a: LanguageModel, b: LanguageModel, *, vocabulary: bool = True) -> None:
    """Raise a one-line UserError unless A's blocks can replace B's (and, with `vocabulary`, A's
    embeddings and head B's)."""
    diff = architecture_difference(a, b, vocabulary=vocabulary)
    if diff is not None:
        what = "weights" if diff.startswith("weights ") else "architectures"
        raise UserError(
            f"models A and B have different {what} ({diff.removeprefix('weights ')}); "
            "a transplant needs two models of the same architecture"
        )


def _param_ids(modules) -> set[int]:
    return {id(p) for m in modules for p in m.parameters()}


def check_tokenizers(tok_a, tok_b, *, embeddings: bool, head: bool) -> None:
    """Refuse copying A's embeddings or LM head into B when their tokenizers differ: the transplant reads
    B's tokenizer, so A's row for id i would stand for B's token i (one vocabulary size passes the
    architecture check). Blocks alone carry no vocabulary, as in paper 2's transplants, so they are moved,
    with one `encoderlab: note:` line on stderr: A's blocks then read B's embeddings of B's tokens, which
    they were not trained on (this used to pass without a word)."""
    from encoderlab.data.tokenizer import tokenizer_hash

    parts = [f for f, on in (("--embeddings", embeddings), ("--head", head)) if on]
    ha, hb = tokenizer_hash(tok_a), tokenizer_hash(tok_b)
    if ha == hb:
        return
    if parts:
        raise UserError(
            f"{' and '.join(parts)} would copy rows of A's vocabulary into B, but A and B have different "
            f"tokenizers (sha256 {ha[:12]} and {hb[:12]}), so a row would stand for another token; drop "
            f"{' and '.join(parts)}, or transplant between models of one tokenizer"
        )
    print(
        f"encoderlab: note: A and B have different tokenizers (sha256 {ha[:12]} and {hb[:12]}): only blocks "
        "are moved, and the transplant reads B's tokenizer and embeddings, which A's blocks were not trained on",
        file=sys.stderr,
    )


def check_spec(model: LanguageModel, spec: TransplantSpec, sweep: str = "") -> None:
    """Refuse layers out of range, and layers whose weights other layers run too (ALBERT's shared
    layer: `freeze.check_unshared`), before anything is built or written; `sweep`: the sweep `spec` is
    one transplant of, named in the line with the sweep that takes every layer."""
    check_layers(spec.layers, len(model.layers))
    if not sweep:
        check_unshared(model, spec.layers, what="the transplant", act="transplanted")
        return
    what = f"--sweep {sweep}: its transplant of {format_layers(spec.layers)}"
    also = ", or sweep the attention and MLP parts of every layer (--sweep parts)"
    check_unshared(model, spec.layers, what=what, act="transplanted", also=also)


def chosen_keys(model: LanguageModel, spec: TransplantSpec) -> set[str]:
    """The state-dict keys of `model` whose tensors the spec takes from A (tied copies included)."""
    parts = model.anatomy
    check_spec(model, spec)
    names = {"block": None, "attention": parts.attention, "mlp": parts.mlp}[spec.part]
    modules = []
    for i in spec.layers:
        block = model.layers[i]
        modules += [block] if names is None else [block.get_submodule(n) for n in names]
    modules += [model.get_submodule(n) for n in parts.embeddings] if spec.embeddings else []
    modules += [model.get_submodule(n) for n in parts.head] if spec.head else []
    ids = _param_ids(modules)
    return {k for k, v in model.state_dict(keep_vars=True).items() if id(v) in ids}


def transplant(a: LanguageModel, b: LanguageModel, spec: TransplantSpec) -> LanguageModel:
    """A new model: B with the parameters chosen by `spec` copied from A."""
    check_same_architecture(a, b, vocabulary=spec.embeddings or spec.head)
    parts = b.anatomy
    embeddings = _param_ids(b.get_submodule(n) for n in parts.embeddings)
    head = _param_ids(b.get_submodule(n) for n in parts.head)
    if embeddings & head and spec.embeddings != spec.head:
        raise UserError(
            "the models tie the LM head to the input embedding, so take both or neither "
            "(pass --embeddings and --head together, or neither; in Python, TransplantSpec's embeddings and head)"
        )
    state_a, state_b = a.state_dict(), b.state_dict()
    take = chosen_keys(b, spec)
    merged = {k: (state_a[k] if k in take else state_b[k]).detach().clone() for k in state_b}
    model = copy.deepcopy(b)
    model.load_state_dict(merged)
    return model


def save_transplant(
    a: LanguageModel,
    b: LanguageModel,
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
    write_text_atomic(Path(out) / "transplant.json", json_text(record, indent=2))
    return Path(out)


def layer_groups(n_layers: int, n_groups: int = 3) -> list[tuple[int, ...]]:
    """Contiguous groups of blocks: for 3, paper 2's low/mid/late groups, the same the freezing
    presets name (`train.freeze.paper2_groups`: 22 -> 0-7, 8-14, 15-21; 28 -> 0-9, 10-18, 19-27);
    otherwise equal splits, earlier groups one larger when uneven."""
    if not 1 <= n_groups <= n_layers:
        raise UserError(
            f"--groups {n_groups} cannot split the model's {n_layers} layers into non-empty groups; "
            f"pass --groups between 1 and {n_layers}"
        )
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
    a: LanguageModel,
    b: LanguageModel,
    specs: list[tuple[str, TransplantSpec]],
    out: Path,
    *,
    tokenizer=None,
    sources: dict[str, str] | None = None,
    score: Callable[[LanguageModel], float] | None = None,
    ends: tuple[float, float] | None = None,
) -> list[dict]:
    """Save every transplant of a sweep as `out/<name>/`; with `score`, also score A, B and each
    transplant and report the share of the B -> A gap each one recovers. `ends` are A's and B's scores
    when the caller took them already (`analyze transplant`: before `out` is made); else A and B are
    scored first, before any transplant is written."""
    if score is not None and ends is None:
        ends = score(a), score(b)
    rows: list[dict] = []
    for name, spec in tqdm(specs, desc="transplants"):
        folder = save_transplant(a, b, spec, Path(out) / name, tokenizer=tokenizer, sources=sources)
        rows.append({"name": name, "description": spec.describe(), "folder": str(folder)})
    if score is None or ends is None:
        return rows
    score_a, score_b = ends
    from encoderlab.model.io import load_model_folder

    for row in rows:
        row["accuracy"] = score(load_model_folder(row["folder"]))
        row["gap_recovered"] = gap_recovered(row["accuracy"], score_b, score_a)
    ends = [
        {"name": k, "description": f"model {k}", "accuracy": v} for k, v in (("A", score_a), ("B", score_b))
    ]
    return ends + rows


def gap_recovered(score: float, score_b: float, score_a: float) -> float | None:
    """Share of the B -> A score gap that a transplant into B recovers (paper 2's last column); none where
    A and B score alike or a score is undefined (NaN: a last layer constant across the examples)."""
    if score_a == score_b or any(math.isnan(x) for x in (score, score_b, score_a)):
        return None
    return (score - score_b) / (score_a - score_b)


def sweep_line(row: dict) -> str:
    """One row of a sweep's table as `analyze transplant` prints it: name, what was taken, and with a probe
    its score and the share of the B -> A gap it recovers (paper 2's last column, which was only in the
    table and the figure; none where A and B score alike)."""
    scored = f"  {row['accuracy']:6.2f}" if "accuracy" in row else ""
    if "accuracy" in row and math.isnan(row["accuracy"]):
        scored = "  undefined (its last layer is constant across the examples)"
    gap = row.get("gap_recovered")
    return f"{row['name']:<16} {row['description']}{scored}" + (
        f"  {gap:+.0%} of the gap" if gap is not None else ""
    )
