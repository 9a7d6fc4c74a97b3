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

A token string already in the vocabulary (a BERT-style `[MASK]` the tokenizer's config does not name
as its mask token) is reused, not added: its id becomes the mask id and its own trained rows are kept,
as a careful user expects of `--set model.mask_token='[MASK]'` on such a vocabulary, and a one-line
note says so. Its id is below the data's vocabulary size, so within the embedding's rows (the load
refuses a tokenizer larger than the embedding). A string that is the vocabulary's pad, bos, eos, unk
or another special token is refused: masking with it would make every masked position read as that
token (an end of document, padding). Before, any string already in the vocabulary was refused, so the
natural `[MASK]` needed another, untrained token.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from encoderlab.data.batch import TokenSpec
from encoderlab.errors import UserError
from encoderlab.model.protocol import LanguageModel
from encoderlab.objectives.mlm import MLM
from encoderlab.train.config import DataConfig, ModelSpec, PlannedPhase

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


def planned_spec(spec: TokenSpec, model: ModelSpec, vocab: Mapping[str, int] | None = None) -> TokenSpec:
    """The vocabulary the run trains with: the data's, plus the mask token `model` asks for: the id
    `vocab` (`start_vocab`'s, the tokenizer the token goes into) has for it, else a new one."""
    if not (model.init and model.mask_token) or spec.mask_id is not None:
        return spec
    known = (vocab or {}).get(model.mask_token)
    if known is not None:
        _check_reusable(known, spec, model.mask_token)
    mask = spec.vocab_size if known is None else known
    return dataclasses.replace(
        spec,
        vocab_size=spec.vocab_size + (known is None),
        mask_id=mask,
        special_ids=tuple(sorted({*spec.special_ids, mask})),
    )


def start_vocab(
    data: DataConfig,
    model: ModelSpec,
    spec: TokenSpec,
    data_tokenizer: Callable[[], Any],
    start_tokenizer: Callable[[], Any],
) -> dict[str, int] | None:
    """The vocabulary of the tokenizer a mask token goes into (the prepared data's, `data_tokenizer()`, which
    the run checks is the start model's; on synthetic data the start model's own, `start_tokenizer()`), read
    only when one is to be added. Both are the caller's: the tokenizer each reads is the one the run goes on
    with, not read again (`TrainStep.data_tokenizer`, `TrainStep.start_files`)."""
    if not (model.init and model.mask_token) or spec.mask_id is not None:
        return None
    tokenizer = data_tokenizer() if data.path != "synthetic" else None
    tokenizer = tokenizer if tokenizer is not None else start_tokenizer()
    return None if tokenizer is None else dict(tokenizer.get_vocab())


def _check_reusable(known: int, spec: TokenSpec, token: str) -> None:
    """Refuse reusing `token` (id `known`) as the mask token where it already has another role."""
    roles = [r for r in ("pad", "bos", "eos", "unk") if getattr(spec, f"{r}_id") == known]
    role = roles[0] if roles else ("special" if known in spec.special_ids else None)
    if role is not None:
        raise UserError(
            f"mask token '{token}' is already the tokenizer's {role} token (id {known}), so a masked position "
            "would read as it; pass a model.mask_token the vocabulary lacks (e.g. '<|mask|>'), which gets an id "
            "of its own"
        )
    if known >= spec.vocab_size:
        raise UserError(
            f"mask token '{token}' has id {known} in the start model's tokenizer, past the data's {spec.vocab_size} "
            "ids; prepare the data with the start model's tokenizer"
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
    if planned.vocab_size == data.vocab_size:  # already in the vocabulary: marked, its rows kept
        log.warning(
            "the start model's tokenizer names no mask token: '%s', already in its vocabulary as id %d, is "
            "used as the mask token, its trained rows kept (recorded in %s)",
            token,
            planned.mask_id,
            ADDED_TOKENS,
        )
        init = f"kept: '{token}' was in the vocabulary (id {planned.mask_id}), now named the mask token"
        return AddedToken(
            token=token, role="mask", id=planned.mask_id, rows_before=rows, rows_after=rows, init=init
        )
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
    planned id (or name it the mask token, where it is in the vocabulary already); the tokenizer's half of `add_mask_token`, which a resume (whose checkpoint has the rows
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
    # a token of the vocabulary keeps its id (`planned_spec` made it the mask id); a new one gets the next
    tokenizer.add_special_tokens({"mask_token": token})
    assert tokenizer.mask_token_id == planned.mask_id, (tokenizer.mask_token_id, planned.mask_id)
