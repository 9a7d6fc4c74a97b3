"""What every objective produces, the one loss they all share, and their per-slot randomness.

An objective turns a `PackedBatch` into `ObjectiveInputs`: model inputs, the attention mode and
one target id per position (-100 where there is no loss). Everything objective-specific lives in
that translation, so the training loop calls `prepare` and `lm_loss` and never asks which
objective it runs. A switch of objective between phases therefore changes exactly the three
things the papers change (attention mask, masking, targets/head) and nothing else.

`lm_loss` gathers the positions that carry a target and applies the LM head only there (the
"sparse head"): MLM at 30% computes 30% of the head's FLOPs and memory. CLM has a target almost
everywhere, so it gains nothing and loses nothing. The cross-entropy runs in fp32 whatever the
autocast dtype, and returns a *sum* with its count so gradient accumulation and data parallelism
can normalise by the number of targets in the whole global batch. The model applies its own head
(`LanguageModel.lm_loss`): encoderlab's `Encoder` fuses the projection with the loss
(`model/head.py`); the BERT and ModernBERT adapters' heads (transform, bias) take the plain path.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from encoderlab.model.config import AttentionMode

if TYPE_CHECKING:
    import torch

    from encoderlab.model.protocol import LanguageModel

IGNORE = -100
"""Target value meaning "no loss at this position" (the PyTorch and HF convention)."""


@dataclass(frozen=True)
class ObjectiveInputs:
    """A micro-batch ready for the model and the loss."""

    input_ids: torch.Tensor
    """(B, T) int64 ids fed to the model (MLM: with replacements applied)."""
    position_ids: torch.Tensor
    """(B, T) int64 per-document positions."""
    doc_ids: torch.Tensor
    """(B, T) int64 document ids (attention stays inside a document)."""
    attention_mode: AttentionMode
    """`bidirectional` or `causal`."""
    targets: torch.Tensor
    """(B, T) int64 target ids, IGNORE where no loss."""
    whole_rows: bool = False
    """Every row is one document: the model attends over whole rows with no document mask, which
    keeps SDPA's fused (causal) kernels; the objective sets it (`whole_rows(doc_ids)`) when it builds them."""

    @property
    def n_targets(self) -> int:
        """Number of positions that carry a loss."""
        return int((self.targets != IGNORE).sum())

    def to(self, device: torch.device | str) -> ObjectiveInputs:
        """The same inputs on `device` (non-blocking copies)."""
        move = lambda t: t.to(device, non_blocking=True)  # noqa: E731
        return ObjectiveInputs(
            input_ids=move(self.input_ids),
            position_ids=move(self.position_ids),
            doc_ids=move(self.doc_ids),
            attention_mode=self.attention_mode,
            targets=move(self.targets),
            whole_rows=self.whole_rows,
        )


def whole_rows(doc_ids: torch.Tensor) -> bool:
    """Whether each row of a (B, T) CPU batch is a single document (then no document mask is needed).
    Checked where the objective builds its inputs, on the host, so the forward pass never syncs."""
    return bool((doc_ids == doc_ids[:, :1]).all())


def objective_generator(seed: int, step: int, slot: int) -> torch.Generator:
    """A CPU generator seeded by (seed, step, slot), independent of process layout.

    `slot = layout.slot(micro_step, rank)` names a micro-batch's place in the global batch, so one
    process accumulating over N micro-batches draws the same masks as N ranks with one each: this
    is the "(seed, step, rank, micro-step)" seeding of the issue, made invariant to how the global
    batch is split. Hashing (rather than seed*K + step) keeps nearby triples unrelated.
    """
    import torch

    digest = hashlib.blake2b(f"{seed}:{step}:{slot}".encode(), digest_size=8).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest, "little") & (2**63 - 1))


def lm_loss(model: LanguageModel, hidden: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Summed fp32 cross-entropy over positions with a target, and how many there were.

    `hidden` is (B, T, D) from the model, `targets` (B, T). The LM head runs only on the gathered
    positions; the caller divides by the global target count.
    """
    keep = targets != IGNORE
    h, t = hidden[keep], targets[keep]
    return model.lm_loss(h, t), t.shape[0]


def batch_loss(model: LanguageModel, x: ObjectiveInputs, forward=None) -> tuple[torch.Tensor, int]:
    """`lm_loss` of one batch of objective inputs: the model's forward on them (through `forward`, the
    same model wrapped for parallel training, when given), then the loss at their targets. Training and
    the held-out losses score a batch through this one function, so they feed the model alike."""
    run = model if forward is None else forward
    docs = None if x.whole_rows else x.doc_ids
    hidden = run(
        x.input_ids, attention_mode=x.attention_mode, position_ids=x.position_ids, doc_ids=docs
    ).last_hidden_state
    return lm_loss(model, hidden, x.targets)
