"""Tokenisation of task examples into model inputs, one function per input shape.

Padding is done here, not by the tokenizer, so tokenizers without a pad token (most decoders)
work unchanged: padded positions are excluded by the attention mask, so ids are padded with 0. Texts are truncated to the task's `max_length` (paper 1 uses 0.99 x the model maximum;
the pocket suite uses shorter inputs for CPU speed).

Inputs are built with the tokenizer's own special tokens, or (`inputs: eos`, EncodEval's rule for
paper 1) with none but the end-of-text token appended.

Token classification tokenises the words joined by spaces and maps tokens back to words by their
character offsets; it labels the first subword of each word, or every subword (EncodEval), and
ignores the rest (-100); predictions are read at the same positions.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import torch

from encoderlab.errors import UserError
from encoderlab.eval.spec import Inputs

IGNORE = -100


def pad_batch(seqs: Sequence[Sequence[int]], fill: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad lists of ints to (B, T) with `fill`; also returns the (B, T) bool mask of real tokens."""
    width = max(len(s) for s in seqs)
    out = torch.full((len(seqs), width), fill, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.bool)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
        mask[i, : len(s)] = True
    return out, mask


def end_token_id(tokenizer) -> int:
    """The end-of-text token that `eos` inputs append: EOS, or SEP for a tokenizer without one (BERT)."""
    for name in ("eos_token_id", "sep_token_id"):
        token = getattr(tokenizer, name, None)
        if token is not None:
            return token
    raise UserError(
        "this task feeds texts with an end-of-text token (inputs: eos, EncodEval's rule), and the "
        "tokenizer has neither an EOS nor a SEP token; use a tokenizer that has one, or inputs: tokenizer"
    )


def start_token_id(tokenizer) -> int:
    """The start token that `eos` inputs begin with when a head pools the first token: BOS, or CLS for a
    tokenizer without one (BERT)."""
    for name in ("bos_token_id", "cls_token_id"):
        token = getattr(tokenizer, name, None)
        if token is not None:
            return token
    raise UserError(
        "this task pools the first token (pooling: first) of texts fed without the tokenizer's special "
        "tokens (inputs: eos), and the tokenizer has neither a BOS nor a CLS token to put there; use "
        "pooling: mean, or inputs: tokenizer"
    )


def check_room(tokenizer, max_length: int, where: str) -> None:
    """Refuse a `max_length` that the tokenizer's own special tokens fill: at their count every input
    is those tokens alone, and below it the tokenizer truncates nothing (it only logs a warning), so
    `max_length: 1` ran on whole texts, as long as a model's positions allow or longer."""
    specials = tokenizer.num_special_tokens_to_add()
    if max_length <= specials:
        raise UserError(
            f"{where}: max_length {max_length} leaves no room for text after the tokenizer's {specials} "
            f"special tokens (below that it truncates nothing); raise max_length above {specials}"
        )


def encode_texts(
    tokenizer, texts: Sequence[str], max_length: int, inputs: Inputs = "tokenizer", start: bool = False
) -> list[list[int]]:
    """Token ids of each text, truncated to `max_length`: with the tokenizer's special tokens, or
    (`eos`) with none but the end-of-text token appended before truncating, as EncodEval does. `start`
    (`eos` only): the start token first as well, for a head that pools the first position, as EncodEval
    puts BOS first for its `bos` pooling; without it that position is the text's first word."""
    if inputs == "tokenizer":
        return tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]
    end = end_token_id(tokenizer)
    first = [start_token_id(tokenizer)] if start else []
    return [
        (first + ids + [end])[:max_length]
        for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    ]


def word_ends(words: Sequence[str]) -> list[int]:
    """End offset of each word in the words joined by single spaces."""
    ends, pos = [], 0
    for w in words:
        pos += len(w)
        ends.append(pos)
        pos += 1
    return ends


def token_words(offsets: Sequence[tuple[int, int]], ends: Sequence[int]) -> list[int | None]:
    """The word of each token: the first word ending after the token starts (a space-prefixed token
    belongs to the word after its space); None for special tokens and past the end. Special tokens are
    those at (0, 0), as in EncodEval's walk: a lone space that a tokenizer trimming offsets (encoderlab's
    byte-level BPE) leaves empty at (k, k) belongs to the word after it, as its `word_ids` say too."""
    out: list[int | None] = []
    for start, end in offsets:
        word = bisect.bisect_right(ends, start) if (start, end) != (0, 0) else None
        out.append(word if word is not None and word < len(ends) else None)
    return out


def words_as_text(
    tokenizer, sentences: Sequence[Sequence[str]], max_length: int, *, special_tokens: bool = True
) -> tuple[list[list[int]], list[list[int | None]]]:
    """Ids of each sentence's words joined by single spaces, the text tokenised whole (with the
    tokenizer's special tokens, truncated to `max_length`, or neither), and the word of each id.

    Fed pre-split words (`is_split_into_words`), a byte-level BPE tokenizer encodes each word as if it
    began the text (`cat`, not the `Ġcat` of running text); here tokens are mapped to words by their
    character offsets (EncodEval's walk), so every word keeps its running-text tokens."""
    if not getattr(tokenizer, "is_fast", False):
        raise UserError(
            "words are mapped to tokens by character offsets, which need a fast tokenizer; load one with "
            "tokenizers (AutoTokenizer's default)"
        )
    enc = tokenizer(
        [" ".join(s) for s in sentences],
        add_special_tokens=special_tokens,
        truncation=special_tokens,
        max_length=max_length,
        return_offsets_mapping=True,
    )
    owners = [token_words(offsets, word_ends(s)) for offsets, s in zip(enc["offset_mapping"], sentences)]
    return [list(ids) for ids in enc["input_ids"]], owners


def words_split(
    tokenizer, sentences: Sequence[Sequence[str]], max_length: int, *, special_tokens: bool = True
) -> tuple[list[list[int]], list[list[int | None]]]:
    """As `words_as_text`, but each sentence handed over as pre-split words (`is_split_into_words`,
    `word_ids`): what Hugging Face's `run_ner.py` and paper 2's code do."""
    enc = tokenizer(
        [list(s) for s in sentences],
        is_split_into_words=True,
        add_special_tokens=special_tokens,
        truncation=special_tokens,
        max_length=max_length,
    )
    return [list(ids) for ids in enc["input_ids"]], [enc.word_ids(i) for i in range(len(sentences))]


def encode_words(
    tokenizer,
    sentences: Sequence[Sequence[str]],
    tags: Sequence[Sequence[int]],
    max_length: int,
    *,
    inputs: Inputs = "tokenizer",
    all_subwords: bool = False,
    split_words: bool = False,
) -> list[dict]:
    """Ids, labels and the word of each labelled position per sentence (`words_as_text`, or
    `words_split`): the first subword of a word carries its tag, or every subword does (`all_subwords`,
    EncodEval); the other positions are ignored (-100)."""
    specials = inputs == "tokenizer"
    tokenize = words_split if split_words else words_as_text
    all_ids, all_owners = tokenize(tokenizer, sentences, max_length, special_tokens=specials)
    end = None if specials else end_token_id(tokenizer)
    out = []
    for ids, owners, sentence_tags in zip(all_ids, all_owners, tags):
        if end is not None:
            ids, owners = (ids + [end])[:max_length], (owners + [None])[:max_length]
        labels, labelled, previous = [], [], None
        for word in owners:
            keep = word is not None and (all_subwords or word != previous)
            labels.append(sentence_tags[word] if keep else IGNORE)
            if keep:
                labelled.append(word)
            previous = word
        out.append({"input_ids": ids, "labels": labels, "words": labelled})
    return out
