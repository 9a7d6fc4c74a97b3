"""Keep evaluation texts out of pretraining: match by record id and by long n-gram overlap.

A pretraining document is removed when its id is the id of an evaluation record, or when it
shares at least one word n-gram (default n = 13, the GPT-3 contamination rule) with any evaluation
text. Words are lower-cased runs of letters and digits, so punctuation, case and spacing changes
do not hide a copy. Each n-gram is hashed to 64 bits: words are hashed with crc32 (stable across
processes, unlike Python's `hash`), and a window of n word hashes is combined as a polynomial
mod 2^64 with numpy, so a document is checked with a few vectorised operations and a binary
search in the sorted array of evaluation hashes (8 bytes per evaluation n-gram; the whole
SQuAD + BoolQ + VitaminC + BBC set is a few tens of MB).

Trade-offs: a chance 64-bit collision could drop a clean document (probability ~ n_eval / 2^64
per n-gram, negligible); an evaluation text shorter than n words cannot be matched by overlap
(only by id); "any shared n-gram" also removes documents that merely quote a long phrase of an
evaluation text, which is the conservative side to err on.

The evaluation sets are read through the same source machinery as corpora, so an asset name
(`squad-v1-dev`), a local JSONL file or a glob all work.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field

import numpy as np

from encoderlab.data.sources import SourceConfig, SourceStats, describe, iter_documents
from encoderlab.errors import UserError

# The evaluation sets the papers' suites use, whose texts must not be pretrained on.
EVAL_ASSETS = (
    "squad-v1-dev",
    "squad-shifts-nyt",
    "squad-shifts-reddit",
    "squad-shifts-amazon",
    "squad-shifts-new-wiki",
    "boolq",
    "vitaminc",
    "bbc-news",
)
WORD = re.compile(r"[^\W_]+")
_MULT = np.uint64(0x100000001B3)  # FNV-64 prime: an odd multiplier spreads the word hashes


def words(text: str) -> list[str]:
    """Normalised words: lower-cased runs of letters and digits."""
    return WORD.findall(text.lower())


def ngram_hashes(text: str, n: int) -> np.ndarray:
    """The uint64 hashes of every word n-gram of `text` (empty if it has fewer than n words)."""
    w = words(text)
    if len(w) < n:
        return np.empty(0, dtype=np.uint64)
    h = np.fromiter((zlib.crc32(x.encode()) for x in w), dtype=np.uint64, count=len(w))
    out = np.zeros(len(w) - n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):  # wrap-around mod 2^64 is the point
        for k in range(n):
            out = out * _MULT + h[k : len(w) - n + 1 + k]
    return out


@dataclass
class Contamination:
    """Evaluation ids and n-gram hashes to remove, and counts of what was removed."""

    ngram: int = 13
    ids: frozenset[str] = frozenset()
    hashes: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.uint64))
    """Sorted, unique."""
    against: list[str] = field(default_factory=list)
    eval_texts: int = 0

    def is_contaminated(self, doc_id: str, text: str) -> str | None:
        """'id' or 'ngram' if the document must be removed, else None."""
        if doc_id in self.ids:
            return "id"
        if len(self.hashes):
            h = ngram_hashes(text, self.ngram)
            if len(h):
                pos = np.searchsorted(self.hashes, h).clip(max=len(self.hashes) - 1)
                if bool((self.hashes[pos] == h).any()):
                    return "ngram"
        return None

    def summary(self) -> dict:
        return {
            "against": self.against,
            "ngram": self.ngram,
            "eval_texts": self.eval_texts,
            "eval_ngrams": len(self.hashes),
        }


def _asset_fetched(name: str) -> bool:
    try:
        describe(SourceConfig(location=name))
    except UserError:
        return False
    return True


def resolve_eval_sets(against: tuple[str, ...] | list[str]) -> tuple[list[str], list[str]]:
    """(sets to use, default sets skipped because not fetched).

    `("auto",)` means every default evaluation asset that is fetched; `()` or `("none",)` means
    no decontamination; anything else is a list of asset names or files, each of which must exist.
    """
    against = list(against)
    if against in ([], ["none"]):
        return [], []
    if against == ["auto"]:
        fetched = [a for a in EVAL_ASSETS if _asset_fetched(a)]
        return fetched, [a for a in EVAL_ASSETS if a not in fetched]
    for a in against:
        describe(SourceConfig(location=a))  # one clear error if missing
    return against, []


def build_contamination(against: list[str], ngram: int = 13) -> Contamination:
    """Read every evaluation set once and collect its ids and n-gram hashes."""
    if ngram < 3:
        raise UserError(f"decontamination n-gram length must be at least 3, got {ngram}")
    ids: set[str] = set()
    chunks: list[np.ndarray] = []
    texts = 0
    seen_texts: set[int] = set()
    for name in against:
        for doc in iter_documents(SourceConfig(location=name), SourceStats(name)):
            ids.add(doc.id)
            key = hash(doc.text)  # in-process dedup only, so Python's salted hash is fine
            if key in seen_texts:  # SQuAD repeats each context once per question
                continue
            seen_texts.add(key)
            texts += 1
            chunks.append(ngram_hashes(doc.text, ngram))
    hashes = np.unique(np.concatenate(chunks)) if chunks else np.empty(0, dtype=np.uint64)
    return Contamination(
        ngram=ngram, ids=frozenset(ids), hashes=hashes, against=list(against), eval_texts=texts
    )
