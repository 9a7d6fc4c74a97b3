"""Tokenize a corpus once, on all cores, into flat token files that training memory-maps.

A prepared folder:
    meta.json         format version, recipe, tokenizer hash, dtype, counts, source hashes,
                      decontamination counts
    tokenizer/        a copy of the tokenizer (so the folder is self-describing)
    tokens.bin        train tokens, uint16 when the vocab has at most 65,536 ids, else uint32
    doc_offsets.npy   int64, n_docs + 1 offsets into tokens.bin (document i = [o[i], o[i+1]))
    val/tokens.bin, val/doc_offsets.npy   the held-out validation documents, same layout

Design. The main process streams documents from the sources (`mix_documents`), cuts the stream
into chunks of documents and hands them to a pool of worker processes; each worker removes
contaminated documents, tokenizes the rest (tiktoken for byte-level BPE tokenizers, with ids proven
identical, `data/fastbpe.py`; otherwise the Rust tokenizer's `encode_batch_fast`), wraps
each document with bos/eos (when the tokenizer has them) and returns one flat token array per
chunk. Results are consumed in submission order with a bounded number of chunks in flight, so the
output is byte-identical for any number of workers and memory stays flat whatever the corpus
size (`multiprocessing.Pool.imap` would read the whole input ahead). Tokens and offsets are
appended to files as they arrive; offsets go to a raw file that becomes a .npy at the end.

Validation split: document i (in stream order, after decontamination) is held out when
floor((i+1)f + 1/2) > floor(i f + 1/2) for val_fraction f: exactly round(n f) documents, spread
evenly through the stream, and deterministic with no hashing.

Safety: everything is written into `OUT.tmp/` and renamed to `OUT` only when complete, so a
half-written shard never looks prepared. A folder that already holds a different `meta.json` is
refused (never mixed); the same recipe again is a no-op.

Resume: every `checkpoint_every` chunks the token and offset files are flushed to disk and
`OUT.tmp/progress.json` records their sizes, the counters and a hash chain over the documents read
so far. A prepare that was interrupted (Ctrl-C, SIGKILL, a full disk, a bad record) leaves `OUT.tmp`
behind; rerunning the same recipe truncates the files to the recorded sizes, reads the sources up to
the checkpoint without tokenizing them, checks that they hash the same, and continues. The output is
byte-identical to an uninterrupted run. If the recipe or the documents before the checkpoint
changed, the partial output is discarded and the prepare starts over (with a warning). Re-reading
the prefix costs a pass over the raw text, a small fraction of tokenizing it.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import json
import logging
import multiprocessing
import os
import shutil
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from encoderlab.atomic import replace_folder, write_json_atomic
from encoderlab.config import to_dict
from encoderlab.data.decontaminate import Contamination, build_contamination, resolve_eval_sets
from encoderlab.data.fastbpe import TiktokenBPE, tiktoken_bpe
from encoderlab.data.sources import SourceConfig, SourceStats, describe, mix_documents
from encoderlab.errors import UserError
from encoderlab.locks import folder_lock

log = logging.getLogger(__name__)

FORMAT = "encoderlab-tokens"
FORMAT_VERSION = 1
SPLITS = {"train": ".", "val": "val"}
PROGRESS = "progress.json"


@dataclass(frozen=True, kw_only=True)
class PrepareConfig:
    """What to tokenize and how; everything here decides the bytes written (the recipe)."""

    sources: tuple[SourceConfig, ...]
    """Corpora to read, mixed by their weights."""
    tokenizer: str
    """Tokenizer folder, model folder, prepared folder, asset name or hub id."""
    val_fraction: float = 0.01
    """Share of documents held out for validation."""
    seed: int = 0
    """Seed of the source mixture."""
    stop: Literal["first_exhausted", "all_exhausted"] = "first_exhausted"
    """When a mixture of several sources ends (see encoderlab.data.sources)."""
    decontaminate: tuple[str, ...] = ("auto",)
    """Evaluation sets whose texts are removed: ("auto",) = every fetched default set, () = none."""
    ngram: int = 13
    """Word n-gram length of the overlap test."""
    on_error: Literal["raise", "skip"] = "raise"
    """Unreadable / corrupt / non-UTF-8 input: refuse, or skip and count."""
    dtype: Literal["auto", "uint16", "uint32"] = "auto"
    """Token dtype; auto picks uint16 when the vocab fits."""
    max_docs: int | None = None
    """Stop after this many documents (for samples and benchmarks)."""

    def __post_init__(self):
        if not 0 <= self.val_fraction < 1:
            raise ValueError(f"val_fraction must be in [0, 1), got {self.val_fraction}")


def split_dir(root: Path, split: str) -> Path:
    """The folder holding `split`'s tokens.bin and doc_offsets.npy."""
    if split not in SPLITS:
        raise UserError(f"unknown split '{split}'; valid: {', '.join(SPLITS)}")
    return Path(root) / SPLITS[split]


