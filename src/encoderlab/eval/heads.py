"""Task heads on top of any model that satisfies the LanguageModel protocol.

A head only needs `model(input_ids, padding_mask=..., attention_mode=...)` returning
`last_hidden_state` and `model.config.hidden_size` (and `model.segment_types` when given segment ids),
so encoderlab models, converted Hugging Face encoders and decoders all fine-tune through the same
code. Heads are a single linear layer initialised N(0, 0.02) with zero bias, as Hugging Face's
`*For*` classes do:
  * sequence classification pools the sequence (mean over real tokens by default; `first` takes the
    first token, i.e. BOS/CLS) and maps it to the labels; the `eurobert` and `modernbert` variants are
    those models' own heads, which the papers' code fine-tunes with (paper 1: a hidden-size layer and
    GELU, and `late` pooling, the mean of the per-token logits; paper 2: a hidden-size layer, GELU and
    a LayerNorm);
  * token classification maps every position to the labels (first-subword labelling is done by
    the features, not here);
  * extractive QA is a 2-logit token classifier: start and end logits (Hugging Face's QA head), or
    in/out of the answer per token (EncodEval's, `answer_tagger.py`);
  * retrieval is a bi-encoder: mean-pooled (or first/last token), L2-normalised embeddings, no extra
    parameters.
Attention is bidirectional by default also for CLM-trained models (paper 1 fine-tunes every model
as an encoder); `attention_mode="causal"` is kept for probing decoders as decoders.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

Pooling = Literal["mean", "first", "last"]
SCPooling = Literal["mean", "first", "late"]
SCHead = Literal["linear", "eurobert", "modernbert"]
AttentionMode = Literal["bidirectional", "causal"]
MODERNBERT_NORM_EPS = 1e-5
"""ModernBERT's `norm_eps` (its config default and its checkpoints')."""


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Average of (B, T, D) `hidden` over the positions where (B, T) `mask` is True."""
    weights = mask.to(hidden.dtype).unsqueeze(-1)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)


def first_token_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The first position's vector (BOS/CLS for tokenizers that add one)."""
    return hidden[:, 0]


def last_token_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each row's last real position's vector (EOS with `eos` inputs): EncodEval's `eos` retrieval
    pooling, SentenceTransformers' `lasttoken`; the row's last True of `mask`, whatever side is padded."""
    positions = torch.arange(mask.shape[1], device=mask.device)
    last = (mask.bool() * (positions + 1)).argmax(1)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


POOLING: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "mean": mean_pool,
    "first": first_token_pool,
    "last": last_token_pool,
}


def _check_resolved(pooling: str) -> None:
    if pooling == "model":
        raise ValueError(
            "pooling 'model' is the model's own: resolve the task for the model first (EvalModel.resolved)"
        )


def _linear(d_in: int, d_out: int) -> nn.Linear:
    layer = nn.Linear(d_in, d_out)
    nn.init.normal_(layer.weight, std=0.02)
    nn.init.zeros_(layer.bias)
    return layer


class _Head(nn.Module):
    def __init__(self, model: nn.Module, attention_mode: AttentionMode):
        super().__init__()
        self.model = model
        self.attention_mode = attention_mode

    def hidden(
        self, input_ids: torch.Tensor, mask: torch.Tensor, segment_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The model's last hidden states; `segment_ids` (a pair's token types) go to a model with a
        segment table only (`LanguageModel.segment_types`): a tokenizer that gives them (a BERT
        tokenizer beside a model trained without segments) says nothing to a model without one, which
        would refuse them."""
        types = {}
        if segment_ids is not None and self.model.segment_types > 1:
            types["segment_ids"] = segment_ids
        out = self.model(input_ids, padding_mask=mask, attention_mode=self.attention_mode, **types)
        return out.last_hidden_state


