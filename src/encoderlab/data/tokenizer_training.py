"""Training a tokenizer on a corpus: byte-level BPE or WordPiece, bounded on hostile text, stoppable.

`train_tokenizer` builds a byte-level BPE (default: every string round-trips exactly, no unknown
token is ever produced) or a WordPiece vocabulary (BERT-style; lossy on whitespace and, if asked,
case) with explicit pad/bos/eos/mask/unk tokens at ids 0-4, trained by the `tokenizers` library
from a stream of documents, and saves it as a `PreTrainedTokenizerFast` folder written atomically.

Bounded work. The trainer's cost grows faster than linearly with the length of a pre-tokenized
word: a 1 MB line without a space (a base64 blob, a minified file) is one word, and ran for more
than ten minutes. Every run of more than MAX_WORD_CHARS (256) non-space characters, or of space
characters, is therefore cut every MAX_WORD_CHARS characters before the trainer sees it, so no word
is longer than that (the pre-tokenizers never join across such a cut). Such a line then costs what
ordinary text of its size costs (about 12 s for 1 MB of random letters at 8k ids on one core, with or
without spaces). Ordinary prose has no word that long, so its tokenizer is unchanged; merges longer
than MAX_WORD_CHARS bytes cannot be learned, which no useful vocabulary needs.

Exactly the size asked, or a refusal. The `tokenizers` trainers keep their whole alphabet and the
special tokens whatever `vocab_size` says, so a size below that silently gave more ids than asked
(WordPiece at 3 ids: 44 on a small corpus). A byte-level BPE's alphabet is fixed (256 bytes), so a
size below `min_vocab_size()` is refused before training; a WordPiece alphabet is the corpus's
characters and their '##' forms, known only once trained, so that size is checked after training
(in memory) and refused, naming the smallest size that works, before the output folder is made.

Stoppable. The Rust trainer does not return to Python while it merges, so Ctrl-C would wait for it
(issue: ignored for minutes). Training therefore runs in a child process (spawn) that sends the
trained tokenizer back as JSON; the parent waits in short polls, so Ctrl-C or SIGTERM
(`encoderlab.interrupts`) stops it at once: the child is terminated, nothing is written, and the
command ends with the usual "interrupted; completed work is kept" line; a parent killed outright
takes the child with it (`interrupts.end_with_parent`). Cost: about a second to start the child.
"""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing
import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from encoderlab import words
from encoderlab.atomic import atomic_folder, check_renamable, check_sibling, write_json_atomic
from encoderlab.config import to_dict
from encoderlab.data.filereaders import MissingTextField
from encoderlab.data.freshness import TXT_READING
from encoderlab.data.mixing import (
    EmptySource,
    Stop,
    announce_sources,
    check_disjoint,
    check_seed,
    check_stop,
    empty_corpus,
    mix_documents,
)
from encoderlab.data.sources import SourceConfig, recorded_on_error
from encoderlab.errors import UserError
from encoderlab.interrupts import end_with_parent
from encoderlab.outdir import MARKER, check_output, create_output

log = logging.getLogger(__name__)

MAX_WORD_CHARS = 256
"""Longest run of non-space (or of space) characters the trainer sees as one piece."""
_RUNS = re.compile(rf"\S{{{MAX_WORD_CHARS + 1},}}|\s{{{MAX_WORD_CHARS + 1},}}")
DEFAULT_SPECIALS = {"pad": "<pad>", "bos": "<s>", "eos": "</s>", "mask": "<mask>", "unk": "<unk>"}
KIND = "data tokenizer"
SOURCES = "sources.json"
"""Beside the tokenizer files: the sources it was trained on, as a prepared folder's meta.json records
them (`recipe.sources`, and per source the files read with their size, sha256 and mtime), so a
tokenizer trained on files that changed since can be told (`data/freshness.py`, a study's checks), and
the training settings (`recipe.kind`, `vocab_size`, `lowercase`, `specials`, `seed`), so a rerun with the
same arguments onto its own output is known to have nothing to do (`_refuse_unless_done`)."""


def bounded(text: str, cap: int = MAX_WORD_CHARS) -> Iterator[str]:
    """`text` in pieces (in order, joining back to `text`) with no run of more than `cap` non-space
    or space characters inside one piece."""
    runs = _RUNS if cap == MAX_WORD_CHARS else re.compile(rf"\S{{{cap + 1},}}|\s{{{cap + 1},}}")
    cuts = [c for m in runs.finditer(text) for c in range(m.start() + cap, m.end(), cap)]
    start = 0
    for cut in cuts:
        yield text[start:cut]
        start = cut
    yield text[start:]


SPECIAL_ROLES = ("pad", "bos", "eos", "mask", "unk")

