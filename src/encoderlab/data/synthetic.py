"""A synthetic `BatchSource` for tests and benchmarks: random documents, no files.

Rows are generated from a generator seeded by the global row index, so the source has the same
determinism contract as the real reader. Documents have random lengths, a BOS at their start and
an EOS at their end, and tokens drawn from a small Zipf-like distribution so a tiny model can
learn something within a few steps.

Run configs check their synthetic settings against this module's constants (`study plan` reads them),
so torch is imported inside the functions that make tensors, not with the module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from encoderlab.data.batch import BatchLayout, PackedBatch, TokenSpec

if TYPE_CHECKING:
    import torch

MIN_MEAN_DOC_LEN = 5
"""The smallest mean document length: lengths are drawn from [8, 2 x mean), which must not be empty."""
MIN_SYNTHETIC_VOCAB = 6
"""The smallest synthetic vocabulary: the special ids 0-4 and at least one ordinary token to draw."""
ROW_SEED_STRIDE = 1_000_003
"""A synthetic row's generator seed is the data seed x this + the row's global index."""


def synthetic_spec(vocab_size: int = 512) -> TokenSpec:
    """Ids 0-4 are pad, bos, eos, mask, unk; the rest are ordinary tokens."""
    return TokenSpec(
        vocab_size=vocab_size, pad_id=0, bos_id=1, eos_id=2, mask_id=3, unk_id=4, special_ids=(0, 1, 2, 3, 4)
    )


def synthetic_tokenizer(spec: TokenSpec):
    """A word-level fast tokenizer whose ids are `spec`'s: `[PAD] [BOS] [EOS] [MASK] [UNK]` at its
    special ids and `t<id>` for every other id, split on whitespace. What transformers' collators and
    `export` need of a tokenizer for synthetic data (and tiny test checkpoints)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    names = {spec.pad_id: "[PAD]", spec.bos_id: "[BOS]", spec.eos_id: "[EOS]", spec.mask_id: "[MASK]"}
    names[spec.unk_id] = "[UNK]"
    vocab = {names.get(i, f"t{i}"): i for i in range(spec.vocab_size)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    # texts are framed as the source frames documents, like `data tokenizer`'s tokenizers
    backend.post_processor = processors.TemplateProcessing(
        single="[BOS] $A [EOS]",
        pair="[BOS] $A [EOS] $B:1 [EOS]:1",
        special_tokens=[("[BOS]", spec.bos_id), ("[EOS]", spec.eos_id)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        **{
            f"{role}_token": names[getattr(spec, f"{role}_id")]
            for role in ("pad", "bos", "eos", "mask", "unk")
        },
    )


def positions_from_doc_ids(doc_ids: torch.Tensor) -> torch.Tensor:
    """Positions restarting at 0 wherever the document id changes along the last axis."""
    import torch

    t = doc_ids.shape[-1]
    idx = torch.arange(t, device=doc_ids.device).expand_as(doc_ids)
    starts = torch.ones_like(doc_ids, dtype=torch.bool)
    starts[..., 1:] = doc_ids[..., 1:] != doc_ids[..., :-1]
    start_idx = torch.where(starts, idx, torch.zeros_like(idx))
    return idx - torch.cummax(start_idx, dim=-1).values


@dataclass
class SyntheticSource:
    """Random packed documents of lengths uniform in [8, 2 x `mean_doc_len`); from a mean of one row's
    length up, each row is one whole document (no document mask: the setting of peers' MFU figures)."""

    layout: BatchLayout
    spec: TokenSpec
    seed: int = 0
    mean_doc_len: int = 48

    def _row(self, row: int) -> tuple[torch.Tensor, torch.Tensor]:
        import torch

        g = torch.Generator().manual_seed(self.seed * ROW_SEED_STRIDE + row)
        t = self.layout.seq_len
        n_special = len(self.spec.special_ids)
        ranks = torch.arange(1, self.spec.vocab_size - n_special + 1, dtype=torch.float64)
        probs = 1.0 / ranks
        tokens = torch.multinomial(probs, t, replacement=True, generator=g) + n_special
        doc = torch.zeros(t, dtype=torch.int64)
        pos, d = 0, 0
        while pos < t:
            length = (
                t
                if self.mean_doc_len >= t
                else int(torch.randint(8, 2 * self.mean_doc_len, (1,), generator=g))
            )
            end = min(t, pos + length)
            doc[pos:end] = d
            tokens[pos] = self.spec.bos_id
            if end - pos > 1:
                tokens[end - 1] = self.spec.eos_id
            pos, d = end, d + 1
        return tokens, doc

    def batch(self, step: int, micro_step: int, rank: int) -> PackedBatch:
        import torch

        first = self.layout.first_row(step, micro_step, rank)
        rows = [self._row(first + i) for i in range(self.layout.micro_batch_size)]
        input_ids = torch.stack([r[0] for r in rows])
        doc_ids = torch.stack([r[1] for r in rows])
        return PackedBatch(input_ids=input_ids, doc_ids=doc_ids, position_ids=positions_from_doc_ids(doc_ids))