class SequenceClassifier(_Head):
    """Pooled sequence -> label logits, through one linear layer or a model family's own head:
    `eurobert` is `EuroBertForSequenceClassification`'s (a hidden-size layer and GELU; with `late`
    pooling the per-token logits are averaged), `modernbert` is `ModernBertForSequenceClassification`'s
    (a hidden-size layer without bias, GELU and a LayerNorm without bias)."""

    def __init__(
        self,
        model: nn.Module,
        n_labels: int,
        pooling: SCPooling = "mean",
        attention_mode: AttentionMode = "bidirectional",
        head: SCHead = "linear",
    ):
        super().__init__(model, attention_mode)
        if pooling == "late" and head != "eurobert":
            raise ValueError("late pooling is EuroBERT's head's: with another head it is not defined here")
        _check_resolved(pooling)
        self.late = pooling == "late"
        self.pool = None if self.late else POOLING[pooling]
        self.dense = _dense(model.config.hidden_size, head)
        self.classifier = _linear(model.config.hidden_size, n_labels)

    def forward(
        self, input_ids: torch.Tensor, mask: torch.Tensor, segment_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        hidden = self.hidden(input_ids, mask, segment_ids)
        if self.late:
            return mean_pool(self.classifier(self.dense(hidden)), mask)
        return self.classifier(self.dense(self.pool(hidden, mask)))


def _dense(hidden: int, head: SCHead) -> nn.Module:
    """What a sequence-classification head puts between the pooled state and the label layer."""
    if head == "linear":
        return nn.Identity()
    if head == "eurobert":
        return nn.Sequential(_linear(hidden, hidden), nn.GELU())
    dense = nn.Linear(hidden, hidden, bias=False)
    nn.init.normal_(dense.weight, std=0.02)
    return nn.Sequential(dense, nn.GELU(), nn.LayerNorm(hidden, eps=MODERNBERT_NORM_EPS, bias=False))


class TokenClassifier(_Head):
    """Every position -> label logits (B, T, L)."""

    def __init__(self, model: nn.Module, n_labels: int, attention_mode: AttentionMode = "bidirectional"):
        super().__init__(model, attention_mode)
        self.classifier = _linear(model.config.hidden_size, n_labels)

    def forward(
        self, input_ids: torch.Tensor, mask: torch.Tensor, segment_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        return self.classifier(self.hidden(input_ids, mask, segment_ids))


class SpanExtractor(_Head):
    """Start and end logits (B, T) each; padding gets -inf so it is never chosen."""

    def __init__(self, model: nn.Module, attention_mode: AttentionMode = "bidirectional"):
        super().__init__(model, attention_mode)
        self.qa_outputs = _linear(model.config.hidden_size, 2)

    def forward(
        self, input_ids: torch.Tensor, mask: torch.Tensor, segment_ids: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.qa_outputs(self.hidden(input_ids, mask, segment_ids)).masked_fill(
            ~mask.bool().unsqueeze(-1), float("-inf")
        )
        return logits[..., 0], logits[..., 1]


class BiEncoder(_Head):
    """Pooled (mean by default, or the first or last token), L2-normalised text embeddings (queries and
    documents share weights)."""

    def __init__(
        self, model: nn.Module, pooling: Pooling = "mean", attention_mode: AttentionMode = "bidirectional"
    ):
        super().__init__(model, attention_mode)
        _check_resolved(pooling)
        self.pool = POOLING[pooling]

    def forward(
        self, input_ids: torch.Tensor, mask: torch.Tensor, segment_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        return F.normalize(self.pool(self.hidden(input_ids, mask, segment_ids), mask).float(), dim=-1)


def input_key(ids: Sequence[int]) -> int:
    """The identity of one model input in `info_nce`'s masks: a hash of its token ids as fed (truncated to
    the task's `max_length`). Two texts that differ only past the cut are one input, which the model cannot
    tell apart; the text was the identity before, so such a pair stayed a negative of itself.

    Why a hash, not the ids or the text: comparing keys is one int per pair of rows, where comparing id
    lists costs up to `max_length` per pair and keeping a tuple per row a second copy of the data. Same text
    gives the same ids (one tokenizer, one prefix), so the key subsumes the text. Cost: two inputs whose ids
    differ but whose 64-bit hashes collide would be masked as copies, a pair in about 2**64, and then only
    one candidate fewer for a step. Python's hash of a tuple of ints is not salted (`PYTHONHASHSEED` salts
    str and bytes), so keys agree across processes too."""
    return hash(tuple(ids))


@dataclass(frozen=True)
class HardNegatives:
    """A batch's hard-negative documents (a triplet file's `negative` column) for `info_nce`."""

    embeddings: torch.Tensor
    """(N, H): one negative per training row, L2-normalised as the documents are."""
    keys: Sequence[Hashable]
    """Each negative's input identity (`input_key` in training): one that is query i's own positive as the model reads
    it is masked for query i instead of pushed away."""


def copy_mask(
    doc_ids: Sequence[str], keys: Sequence[Hashable] | None, hard_keys: Sequence[Hashable] | None = None
) -> torch.Tensor:
    """(B, B [+ N]) bool: True where candidate j is a copy of query i's positive and so masked for it, not
    pushed away (`info_nce`): another positive of the same `doc_ids` entry or the same input (`keys`, by
    `input_key`), then a hard negative of the same input (`hard_keys`). A query's own positive is never
    masked. `keys` None: ids alone (a caller with no inputs to compare)."""
    given = keys if keys is not None else [None] * len(doc_ids)
    rows = list(zip(doc_ids, given))  # (id, key) of each positive; a key of None matches nothing
    same = [[pid == did or (pk is not None and pk == dk) for did, dk in rows] for pid, pk in rows]
    if hard_keys is not None:
        if keys is None:
            raise ValueError("copy_mask: hard negatives are told from the positives by input; pass keys")
        same = [row + [k == n for n in hard_keys] for row, k in zip(same, keys)]
    mask = torch.tensor(same, dtype=torch.bool)
    mask[:, : len(doc_ids)].fill_diagonal_(False)
    return mask


def info_nce(
    queries: torch.Tensor,
    documents: torch.Tensor,
    doc_ids: list[str],
    scale: float = 20.0,
    hard: HardNegatives | None = None,
    keys: Sequence[Hashable] | None = None,
) -> torch.Tensor:
    """In-batch-negative contrastive loss (SentenceTransformers' MultipleNegativesRankingLoss).

    Row i's positive is document i (id `doc_ids[i]`, input `keys[i]`, `input_key`); every other document in
    the batch is a negative, except copies of the positive (the same passage answers several questions),
    which are masked out instead of being pushed away (`copy_mask`). `scale` multiplies cosine similarities
    (ST's default 20). With `hard` (which needs `keys`), every query's candidates are all the batch's
    positives, then all its hard negatives (ST's triplets: `cat(positives, negatives)`), a negative that is
    query i's positive masked for it.

    A copy is what the retrieval evaluation takes for the same document, the same id, or what the model
    cannot tell from it, the same input: the same token ids after truncation to the task's `max_length`
    (the same text, or two texts that differ only past the cut). A copy under another id embeds as the
    positive does, so it could not be pushed away (its logit is the positive's, a term no training lowers).
    A hard negative has no id, so its input decides; a task file never gives one id to two texts
    (`custom_rows.SplitIds`), so there the input decides alone. SentenceTransformers masks nothing
    (`compute_loss_from_embeddings`); its guard against such copies, `BatchSamplers.NO_DUPLICATES`, compares
    the rows' texts and keeps them out of a batch (two texts equal only up to the cut pass it).
    """
    candidates = documents if hard is None else torch.cat([documents, hard.embeddings])
    logits = scale * queries @ candidates.T
    mask = copy_mask(doc_ids, keys, None if hard is None else hard.keys).to(logits.device)
    logits = logits.masked_fill(mask, float("-inf"))
    return F.cross_entropy(logits, torch.arange(len(doc_ids), device=logits.device))
