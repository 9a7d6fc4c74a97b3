"""Tokenised splits held compactly: every text's ids in one flat int32 array plus offsets.

Why. A prepared split was a list of dicts holding Python lists of ints: about 38-44 bytes per token (an
8-byte list slot and a 28-byte int object for every id past 256, plus each list's and dict's own
overhead). Paper 1's IR training set (msmarco-pairs, about 500,000 query/positive pairs) came to
gigabytes per process, and a grid's nodes keep it for the whole run (`protocol._PREPARED`). Here a
column of texts is `TokenIds` (4 bytes per token, 8 per text), and a split is `CompactFeatures`: its id
columns and its plain per-example columns (labels, document ids, input keys), which builds an example's
dict when it is read. A tc split is one too: its ids, labels (-100 where ignored: `signed`), labelled
words and gold tags are int columns (63 bytes a token before, 17 after, `encode_words`' lists of 20,000
synthetic sentences, tracemalloc); so are QA's windows (`qa.compact_train_features`, `compact_eval_features`)
and the tagger head's features (`answer_tagger.compact_encode`).

Results are unchanged by construction: an example reads back as the same dict of the same Python lists
of ints the loop read before (`CompactFeatures.__getitem__`), the texts are tokenised by the same call
(`features.encode_texts`), only in chunks of `CHUNK` texts, which a fast tokenizer encodes one by one
anyway (no padding), and the data hash is taken from the examples before they are tokenised
(`protocol._prepared_task`), so no key or score moves. The chunks also bound the peak: the lists of
one chunk are alive at a time, not those of the whole split.

Trade-off: reading an example builds its lists again (a few microseconds per example, the loop reads a
batch per step); ids must fit int32 (every vocabulary does; checked).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from encoderlab.eval.heads import input_key

CHUNK = 10_000
"""Texts tokenised per call: large enough for the fast tokenizer's batching, small enough that one
chunk's Python lists are a small share of the split's compact ids."""
INT32_MAX = np.iinfo(np.int32).max


class TokenIds(Sequence):
    """The token ids of many texts: text `i` is `flat[offsets[i]:offsets[i + 1]]`, read as a list of ints."""

    def __init__(self, flat: np.ndarray, offsets: np.ndarray):
        self.flat, self.offsets = flat, offsets

    @classmethod
    def of(cls, chunks: Iterable[Sequence[Sequence[int]]], signed: bool = False) -> TokenIds:
        """The ids of every text of `chunks` (lists of id lists), in order. `signed`: other int lists than
        token ids, negatives allowed (a token classifier's labels, -100 where ignored)."""
        parts, lengths = [], []
        for chunk in chunks:
            lengths.append(np.fromiter((len(ids) for ids in chunk), dtype=np.int64, count=len(chunk)))
            flat = np.fromiter((t for ids in chunk for t in ids), dtype=np.int64)
            # no vocabulary comes near int32's range: a guard against a bug, not a refusal of input
            if flat.size and (flat.min() < (-INT32_MAX if signed else 0) or flat.max() > INT32_MAX):
                raise ValueError("token ids outside int32")
            parts.append(flat.astype(np.int32))
        offsets = np.zeros(sum(len(x) for x in lengths) + 1, dtype=np.int64)
        if lengths:
            np.cumsum(np.concatenate(lengths), out=offsets[1:])
        return cls(np.concatenate(parts) if parts else np.zeros(0, np.int32), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.flat[self.offsets[i] : self.offsets[i + 1]].tolist()


def joined(parts: Sequence[TokenIds]) -> TokenIds:
    """The texts of `parts` one after the other, as one `TokenIds`."""
    if not parts:
        return TokenIds.of([])
    lengths = np.concatenate([np.diff(p.offsets) for p in parts])
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return TokenIds(np.concatenate([p.flat for p in parts]), offsets)


def stacked(
    chunks: Iterable[Sequence[Mapping[str, Any]]], signed: Sequence[str] = ()
) -> tuple[dict[str, TokenIds], dict[str, np.ndarray]]:
    """Rows that share their keys (the first row's), handed over a chunk at a time so that one chunk's
    lists are alive at a time: ({key: TokenIds} of the keys holding int lists, `signed` ones allowing
    negatives, {key: int64 array} of those holding ints), in the first row's key order."""
    lists: dict[str, list[TokenIds]] = {}
    numbers: dict[str, list[np.ndarray]] = {}
    for rows in chunks:
        for key, value in (rows[0] if rows else {}).items():
            column = [row[key] for row in rows]
            if isinstance(value, list):
                lists.setdefault(key, []).append(TokenIds.of([column], signed=key in signed))
            else:
                numbers.setdefault(key, []).append(np.asarray(column, dtype=np.int64))
    return {k: joined(v) for k, v in lists.items()}, {k: np.concatenate(v) for k, v in numbers.items()}


class Spans(Sequence):
    """Per text, a list of (start, end) pairs or None: text `i`'s pairs are `pairs[i]` read two ints at a
    time, a (-1, -1) pair read as None (character offsets are never negative)."""

    def __init__(self, pairs: TokenIds):
        self.pairs = pairs

    @staticmethod
    def flat(spans: Sequence[tuple[int, int] | None]) -> list[int]:
        """`spans` as the ints a `Spans` stores (`TokenIds.of(..., signed=True)`)."""
        return [x for span in spans for x in (span if span is not None else (-1, -1))]

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        ints = self.pairs[i]
        return [None if s < 0 else (s, e) for s, e in zip(ints[::2], ints[1::2])]


def compact_ids(encode: Callable[[Sequence[str]], list[list[int]]], texts: Iterable[str]) -> TokenIds:
    """`encode` (texts -> id lists, e.g. `families.text_ids` bound to a task) applied `CHUNK` texts at a
    time, the ids kept as `TokenIds`."""

    def chunks():
        batch: list[str] = []
        for text in texts:
            batch.append(text)
            if len(batch) == CHUNK:
                yield encode(batch)
                batch = []
        if batch:
            yield encode(batch)

    return TokenIds.of(chunks())


class CompactFeatures(Sequence):
    """A prepared split: example `i` is the dict {column: ids[i]} of its id columns (`TokenIds`) and
    {column: values[i]} of its plain ones (lists, or numpy arrays for numbers: 8 bytes a row, not a
    36-byte int object and its slot), in the order the columns are given."""

    def __init__(self, ids: Mapping[str, TokenIds], values: Mapping[str, Sequence[Any]] | None = None):
        self.ids, self.values = dict(ids), dict(values or {})
        sizes = {len(c) for c in (*self.ids.values(), *self.values.values())}
        if len(sizes) > 1:
            raise ValueError(f"columns of different lengths {sorted(sizes)}")
        self.size = sizes.pop() if sizes else 0

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return {
            **{name: column[i] for name, column in self.ids.items()},
            **{name: _item(column, i) for name, column in self.values.items()},
        }


def _item(column: Sequence[Any], i: int) -> Any:
    """Row `i` of a plain column; a numpy column's as the Python number it was (an int key, not np.int64)."""
    return column[i].item() if isinstance(column, np.ndarray) else column[i]


def columns(rows: Sequence[Mapping[str, Any]]) -> dict[str, list]:
    """{key: [row[key] for each row]} of rows that share their keys (the first row's): a
    `CompactFeatures`' plain columns."""
    return {key: [row[key] for row in rows] for key in (rows[0] if rows else ())}


def input_keys(ids: TokenIds) -> np.ndarray:
    """`heads.input_key` of every text of `ids`, as int64 (a hash is a signed 64-bit int)."""
    return np.fromiter((input_key(x) for x in ids), dtype=np.int64, count=len(ids))
