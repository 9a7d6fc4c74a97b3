"""Per-layer representations of a frozen model: the input of CKA and of the linear probes.

One forward pass gives every layer at once, so texts are run once per model whatever the number
of layers analysed. Layer `l` is the output of block `model.layers[l]` (the `LanguageModel`
protocol's block list, the one freezing and transplants index), read by a forward hook on that
block: "layers 0-7" means the same blocks everywhere, for every model class. A model's own
`hidden_states` are not used because classes disagree on the last entry: encoderlab's `Encoder`
returns the last block's output, transformers' ModernBERT its output after the final norm
(`hidden_states[-1] == last_hidden_state`), which would make ModernBERT's last layer a different
quantity from every other model's. The embedding output is left out.

Pooling and accumulation happen in float64: hidden states of deep layers can be large (massive
activations) or, in half precision, coarse, and a float32 sum over 512 tokens loses digits that
CKA then amplifies (paper 2 computes CKA in float64 after a float32 computation underflowed). The
model itself runs in whatever dtype it was loaded in.

Trade-offs: sequences are truncated to `max_length` tokens (the paper's 512); every special token
the tokenizer adds counts in the mean, as the attention mask says (the paper does not state
otherwise). Two models of different tokenizers cut a long text at different points of it, so they
read different spans of it (`cut_texts` counts them: `analyze cka` says so in a note). Attention is bidirectional unless `attention_mode="causal"` is asked for (decoders
analysed as decoders, e.g. paper 2's reverse CLM -> MLM -> CLM direction). Word-level features (token tasks) average the sub-tokens of each word, the words tokenised as
running text (`eval.features.words_as_text`), so models with different tokenizers yield features for
the same words and can be compared.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from encoderlab.analysis.inputs import DEFAULT_ENCODING, Encoding
from encoderlab.errors import UserError
from encoderlab.eval.features import pad_batch, words_as_text
from encoderlab.model.config import AttentionMode
from encoderlab.train.freeze import format_layers
from encoderlab.words import noun


def model_device(model: nn.Module) -> torch.device:
    """The device of the model's first parameter."""
    return next(model.parameters()).device


def model_dtype(model: nn.Module) -> str:
    """The precision of the model's first parameter, as `--dtype` names it ("float32", "float16", ...)."""
    return str(next(model.parameters()).dtype).removeprefix("torch.")