def read_meta(root: Path) -> dict:
    """The meta.json of a prepared folder, checked for format and version."""
    path = Path(root) / "meta.json"
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(
            f"{root} is not prepared data (no meta.json); run `encoderlab data prepare`"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise UserError(f"{path} is corrupt; delete {root} and prepare it again") from None
    if meta.get("format") != FORMAT:
        raise UserError(f"{path} is not an encoderlab prepared-data file; point at a prepared folder")
    if meta.get("format_version") != FORMAT_VERSION:
        raise UserError(
            f"{root} has prepared-data version {meta.get('format_version')}, this encoderlab reads "
            f"{FORMAT_VERSION}; prepare it again"
        )
    return meta


def choose_dtype(vocab_size: int, requested: str = "auto") -> np.dtype:
    """uint16 when every id fits in 16 bits, else uint32; a requested dtype that is too small fails."""
    fits16 = vocab_size <= 1 << 16
    if requested == "auto":
        return np.dtype(np.uint16 if fits16 else np.uint32)
    if requested == "uint16" and not fits16:
        raise UserError(
            f"a vocab of {vocab_size} ids does not fit in uint16 (max 65,536); use --dtype uint32 or auto"
        )
    if requested not in ("uint16", "uint32"):
        raise UserError(f"dtype must be auto, uint16 or uint32, got '{requested}'")
    return np.dtype(requested)


def val_mask(first: int, n: int, fraction: float) -> np.ndarray:
    """Which of documents first..first+n-1 are held out (see module docstring)."""
    i = np.arange(first, first + n, dtype=np.float64)
    return np.floor((i + 1) * fraction + 0.5) > np.floor(i * fraction + 0.5)


# ---------------------------------------------------------------- workers


_W: dict = {}


def _encoder(tokenizer_json: str, fast: TiktokenBPE | None):
    """texts -> ids: tiktoken when `fast` is given (the same ids, `data/fastbpe.py`), else `tokenizers`."""
    if fast is not None:
        enc = fast.encoding()
        return lambda texts: enc.encode_ordinary_batch(texts, num_threads=1)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(tokenizer_json)
    tok.encode_special_tokens = True  # a literal "<s>" in a document is text, not a document boundary
    return lambda texts: [e.ids for e in tok.encode_batch_fast(texts, add_special_tokens=False)]


def _init_worker(
    tokenizer_json: str,
    fast: TiktokenBPE | None,
    bos: int | None,
    eos: int | None,
    dtype: str,
    contam: Contamination,
):
    if multiprocessing.parent_process() is not None:  # one thread per worker process: no oversubscription
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
    _W.update(encode=_encoder(tokenizer_json, fast), bos=bos, eos=eos, dtype=np.dtype(dtype), contam=contam)


def chunk_digest(docs: list[tuple[str, str]]) -> bytes:
    """SHA-256 of a chunk's document ids and texts (what a resumed prepare checks it re-read)."""
    h = hashlib.sha256()
    for doc_id, text in docs:
        h.update(f"{len(doc_id)}:{doc_id}{len(text)}:{text}".encode("utf-8", "surrogatepass"))
    return h.digest()


def _tokenize_chunk(docs: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray, dict[str, int], bytes]:
    """(flat wrapped tokens, per-document lengths, removal counts, digest) of one chunk of documents."""
    contam: Contamination = _W["contam"]
    counts = {"id": 0, "ngram": 0, "empty": 0}
    reasons = contam.check([d[0] for d in docs], [d[1] for d in docs])
    texts = [text for (_, text), reason in zip(docs, reasons) if reason is None]
    for reason in filter(None, reasons):
        counts[reason] += 1
    ids = [x for x in _W["encode"](texts) if x]
    counts["empty"] = len(texts) - len(ids)
    body = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=_W["dtype"], count=int(body.sum()))
    return (*_wrap(flat, body, _W["bos"], _W["eos"]), counts, chunk_digest(docs))


