"""`encoderlab data tokenizer | prepare | merge | inspect`: thin wrappers over the Python API."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Literal

import tyro

from encoderlab.atomic import json_text
from encoderlab.cliargs import Repeated, RequiredRepeated, flatten
from encoderlab.data.mixing import Stop
from encoderlab.data.prepmetrics import SKIP_REASONS, first_skipped
from encoderlab.data.sources import parse_source
from encoderlab.errors import UserError

INSPECT_CHUNK = 256
"""Rows `data inspect` reads at once (its memory: this many rows of --seq-len tokens, whatever --rows)."""


def _log_to_stderr() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")


def tokenizer(
    source: RequiredRepeated,
    out: Path,
    vocab_size: int = 32_768,
    kind: Literal["bpe", "wordpiece"] = "bpe",
    lowercase: bool = False,
    max_docs: int | None = None,
    seed: int = 0,
    stop: Stop = "first_exhausted",
    on_error: Literal["raise", "skip"] = "raise",
) -> None:
    """Train a tokenizer (byte-level BPE, or WordPiece) with pad/bos/eos/mask/unk tokens on --source.

    Args:
        source: Corpora: asset names, named hub corpora, files, folders, globs or hf:ORG/NAME, each
            optionally followed by #text_field=...,weight=... (see docs/data.md); repeat the flag
            or list several after it.
        out: Folder to write the tokenizer to (must not exist or be empty).
        vocab_size: Number of ids, special tokens included.
        kind: bpe (byte-level, lossless) or wordpiece (BERT-style).
        lowercase: Lower-case text before tokenizing.
        max_docs: Train on at most this many documents.
        seed: Seed of the source mixture.
        stop: When a mixture ends: first_exhausted (exact proportions) or all_exhausted (repeat small sources).
        on_error: Unreadable/corrupt/non-UTF-8 input: refuse, or skip and count.
    """
    from encoderlab.data.tokenizer import token_spec, train_tokenizer

    _log_to_stderr()
    tok = train_tokenizer(
        [parse_source(s) for s in flatten(source, "--source")],
        vocab_size,
        out,
        kind,
        lowercase=lowercase,
        max_docs=max_docs,
        seed=seed,
        stop=stop,
        on_error=on_error,
    )
    print(f"{out}\t{token_spec(tok)}")


def prepare(
    source: RequiredRepeated,
    tokenizer: str,
    out: Path,
    val_fraction: float = 0.01,
    decontaminate: Repeated = (),
    ngram: int = 13,
    seed: int = 0,
    stop: Stop = "first_exhausted",
    on_error: Literal["raise", "skip"] = "raise",
    dtype: Literal["auto", "uint16", "uint32"] = "auto",
    max_docs: int | None = None,
    workers: int = 0,
    checkpoint_every: int = 16,
    shard: str | None = None,
) -> None:
    """Tokenize --source on all cores into a prepared folder (tokens.bin, doc_offsets.npy, meta.json; progress
    as JSON lines in metrics.jsonl).

    Args:
        source: Corpora: asset names, named hub corpora, files, folders, globs or hf:ORG/NAME, each
            optionally followed by #text_field=...,weight=... (see docs/data.md); repeat the flag
            or list several after it.
        tokenizer: Tokenizer folder, model folder, asset name or hub id.
        out: Output folder (refused if it holds other data).
        val_fraction: Share of documents held out for validation.
        decontaminate: Evaluation sets to remove: auto (all fetched default sets; the default), none,
            or asset names / files.
        ngram: Word n-gram length of the overlap test (3 to 1000; 13 is GPT-3's rule).
        seed: Seed of the source mixture.
        stop: When a mixture ends: first_exhausted (exact proportions) or all_exhausted (repeat small sources).
        on_error: Unreadable/corrupt/non-UTF-8 input: refuse, or skip and count.
        dtype: Token dtype (auto: uint16 when the vocab fits).
        max_docs: Read at most this many documents, like head -n: decontaminated and held-out ones count.
        workers: Tokenizer processes (0 = all cores).
        checkpoint_every: Chunks of 256 documents between resume checkpoints (an interrupted
            prepare rerun with the same arguments continues from the last one).
        shard: Tokenize only slice I of N of the source's files, into OUT.shards/ (I/N with I from 0 to
            N-1, or auto from a SLURM array or torchrun's RANK/WORLD_SIZE); `data merge --out OUT` then joins them.
    """
    from encoderlab.data.prepare import PrepareConfig, read_meta
    from encoderlab.data.prepare import prepare as run
    from encoderlab.data.shard import parse_shard

    _log_to_stderr()
    part = parse_shard(shard)
    cfg = PrepareConfig(
        sources=tuple(parse_source(s) for s in flatten(source, "--source")),
        tokenizer=tokenizer,
        val_fraction=val_fraction,
        seed=seed,
        stop=stop,
        decontaminate=flatten(decontaminate, "--decontaminate") or ("auto",),
        ngram=ngram,
        on_error=on_error,
        dtype=dtype,
        max_docs=max_docs,
    )
    written = run(cfg, out, shard=part, workers=workers, checkpoint_every=checkpoint_every)
    _print_written(written, read_meta(written))


def merge(out: Path, delete_parts: bool = False) -> None:
    """Join the parts of `data prepare --shard I/N --out OUT` (in OUT.shards/) into OUT.

    Args:
        out: The --out the sharded prepares were given.
        delete_parts: Delete the parts once OUT is complete, and OUT.shards/ unless it holds other files.
    """
    from encoderlab.data.merge import merge as run
    from encoderlab.data.prepare import read_meta

    _log_to_stderr()
    merged = run(out, delete_parts=delete_parts)
    _print_written(merged, read_meta(merged))


def _print_written(out: Path, meta: dict) -> None:
    """The summary of a prepared folder `out` on stdout, and on stderr the line of what decontamination
    removed (`removed_line`) and the note of a val split that holds no document (`holdout.no_validation_note`;
    a rerun that does nothing says them again)."""
    import sys

    from encoderlab.data.holdout import no_validation_note

    print(json_text({"out": str(out), **_summary(meta)}))
    for line in (removed_line(meta), no_validation_note(meta)):
        if line is not None:
            print(line, file=sys.stderr)


def removed_line(meta: dict) -> str | None:
    """One line naming how many documents decontamination removed and where the first is, with the evaluation
    example it matched (meta.json's `decontamination.first_removed`, in the order met); None when it removed
    none. The counts alone left a user no way to find which of their documents went."""
    d = meta.get("decontamination") if isinstance(meta.get("decontamination"), dict) else {}
    by_id, by_ngram = d.get("removed_by_id"), d.get("removed_by_ngram")
    if not (isinstance(by_id, int) and isinstance(by_ngram, int) and by_id + by_ngram):
        return None
    line = f"decontamination removed {by_id + by_ngram:,} document(s) ({by_id:,} by id, {by_ngram:,} by n-gram overlap)"
    first = d.get("first_removed")
    if isinstance(first, dict) and first:
        name, where = next(iter(first.items()))
        if isinstance(where, dict):
            how = "its id" if where.get("by") == "id" else "an n-gram of"
            line += f"; the first: {where.get('at')}, matching {how} {name} example {where.get('example')}"
            line += " (each set's first: meta.json, decontamination.first_removed)" if len(first) > 1 else ""
    return f"encoderlab: note: {line}"


def _summary(meta: dict) -> dict:
    """The counts to print. Only splits and dtype are checked on open (`packed.read_meta`); the rest is
    shown as recorded, None where a hand-edited meta.json lacks it (`data inspect` is how one looks)."""
    d = meta.get("decontamination") if isinstance(meta.get("decontamination"), dict) else {}
    sources = [s for s in meta.get("sources") or () if isinstance(s, dict)]

    def total(key: str):
        counts = [s.get(key) for s in sources]
        return sum(counts) if counts and all(isinstance(c, int) for c in counts) else None

    return {
        "splits": meta["splits"],
        "dtype": meta["dtype"],
        "removed": {"by_id": d.get("removed_by_id"), "by_ngram": d.get("removed_by_ngram")},
        "first_removed": d.get("first_removed", {}),
        "skipped": {k: total(k) for k in SKIP_REASONS},
        "first_skipped": first_skipped(sources),
        "unique_tokens": meta.get("unique_tokens"),
        "max_token_id": meta.get("max_token_id"),
        "seconds": meta.get("seconds"),
        "resumed_after_docs": meta.get("resumed_after_docs", 0),
    }


def inspect(
    path: Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="PREPARED")],
    split: Literal["train", "val"] = "train",
    seq_len: int = 64,
    rows: int = 2,
    seed: int = 0,
) -> None:
    """Show a prepared folder's counts and the first packed rows, decoded, as the reader serves them.

    Args:
        path: Prepared folder.
        split: Which split to read.
        seq_len: Row length.
        rows: Rows to show (at most what the split holds).
        seed: Reader seed.
    """
    from encoderlab.data.batch import BatchLayout
    from encoderlab.data.reader import PackedReader
    from encoderlab.data.tokenizer import load_tokenizer

    if seq_len < 1:
        raise UserError(f"--seq-len must be >= 1 (tokens per row), got {seq_len}")
    if rows < 1:
        raise UserError(f"--rows must be >= 1, got {rows}")
    if seed < 0:  # numpy's generators take no negative seed
        raise UserError(f"--seed must be >= 0, got {seed}")
    chunk = min(rows, INSPECT_CHUNK)  # rows read at once: memory stays bounded whatever --rows says
    layout = BatchLayout(seq_len=seq_len, micro_batch_size=chunk)
    reader = PackedReader(path, layout, seed=seed, split=split, knob="--seq-len")
    if rows > reader.rows_per_epoch:  # past them the reader starts the split over in another order
        raise UserError(
            f"--rows {rows}: the {split} split of {path} holds {reader.rows_per_epoch:,} rows of --seq-len "
            f"{seq_len} ({reader.n_tokens:,} tokens); pass --rows {reader.rows_per_epoch} or fewer"
        )
    print(json_text(_summary(reader.meta), indent=1))
    tok = load_tokenizer(path)
    for r in range(rows):
        if r % chunk == 0:
            batch = reader.batch(r // chunk, 0, 0)  # the rows of one batch of `rows`, `chunk` at a time
        print(f"--- row {r} (documents: {int(batch.doc_ids[r % chunk].max()) + 1})")
        print(tok.decode(batch.input_ids[r % chunk].tolist()))