MAX_VOCAB_SIZE = 2**24
"""The largest vocabulary trained: the trainer reserves memory per id up front, and a size of 1e11
killed its process (a Rust allocation abort, then an EOFError traceback in the parent)."""


def min_vocab_size() -> int:
    """The smallest vocabulary a byte-level BPE can be trained to: its 256 byte symbols and the special
    tokens (checked here and by a study's datasets before anything is written)."""
    from tokenizers import pre_tokenizers

    return len(pre_tokenizers.ByteLevel.alphabet()) + len(SPECIAL_ROLES)


def _too_small(asked: int, needed: int, who: str, alphabet: str) -> str:
    return (
        f"vocabulary size {asked} is below the {needed} ids {who} (its {alphabet} and special tokens); "
        f"use --vocab-size {needed} or more"
    )


def _build(kind: str, specials: dict[str, str], vocab_size: int, lowercase: bool, progress: bool):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tokens = [specials[r] for r in SPECIAL_ROLES]
    if vocab_size > MAX_VOCAB_SIZE:  # the trainer reserves room per id: 1e11 aborted it (Rust's OOM)
        raise UserError(
            f"vocabulary size {vocab_size} is beyond the {MAX_VOCAB_SIZE:,} ids a tokenizer is trained to "
            "here (the largest in use have about 256k); use a smaller --vocab-size"
        )
    if kind == "bpe":
        alphabet = pre_tokenizers.ByteLevel.alphabet()
        if vocab_size < min_vocab_size():
            raise UserError(
                _too_small(vocab_size, min_vocab_size(), "a byte-level BPE needs", "256 byte symbols")
            )
        tok = Tokenizer(models.BPE())
        tok.normalizer = normalizers.Lowercase() if lowercase else None
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, special_tokens=tokens, initial_alphabet=alphabet, show_progress=progress
        )
    elif kind == "wordpiece":
        tok = Tokenizer(models.WordPiece(unk_token=specials["unk"]))
        tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(  # below its alphabet it learns that (refused after training)
            vocab_size=max(vocab_size, 0), special_tokens=tokens, show_progress=progress
        )
    else:
        raise UserError(f"tokenizer kind must be 'bpe' or 'wordpiece', got '{kind}'")
    bos, eos = specials["bos"], specials["eos"]
    template = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} $B:1 {eos}:1", special_tokens=[(bos, 1), (eos, 2)]
    )
    # Byte-level offsets include the leading space; trimming them keeps QA/NER span alignment exact.
    tok.post_processor = (
        processors.Sequence([processors.ByteLevel(trim_offsets=True), template])
        if kind == "bpe"
        else template
    )
    return tok, trainer


def _texts(job: dict, counter: list[int], stats: list) -> Iterator[str]:
    """The training texts of `job`: its sources mixed as `data prepare` mixes them (seed, stop rule), cut
    by `bounded`, at most `max_docs` documents (`counter[0]`: how many were read)."""
    sources, max_docs = job["sources"], job["max_docs"]
    mixed = mix_documents(sources, seed=job["seed"], stop=job["stop"], on_error=job["on_error"], stats=stats)
    # closed when it stops, so the files it read record their hashes (`stats`, for sources.json)
    with contextlib.closing(mixed) as docs:
        for doc in docs:
            if max_docs is not None and counter[0] >= max_docs:
                return
            counter[0] += 1
            yield from bounded(doc.text)


def trained_from(folder: Path) -> dict | None:
    """What a tokenizer folder records having been trained on (its SOURCES file: the `recipe` and
    `sources` of a prepared folder's meta.json, which `data.freshness.source_change` reads); None for a
    folder without it (a tokenizer from elsewhere, or trained before it was written) or a damaged one
    (`sources_damage` says which)."""
    return _read_sources(Path(folder))[0]


def sources_damage(folder: Path) -> str | None:
    """Why the SOURCES file of a tokenizer `folder` is there but cannot be read as a record of what it
    was trained on ("not valid JSON", "unreadable: ...", ...); None when it is missing or sound."""
    return _read_sources(Path(folder))[1]


def _read_sources(folder: Path) -> tuple[dict | None, str | None]:
    from encoderlab import jsonlines

    path = folder / SOURCES
    if not path.exists() and not path.is_symlink():
        return None, None
    try:
        record = jsonlines.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except OSError as exc:
        return None, f"unreadable: {exc.strerror or exc}"
    except ValueError:
        return None, "not valid JSON"
    if not (isinstance(record, dict) and isinstance(record.get("recipe"), dict)):
        return None, "not an object with a recipe and a list of sources"
    if not isinstance(record.get("sources"), list):
        return None, "not an object with a recipe and a list of sources"
    return record, None


