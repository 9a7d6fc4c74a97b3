"""Serve packed rows from a prepared folder: the `BatchSource` every pretraining run reads.

Packing design: permuted fixed chunks (the OLMo-core way). A split's tokens (documents already
wrapped with bos/eos, in prepared order) are one stream of N tokens. Epoch e cuts that stream
into R = N // T consecutive rows of T = seq_len tokens, starting at a shift s_e in [0, N - R*T],
and visits them in the order of a permutation of range(R); both come from a generator seeded by
(seed, e). Global row g is row g mod R of epoch g // R, and the rows served at (step, micro, rank)
are `layout.first_row(step, micro, rank)` onwards, so a batch is a pure function of those numbers:
resume needs only the step, two objectives (or two grad_accum/world_size layouts with the same
global batch) read identical tokens, and ranks read disjoint slots of the same global batch.

Each row is one contiguous slice of the memory-mapped token file, so reading costs one slice per
row and one vectorised `searchsorted` over the document offsets for the document ids; no padding
and no per-token Python work. Document ids are local to a row (0, 1, 2, ... at each document
start, which is where the prepared bos sits), and positions restart at 0 at every document and
at the row start, since a row that begins mid-document cannot see that document's beginning.

Trade-offs against permuting documents and re-packing each epoch (Megatron's way): rows are cut
at the same places within an epoch's stream, so a document split at a row boundary is split at a
different place only when the epoch shift moves it (shifts range over the N mod T leftover
tokens), and a row's documents are neighbours in the prepared order, which a document-masked
attention makes irrelevant. In exchange the index is one permutation of R rows (8 bytes per row,
about 390 MB for 100B tokens at T = 2048) instead of per-document arrays, rows are contiguous
reads, and nothing has to be cached on disk. At most N mod T tokens per epoch (the ends outside
the shifted window) are unused in that epoch.

An epoch boundary is explicit: the first time a reader serves a row of epoch e >= 1 it logs it
once (logging module), `epoch_of(step)` tells the trainer where it is, and `repeat_note` is what
`pretrain` prints before it starts a run that will read text more than once.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch

from encoderlab.data.batch import BatchLayout, PackedBatch, StepOffset, TokenSpec
from encoderlab.data.packed import check_one_row, open_split, read_meta, split_dir
from encoderlab.data.synthetic import positions_from_doc_ids
from encoderlab.errors import UserError

log = logging.getLogger(__name__)


def check_compatible(
    meta: dict | Path | str,
    vocab_size: int,
    max_seq_len: int,
    seq_len: int | None = None,
    tokenizer_hash: str | None = None,
) -> None:
    """Refuse prepared data a model cannot read: ids beyond its embedding table, a tokenizer other
    than the model's (when its hash is known), or rows longer than its context."""
    if not isinstance(meta, dict):
        meta = read_meta(Path(meta))
    data_vocab = meta["spec"]["vocab_size"]
    if data_vocab > vocab_size:
        raise UserError(
            f"the prepared data uses a tokenizer with {data_vocab} ids but the model has {vocab_size} embedding rows; "
            "prepare the data with the model's tokenizer or build the model with vocab_size >= "
            f"{data_vocab}"
        )
    if tokenizer_hash is not None and tokenizer_hash != meta["tokenizer"]["hash"]:
        raise UserError(
            f"the prepared data was tokenized with another tokenizer ({meta['tokenizer']['source']}) than the "
            "model's; prepare it again with the model's tokenizer"
        )
    if seq_len is not None and seq_len > max_seq_len:
        raise UserError(
            f"seq_len {seq_len} is above the model's max_seq_len {max_seq_len}; lower seq_len or use a model "
            "with a larger max_seq_len"
        )


