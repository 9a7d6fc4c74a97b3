"""What the analyses read: models by source string, and records from an asset or a file.

A model source is anything `encoderlab.model.hub.load_pretrained` accepts (model folder, run
folder, Hugging Face folder, asset name). Records follow the asset schema `{"id", "text", "meta"}`
(a `.jsonl` or `.json` file, or either gzip, bz2, xz or zstd compressed, as corpora are read);
a `.txt` file (compressed too) is one text per non-empty line, read by `data.sources` (`txt_unit=line`), so a line is
the same thing here as in `data prepare --source F.txt#txt_unit=line` (prepare's default for .txt is
a blank-line paragraph: documents; an analysis text is one line, so each fits `--max-length`). An
existing path always wins over an asset name, so a local file called like an asset is read, not the
asset.

The commands check their inputs in order of cost, before any output is made: the arguments alone (a
model or task given twice), then that every model source exists (`check_models`, reading nothing), and
only then the texts and tasks they read; a missing model was reported after the texts had been read
and found too few for the sample.

The lengths texts are read at (`Encoding`, `bounded_length`, `analysis_length`) and the fewest texts a
CKA takes (`MIN_TEXTS`) live here, free of torch, because a study checks its CKA specs with them before
anything runs (`study plan` included); `features.py` and `cka.py`, which compute, import them.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from encoderlab.data.filekinds import file_kind, misnamed, unreadable, user_text
from encoderlab.errors import UserError
from encoderlab.jsonlines import json_objects
from encoderlab.model.config import AttentionMode
from encoderlab.words import count

MIN_TEXTS = 50
"""Fewest texts a CKA comparison accepts (`cka.py`'s docstring says why)."""


@dataclass(frozen=True, kw_only=True)
class Encoding:
    """How texts are fed to a model for analysis (part of every feature cache key)."""

    max_length: int = 512
    """Tokens per text at most (longer texts are truncated)."""
    batch_size: int = 16
    """Texts per forward pass."""
    attention_mode: AttentionMode = "bidirectional"
    """Bidirectional (encoders) or causal (decoders read as decoders)."""


DEFAULT_ENCODING = Encoding()


def bounded_length(requested: int | None, limit: int, flag: str = "--max-length") -> int:
    """A length to read texts at: `requested`, refused (one line naming `flag`, the option that set it)
    when outside 1-`limit` (the models' positions); by default 512 (the paper's), or `limit` if lower.
    `analysis_length` for loaded models; a study checks its CKA with it before anything runs."""
    default = min(DEFAULT_ENCODING.max_length, limit)
    if requested is None:
        return default
    if requested < 1:  # "pass 512 or less", the fix for a length past the models', fits 0 and -5 already
        raise UserError(f"{flag} {requested} leaves no token to read; pass a positive {flag}, e.g. {default}")
    if requested > limit:
        raise UserError(
            f"{flag} {requested} is outside what the models take (1-{limit} tokens); pass {flag} {default} or less"
        )
    return requested


def analysis_length(requested: int | None, pairs, flag: str = "--max-length") -> int:
    """--max-length (`analyze cka`, `probe`, `transplant`) or a study's CKA `max_length` (`flag`):
    512 or the shortest model maximum by default (`bounded_length`); longer than a model takes is
    refused, and so is a length the tokenizers' own special tokens fill (every text became the same
    [CLS] [SEP]: constant features, or no word at all for a token task, a traceback). `pairs`:
    (model, tokenizer)."""
    length = bounded_length(requested, min(m.config.max_seq_len for m, _ in pairs), flag)
    if requested is None:
        return length
    specials = max(tok.num_special_tokens_to_add() for _, tok in pairs)
    if requested <= specials:
        raise UserError(
            f"{flag} {requested} leaves no token of text: the tokenizer adds {specials} special tokens; "
            f"pass {flag} {specials + 1} or more"
        )
    return requested


def load_model(source: str):
    """(model, tokenizer) for a model source, in eval mode; one without a tokenizer is refused (texts are
    encoded by it). Every analysis loads here, `analyze` and a study's CKA node alike, so a checkpoint the
    running pretrain deletes while it is read is said as that (`runlayout.pruned_while_read`) for all."""
    from encoderlab.model.hub import load_pretrained
    from encoderlab.model.runlayout import pruned_while_read
    from encoderlab.model.sources import tokenizer_home

    # a running pretrain may delete a checkpoint being read: its tokenizer read as absent, or a file gone
    with pruned_while_read(source):
        loaded = load_pretrained(source)
        if loaded.tokenizer is None:
            raise UserError(
                f"model '{source}' has no tokenizer; save the one it was trained with into "
                f"{tokenizer_home(source)} (tokenizer.save_pretrained) so texts can be encoded"
            )
    for note in loaded.notes:
        print(f"{source}: {note}")
    return loaded.model.eval(), loaded.tokenizer


def check_distinct(what: str, sources: Iterable[str]) -> None:
    """Refuse a source given twice (`what`: model, task), by name or by two paths to one file or folder:
    a probe ran, and plotted, the same model or task twice under one label."""
    seen: dict[str, str] = {}
    for source in sources:
        path = Path(source).expanduser()
        key = os.path.realpath(path) if path.exists() else source
        if key in seen:
            also = f" (as {seen[key]} and {source})" if seen[key] != source else ""
            raise UserError(f"{what} {source} given twice{also}; give each once")
        seen[key] = source


def check_models(sources: Iterable[str]) -> None:
    """Refuse a model source that is no path, asset or hub id, and a hub id the offline hub cannot
    give, reading nothing (what `load_pretrained` refuses when it loads)."""
    from encoderlab.data.assets import ASSETS
    from encoderlab.data.hubmodels import model_mirror
    from encoderlab.model.sources import check_model_source

    for source in sources:
        check_model_source(source)
        if not Path(source).expanduser().exists() and source not in ASSETS:
            model_mirror(source)  # a hub id


def records_path(source: str) -> Path:
    """The JSONL or text file behind `source` (a path, or the name of a fetched asset)."""
    path = Path(source).expanduser()
    if path.exists():
        if path.is_dir():
            raise UserError(f"{source} is a folder; give a .jsonl or .txt file, or an asset name")
        return path
    from encoderlab.data.assets import ASSETS, asset_jsonl

    if source not in ASSETS:
        raise UserError(
            f"'{source}' is neither a file nor an asset; give a .jsonl/.txt path or an asset name"
        )
    return asset_jsonl(source)


def read_records(source: str) -> list[dict]:
    """Records {"id", "text", "meta"} from a JSONL file or asset; a .txt gives one record per line."""
    path = records_path(source)
    if why := misnamed(path):  # a .gz named .jsonl read as "not UTF-8 text; save it as UTF-8"
        raise UserError(why)
    kind = file_kind(path)
    if kind == "txt":
        from encoderlab.data.sources import SourceConfig, iter_documents

        docs = iter_documents(SourceConfig(location=str(path), txt_unit="line"), on_error="refuse")
        return [{"id": str(i), "text": d.text, "meta": {}} for i, d in enumerate(docs)]
    if kind != "jsonl":
        raise UserError(
            unreadable(path)
            or f"{path} is neither .jsonl (records) nor .txt (one text per line); convert it or rename it"
        )
    text = user_text(path, "save it as UTF-8")
    records = []
    for number, record in json_objects(path, text):
        if not isinstance(record.get("text"), str):
            raise UserError(
                f"{path}:{number} has no string 'text' field; records look like {{\"text\": ...}}"
            )
        records.append(
            {"id": str(record.get("id", number)), "text": record["text"], "meta": record.get("meta") or {}}
        )
    return records


def read_texts(source: str) -> list[str]:
    """The distinct non-empty texts of a source, in file order (the first of each). A repeated text is one
    text: kept twice it counted twice toward CKA's `MIN_TEXTS` (30 texts written twice passed a minimum of
    50) and weighed double, and two draws sharing it were not counted as sharing texts (`cka.draw_overlap`).
    """
    texts = [r["text"] for r in read_records(source) if r["text"].strip()]
    if not texts:
        raise UserError(f"{source} holds no text; give a file with one text per line or JSONL records")
    return distinct_texts(texts, source)


def distinct_texts(texts: Sequence[str], source: str = "the pool of texts") -> list[str]:
    """`texts` in order, each once (the first of each), with a warning naming `source` when any repeats:
    `read_texts` and `cka.compare` (whose pool, given from Python, counted a repeated text twice) drop
    repeats alike, rather than refusing them, as `analyze cka` always has."""
    distinct = list(dict.fromkeys(texts))
    if len(distinct) < len(texts):
        warnings.warn(
            f"{source} holds {count(len(texts) - len(distinct), 'repeated text')}; each text is counted once "
            f"({count(len(distinct), 'distinct text')})",
            stacklevel=3,
        )
    return distinct