def _recipe(job: dict) -> dict:
    """What SOURCES records a training `job` read (as a prepared folder's meta.json records its recipe)
    and how it trained: every argument but `progress`."""
    recipe = {
        "sources": [to_dict(s) for s in job["sources"]],
        "max_docs": job["max_docs"],
        "on_error": recorded_on_error(job["on_error"]),
        # recorded before `--stop` existed as "first_exhausted", its default: those folders' recipe is unchanged
        "stop": job["stop"],
    }
    return recipe | {k: job[k] for k in ("kind", "vocab_size", "lowercase", "specials", "seed")}


def _refuse_unless_done(out: Path, recipe: dict) -> None:
    """Refuse an `out` that holds a tokenizer, unless it is the one `recipe` trains (its SOURCES records
    this recipe) from the sources as they are now (`data.freshness.source_change`): a rerun of a finished
    `data tokenizer` then has nothing to do, as `data prepare`'s and `data merge`'s have (it was refused,
    naming a folder that held what was asked). The recipe holds every argument (the training settings
    since this check: an older folder is refused, its settings unknown); WordPiece is not reproducible,
    so training again would not have given the same folder either."""
    from encoderlab.data.freshness import source_change

    record = trained_from(out)
    if record is None or record["recipe"] != json.loads(json.dumps(recipe)):  # as written (tuples: lists)
        raise UserError(f"{out} already holds a tokenizer; choose another --out or delete it")
    if (change := source_change(record)) is not None:
        raise UserError(
            f"{out} already holds a tokenizer trained on sources that changed since ({change}); choose another "
            "--out or delete it"
        )


