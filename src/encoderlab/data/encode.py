"""Tokenizing chunks of documents in worker processes, results in input order (`data prepare`).

The main process cuts the document stream into chunks of `(id, text, source, repeat, where)` tuples; each
worker removes contaminated documents (saying where each was and what it matched: the main process names the
evaluation set and example, `Tally.remember`), tokenizes the rest (tiktoken for byte-level BPE tokenizers,
with ids proven identical, `data/fastbpe.py`; otherwise the Rust tokenizer's `encode_batch_fast`),
wraps each document with bos/eos (when the tokenizer has them) and returns one flat token array
per chunk with the lengths, sources and passes of the documents it kept. `ordered_results` hands
results back in submission order with at most 2 x workers chunks in flight, so the output is
byte-identical for any number of workers and memory stays flat whatever the corpus size
(`multiprocessing.Pool.imap` would read the whole input ahead). `Tally` adds up the results in the
main process: tokens per split and source, first passes (unique), the largest id.

Documents are tokenized whole: the tokenizer's truncation and padding are cleared (`_encoder`).
"""

from __future__ import annotations

import hashlib
import itertools
import multiprocessing
import os
import re
from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from encoderlab.data.decontaminate import Contamination, Match
from encoderlab.data.fastbpe import TiktokenBPE
from encoderlab.data.packed import SPLITS

Chunk = list[tuple[str, str, int, int, str]]
"""Documents as (id, text, source index, repeat pass, where: `Document.where`)."""


class ChunkResult(NamedTuple):
    """What tokenizing one chunk gives: the kept documents, wrapped and flattened."""

    tokens: np.ndarray
    lengths: np.ndarray
    """Wrapped length of each kept document."""
    counts: dict[str, int]
    """Documents removed: by id, by n-gram, empty after tokenization."""
    digest: bytes
    """`chunk_digest` of the chunk as read."""
    sources: np.ndarray
    """Source index of each kept document."""
    repeats: np.ndarray
    """Repeat pass of each kept document (0 = first pass)."""
    removed: tuple[tuple[str, Match], ...] = ()
    """Each document removed by decontamination, in order: where it is (FILE:LINE, or its id) and what it
    matched (`Contamination.origin` names the set and example in the main process)."""


_W: dict = {}


def _encoder(tokenizer_json: str, fast: TiktokenBPE | None):
    """texts -> ids: tiktoken when `fast` is given (the same ids, `data/fastbpe.py`), else `tokenizers`."""
    if fast is not None:
        enc = fast.encoding()
        return lambda texts: enc.encode_ordinary_batch(texts, num_threads=1)
    from tokenizers import Tokenizer

    tok = whole_documents(Tokenizer.from_file(tokenizer_json))
    tok.encode_special_tokens = True  # a literal "<s>" in a document is text, not a document boundary
    return lambda texts: [e.ids for e in tok.encode_batch_fast(texts, add_special_tokens=False)]


def whole_documents(tok):
    """A raw `tokenizers.Tokenizer` without the truncation and padding its file may keep.

    A model's tokenizer.json may carry the settings it was last called with (sentence-transformers'
    all-MiniLM-L6-v2: truncate at 128, pad to 128), which transformers resets per call but the raw
    tokenizer applies to every text: each document would be cut to 128 ids and filled with pad ids.
    Whole documents are the unit here; rows are cut by the packer."""
    tok.no_truncation()
    tok.no_padding()
    return tok


def init_worker(
    tokenizer_json: str,
    fast: TiktokenBPE | None,
    bos: int | None,
    eos: int | None,
    dtype: str,
    contam: Contamination,
    names: tuple[dict[str, str] | None, ...] | None = None,
):
    """`names`: how `chunk_digest` names local files' documents (`resume.Chain.names`)."""
    if multiprocessing.parent_process() is not None:  # one thread per worker process: no oversubscription
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
    _W.update(encode=_encoder(tokenizer_json, fast), bos=bos, eos=eos, dtype=np.dtype(dtype), contam=contam)
    _W.update(names=names)


def chunk_digest(docs: Chunk, names: tuple[dict[str, str] | None, ...] | None = None) -> bytes:
    """SHA-256 of a chunk's document ids and texts (what a resumed prepare checks it re-read). `names`: per
    source, its files as written -> resolved (`resume.Chain`), so a local file's ids are hashed with its
    resolved path, the same however the path was written; None: ids as read (checkpoints from before)."""
    h = hashlib.sha256()
    for doc_id, text, source, *_ in docs:
        if names is not None and names[source]:
            doc_id = resolved_id(doc_id, names[source])
        h.update(f"{len(doc_id)}:{doc_id}{len(text)}:{text}".encode("utf-8", "surrogatepass"))
    return h.digest()


_CUT = re.compile("[#:]")


