"""Tokenizers: load any Hugging Face fast tokenizer, or train one on a corpus.

Everything downstream reads vocabulary facts through `token_spec(tokenizer) -> TokenSpec`, never
from hard-coded ids (special ids differ per checkpoint). BERT-style tokenizers have [CLS]/[SEP]
instead of BOS/EOS; `token_spec` maps them to `bos_id`/`eos_id`, which is how both wrap a document.

`train_tokenizer` (in `data/tokenizer_training.py`, re-exported here) trains a byte-level BPE or
a WordPiece vocabulary on a corpus.

`tokenizer_hash` fingerprints the serialised tokenizer (model, normaliser, pre-tokeniser and
special tokens), which prepared data records so a model is never fed ids from another vocabulary.

A folder whose tokenizer_config.json names transformers' generic fast class (what `data tokenizer`, `data
prepare`, synthetic runs and encoderlab model folders save) is read with that class's own `from_pretrained`,
not `AutoTokenizer`'s, which reads a model config first and so imports torch: a `data prepare` process (a
`bench data` run) spent more CPU importing torch than tokenizing. The trade-off: this module mirrors
`AutoTokenizer`'s choice of class for such folders (`generic_fast_folder`, kept narrow: no `auto_map`, no
config.json but an encoderlab model's), so a transformers that chose otherwise would load another class
here; tests/data/test_tokenizer_fast_path.py compares the two loads (ids, special tokens, hash, saved
files) on the installed version.

`held_tokenizer` loads and hashes a dataset's tokenizer once per process while no file under its folder moved
(`txtscans.tree_stats`, taken before the read; only a folder whose files last changed 2 s before it,
`txtscans.settled`): `data prepare` and a study's check of a `--prepared` folder
(`study/prepared.py`) each loaded and hashed it again, about a second for a paper's 128k vocabulary. Trade-off:
the loaded tokenizer is shared, so its callers only read it (save, serialise, look ids up), never encode with
it (a call's truncation and padding would stay in the object, `packed.call_settings`); a hub id still to
download is loaded each time, as before.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from encoderlab import jsonlines
from encoderlab.data.hubmodels import (
    TOKENIZER_GLOBS,
    download_model_repo,
    missing_tokenizer_blob,
    model_mirror,
)
from encoderlab.data.localpath import check_source
from encoderlab.data.txtscans import settled, tree_stats
from encoderlab.errors import UserError, first_line

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from encoderlab.data.batch import TokenSpec

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
TOKENIZER_FIX = "pass a tokenizer or model folder, an asset name or a hub id (org/name)"
"""How a tokenizer argument that names nothing is fixed."""


def _tokenizer_folder(path: Path) -> Path:
    """The folder holding tokenizer files for a tokenizer, model or prepared-data folder (a hub cache
    snapshot's tokenizer file whose blob is gone: the download that brings it back)."""
    if (refused := missing_tokenizer_blob(path)) is not None:
        raise refused
    if (path / "meta.json").is_file() and (path / "tokenizer").is_dir():
        return path / "tokenizer"
    if (path / "meta.json").is_file() and not (path / "tokenizer.json").is_file():
        # "pass a tokenizer folder" sent `data inspect` users looking for a flag it does not have
        raise UserError(
            f"prepared data {path} has no tokenizer/ folder (data prepare writes the tokenizer it used "
            f"there); copy that tokenizer's folder to {path / 'tokenizer'}"
        )
    if (path / "tokenizer.json").is_file():
        return path
    vocabulary = slow_vocabulary(path)
    named = (path / "tokenizer_config.json").is_file() or (path / "config.json").is_file()
    if vocabulary is not None and named:  # a class to convert with: tokenizer_class or model_type
        return _sentencepiece_folder(path, vocabulary) if vocabulary.endswith(".model") else path
    if (path / "tokenizer_config.json").is_file():
        # transformers would try to convert a slow tokenizer from files that are not there
        raise UserError(
            f"{path} has tokenizer_config.json but no tokenizer.json; encoderlab reads fast (Rust) tokenizers: "
            "copy the tokenizer.json that belongs with it, or save the tokenizer with save_pretrained"
        )
    raise UserError(
        f"{path} holds no tokenizer files ({', '.join(TOKENIZER_FILES)}); pass a tokenizer folder"
    )


SLOW_VOCABULARIES = (("vocab.txt",), ("vocab.json", "merges.txt"))
"""The files of a slow tokenizer that transformers converts into a fast one without extra packages:
WordPiece (BERT's vocab.txt, all that many older BERT-family repos ship beside config.json) and
byte-level BPE (GPT-2's and RoBERTa's vocab.json + merges.txt); a SentencePiece model (`*.model`)
needs the `sentencepiece` package (`_sentencepiece_folder`). transformers picks the class from
tokenizer_config.json's `tokenizer_class` or config.json's `model_type`, so one of them must be there."""


def slow_vocabulary(path: Path) -> str | None:
    """The slow vocabulary `path` holds (`SLOW_VOCABULARIES`, or a SentencePiece `*.model`), named as
    its files are, or None."""
    for names in SLOW_VOCABULARIES:
        if all((path / n).is_file() for n in names):
            return " + ".join(names)
    models = sorted(p.name for p in path.glob("*.model") if p.is_file())
    return models[0] if models else None


TOKENIZER_READS = (*TOKENIZER_FILES, "special_tokens_map.json", "added_tokens.json", "chat_template.jinja")
"""The files transformers' `from_pretrained` reads of a tokenizer folder besides a slow vocabulary: its
`additional_files_names` (transformers 5, tokenization_utils_base.py), the fast tokenizer's tokenizer.json
among them. With `SLOW_VOCABULARIES` and `*.model`, the list `tokenizer_files` falls back to where no
tokenizer tells its class's own (`declared_reads`), and the one a start model's identity of version 2 covers."""


def declared_reads(tokenizer, folder: Path) -> list[str]:
    """The names transformers' `from_pretrained` (5.x, tokenization_utils_base.py) looks up in `folder` for
    `tokenizer`'s class: the class's own `vocab_files_names` (LUKE's entity_vocab.json, Whisper's
    normalizer.json, a SentencePiece model's name), the files every tokenizer reads (the module's constants:
    added_tokens.json, special_tokens_map.json, tokenizer_config.json, chat_template.jinja), tokenizer.json or
    the versioned file tokenizer_config.json's `fast_tokenizer_files` picks for this version, and each
    additional_chat_templates/*.jinja. Why the declaration and not `save_pretrained`'s answer: a fast
    tokenizer's save writes tokenizer_config.json, tokenizer.json and its templates only (5.x), so it names
    none of the vocabulary files a load of the original folder reads."""
    from transformers import tokenization_utils_base as base

    names = [*type(tokenizer).vocab_files_names.values()]
    names += [base.ADDED_TOKENS_FILE, base.SPECIAL_TOKENS_MAP_FILE, base.TOKENIZER_CONFIG_FILE]
    names += [_fast_tokenizer_file(folder, base), base.CHAT_TEMPLATE_FILE]
    templates = folder / base.CHAT_TEMPLATE_DIR
    names += sorted(f"{base.CHAT_TEMPLATE_DIR}/{p.name}" for p in templates.glob("*.jinja") if p.is_file())
    return list(dict.fromkeys(names))


def _fast_tokenizer_file(folder: Path, base) -> str:
    """tokenizer.json, or the versioned file `fast_tokenizer_files` of tokenizer_config.json names for the
    installed transformers (`get_fast_tokenizer_file`), which the load reads instead."""
    try:
        config = jsonlines.loads((folder / base.TOKENIZER_CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none, or unreadable: the load read tokenizer.json (or refused it)
        return base.FULL_TOKENIZER_FILE
    versioned = config.get("fast_tokenizer_files") if isinstance(config, dict) else None
    return (
        base.get_fast_tokenizer_file(versioned) if isinstance(versioned, list) else base.FULL_TOKENIZER_FILE
    )


def tokenizer_files(path: Path, tokenizer=None) -> list[Path]:
    """The tokenizer files of folder `path` that a load reads, those it holds: the names `tokenizer`'s class
    declares (`declared_reads`), the tokenizer loaded from `path`; without one (none loads from the folder, or
    a record of version 2), `TOKENIZER_READS` and a slow vocabulary's (`SLOW_VOCABULARIES`, a SentencePiece
    `*.model`). What a start model's identity covers of its tokenizer (`model/readfiles.py`)."""
    if tokenizer is not None:
        return [path / n for n in declared_reads(tokenizer, path) if (path / n).is_file()]
    names = [*TOKENIZER_READS, *(n for names in SLOW_VOCABULARIES for n in names)]
    return [path / n for n in names if (path / n).is_file()] + sorted(
        p for p in path.glob("*.model") if p.is_file()
    )


def _sentencepiece_folder(path: Path, model: str) -> Path:
    """A folder whose vocabulary is the SentencePiece model `model` and no tokenizer.json, as
    microsoft/deberta-v3-base ships `spm.model`: transformers converts it into a fast tokenizer, which
    reads the model with the `sentencepiece` package (a dependency; without it transformers falls back
    to reading the file as tiktoken's and fails on its first byte, so that case is one line here)."""
    import importlib.util

    if importlib.util.find_spec("sentencepiece") is None:
        raise UserError(
            f"{path} holds a SentencePiece vocabulary ({model}) and no tokenizer.json, and converting it "
            "needs the sentencepiece package: pip install sentencepiece"
        )
    return path


def tokenizer_folder(name_or_path: str | Path, base: Path | None = None) -> Path | None:
    """The folder of tokenizer files `load_tokenizer` reads, found without loading anything: a folder,
    an asset's, a hub id's mirror; None for a hub id to download. A path that does not exist and is no
    asset or hub id, or a folder without tokenizer files, is refused with one line (naming the folder it
    is not in `base`, else the working folder: `hub.no_folder`); a name that is no path, asset or hub id
    offline, with its nearest name, as a model's is (`localpath.check_source`)."""
    path = Path(name_or_path).expanduser()
    check_source(str(name_or_path), "tokenizer", TOKENIZER_FIX, base)  # a model's check: no hub for a typo
    folder = _tokenizer_folder(path) if path.exists() else _asset_folder(str(name_or_path))
    if folder is None:
        # a hub id, or refused with one line; offline, a cached snapshot is judged on the tokenizer's files,
        # which is all its download fetches (not the weights its repo's cached file list names)
        mirror = model_mirror(str(name_or_path), "tokenizer", base, TOKENIZER_GLOBS)
        folder = _tokenizer_folder(mirror) if mirror is not None else None
    return folder


def load_tokenizer(name_or_path: str | Path):
    """A fast HF tokenizer from a folder (tokenizer, encoderlab model, prepared data), an asset
    name (`minilm`, `smollm2-135m`) or a hub id (from the hub, or its ENCODERLAB_HUB_MODELS mirror)."""
    folder = tokenizer_folder(name_or_path)
    if folder is None:  # a hub id to fetch: the one download of data/hubmodels.py, one line if it fails
        folder = download_model_repo(str(name_or_path), "tokenizer", TOKENIZER_GLOBS)
    try:
        tok = _from_pretrained(Path(folder))
    except Exception as exc:  # tokenizers raises a bare Exception for a tokenizer.json it cannot parse
        if _ships_code(Path(folder)):
            raise UserError(
                f"tokenizer '{name_or_path}' ships its own code (auto_map in {Path(folder) / 'tokenizer_config.json'}), "
                "which encoderlab never runs; remove auto_map from tokenizer_config.json, or pass a tokenizer that needs no code"
            ) from None
        raise UserError(
            f"cannot load tokenizer '{name_or_path}' ({type(exc).__name__}: {first_line(exc)}); its files are "
            "damaged or not a tokenizer's: copy them again, or save the tokenizer again with save_pretrained"
        ) from None
    if not getattr(tok, "is_fast", False):
        raise UserError(
            f"tokenizer '{name_or_path}' has no fast (Rust) version; convert it to tokenizer.json"
        )
    _check_nothing_added(tok, Path(folder))
    return tok


GENERIC_CLASSES = ("TokenizersBackend", "PreTrainedTokenizerFast")
"""The `tokenizer_class` names transformers 5 gives its one generic fast class (`TokenizersBackend`, whose alias
`PreTrainedTokenizerFast` 4.x saves wrote): what `data tokenizer`, `data prepare` and synthetic runs save."""


ENCODERLAB_FORMAT = "encoderlab-model"
"""`model.sources.FORMAT`, the `format` of an encoderlab model folder's config.json (data/ sits below model/)."""


def generic_fast_folder(folder: Path) -> bool:
    """True when `AutoTokenizer` would load `folder` as the generic fast class whatever else it asked: its
    tokenizer_config.json names a `GENERIC_CLASSES` class and no code (`auto_map`), beside a tokenizer.json, and
    it has no config.json or an encoderlab model's, which names no `model_type`, `tokenizer_class` or `auto_map`
    (any of them can pick another class). Unreadable files: False (`AutoTokenizer` judges them)."""
    if not (folder / "tokenizer.json").is_file():
        return False
    config = _json_object(folder / "tokenizer_config.json")
    if config is None or config.get("tokenizer_class") not in GENERIC_CLASSES or "auto_map" in config:
        return False
    if not (folder / "config.json").exists():
        return True
    model = _json_object(folder / "config.json")
    chooses = ("model_type", "tokenizer_class", "auto_map")
    return (
        model is not None
        and model.get("format") == ENCODERLAB_FORMAT
        and not any(k in model for k in chooses)
    )


def _json_object(path: Path) -> dict | None:
    """The JSON object in file `path`; None when it is missing, unreadable or not an object."""
    try:
        value = jsonlines.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _from_pretrained(folder: Path):
    """`AutoTokenizer.from_pretrained(folder)`, or the generic class's own `from_pretrained` where the folder is
    one `AutoTokenizer` would give that class (`generic_fast_folder`: the same object, tests/data/
    test_tokenizer_fast_path.py): AutoTokenizer reads a model config first, which imports torch (transformers'
    configuration_utils), a second and more of CPU that a `data prepare` process never uses otherwise."""
    if generic_fast_folder(folder):
        from transformers import TokenizersBackend

        return TokenizersBackend.from_pretrained(str(folder))
    from transformers import AutoTokenizer

    # Never None (transformers' default): with auto_map in tokenizer_config.json it would ask on
    # stdin whether to run the folder's code, and a "y" (typed, or piped in) ran it.
    return AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)


@dataclass(frozen=True)
class HeldTokenizer:
    """A tokenizer as `held_tokenizer` loaded it, with what is read of it on every prepare or check."""

    tok: object
    """The loaded fast tokenizer, shared: read it, never encode with it (see the module docstring)."""
    digest: str
    """Its `tokenizer_hash`."""
    read_from: str
    """Its `name_or_path`: the folder it was read from."""
    settings: str
    """The truncation and padding its serialisation keeps (`packed.call_settings`; "" when none)."""


_HELD: dict[tuple[str, str], tuple[tuple, HeldTokenizer]] = {}
"""{(tokenizer as named, the folder it is read from): (that folder's `tree_stats` before the read, the read)}.
The `HELD_MOST` latest reads are kept: a process prepares with a few tokenizers, but a long-lived one (a
test session, a notebook) may read hundreds of folders, and EuroBERT's 128k-vocabulary tokenizer holds tens
of MB."""

HELD_MOST = 4


def held_tokenizer(name_or_path: str | Path) -> HeldTokenizer:
    """`load_tokenizer(name_or_path)` with its hash, reused while no file under its folder moved (a folder
    saved again is read again); a hub id still to download is loaded (so fetched) each time. Refuses what
    `load_tokenizer` refuses, with the same line (`tokenizer_folder` is asked first each time)."""
    from encoderlab.data.packed import call_settings

    folder = tokenizer_folder(name_or_path)  # the folder `load_tokenizer` reads; refuses a typo the same way
    taken = time.time_ns()
    stats = tree_stats(folder) if folder is not None else None
    key = (str(name_or_path), str(folder))
    if stats is not None and (held := _HELD.get(key)) is not None and held[0] == stats:
        return held[1]
    tok = load_tokenizer(name_or_path)
    state = json.loads(tok.backend_tokenizer.to_str())  # parsed once: the 128k vocabulary's is not free
    read = HeldTokenizer(tok, tokenizer_hash(tok, dict(state)), str(tok.name_or_path), call_settings(state))
    if stats is not None and settled(stats, taken):  # a folder saved moments ago is read again next time
        _HELD.pop(key, None)  # re-inserted last: the oldest read is the first key
        _HELD[key] = (stats, read)
        while len(_HELD) > HELD_MOST:
            del _HELD[next(iter(_HELD))]
    return read


def _check_nothing_added(tok, folder: Path) -> None:
    """Refuse special tokens that transformers added to a tokenizer.json read without its
    tokenizer_config.json: the class then comes from config.json's model_type (BERT's for a `bert`
    model), whose default specials ([CLS], [SEP]) the vocabulary may lack. Each got a new id past the
    trained vocabulary and took the bos/eos roles and the wrapping of every row, which a model with
    spare embedding rows loaded without a word (untrained rows as its [CLS])."""
    if (folder / "tokenizer_config.json").is_file() or not (folder / "tokenizer.json").is_file():
        return
    from tokenizers import Tokenizer

    own = Tokenizer.from_file(str(folder / "tokenizer.json")).get_vocab_size(with_added_tokens=True)
    added = sorted((i, t) for t, i in tok.get_vocab().items() if i >= own)
    if added:
        raise UserError(
            f"{folder} has tokenizer.json but no tokenizer_config.json, so transformers read it as "
            f"{type(tok).__name__}, which added special tokens tokenizer.json lacks ({', '.join(t for _, t in added)}, "
            "new ids past its vocabulary); copy the tokenizer_config.json that belongs with it, or save the "
            "tokenizer with save_pretrained"
        )


def _ships_code(folder: Path) -> bool:
    """True when the folder's tokenizer_config.json names tokenizer code of its own (`auto_map`)."""
    try:
        config = jsonlines.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and "auto_map" in config


def _asset_folder(name: str) -> Path | None:
    try:
        from encoderlab.data.assets import ASSETS, asset_dir
    except ImportError:
        return None
    return _tokenizer_folder(asset_dir(name)) if name in ASSETS else None


def _token_id(tok, *roles: str) -> int | None:
    for role in roles:
        token = getattr(tok, f"{role}_token", None)
        if token is not None:
            return int(tok.convert_tokens_to_ids(str(token)))
    return None


def spec_fields(tok) -> dict:
    """The fields of `token_spec(tok)` as plain data (what meta.json stores; imports no torch)."""
    return {
        "vocab_size": len(tok),
        "pad_id": _token_id(tok, "pad"),
        "bos_id": _token_id(tok, "bos", "cls"),
        "eos_id": _token_id(tok, "eos", "sep"),
        "mask_id": _token_id(tok, "mask"),
        "unk_id": _token_id(tok, "unk"),
        "special_ids": tuple(sorted({int(i) for i in tok.all_special_ids})),
    }


def token_spec(tok) -> TokenSpec:
    """The vocabulary facts of `tok` (BERT's [CLS]/[SEP] serve as bos/eos)."""
    from encoderlab.data.batch import TokenSpec  # lazily: batch.py imports torch, data preparation needs none

    return TokenSpec(**spec_fields(tok))


def require_tokens(spec: TokenSpec, roles: Iterable[str], purpose: str) -> None:
    """Refuse a tokenizer that lacks a special token `purpose` needs (e.g. mask for MLM)."""
    missing = [r for r in roles if getattr(spec, f"{r}_id") is None]
    if missing:
        raise UserError(
            f"the tokenizer has no {'/'.join(missing)} token, which {purpose} needs; use a tokenizer that has it "
            "or train one with `encoderlab data tokenizer`"
        )


def tokenizer_hash(tok, state: dict | None = None) -> str:
    """sha256 of the serialised tokenizer and its special-token roles; `state`: its serialisation, parsed
    (`backend_tokenizer.to_str()`), when the caller has it (changed here)."""
    state = json.loads(tok.backend_tokenizer.to_str()) if state is None else state
    # Truncation and padding are call-time settings that transformers changes while encoding; they
    # are not part of the tokenizer's identity (the same tokenizer must hash the same after use).
    state.pop("truncation", None)
    state.pop("padding", None)
    # Hashed, not written (so not `atomic.json_text`), and recorded in every prepared folder's recipe and the
    # study keys built on it: its text must not move. transformers 5 maps roles to str only (`str(...)` of
    # each); `default=str` writes a token object an older one gave as that same str (`str(AddedToken)` is
    # its content), so it hides nothing and keeps the hash across versions.
    payload = json.dumps(state, sort_keys=True) + json.dumps(
        tok.special_tokens_map, sort_keys=True, default=str
    )
    return hashlib.sha256(payload.encode()).hexdigest()


# Training lives in its own module (child process, bounded words); re-exported here, where callers
# have always found it. Imported last: that module uses the loaders above.
from encoderlab.data.tokenizer_training import MAX_WORD_CHARS, train_tokenizer  # noqa: E402, F401
