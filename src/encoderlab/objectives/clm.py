"""Causal language modelling: predict the next token of the same document.

The model runs in causal mode over packed rows; the document mask keeps attention inside each
document and the target of a document's last token is IGNORE, so no loss ever asks a document to
predict the start of the next one (the usual "shift labels over the whole row" gets this wrong
once per document). Nothing is random, so the generator is unused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from encoderlab.model.config import AttentionMode
from encoderlab.objectives.base import IGNORE, ObjectiveInputs, whole_rows

if TYPE_CHECKING:
    import torch

    from encoderlab.data.batch import PackedBatch, TokenSpec


@dataclass(frozen=True, kw_only=True)
class CLM:
    """Next-token prediction with a causal mask (paper 1's CLM, paper 2's detour)."""

    type_tag: ClassVar[str] = "clm"
    attention_mode: ClassVar[AttentionMode] = "causal"
    """How its inputs attend (`ObjectiveInputs.attention_mode`), known before a batch is built."""

    @property
    def tag(self) -> str:
        """Short name used in metrics and run names."""
        return "clm"

    def check(self, spec: TokenSpec) -> None:
        """CLM works with any vocabulary."""

    def prepare(self, batch: PackedBatch, spec: TokenSpec, generator: torch.Generator) -> ObjectiveInputs:
        """Inputs unchanged, causal attention, targets = next token within the document."""
        import torch

        ids, docs = batch.input_ids, batch.doc_ids
        targets = torch.full_like(ids, IGNORE)
        same_doc = docs[:, 1:] == docs[:, :-1]
        targets[:, :-1] = torch.where(same_doc, ids[:, 1:], IGNORE)
        return ObjectiveInputs(
            input_ids=ids,
            position_ids=batch.position_ids,
            doc_ids=docs,
            attention_mode=self.attention_mode,
            targets=targets,
            whole_rows=whole_rows(batch.doc_ids),
        )