class PackedReader:
    """Packed rows of a prepared folder's split, as a deterministic `BatchSource`."""

    def __init__(
        self,
        path: Path | str,
        layout: BatchLayout,
        seed: int = 0,
        split: str = "train",
        knob: str = "seq_len",
        meta: dict | None = None,
    ):
        """`knob`: what the user sets `layout.seq_len` with, named by a split too short for one row; `meta`:
        the folder's meta.json as `read_meta` returned it, where the caller read it already."""
        self.root, self.layout, self.seed, self.split = Path(path), layout, seed, split
        self.meta = meta if meta is not None else read_meta(self.root)
        spec = dict(self.meta["spec"])
        self.spec = TokenSpec(**{**spec, "special_ids": tuple(spec["special_ids"])})
        if split not in self.meta["splits"]:
            split_dir(self.root, split)  # an unknown split: one line naming the valid ones
        n = self.meta["splits"][split]["tokens"]
        # a short val split is held out by `data prepare --val-fraction`, not a short corpus
        lower = f", or lower {knob}" if n else ""  # an empty split has no row of any length
        fix = f"prepare it again with a larger --val-fraction{lower}" if split == "val" else ""
        check_one_row(n, layout.seq_len, f"the {split} split of {self.root}", fix=fix, knob=knob)
        self.tokens, self.offsets = open_split(self.root, split, self.meta)
        self.n_tokens = n
        self.rows_per_epoch = n // layout.seq_len
        self._epochs: dict[int, tuple[np.ndarray, int]] = {}
        self._logged: set[int] = set()

    def _epoch(self, epoch: int) -> tuple[np.ndarray, int]:
        """(row permutation, token shift) of `epoch`, drawn from (seed, epoch).

        The trainer's prefetch thread and the main thread (a rollback, a step skipped on replay) may
        ask at once, so the cache is replaced whole, never edited, and the value returned is this
        call's own: an eviction by the other thread cannot take it away between caching and return."""
        cached = self._epochs.get(epoch)
        if cached is not None:
            return cached
        rng = np.random.default_rng([self.seed, epoch])
        shift = int(rng.integers(0, self.n_tokens - self.rows_per_epoch * self.layout.seq_len + 1))
        value = (rng.permutation(self.rows_per_epoch), shift)
        latest = max(self._epochs.items(), default=None)  # a batch spans at most two epochs
        self._epochs = {**dict([latest] if latest else []), epoch: value}
        return value

    def epoch_of(self, step: int) -> int:
        """The epoch of the first row of `step`."""
        return self.layout.first_row(step, 0, 0) // self.rows_per_epoch

    def row_starts(self, rows: np.ndarray) -> np.ndarray:
        """Token offsets where global rows `rows` start."""
        epochs, within = np.divmod(rows, self.rows_per_epoch)
        starts = np.empty(len(rows), dtype=np.int64)
        for e in np.unique(epochs).tolist():
            if e > 0 and e not in self._logged:
                self._logged.add(e)
                log.info(
                    "data: %s split of %s starts epoch %d at global row %d (%d rows of %d tokens per epoch)",
                    self.split,
                    self.root,
                    e,
                    e * self.rows_per_epoch,
                    self.rows_per_epoch,
                    self.layout.seq_len,
                )
            perm, shift = self._epoch(e)
            sel = epochs == e
            starts[sel] = shift + perm[within[sel]] * self.layout.seq_len
        return starts

    def batch(self, step: int, micro_step: int, rank: int) -> PackedBatch:
        """The micro-batch at (step, micro_step, rank): a pure function of these numbers."""
        t, b = self.layout.seq_len, self.layout.micro_batch_size
        first = self.layout.first_row(step, micro_step, rank)
        starts = self.row_starts(np.arange(first, first + b, dtype=np.int64))
        ids = np.stack([self.tokens[s : s + t] for s in starts.tolist()]).astype(np.int64)
        where = starts[:, None] + np.arange(t)  # (B, T) token offsets
        doc = np.searchsorted(self.offsets, where, side="right") - 1
        doc_ids = torch.from_numpy(doc - doc[:, :1])
        return PackedBatch(
            input_ids=torch.from_numpy(ids), doc_ids=doc_ids, position_ids=positions_from_doc_ids(doc_ids)
        )


def repeat_note(source, steps: int) -> str | None:
    """What to tell a run that trains `source` for `steps` steps when it reads more tokens than its
    prepared split's unique tokens (later epochs, or a mixture's restarted source): a run at the
    papers' scale reads each text once. None when it does, or for a source that is not prepared data.
    Was: a log line at INFO when the second epoch began, which `pretrain` never shows."""
    offset = 0
    while isinstance(source, StepOffset):  # continued pretraining reads on from its base's rows
        offset, source = offset + source.steps, source.source
    if not isinstance(source, PackedReader):
        return None
    rows = (steps + offset) * source.layout.global_batch_size
    tokens = rows * source.layout.seq_len
    unique = source.meta.get("unique_tokens", {}).get(source.split, source.n_tokens)
    if rows <= source.rows_per_epoch and tokens <= unique:
        return None
    return (
        f"this run reads {tokens:,} tokens of {source.root}, whose {source.split} split holds {unique:,} unique "
        f"tokens: {tokens / unique:.2f} passes, so it trains on the same text more than once; prepare more "
        "text to train on unique tokens only"
    )