def _child(conn, job: dict) -> None:
    """Train in this (child) process and send back ("ok", (tokenizer JSON, what each source read),
    documents) or an error."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; it terminates us on Ctrl-C
    end_with_parent(job["parent"])  # a parent killed outright cannot: its result would go nowhere
    # The Rust trainer's progress output writes to fd 1; the command's stdout is its result line alone
    os.dup2(2, 1)
    try:
        # off a terminal the trainer's progress is only blank lines, which came before a refusal's line
        progress = job["progress"] and os.isatty(2)
        tok, trainer = _build(job["kind"], job["specials"], job["vocab_size"], job["lowercase"], progress)
        counter, stats = [0], []
        texts = _texts(job, counter, stats)
        tok.train_from_iterator(texts, trainer=trainer)
        texts.close()  # the trainer may stop reading before the end: the files read record their hashes
        conn.send(("ok", (tok.to_str(), [s.to_dict() for s in stats]), counter[0]))
    except MissingTextField as exc:  # its parts cross to the parent, whose caller may say it its way
        conn.send(("field", (str(exc), exc.problem, exc.path, exc.guess), 0))
    except EmptySource as exc:
        conn.send(("empty", (str(exc), exc.problem, exc.locations), 0))
    except UserError as exc:
        conn.send(("user", str(exc), 0))
    except Exception as exc:  # a bug: the parent re-raises it with this text
        import traceback

        conn.send(("bug", traceback.format_exc() or repr(exc), 0))
    finally:
        conn.close()


def _train_in_child(job: dict) -> tuple[tuple[str, list[dict]], int]:
    ctx = multiprocessing.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, {**job, "parent": os.getpid()}), daemon=True)
    try:
        proc.start()  # inside the try: a Ctrl-C while it spawns must still end the child
        send.close()
        while not receive.poll(0.2):  # short waits: Ctrl-C and SIGTERM are handled between them
            if not proc.is_alive():
                raise RuntimeError(f"the tokenizer training process died (exit code {proc.exitcode})")
        try:
            status, payload, count = receive.recv()
        except EOFError:  # a child gone without a word closes the pipe, which poll reports as readable
            proc.join()
            raise RuntimeError(f"the tokenizer training process died (exit code {proc.exitcode})") from None
        proc.join()
    finally:
        if proc.is_alive():
            proc.terminate()
            proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join()
        send.close()
        receive.close()
    if status == "user":
        raise UserError(payload)
    if status == "field":
        raise MissingTextField(*payload)
    if status == "empty":
        raise EmptySource(*payload)
    if status == "bug":
        raise RuntimeError(f"tokenizer training failed in its process:\n{payload}")
    return payload, count


def _checked(trained: str, count: int, job: dict):
    """The trained tokenizer, or a refusal (before anything is written) if it is not what was asked."""
    from tokenizers import Tokenizer

    if count == 0:
        raise empty_corpus(job["sources"])
    tok = Tokenizer.from_str(trained)
    # The trainers keep their whole alphabet (and the special tokens) whatever size was asked, and
    # WordPiece's alphabet is the corpus's characters and their '##' forms: only training knows it.
    if tok.get_vocab_size() > job["vocab_size"]:
        who = f"this corpus needs for a {job['kind']} tokenizer"
        raise UserError(_too_small(job["vocab_size"], tok.get_vocab_size(), who, "alphabet"))
    if tok.get_vocab_size() < job["vocab_size"]:  # the corpus ran out of merges or words: not an error
        log.warning(
            "the tokenizer has %d ids, fewer than the %d asked: its corpus (%s) holds no more "
            "%s; train on more text to get %d",
            tok.get_vocab_size(), job["vocab_size"], words.count(count, "document"),
            "merges" if job["kind"] == "bpe" else "words", job["vocab_size"],
        )  # fmt: skip
    return tok


def _drop_lone_marker(out: Path) -> None:
    """Remove outdir's marker from `out` when it holds nothing else, so the finished tokenizer's rename
    replaces it. Checked again after the training: another `data tokenizer` on this --out may have
    finished meanwhile, and its marker is its own (the rename is then refused, "filled by another command")."""
    if out.is_dir() and [p.name for p in out.iterdir()] == [MARKER]:
        (out / MARKER).unlink(missing_ok=True)


def _warn_not_reproducible() -> None:
    log.warning(
        "WordPiece training is not reproducible: tokenizers numbers its '##' pieces in hash-map order, "
        "so two runs on the same corpus can give different vocabularies (huggingface/tokenizers#1794); "
        "keep the trained folder, or use the default byte-level BPE, which is reproducible"
    )


def _check_settings(specials: dict[str, str], max_docs: int | None, seed: int, stop: Stop) -> None:
    """Refuse settings `train_tokenizer` cannot train with, before it reads anything."""
    if len(set(specials.values())) != len(specials):
        raise UserError(f"special tokens must be distinct, got {specials}")
    if max_docs is not None and max_docs < 1:
        raise UserError(f"--max-docs must be >= 1, got {max_docs}; leave it out to read everything")
    check_seed(seed)
    check_stop(stop)


def train_tokenizer(
    sources: SourceConfig | list[SourceConfig] | tuple[SourceConfig, ...],
    vocab_size: int,
    out: Path,
    kind: Literal["bpe", "wordpiece"] = "bpe",
    *,
    specials: dict[str, str] | None = None,
    lowercase: bool = False,
    max_docs: int | None = None,
    seed: int = 0,
    stop: Stop = "first_exhausted",
    on_error: Literal["raise", "skip", "refuse"] = "raise",
    progress: bool = True,
):
    """Train a tokenizer on `sources` (mixed by weight) and save it to `out` as a
    PreTrainedTokenizerFast folder; returns the loaded tokenizer (see the module docstring)."""
    from encoderlab.data.tokenizer import load_tokenizer

    out = Path(out)
    sources = [sources] if isinstance(sources, SourceConfig) else list(sources)
    if not sources:  # was found in the training process, after its progress output (blank lines)
        raise UserError("no source given; pass at least one --source")
    check_output(out, KIND, sources=[Path(s.location) for s in sources])  # never inside what it reads
    check_sibling(out)  # refused now, not after the training
    specials = {**DEFAULT_SPECIALS, **(specials or {})}
    job = dict(
        kind=kind, specials=specials, vocab_size=vocab_size, lowercase=lowercase, progress=progress,
        sources=sources, seed=seed, stop=stop, on_error=on_error, max_docs=max_docs,
    )  # fmt: skip
    recipe = _recipe(job)
    if out.is_dir() and any(p.name != MARKER for p in out.iterdir()):
        _refuse_unless_done(out, recipe)
        log.info("%s already holds the tokenizer these arguments train, on these sources; nothing to do", out)
        return load_tokenizer(out)
    check_renamable(out)  # refused now, not after the training (a finished tokenizer there needs no rename)
    _check_settings(specials, max_docs, seed, stop)
    _build(kind, specials, vocab_size, lowercase, False)  # a bad kind or vocab size fails here, at once
    checked = check_disjoint(sources)  # bad locations fail before the child starts
    (trained, read), count = _train_in_child(job)
    from transformers import PreTrainedTokenizerFast  # here: a refusal above needs no transformers (a second)

    fast = PreTrainedTokenizerFast(
        tokenizer_object=_checked(trained, count, job),
        **{f"{role}_token": token for role, token in specials.items()},
    )
    # said once the corpus passed its checks (an empty one is found by the training): was said first, so
    # `--source empty.txt` printed a line without the `encoderlab:` prefix before the refusal's
    announce_sources(sources, checked)
    if kind == "wordpiece":  # said of a tokenizer that passed its checks, not before a refusal
        _warn_not_reproducible()
    _drop_lone_marker(out)
    with atomic_folder(out) as tmp:  # replaces an empty `out` only
        create_output(tmp, KIND)
        fast.save_pretrained(str(tmp))
        write_json_atomic(tmp / SOURCES, {"recipe": recipe, "sources": read, "txt_reading": TXT_READING})
    return load_tokenizer(out)