def _wrap(
    flat: np.ndarray, body: np.ndarray, bos: int | None, eos: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """Insert bos before and eos after every document of a flat array, without a Python loop."""
    nb, ne = int(bos is not None), int(eos is not None)
    lengths = body + nb + ne
    if nb + ne == 0:
        return flat, lengths
    out = np.empty(int(lengths.sum()), dtype=flat.dtype)
    starts = np.cumsum(lengths) - lengths
    is_body = np.ones(len(out), dtype=bool)
    if nb:
        out[starts] = bos
        is_body[starts] = False
    if ne:
        out[starts + lengths - 1] = eos
        is_body[starts + lengths - 1] = False
    out[is_body] = flat
    return out, lengths


# ---------------------------------------------------------------- writing


class _SplitWriter:
    """Appends documents to tokens.bin and a raw offsets file; `finish` writes doc_offsets.npy.

    `at=(n_tokens, n_docs)` reopens the files of an interrupted prepare, cut back to that checkpoint."""

    def __init__(self, folder: Path, dtype: np.dtype, at: tuple[int, int] | None = None):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.dtype = folder, dtype
        self.n_tokens, self.n_docs = at or (0, 0)
        mode = "r+b" if at else "wb"
        self.tokens = open(folder / "tokens.bin", mode)  # noqa: SIM115 (open across appends)
        self.offsets = open(folder / "doc_offsets.raw", mode)  # noqa: SIM115
        if at is None:
            self.offsets.write(np.zeros(1, dtype=np.int64).tobytes())
        for f, size in ((self.tokens, self.n_tokens * dtype.itemsize), (self.offsets, (self.n_docs + 1) * 8)):
            f.truncate(size)
            f.seek(size)

    def sync(self) -> tuple[int, int]:
        """Put everything appended so far on disk; returns the checkpoint (n_tokens, n_docs)."""
        for f in (self.tokens, self.offsets):
            f.flush()
            os.fsync(f.fileno())
        return self.n_tokens, self.n_docs

    def append(self, tokens: np.ndarray, lengths: np.ndarray) -> None:
        self.tokens.write(tokens.astype(self.dtype, copy=False).data)
        self.offsets.write((self.n_tokens + np.cumsum(lengths)).astype(np.int64).data)
        self.n_tokens += int(lengths.sum())
        self.n_docs += len(lengths)

    def finish(self) -> dict:
        self.sync()
        self.close()
        raw = self.folder / "doc_offsets.raw"
        with open(self.folder / "doc_offsets.npy", "wb") as out, open(raw, "rb") as src:
            header = {"descr": np.dtype(np.int64).str, "fortran_order": False, "shape": (self.n_docs + 1,)}
            np.lib.format.write_array_header_1_0(out, header)
            shutil.copyfileobj(src, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        raw.unlink()
        return {"tokens": self.n_tokens, "docs": self.n_docs}

    def close(self) -> None:
        self.tokens.close()
        self.offsets.close()


def _chunks(docs, size: int, max_docs: int | None):
    docs = itertools.islice(docs, max_docs) if max_docs is not None else docs
    while chunk := [(d.id, d.text) for d in itertools.islice(docs, size)]:
        yield chunk


def _ordered_results(chunks, workers: int, initargs: tuple):
    """Results of `_tokenize_chunk` in input order, at most 2 * workers chunks in flight."""
    if workers <= 1:
        _init_worker(*initargs)
        yield from map(_tokenize_chunk, chunks)
        return
    # spawn: the parent may already run tokenizer threads, which fork would copy half-locked.
    with multiprocessing.get_context("spawn").Pool(
        workers, initializer=_init_worker, initargs=initargs
    ) as pool:
        pending: deque = deque()
        for chunk in chunks:
            pending.append(pool.apply_async(_tokenize_chunk, (chunk,)))
            if len(pending) >= 2 * workers:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


def default_workers() -> int:
    """All the cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# ---------------------------------------------------------------- entry point


def _recipe(cfg: PrepareConfig, tok_hash: str, against: list[str], dtype: np.dtype) -> dict:
    recipe = to_dict(cfg)
    del recipe["tokenizer"]  # the same tokenizer reached by another path is the same recipe
    recipe.update(tokenizer_hash=tok_hash, decontaminate=against, dtype=dtype.name)
    return recipe


def _check_out(out: Path, recipe: dict) -> bool:
    """True if `out` already holds this exact recipe; raise if it holds anything else."""
    if (out / "meta.json").is_file():
        meta = read_meta(out)
        if meta.get("recipe") == recipe:
            return True
        differs = sorted(k for k in recipe if meta.get("recipe", {}).get(k) != recipe[k])
        raise UserError(
            f"{out} already holds data prepared differently ({', '.join(differs)} differ); "
            "choose another --out or delete it"
        )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"{out} exists and is not a prepared-data folder; choose another --out or delete it")
    return False


def prepare(
    cfg: PrepareConfig,
    out: Path,
    *,
    workers: int = 0,
    chunk_docs: int = 256,
    checkpoint_every: int = 16,
    progress: bool = True,
) -> Path:
    """Tokenize `cfg.sources` into the prepared folder `out` (see module docstring); returns `out`.

    `checkpoint_every` chunks of `chunk_docs` documents, the progress is put on disk so that an
    interrupted prepare resumes from there."""
    from encoderlab.data.tokenizer import load_tokenizer, spec_fields, tokenizer_hash

    out = Path(out)
    for source in cfg.sources:
        describe(source)  # a bad location fails before any work
    tok = load_tokenizer(cfg.tokenizer)
    spec = spec_fields(tok)
    dtype = choose_dtype(spec["vocab_size"], cfg.dtype)
    against, not_fetched = resolve_eval_sets(cfg.decontaminate)
    recipe = _recipe(cfg, tokenizer_hash(tok), against, dtype)
    out.parent.mkdir(parents=True, exist_ok=True)
    # Two prepares into one folder would delete each other's OUT.tmp: the second is refused.
    with folder_lock(out.with_name(out.name + ".lock"), "data prepare", use=out):
        if _check_out(out, recipe):
            log.info("%s already holds this recipe; nothing to do", out)
            return out
        if not_fetched:
            log.warning(
                "decontamination skips evaluation sets that are not fetched: %s", ", ".join(not_fetched)
            )
        job = _Job(
            cfg=cfg,
            tok=tok,
            spec=spec,
            dtype=dtype,
            recipe=recipe,
            contam=build_contamination(against, cfg.ngram) if against else Contamination(ngram=cfg.ngram),
            workers=workers or default_workers(),
            chunk_docs=chunk_docs,
            checkpoint_every=max(1, checkpoint_every),
            progress=progress,
        )
        _prepare_locked(job, out, not_fetched)
    return out


@dataclass(frozen=True, kw_only=True)
class _Job:
    """A prepare with everything resolved: what writing it needs besides the folder."""

    cfg: PrepareConfig
    tok: object
    spec: dict
    dtype: np.dtype
    recipe: dict
    contam: Contamination
    workers: int
    chunk_docs: int
    checkpoint_every: int
    progress: bool


class _PrefixChanged(Exception):
    """The documents before an interrupted prepare's checkpoint are not the ones read now."""


def _prepare_locked(job: _Job, out: Path, not_fetched: list[str]) -> None:
    """Tokenize into OUT.tmp, resuming its checkpoint if any, and rename it to `out` (the caller
    holds the folder's lock)."""
    tmp = out.with_name(out.name + ".tmp")
    resume = _read_progress(tmp, job)
    if resume is None:
        shutil.rmtree(tmp, ignore_errors=True)  # no checkpoint of this recipe: leftovers are not data
        tmp.mkdir(parents=True)
    done = False
    try:
        try:
            meta = _write(job, tmp, resume)
        except _PrefixChanged:
            log.warning("the sources changed since the interrupted prepare in %s; starting over", tmp)
            shutil.rmtree(tmp)
            tmp.mkdir(parents=True)
            meta = _write(job, tmp, None)
        meta.update(
            recipe=job.recipe, tokenizer={"source": job.cfg.tokenizer, "hash": job.recipe["tokenizer_hash"]}
        )
        meta["decontamination"].update(not_fetched=not_fetched)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
        (tmp / PROGRESS).unlink(missing_ok=True)
        replace_folder(tmp, out)  # replaces an empty `out` only, checked by _check_out
        done = True
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        kept = (
            f"the work up to the last checkpoint is kept in {tmp}: free space and rerun to resume (or delete it)"
            if (tmp / PROGRESS).exists()
            else "the partial output was removed, free space and rerun"
        )
        raise UserError(f"disk full while preparing {out} ({exc.filename or 'output'}); {kept}") from None
    finally:
        if not done and not (tmp / PROGRESS).exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _read_progress(tmp: Path, job: _Job) -> dict | None:
    """The checkpoint an interrupted prepare of this recipe left in `tmp`, if its files hold it."""
    try:
        progress = json.loads((tmp / PROGRESS).read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    if progress.get("recipe") != job.recipe:
        return None
    for split, (n_tokens, n_docs) in progress["splits"].items():
        folder = split_dir(tmp, split)
        try:
            sizes = ((folder / "tokens.bin").stat().st_size, (folder / "doc_offsets.raw").stat().st_size)
        except OSError:
            return None
        if sizes[0] < n_tokens * job.dtype.itemsize or sizes[1] < (n_docs + 1) * 8:
            return None
    return progress


def _link(chain: bytes, digest: bytes) -> bytes:
    """Extend the hash chain over chunks read so far by one chunk's digest."""
    return hashlib.sha256(chain + digest).digest()


def _write(job: _Job, tmp: Path, resume: dict | None) -> dict:
    from tqdm import tqdm

    cfg, dtype = job.cfg, job.dtype
    job.tok.save_pretrained(str(tmp / "tokenizer"))
    bos, eos = job.spec["bos_id"], job.spec["eos_id"]
    if bos is not None and bos == eos:  # GPT-style: one separator token between documents
        bos = None
    resume = resume or {}
    at = resume.get("splits", {})
    writers = {
        s: _SplitWriter(split_dir(tmp, s), dtype, at=tuple(at[s]) if s in at else None) for s in SPLITS
    }
    stats: list[SourceStats] = []
    removed = dict(resume.get("removed", {"id": 0, "ngram": 0, "empty": 0}))
    kept = resumed_after = resume.get("kept", 0)
    n_chunks = resume.get("chunks", 0)
    start = time.perf_counter()
    tokenizer_json = tmp / "tokenizer" / "tokenizer.json"
    fast, why_not = tiktoken_bpe(tokenizer_json.read_text(encoding="utf-8"))
    log.info("tokenizing with %s", "tiktoken (same ids)" if fast else f"tokenizers ({why_not} for tiktoken)")
    initargs = (str(tokenizer_json), fast, bos, eos, dtype.name, job.contam)
    docs = mix_documents(cfg.sources, seed=cfg.seed, stop=cfg.stop, on_error=cfg.on_error, stats=stats)
    chunks = _chunks(docs, job.chunk_docs, cfg.max_docs)
    bar = tqdm(desc="prepare", unit="doc", disable=not job.progress, smoothing=0.1)
    try:
        chain = b""
        for chunk in itertools.islice(chunks, n_chunks):  # re-read what the checkpoint holds
            chain = _link(chain, chunk_digest(chunk))
            bar.update(len(chunk))
        if chain.hex() != resume.get("chain", ""):
            raise _PrefixChanged
        for tokens, lengths, counts, digest in _ordered_results(chunks, job.workers, initargs):
            for k in removed:
                removed[k] += counts[k]
            is_val = val_mask(kept, len(lengths), cfg.val_fraction)
            tok_val = np.repeat(is_val, lengths)
            writers["train"].append(tokens[~tok_val], lengths[~is_val])
            writers["val"].append(tokens[tok_val], lengths[is_val])
            kept += len(lengths)
            chain, n_chunks = _link(chain, digest), n_chunks + 1
            if n_chunks % job.checkpoint_every == 0:
                splits = {s: w.sync() for s, w in writers.items()}
                progress = {"recipe": job.recipe, "chunks": n_chunks, "kept": kept, "removed": removed}
                write_json_atomic(tmp / PROGRESS, {**progress, "splits": splits, "chain": chain.hex()})
            bar.update(len(lengths) + sum(counts.values()))
    except BaseException:
        for w in writers.values():
            w.close()
        raise
    finally:
        bar.close()
        docs.close()
    if kept == 0:
        (tmp / PROGRESS).unlink(missing_ok=True)  # a refused corpus leaves nothing behind
        where = ", ".join(s.location for s in cfg.sources)
        why = " after decontamination removed every document" if removed["id"] + removed["ngram"] else ""
        raise UserError(f"the corpus {where} has no non-empty document{why}; check --source")
    splits = {s: w.finish() for s, w in writers.items()}
    elapsed = time.perf_counter() - start
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "dtype": dtype.name,
        "spec": job.spec,
        "wrap": {"bos": bos, "eos": eos},
        "splits": splits,
        "sources": [s.to_dict() for s in stats],
        "decontamination": {
            **job.contam.summary(),
            "removed_by_id": removed["id"],
            "removed_by_ngram": removed["ngram"],
        },
        "empty_after_tokenization": removed["empty"],
        "resumed_after_docs": resumed_after,
        "seconds": round(elapsed, 3),
        "workers": job.workers,
        "encoder": "tiktoken" if fast else "tokenizers",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
