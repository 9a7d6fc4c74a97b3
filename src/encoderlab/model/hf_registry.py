"""The adapter families (`hf_adapters`, `hf_deberta`, `hf_mpnet`, `hf_albert`, `hf_roberta_prelayernorm`) by transformers `model_type`, and building one
from a transformers config and an HF state dict.

Kept apart from the classes so that each family's module imports only the base class, and the table
that names them all sits above them: a new family is its class plus one row here (and, if it numbers
positions after the pad id as RoBERTa does, its name in `sources.POSITIONS_AFTER_PAD`, which `study plan`
reads without torch). Everything else that reads a config by `model_type` (the class to build, the
loader's checks) reads this table.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator

import torch

from encoderlab.errors import UserError
from encoderlab.model.hf_adapters import (
    BertAdapter,
    CamembertAdapter,
    DistilBertAdapter,
    ElectraAdapter,
    HFAdapter,
    ModernBertAdapter,
    RobertaAdapter,
    XLMRobertaAdapter,
)
from encoderlab.model.hf_albert import AlbertAdapter
from encoderlab.model.hf_deberta import DebertaAdapter, DebertaV2Adapter
from encoderlab.model.hf_mpnet import MPNetAdapter
from encoderlab.model.hf_roberta_prelayernorm import RobertaPreLayerNormAdapter

ADAPTERS: dict[str, type[HFAdapter]] = {
    "bert": BertAdapter,
    "modernbert": ModernBertAdapter,
    "roberta": RobertaAdapter,
    "xlm-roberta": XLMRobertaAdapter,
    "camembert": CamembertAdapter,
    "roberta-prelayernorm": RobertaPreLayerNormAdapter,
    "electra": ElectraAdapter,
    "distilbert": DistilBertAdapter,
    "mpnet": MPNetAdapter,
    "albert": AlbertAdapter,
    "deberta": DebertaAdapter,
    "deberta-v2": DebertaV2Adapter,
}
ADAPTER_FAMILIES = tuple(ADAPTERS)


def hf_config_from_dict(raw: dict):
    """The transformers config for `raw`, built by the class registered for its `model_type`.

    Never `AutoConfig`: a folder's `auto_map` could make that import code shipped with the folder.
    A config transformers refuses raises one of `config_errors()`.
    """
    from transformers import CONFIG_MAPPING

    return CONFIG_MAPPING[raw["model_type"]].from_dict({k: v for k, v in raw.items() if k != "auto_map"})


def config_errors() -> tuple[type[Exception], ...]:
    """What building a config or a model from a bad `config.json` raises: transformers' own checks
    (ValueError; since transformers 5 also huggingface_hub's `StrictDataclassError` for a value of the
    wrong type, which is no ValueError) and TypeError. Callers turn them into one line."""
    from huggingface_hub.errors import StrictDataclassError

    return (ValueError, TypeError, StrictDataclassError)


def hf_class(family: str):
    """The transformers masked-LM class an adapter family wraps."""
    import transformers

    return getattr(transformers, ADAPTERS[family].hf_name)


@contextlib.contextmanager
def seeded_init(state: dict[str, torch.Tensor]) -> Iterator[None]:
    """Initialise whatever is built inside from a seed derived from the checkpoint's weights.

    Why: a checkpoint without an MLM (or LM) head gets one freshly initialised at load. Unseeded,
    every load draws another head, so the model's fingerprint (which hashes every weight, and keys
    evaluation caches and study nodes) changed on each load and an interrupted evaluation grid never
    resumed. The other fix, leaving the head out of the fingerprint, would hide a real difference
    wherever the head is used (continued MLM pretraining starts from it). Seeding from the weights
    gives the same head on every load of the same checkpoint, different heads for different
    checkpoints, and leaves the global RNG as it was. Cost: one sha256 pass over the weights, paid
    only when something is missing.
    """
    digest = hashlib.sha256()
    for name in sorted(state):
        t = state[name].detach().cpu().contiguous()
        digest.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int.from_bytes(digest.digest()[:8], "little"))
        yield


def check_tied(where: str, state: dict[str, torch.Tensor], head: str, embeddings: str) -> None:
    """Refuse a config that ties the output head to the word embeddings over a checkpoint storing a head
    of its own that differs from them. Tying dropped one of the two silently (the head, or, loaded into
    the shared tensor after them, the embeddings), where transformers keeps both untied with a warning:
    other logits than transformers' on the same folder."""
    if head in state and embeddings in state and not torch.equal(state[head], state[embeddings]):
        raise UserError(
            f"{where}/config.json ties the output head to the word embeddings (tie_word_embeddings true), but "
            f"the checkpoint stores a head '{head}' that differs from '{embeddings}'; set "
            '"tie_word_embeddings": false in config.json (transformers loads the two untied) or re-download the model'
        )