def _encode(tokenizer, batch, max_length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Tokenize without the tokenizer's padding (decoders often have no pad token): right-padded
    (B, T) ids and the mask of real tokens."""
    return pad_batch(tokenizer(list(batch), truncation=True, max_length=max_length)["input_ids"])


def block_outputs(
    model: nn.Module, ids: torch.Tensor, mask: torch.Tensor, mode: AttentionMode
) -> list[torch.Tensor]:
    """The output of every block of `model.layers` (n_layers tensors of (B, T, D)) for a padded batch."""
    outputs: list[torch.Tensor] = []

    def keep(module, args, output):  # transformers' blocks may return a tuple led by the states
        outputs.append(output[0] if isinstance(output, tuple) else output)

    # one hook per module: a block applied at several depths (ALBERT's shared layer) records each call
    handles = [block.register_forward_hook(keep) for block in dict.fromkeys(model.layers)]
    device = model_device(model)
    try:
        model(ids.to(device), attention_mode=mode, padding_mask=mask.to(device))
    finally:
        for handle in handles:
            handle.remove()
    if len(outputs) != len(model.layers):  # a block skipped or run twice: the index would lie
        raise RuntimeError(f"{len(outputs)} block outputs for {len(model.layers)} blocks")
    return outputs


def cut_texts(tokenizer, texts: Sequence[str], max_length: int) -> set[int]:
    """The indices of `texts` that `tokenizer` cuts at `max_length` tokens, special tokens counted as
    `_encode` counts them. Tokenised to one token past the limit: a long text costs no more than a kept
    one, and transformers does not warn of a sequence longer than the model's maximum."""
    ids = tokenizer(list(texts), truncation=True, max_length=max_length + 1)["input_ids"]
    return {i for i, row in enumerate(ids) if len(row) > max_length}


@torch.no_grad()
def pooled_features(
    model: nn.Module,
    tokenizer,
    texts: Sequence[str],
    encoding: Encoding = DEFAULT_ENCODING,
    *,
    desc: str = "features",
    dtype: torch.dtype = torch.float64,
) -> list[torch.Tensor]:
    """One (n_texts, hidden) matrix per layer: attention-masked mean of each text's tokens.

    Pooling is in float64 whatever `dtype` the result is stored in (probes keep float32 to halve
    memory; CKA keeps float64)."""
    model.eval()
    per_layer: list[list[torch.Tensor]] = []
    step = encoding.batch_size
    for start in tqdm(range(0, len(texts), step), desc=desc, leave=False):
        ids, mask = _encode(tokenizer, texts[start : start + step], encoding.max_length)
        weights = mask.to(torch.float64)
        weights = weights / weights.sum(1, keepdim=True)  # (B, T), rows sum to 1
        for layer, h in enumerate(block_outputs(model, ids, mask, encoding.attention_mode)):
            pooled = torch.einsum("btd,bt->bd", h.cpu().to(torch.float64), weights)
            if layer == len(per_layer):
                per_layer.append([])
            per_layer[layer].append(pooled.to(dtype))
    return [torch.cat(chunks) for chunks in per_layer]


def check_finite(layers: Sequence[torch.Tensor | np.ndarray], model: str) -> None:
    """Refuse per-layer features holding NaN or inf (a diverged checkpoint, a float16 overflow): CKA read
    them as a layer constant across the texts, and a probe fitted on them scored below chance, silently."""
    bad = [layer for layer, f in enumerate(layers) if not bool(torch.isfinite(torch.as_tensor(f)).all())]
    if bad:
        raise UserError(
            f"{model} gives hidden states that are not finite (NaN or inf) in {noun(len(bad), 'layer')} "
            f"{format_layers(bad)}: its weights hold NaN or inf (a diverged checkpoint) or its precision "
            "overflowed; give a model with finite weights (for a float16 overflow: run it in float32, --dtype float32)"
        )


def check_varies(
    layers: Sequence[torch.Tensor | np.ndarray], model: str, inputs: str, consequence: str, fix: str
) -> None:
    """Refuse features that are the same for every input at every layer: the tokenizer read every input as
    one (all unknown characters, each text one unknown word). CKA of them is undefined (it reported "diverges
    nanx seed noise" of NaN numbers); a probe of them predicts its training split's most frequent class
    everywhere (it reported that class's share of the test split, 17% on two balanced classes, as the layer's
    accuracy). `inputs` counts them ("60 texts"), `consequence` and `fix` are the caller's words."""
    if all(bool((torch.as_tensor(f) == torch.as_tensor(f)[:1]).all()) for f in layers):
        raise UserError(
            f"{model} gives every one of the {inputs} the same features at every layer: its tokenizer reads "
            f"them as one input (unknown characters or words), so {consequence}; {fix}"
        )


def _word_positions(
    owners: Sequence[Sequence[int | None]], width: int, start: int
) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    """For every sub-token of a word: its word's row in this batch and its flat (b * width + t)
    position; plus the (sentence, word) index of each row."""
    rows, cols, words = [], [], []
    for b, sentence in enumerate(owners):
        local: dict[int, int] = {}
        for t, w in enumerate(sentence):
            if w is None:  # special tokens belong to no word
                continue
            if w not in local:
                local[w] = len(words)
                words.append((start + b, w))
            rows.append(local[w])
            cols.append(b * width + t)
    return rows, cols, words


@torch.no_grad()
def word_features(
    model: nn.Module,
    tokenizer,
    sentences: Sequence[Sequence[str]],
    encoding: Encoding = DEFAULT_ENCODING,
    *,
    desc: str = "features",
    dtype: torch.dtype = torch.float64,
) -> tuple[list[torch.Tensor], np.ndarray]:
    """Per-layer (n_words, hidden) features, each word the mean of its sub-tokens (in float64).

    Returns the features and, per kept word, its (sentence, word) index: words cut off by
    truncation are dropped, so labels must be gathered with that index.
    """
    model.eval()
    per_layer: list[list[torch.Tensor]] = []
    index: list[tuple[int, int]] = []
    step = encoding.batch_size
    for start in tqdm(range(0, len(sentences), step), desc=desc, leave=False):
        batch = [list(s) for s in sentences[start : start + step]]
        token_ids, owners = words_as_text(tokenizer, batch, encoding.max_length)
        ids, mask = pad_batch(token_ids)
        rows, cols, batch_index = _word_positions(owners, ids.shape[1], start)
        index.extend(batch_index)
        rows_t, cols_t = torch.tensor(rows, dtype=torch.long), torch.tensor(cols, dtype=torch.long)
        counts = torch.zeros(len(batch_index), dtype=torch.float64).index_add_(
            0, rows_t, torch.ones(len(rows), dtype=torch.float64)
        )
        for layer, h in enumerate(block_outputs(model, ids, mask, encoding.attention_mode)):
            flat = h.cpu().to(torch.float64).reshape(-1, h.shape[-1])
            summed = torch.zeros(len(batch_index), h.shape[-1], dtype=torch.float64).index_add_(
                0, rows_t, flat[cols_t]
            )
            if layer == len(per_layer):
                per_layer.append([])
            per_layer[layer].append((summed / counts[:, None]).to(dtype))
    return [torch.cat(chunks) for chunks in per_layer], np.asarray(index, dtype=np.int64).reshape(-1, 2)


def texts_fingerprint(items: Sequence) -> str:
    """A digest of the inputs (texts or token lists) and their order."""
    digest = hashlib.blake2b(digest_size=16)
    for item in items:
        digest.update(repr(item).encode())
        digest.update(b"\0")
    return digest.hexdigest()
