"""The contract between data and training: a packed micro-batch and the source that serves it.

Every pretraining run reads token sequences through `BatchSource.batch(step, micro_step, rank)`,
which is a pure function of its arguments. That single property gives the papers' controlled
variable (every objective sees the same tokens in the same order), exact resume from the step
counter alone, and data parallelism (ranks read disjoint slices of the same global batch).

Layout of one global batch at `step` (G = micro_batch_size * grad_accum * world_size sequences):
the slice for (micro_step, rank) starts at `slot * micro_batch_size` with
`slot = micro_step * world_size + rank`. So one process accumulating over W*A micro-batches and
W processes accumulating over A each see the same sequences in the same slots, and anything drawn
per slot (MLM masks) is identical too.

The layout and vocabulary facts are read by run configs (`study list`, `study plan`), so torch is imported
only where a batch's tensors are made (`WholeRows.batch`), not with this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class TokenSpec:
    """Vocabulary facts an objective and a model need; read from the tokenizer, never hard-coded."""

    vocab_size: int
    """Number of token ids (model embedding rows must be at least this)."""
    pad_id: int | None = None
    """Padding id (packed pretraining never pads; fine-tuning does)."""
    bos_id: int | None = None
    """Beginning-of-document id, if the tokenizer adds one."""
    eos_id: int | None = None
    """End-of-document id, if the tokenizer adds one."""
    mask_id: int | None = None
    """Mask id; MLM refuses to run without it."""
    unk_id: int | None = None
    """Unknown-token id."""
    special_ids: tuple[int, ...] = ()
    """Every special id; MLM never selects these positions."""


@dataclass(frozen=True)
class PackedBatch:
    """A micro-batch of fixed-length rows packed from whole documents, with no padding."""

    input_ids: torch.Tensor
    """(B, T) int64 token ids."""
    doc_ids: torch.Tensor
    """(B, T) int64 document index within each row; attention never crosses a change of value."""
    position_ids: torch.Tensor
    """(B, T) int64 positions that restart at 0 at each document start (RoPE input)."""


@dataclass(frozen=True)
class BatchLayout:
    """How a global batch is split into micro-batches and ranks."""

    seq_len: int
    """Tokens per packed row."""
    micro_batch_size: int
    """Rows per micro-batch per rank."""
    grad_accum: int = 1
    """Micro-batches per optimizer step per rank."""
    world_size: int = 1
    """Number of data-parallel ranks."""

    @property
    def global_batch_size(self) -> int:
        """Rows per optimizer step over all ranks."""
        return self.micro_batch_size * self.grad_accum * self.world_size

    @property
    def tokens_per_step(self) -> int:
        """Tokens per optimizer step over all ranks."""
        return self.global_batch_size * self.seq_len

    def first_row(self, step: int, micro_step: int, rank: int) -> int:
        """Global row index of the first row served at (step, micro_step, rank)."""
        if not (0 <= micro_step < self.grad_accum and 0 <= rank < self.world_size):
            raise ValueError(f"micro_step {micro_step} / rank {rank} outside {self}")
        slot = micro_step * self.world_size + rank
        return step * self.global_batch_size + slot * self.micro_batch_size

    def slot(self, micro_step: int, rank: int) -> int:
        """Position of (micro_step, rank) inside the global batch; seeds per-slot randomness."""
        return micro_step * self.world_size + rank


class BatchSource(Protocol):
    """Anything that serves packed micro-batches deterministically."""

    spec: TokenSpec
    layout: BatchLayout

    def batch(self, step: int, micro_step: int, rank: int) -> PackedBatch:
        """The micro-batch at (step, micro_step, rank); a pure function of these numbers."""
        ...


@dataclass(frozen=True)
class SourceView:
    """A source served through another: its vocabulary and layout are the stream's own."""

    source: BatchSource
    """The stream."""

    @property
    def spec(self) -> TokenSpec:
        return self.source.spec

    @property
    def layout(self) -> BatchLayout:
        return self.source.layout


@dataclass(frozen=True)
class StepOffset(SourceView):
    """A source read from further along its stream: step s serves `source`'s batch of step s + `steps`.

    Continued pretraining wraps its base's stream in this, so it reads the rows after the base's last
    step (same data, same order) instead of replaying the batches the base was trained on."""

    steps: int
    """Steps of it to skip."""

    def batch(self, step: int, micro_step: int, rank: int) -> PackedBatch:
        return self.source.batch(step + self.steps, micro_step, rank)


@dataclass(frozen=True)
class WholeRows(SourceView):
    """A source whose rows are read as single sequences: the same tokens, one document id per row and
    positions 0..T-1, so attention and next-token targets run across the documents packed in a row.

    This is how Optimus (paper 1's EuroBERT code) trains with its default `var_len: False`; a run
    asks for it with `data.attend=row`. The stream, its order and its masks' seeds are unchanged, so
    the two readings of a row compare on the same tokens."""

    def batch(self, step: int, micro_step: int, rank: int) -> PackedBatch:
        import torch

        ids = self.source.batch(step, micro_step, rank).input_ids
        positions = torch.arange(ids.shape[1]).expand_as(ids).contiguous()
        return PackedBatch(input_ids=ids, doc_ids=torch.zeros_like(ids), position_ids=positions)
