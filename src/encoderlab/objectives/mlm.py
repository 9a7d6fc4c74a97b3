"""Masked language modelling: predict selected tokens from both sides.

Two ways to choose the positions (`selection`), recorded in the run's resolved config:
  * `exact`: an **exact count per row**, round(mask_ratio x maskable positions), drawn
    uniformly without replacement. The number of targets (hence the loss's weight per row) never
    fluctuates; each position's marginal probability is still the ratio.
  * `bernoulli` (paper 1 as Optimus masks, and paper 2 as ModernBERT's pipeline does it): every
    maskable position is chosen independently with probability p, from one uniform draw r per
    position (AnswerDotAI/ModernBERT src/sequence_packer.py `SequencePacker.mlm_masking`; Optimus
    draws the same way, optimus/trainer/data.py): with 80-10-10, r < 0.8p becomes the mask token,
    0.8p <= r < 0.9p a random token, 0.9p <= r < p stays unchanged but is predicted. The count per
    row varies (binomial), and the 80/10/10 split holds in expectation, not per row.

Replacement (`replacement`): `mask` puts the mask token at every selected position (paper 1,
Optimus default `mask_probability=1.0`); `80-10-10` is BERT's: 80% mask token, 10% a uniformly
random non-special token, 10% unchanged. With `exact` the split takes its own uniform draw per
position; with `bernoulli` it reuses r/p, so one draw decides both, as in ModernBERT.

Where we differ from ModernBERT, on purpose: special tokens (`spec.special_ids`: BOS, EOS, padding,
the mask token itself...) are never selected (ModernBERT excludes only padding, so its CLS and SEP
can be masked; HF's collator, its evaluation path, excludes them as we do), and random tokens come
uniformly from the non-special vocabulary (ModernBERT draws from [0, largest id in the batch]).
Both draw from the generator the trainer seeds per (seed, step, slot), so masks are reproducible
and independent of the process layout. That seed is the run's training seed; ModernBERT seeds its
masks from the *data* shuffle seed instead (`np.random.default_rng(epoch + seed)` with the dataset's
`shuffle_seed`: AnswerDotAI/ModernBERT src/text_data.py and src/sequence_packer.py
`SequencePacker._reset_state`), so there two runs that differ only in training seed (paper 2's
seed-noise twins, 17 and 42) draw the same masks, while here they draw different ones. Which of the
two paper 2's twins did is not stated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from encoderlab.errors import UserError
from encoderlab.model.config import AttentionMode
from encoderlab.objectives.base import IGNORE, ObjectiveInputs, whole_rows
from encoderlab.words import percent_text, share_hint

if TYPE_CHECKING:
    import torch

    from encoderlab.data.batch import PackedBatch, TokenSpec


@dataclass(frozen=True, kw_only=True)
class MLM:
    """Masked language modelling with a bidirectional mask."""

    type_tag: ClassVar[str] = "mlm"
    attention_mode: ClassVar[AttentionMode] = "bidirectional"
    """How its inputs attend (`ObjectiveInputs.attention_mode`), known before a batch is built."""

    mask_ratio: float = 0.40
    """Fraction of non-special positions selected per row (paper 1 default 0.40)."""
    replacement: Literal["mask", "80-10-10"] = "mask"
    """`mask`: all selected positions become the mask token; `80-10-10`: BERT's split."""
    selection: Literal["exact", "bernoulli"] = "exact"
    """`exact`: round(ratio x maskable) positions per row; `bernoulli`: each position with probability
    ratio, independently (Optimus for paper 1, ModernBERT for paper 2)."""

    def __post_init__(self) -> None:
        if not 0.0 < self.mask_ratio < 1.0:
            share = share_hint(self.mask_ratio, "tokens", 0.3)  # `ratio: 30` was said with no fix
            raise UserError(
                f"mlm mask_ratio must be between 0 and 1 (exclusive), got {self.mask_ratio}{share}"
            )
        if self.selection not in ("exact", "bernoulli"):
            raise UserError(f"mlm selection must be exact or bernoulli, got {self.selection!r}")

    @property
    def tag(self) -> str:
        """Short name used in metrics and phase names, e.g. `mlm40`, `mlm12.5`: one per mask ratio."""
        return f"mlm{percent_text(self.mask_ratio)}"

    def check(self, spec: TokenSpec) -> None:
        """Refuse a vocabulary without a mask token."""
        if spec.mask_id is None:
            raise UserError(
                "MLM needs a mask token but the tokenizer has none; train or pick a tokenizer with a "
                "mask token (e.g. '[MASK]' or '<|mask|>'), or use the clm objective"
            )

    def select(self, batch: PackedBatch, spec: TokenSpec, generator: torch.Generator) -> torch.Tensor:
        """(B, T) bool: the positions to predict (see `selection`)."""
        return self._select(batch, spec, generator)[0]

    def _select(
        self, batch: PackedBatch, spec: TokenSpec, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The selected positions and, for `bernoulli`, the draw r (selected where r < p) that also
        splits them: mask below 0.8p, random below 0.9p, kept above."""
        import torch

        ids = batch.input_ids
        maskable = ~torch.isin(ids, torch.tensor(spec.special_ids, dtype=ids.dtype))
        if self.selection == "bernoulli":
            r = torch.rand(ids.shape, generator=generator, dtype=torch.float64)
            return maskable & (r < self.mask_ratio), r
        k = torch.round(maskable.sum(1).double() * self.mask_ratio).long()  # (B,)
        # Random scores, special positions pushed past every real score, then keep the k smallest.
        scores = torch.rand(ids.shape, generator=generator, dtype=torch.float64)
        scores = torch.where(maskable, scores, 2.0)
        ranks = scores.argsort(dim=1).argsort(dim=1)
        return ranks < k[:, None], None

    def prepare(self, batch: PackedBatch, spec: TokenSpec, generator: torch.Generator) -> ObjectiveInputs:
        """Masked inputs, bidirectional attention, targets = original ids at selected positions."""
        import torch

        self.check(spec)
        ids = batch.input_ids
        selected, u = self._select(batch, spec, generator)
        targets = torch.where(selected, ids, IGNORE)
        inputs = torch.where(selected, spec.mask_id, ids)
        if self.replacement == "80-10-10":
            top = self.mask_ratio  # bernoulli: u is the selecting draw, uniform on [0, p) where selected
            if u is None:
                u, top = torch.rand(ids.shape, generator=generator, dtype=torch.float64), 1.0
            ordinary = _ordinary_ids(spec)
            random_ids = ordinary[torch.randint(len(ordinary), ids.shape, generator=generator)]
            inputs = torch.where(selected & (u >= 0.8 * top) & (u < 0.9 * top), random_ids, inputs)
            inputs = torch.where(selected & (u >= 0.9 * top), ids, inputs)
        return ObjectiveInputs(
            input_ids=inputs,
            position_ids=batch.position_ids,
            doc_ids=batch.doc_ids,
            attention_mode=self.attention_mode,
            targets=targets,
            whole_rows=whole_rows(batch.doc_ids),
        )


def _ordinary_ids(spec: TokenSpec) -> torch.Tensor:
    """Every id that is not special: the pool for 80/10/10 random replacements."""
    import torch

    keep = torch.ones(spec.vocab_size, dtype=torch.bool)
    keep[list(spec.special_ids)] = False
    return keep.nonzero().squeeze(1)