# Keys a masked-LM class does not have but base checkpoints often carry: the pooler is carried
# (`HFAdapter.carried`), the position and token-type id buffers are rebuilt by transformers.
_CARRIED = ".pooler."
_IGNORABLE = (_CARRIED, "position_ids", "token_type_ids")


def _own_keys(adapter: type[HFAdapter], hf_config, prefix: str, state: dict[str, torch.Tensor]):
    """`state` under the class's base-model prefix, less the weights the masked LM has no place for
    (`HFAdapter.left_out`), and the notes saying what was left out."""
    if not any(k.startswith(prefix + ".") for k in state):
        state = {f"{prefix}.{k}": v for k, v in state.items()}
    notes, dropped = [], set()
    for fragment, what in adapter.left_out(hf_config).items():
        keys = sorted(k for k in state if fragment in k and k not in dropped)
        if keys:
            dropped.update(keys)
            notes.append(
                f"{len(keys)} weight{'s' if len(keys) > 1 else ''} of {what} left out (e.g. {keys[:2]})"
            )
    return {k: v for k, v in state.items() if k not in dropped}, notes


def _loaded(cls, hf_config, state: dict[str, torch.Tensor], where: str, *, seeded: bool):
    """`cls` built from `hf_config` (its fresh weights seeded by the checkpoint's when `seeded`), the
    checkpoint's weights loaded and tied ones tied; with transformers' missing and unexpected keys."""
    with seeded_init(state) if seeded else contextlib.nullcontext():
        hf = cls(hf_config)
    if getattr(hf_config, "tie_word_embeddings", False):
        for head, embeddings in (getattr(hf, "_tied_weights_keys", None) or {}).items():
            if embeddings.endswith("embeddings.weight"):  # not the head's bias, which no config unties
                check_tied(where, state, head, embeddings)
    own = hf.state_dict()
    for key, tensor in state.items():
        if key in own and tuple(own[key].shape) != tuple(tensor.shape):
            raise checkpoint_shape_refusal(where, key, tuple(tensor.shape), tuple(own[key].shape))
    missing, unexpected = hf.load_state_dict(state, strict=False)
    hf.tie_weights()
    return hf, missing, unexpected


def _fresh(cls, hf_config, state: dict[str, torch.Tensor], prefix: str) -> list[str]:
    """The head weights of `cls` the checkpoint lacks that tying does not fill: transformers' init draws
    them. Told before the model is built, from a skeleton on the meta device (no memory, no init draws:
    about a hundredth of a build), so that the one build is seeded whenever something is drawn; a partly
    missing head (an untied decoder) was built unseeded, found, and built again seeded. Told by identity
    after tying (a tied weight is one Parameter), not by the class's tied-keys table: that names the
    decoder of an untied config too, so a checkpoint saved without its untied decoder loaded a fresh one
    unseeded and unnoted."""
    with torch.device("meta"):
        skeleton = cls(hf_config)
    skeleton.tie_weights()
    own = skeleton.state_dict(keep_vars=True)
    filled = {id(t) for k, t in own.items() if k in state}
    head = [
        k
        for k in own
        if k not in state and not k.startswith(prefix + ".") and not any(s in k for s in _IGNORABLE)
    ]
    return [k for k in head if id(own[k]) not in filled]


