"""A start model whose tokenizer has no mask token: add one, give it rows, record it.

Paper 1's continued-pretraining arm turns a decoder (SmolLM2) into an encoder with MLM, and a
decoder's tokenizer has no mask token. When a run's `model.mask_token` is set, starts from an
existing model (`model.init`) and its data's tokenizer has no mask token, the run:
  1. plans the token before building anything (`planned_spec`): the first free id, the
     tokenizer's length, so no id the prepared data holds moves, and the objectives are checked
     against the vocabulary they will train with;
  2. adds it to the tokenizer the run saves, as its special mask token (`add_mask_token`);
  3. gives it rows in the model (`LanguageModel.add_token_rows`): the input-embedding row, the LM
     head's row when untied, and the head's bias where there is one, each set to the mean of the
     rows of the tokenizer's existing tokens, growing the vocabulary when the id is past the end;
  4. records what it did in `added_tokens.json` in the run folder (the trainer writes it).

Why the mean: a new output row at the mean of the trained rows gives the new token about the
average logit, so the model's predictive distribution barely moves before training starts, where a
random N(0, std) row can make the token's logit dominate or vanish depending on the scale of the
trained rows (J. Hewitt, "Initializing New Word Embeddings for Pretrained Language Models", 2021,
the rule transformers' `resize_token_embeddings(mean_resizing=True)` follows, there with a small
noise around the mean). The input row at the mean is a neutral point of the embedding cloud; the
mask token's input row is what MLM trains first. We take the exact mean, no noise: one token is
added, so there is no symmetry to break.

A token string already in the vocabulary is refused rather than reused: its trained row would be
overwritten, or kept with another meaning.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from encoderlab.data.batch import TokenSpec
from encoderlab.errors import UserError
from encoderlab.model.protocol import LanguageModel
from encoderlab.objectives.mlm import MLM
from encoderlab.train.config import ModelSpec, PlannedPhase

log = logging.getLogger(__name__)

ADDED_TOKENS = "added_tokens.json"
"""The run folder's record of tokens added to the start model's vocabulary."""


@dataclass(frozen=True, kw_only=True)
class AddedToken:
    """A token added to the start model's tokenizer and vocabulary."""

    token: str
    """The token string."""
    role: str
    """Its special-token role (`mask`)."""
    id: int
    """Its id."""
    rows_before: int
    """Embedding rows of the start model."""
    rows_after: int
    """Embedding rows after the addition."""
    init: str
    """How its rows were initialised."""


def planned_spec(spec: TokenSpec, model: ModelSpec) -> TokenSpec:
    """The vocabulary the run trains with: the data's, plus the mask token `model` asks to add."""
    if not (model.init and model.mask_token) or spec.mask_id is not None:
        return spec
    new = spec.vocab_size
    return dataclasses.replace(
        spec, vocab_size=new + 1, mask_id=new, special_ids=tuple(sorted({*spec.special_ids, new}))
    )


def refuse_start_without_mask(plan: Sequence[PlannedPhase], spec: TokenSpec, model: ModelSpec) -> None:
    """A start model (`model.init`) whose tokenizer has no mask token, and no `model.mask_token` to add,
    before an MLM phase: one line naming the setting that adds one. `spec` is `planned_spec`'s. Before,
    the objective's own line said to pick another tokenizer or train with CLM, neither of which
    continues one's own checkpoint (a detour's MLM decay, or `cpt-mlm` with its `mask_token` emptied)."""
    if not model.init or spec.mask_id is not None:
        return
    mlm = next((p for p in plan if isinstance(p.phase.objective, MLM)), None)
    if mlm is None:
        return
    raise UserError(
        f"phase {mlm.name} is MLM, which needs a mask token, but the tokenizer of the start model "
        f"{model.init} has none; add one with --set model.mask_token='<mask>' (a new id, its rows the "
        "mean of the existing ones; docs/recipes.md, cpt-mlm), or start from a model whose tokenizer "
        "names its mask token (tokenizer_config.json's mask_token)"
    )


def add_mask_token(model: LanguageModel, tokenizer, data: TokenSpec, planned: TokenSpec, token: str):
    """Add the mask token `planned` has and `data` lacks to `tokenizer` and `model`; None when nothing
    is planned. The tokenizer must be the data's (same length), so the token lands on the planned id."""
    if planned == data:
        return None
    add_mask_to_tokenizer(tokenizer, data, planned, token)
    rows = model.config.vocab_size
    model.add_token_rows([planned.mask_id], mean_of=data.vocab_size)
    # A warning, so it shows without a logging setup: the run trains a model its start model is not.
    log.warning(
        "the start model's tokenizer has no mask token: added '%s' as id %d, its rows set to the mean of the "
        "existing %d (recorded in %s)",
        token,
        planned.mask_id,
        data.vocab_size,
        ADDED_TOKENS,
    )
    return AddedToken(
        token=token,
        role="mask",
        id=planned.mask_id,
        rows_before=rows,
        rows_after=model.config.vocab_size,
        init=f"mean of the {data.vocab_size} rows of the tokenizer's existing tokens (embedding, untied head, head bias)",
    )


def add_mask_to_tokenizer(tokenizer, data: TokenSpec, planned: TokenSpec, token: str) -> None:
    """Add the mask token `planned` has and `data` lacks to `tokenizer` (the data's: same length), at the
    planned id; the tokenizer's half of `add_mask_token`, which a resume (whose checkpoint has the rows
    already) takes alone."""
    if tokenizer is None:
        raise UserError(
            "the start model has no tokenizer to add a mask token to; start from a model folder with its tokenizer"
        )
    if len(tokenizer) != data.vocab_size:
        raise UserError(
            f"the start model's tokenizer has {len(tokenizer)} ids but the data's has {data.vocab_size}; prepare the "
            "data with the start model's tokenizer"
        )
    if token in tokenizer.get_vocab():
        raise UserError(
            f"mask token '{token}' is already in the tokenizer's vocabulary (id {tokenizer.get_vocab()[token]}); "
            "pass another model.mask_token (e.g. '<|mask|>')"
        )
    tokenizer.add_special_tokens({"mask_token": token})
    assert tokenizer.mask_token_id == planned.mask_id, (tokenizer.mask_token_id, planned.mask_id)
