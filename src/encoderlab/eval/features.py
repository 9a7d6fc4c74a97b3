"""Tokenisation of task examples into model inputs, one function per input shape.

Padding is done here, not by the tokenizer, so tokenizers without a pad token (most decoders)
work unchanged: padded positions are excluded by the attention mask, so ids are padded with 0. Texts are truncated to the task's `max_length` (paper 1 uses 0.99 x the model maximum;
the pocket suite uses shorter inputs for CPU speed).

Token classification labels the first subword of each word and ignores the rest (-100), using the
fast tokenizer's `word_ids()` on pre-split words; predictions are read at the same positions.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

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


def encode_texts(tokenizer, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """Token ids (with the tokenizer's special tokens) of each text, truncated to `max_length`."""
    return tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]


def encode_words(
    tokenizer, sentences: Sequence[Sequence[str]], tags: Sequence[Sequence[int]], max_length: int
) -> list[dict]:
    """Ids, first-subword labels and the word index of each labelled position per sentence."""
    enc = tokenizer(
        [list(s) for s in sentences], is_split_into_words=True, truncation=True, max_length=max_length
    )
    out = []
    for i, sentence_tags in enumerate(tags):
        labels, firsts, previous = [], [], None
        for word in enc.word_ids(i):
            if word is not None and word != previous:
                labels.append(sentence_tags[word])
                firsts.append(word)
            else:
                labels.append(IGNORE)
            previous = word
        out.append({"input_ids": enc["input_ids"][i], "labels": labels, "words": firsts})
    return out