def checkpoint_shape_refusal(where: str, key: str, stored: tuple, implied: tuple) -> UserError:
    """The line of a Hugging Face folder's weight whose shape is not its config.json's: the adapter
    families' load, the Llama-style ones' (`hf_llama`) and `eval --check` (`headercheck.check_embedding_rows`)."""
    return UserError(
        f"{where}: weight '{key}' has shape {stored} but config.json implies {implied}; "
        "the checkpoint does not match its config"
    )


def unplaced_fix(
    architectures, prefix: str, loads: tuple[str, ...] = ("ForMaskedLM", "ForPreTraining", "Model")
) -> str:
    """How weights outside the model encoderlab builds are fixed: a fine-tuned task model (`architectures`
    names a class other than those ending in one of `loads`, a pretraining class such as BertForPreTraining
    being none: a classifier's `classifier.*` or `score.*`)
    has a head encoderlab does not load, and its body loads once those weights are gone; anything else is
    a checkpoint unlike its config. The adapter families and the Llama-style ones (`hf_llama`) both say it."""
    names = architectures if isinstance(architectures, (list, tuple)) else ()  # config.json's, unchecked
    task = [a for a in names if isinstance(a, str) and not a.endswith(loads)]
    if task:
        body = f"the weights under '{prefix}.'" if prefix else "every weight but the head's"
        return (
            f"it is a fine-tuned task model ({task[0]}), whose head encoderlab does not load: pass the model it "
            f"was fine-tuned from, or save its body alone ({body}) to load that with a fresh MLM head"
        )
    return "the checkpoint does not match its config.json: re-download the model"


def adapter_from_hf_state(
    hf_config, state: dict[str, torch.Tensor], where: str, sentence_files: dict[str, str] | None = None
) -> tuple[HFAdapter, list[str]]:
    """Build the adapter for `hf_config.model_type` from an HF state dict (and the folder's
    sentence-transformers files, `sentence`); returns notes.

    A base-model checkpoint (no MLM head, e.g. MiniLM saved as `BertModel`) loads with the head
    freshly initialised by transformers' own init, seeded by the weights (`seeded_init`), and the
    notes say so.
    """
    adapter = ADAPTERS[hf_config.model_type]
    hf_config._attn_implementation = adapter.attention_kernel
    cls = hf_class(hf_config.model_type)
    prefix = cls.base_model_prefix
    state, notes = _own_keys(adapter, hf_config, prefix, state)
    try:
        adapter.fit_config(hf_config, state)
    except UserError as exc:  # a family's refusal of its config: named with the folder
        raise UserError(f"{where}/config.json: {exc}") from None
    headless = all(k.startswith(prefix + ".") for k in state)  # a base model: the MLM head is made here
    fresh = _fresh(cls, hf_config, state, prefix)  # a head or part of one (an untied decoder) to draw
    hf, missing, unexpected = _loaded(cls, hf_config, state, where, seeded=bool(fresh))
    carried = {k: state[k] for k in unexpected if _CARRIED in k}
    unexpected = [k for k in unexpected if not any(s in k for s in _IGNORABLE)]
    if unexpected:
        raise UserError(
            f"{where}: {len(unexpected)} weights have no place in {type(hf).__name__} (e.g. {unexpected[:3]}); "
            + unplaced_fix(getattr(hf_config, "architectures", None), prefix)
        )
    body_missing = [k for k in missing if k.startswith(prefix + ".") and not any(s in k for s in _IGNORABLE)]
    if body_missing:
        raise UserError(
            f"{where}: weights missing from the checkpoint (e.g. {body_missing[:3]}); it does not match its config.json"
        )
    if fresh:
        lacks = "has none" if headless else f"lacks {fresh[:3]}"
        notes.append(
            f"MLM head freshly initialised (the checkpoint {lacks}); its first losses are not a pretrained MLM's"
        )
    return adapter(hf.eval(), carried, sentence_files), notes
