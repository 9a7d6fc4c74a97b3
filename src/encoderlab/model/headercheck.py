"""`eval --check`'s look at a model's weights without reading them: the token embedding's rows from the
safetensors headers (`sizeof.header_shapes`: the 8-byte length and JSON header of each file, a sharded
folder's every shard, no tensor data), against the config's `vocab_size`.

Design. The run's load builds the model from config.json and refuses the first weight whose shape
differs; a config whose `vocab_size` is not the embedding's rows (edited by hand, copied from another
size) was passed by `--check`, which reads no weights, and refused only by the run. The refusal here is
the load's own line (`io.shape_refusal` for encoderlab's folders, `hf_registry.checkpoint_shape_refusal`
for Hugging Face ones). The weight it names is the one the load meets first of those the vocabulary
sizes: the Llama-style families' load walks the model's parameters, the embedding first; encoderlab's
and the adapter families' walk the stored tensors, file by file and by name within a file, so it is the
first there whose rows are the embedding's (ModernBERT's `decoder.bias` before its embedding), under
the base-model prefix the adapter load adds to a bare base model. An encoderlab folder of a run continued
from a Hugging Face model (its config.json records `family` and `hf_config`) stores transformers' names: its
family's embedding is looked for under them (`_embedding_key`, the one place that knows them). Trade-offs: rows only, since the
width a config implies differs by family (ALBERT's and ELECTRA's embedding width is not the hidden
size); a width mismatch, an embedding of a name not known here and unreadable headers are left to the
run's load, which refuses them as before; a tensor of another kind whose rows happen to equal the
embedding's, stored before it, would be the one named (the refusal stands, its weight's name differs).
"""

from __future__ import annotations

from encoderlab.model.hf_llama import LLAMA_FAMILIES, hf_key
from encoderlab.model.hf_registry import ADAPTER_FAMILIES, checkpoint_shape_refusal, hf_class
from encoderlab.model.hub import ModelFiles, hf_weight_files
from encoderlab.model.io import shape_refusal
from encoderlab.model.sizeof import header_shapes
from encoderlab.model.sources import read_config_json


def check_embedding_rows(files: ModelFiles) -> bool:
    """Refuse, in the load's line, weights whose embedding rows are not the config's `vocab_size`, read
    from the safetensors headers (no tensor data). Before, `eval --check` passed such a folder and only
    the run refused it. Returns whether the rows were compared (False: no `vocab_size`, no safetensors
    header readable, or no embedding of a name known here), so the check can say what it left unchecked."""
    if files.vocab_size is None:
        return False
    own = not files.config  # encoderlab's folder: one model.safetensors, an encoder's or an adapter's
    config = files.config or _adapter_config(files.folder)
    paths = [files.folder / "model.safetensors"] if own else hf_weight_files(files.folder)
    headers = [header_shapes(p) for p in paths if p.suffix == ".safetensors"]
    if not headers or None in headers:
        return False
    # the load's order: its files in turn, each file's tensors by name (safetensors' `load_file`)
    shapes = {k: h[k] for h in headers for k in sorted(h)}  # type: ignore[union-attr]
    key = _embedding_key(config, shapes)
    stored = shapes.get(key) if key else None
    if stored is None or len(stored) != 2:
        return False
    if stored[0] == files.vocab_size:
        return True
    if config.get("model_type") not in LLAMA_FAMILIES:  # these meet the embedding first
        first = next(k for k, s in shapes.items() if s[:1] == stored[:1])  # the first a vocabulary sizes
        stored = shapes[first]
        key = first if not config or own else _prefixed(config["model_type"], first, shapes)
    implied = (files.vocab_size, *stored[1:])
    if not config:  # an encoderlab encoder: `io.load_model_folder`'s check of every shape
        raise shape_refusal(key, stored, implied, f"{files.folder}/config.json")
    raise checkpoint_shape_refusal(str(files.folder), key, stored, implied)


def _adapter_config(folder) -> dict:
    """The transformers config an encoderlab folder of a run continued from a Hugging Face model records
    (`hf_config`, beside its `family`); {} for an encoderlab encoder's. Such a folder stores the wrapped
    model's weights under transformers' names (`bert.embeddings.word_embeddings.weight`), which the
    check looked for as `embed_tokens.weight`, found none, and compared nothing."""
    raw = read_config_json(folder)
    config = raw.get("hf_config") if "family" in raw else None
    return config if isinstance(config, dict) else {}


def _embedding_key(config: dict, shapes: dict[str, tuple[int, ...]]) -> str | None:
    """The token embedding's name as stored: encoderlab's, a Llama-style family's (`model.` prefix kept
    as stored, `hf_llama.hf_key`, the name the load gives), an adapter family's (any prefix), by the
    model's transformers `config` (a Hugging Face folder's, or the one an encoderlab folder records)."""
    if not config:
        return "embed_tokens.weight"
    family = config.get("model_type")
    if family in LLAMA_FAMILIES:
        return hf_key("embed_tokens.weight", "model" if any(k.startswith("model.") for k in shapes) else "")
    found = sorted(k for k in shapes if k.endswith(("word_embeddings.weight", "tok_embeddings.weight")))
    return found[0] if family in ADAPTER_FAMILIES and found else None


def _prefixed(family: str, key: str, shapes: dict[str, tuple[int, ...]]) -> str:
    """`key` as an adapter family's load names it: under the base-model prefix where the checkpoint
    stores none (a bare base model; `hf_registry._own_keys`)."""
    prefix = hf_class(family).base_model_prefix
    return key if any(k.startswith(prefix + ".") for k in shapes) else f"{prefix}.{key}"