def resolved_id(doc_id: str, files: dict[str, str]) -> str:
    """`doc_id` of a document of a local file with the file's path as written, which it starts with
    (`path#id`, `path:line`, `path`: `sources.iter_documents`, `filereaders`), replaced by the resolved one
    `files` maps it to (the longest path of `files` it starts with); unchanged if it starts with none."""
    for cut in [len(doc_id), *reversed([m.start() for m in _CUT.finditer(doc_id)])]:
        if (path := files.get(doc_id[:cut])) is not None:
            return path + doc_id[cut:]
    return doc_id


def tokenize_chunk(docs: Chunk) -> ChunkResult:
    """Tokenize one chunk in a worker set up by `init_worker` (see the module docstring)."""
    contam: Contamination = _W["contam"]
    counts = {"id": 0, "ngram": 0, "empty": 0}
    matches = contam.matches([d[0] for d in docs], [d[1] for d in docs])
    removed = tuple((d[4] or d[0], m) for d, m in zip(docs, matches) if m is not None)
    for _, (reason, _key) in removed:
        counts[reason] += 1
    clean = [d for d, m in zip(docs, matches) if m is None]
    encoded = _W["encode"]([d[1] for d in clean])
    kept = [i for i, x in enumerate(encoded) if x]
    counts["empty"] = len(clean) - len(kept)
    ids = [encoded[i] for i in kept]
    body = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=_W["dtype"], count=int(body.sum()))
    tokens, lengths = _wrap(flat, body, _W["bos"], _W["eos"])
    sources = np.array([clean[i][2] for i in kept], dtype=np.int64)
    repeats = np.array([clean[i][3] for i in kept], dtype=np.int64)
    return ChunkResult(tokens, lengths, counts, chunk_digest(docs, _W["names"]), sources, repeats, removed)


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


def chunks(docs, size: int, max_docs: int | None):
    """The document stream cut into chunks of `size` (at most `max_docs` documents in all)."""
    docs = itertools.islice(docs, max_docs) if max_docs is not None else docs
    while chunk := [(d.id, d.text, d.source, d.repeat, d.where) for d in itertools.islice(docs, size)]:
        yield chunk


def ordered_results(chunks, workers: int, initargs: tuple):
    """Results of `tokenize_chunk` in input order, at most 2 * workers chunks in flight."""
    if workers <= 1:
        init_worker(*initargs)
        yield from map(tokenize_chunk, chunks)
        return
    # spawn: the parent may already run tokenizer threads, which fork would copy half-locked.
    with multiprocessing.get_context("spawn").Pool(
        workers, initializer=init_worker, initargs=initargs
    ) as pool:
        pending: deque = deque()
        for chunk in chunks:
            pending.append(pool.apply_async(tokenize_chunk, (chunk,)))
            if len(pending) >= 2 * workers:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


def default_workers() -> int:
    """All the cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass
class Tally:
    """Tokens per split and source, those of first passes (unique), and the largest id written."""

    tokens: dict[str, list[int]]
    unique: dict[str, list[int]]
    max_token_id: int = -1
    removed: dict[str, int] = field(default_factory=lambda: {"id": 0, "ngram": 0, "empty": 0})
    first_removed: dict[str, dict] = field(default_factory=dict)
    """Per evaluation set, by its position in the sets (`Contamination.against`: a resumed recipe has the same
    sets, though a task file's set may be named by another path now), its first removed document: `at`
    (FILE:LINE, or its id), `by` (id or ngram) and the `example` it matched; in the order first met. In
    progress.json with the rest, so a resume keeps it; `named` gives it by the sets' names."""
    passes: list[list[int]] = field(default_factory=list)
    """Per source, [pass, position in it] (mixtures that hold out per source, `data/holdout.py`)."""

    @classmethod
    def empty(cls, n_sources: int) -> Tally:
        return cls({s: [0] * n_sources for s in SPLITS}, {s: [0] * n_sources for s in SPLITS})

    def add(self, split: str, result: ChunkResult, sel: np.ndarray) -> None:
        n = len(self.tokens[split])
        lengths, sources = result.lengths[sel], result.sources[sel]
        first = result.repeats[sel] == 0
        for into, mask in ((self.tokens, slice(None)), (self.unique, first)):
            counts = np.bincount(sources[mask], weights=lengths[mask], minlength=n)
            into[split] = [a + int(b) for a, b in zip(into[split], counts)]

    def remember(self, result: ChunkResult, contam: Contamination) -> None:
        """Count `result`'s removals and remember each evaluation set's first one."""
        for k in self.removed:
            self.removed[k] += result.counts[k]
        for where, match in result.removed:
            index, example = contam.origin(match)
            self.first_removed.setdefault(str(index), {"at": where, "by": match[0], "example": example})

    def named(self, against: list[str]) -> dict[str, dict]:
        """`first_removed` by the names of the sets `against` (meta.json's, metrics.jsonl's)."""
        return {against[int(i)]: where for i, where in self.first_removed.items()}

    def see(self, tokens: np.ndarray) -> None:
        if len(tokens):
            self.max_token_id = max(self.max_token_id, int(tokens.max()))
