"""A faster encoder for byte-level BPE tokenizers: the same ids as `tokenizers`, through tiktoken.

`data prepare` spends almost all of its time in the tokenizer (docs/benchmarks.md: the Rust
`tokenizers` BPE takes about 85% of the CPU time). tiktoken encodes the same byte-level BPE about
twice as fast on one thread, because it merges by token rank over bytes with a simpler loop. This
module builds a tiktoken `Encoding` from a `tokenizer.json` **only when it provably gives the same
ids**, and says why not otherwise (the caller then keeps `tokenizers`):

* the pipeline is the GPT-2 one: no normaliser, a `ByteLevel` pre-tokenizer with its GPT-2 regex
  and no added prefix space, a plain BPE model (no dropout, affixes, byte fallback or
  `ignore_merges`), every one of the 256 bytes in the vocabulary;
* tiktoken applies the pair whose merged token has the lowest id; `tokenizers` the pair listed
  first in `merges`. The two agree when, for every merge `(a, b) -> t`, tiktoken's own BPE of `t`'s
  bytes with only lower ids allowed stops at exactly `a`, `b` (HF's tiktoken converter recovers
  merges by this rule). This is checked for every merge, once per tokenizer (about a second for 32k
  merges).

Added (special) tokens are left out of the ranks: `prepare` encodes a literal `<s>` in a document as
text, and a BPE never merges its way into an added token. Trade-off: one more dependency (tiktoken,
a small Rust wheel) for about half of `prepare`'s CPU time; other tokenizers (WordPiece,
SentencePiece-style, regex `Split` pipelines) keep `tokenizers`.
"""

from __future__ import annotations

import functools
import json

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
"""The pre-tokenization regex of `ByteLevel(use_regex=True)` (GPT-2's)."""


@functools.cache
def _unicode_to_byte() -> dict[str, int]:
    """GPT-2's reversible map from the printable characters byte-level vocabularies use to bytes."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


def _to_bytes(token: str) -> bytes | None:
    table = _unicode_to_byte()
    try:
        return bytes(table[ch] for ch in token)
    except KeyError:
        return None


def _unsupported(spec: dict) -> str | None:
    """Why `spec` (a parsed tokenizer.json) is not a plain GPT-2-style byte-level BPE, or None."""
    model, pre = spec.get("model") or {}, spec.get("pre_tokenizer") or {}
    if model.get("type") != "BPE":
        return f"its model is {model.get('type')}, not BPE"
    if spec.get("normalizer") is not None:
        return "it has a normaliser"
    if pre.get("type") != "ByteLevel" or not pre.get("use_regex", True) or pre.get("add_prefix_space"):
        return "its pre-tokenizer is not ByteLevel with the GPT-2 regex and no prefix space"
    odd = [k for k in ("dropout", "continuing_subword_prefix", "end_of_word_suffix") if model.get(k)]
    odd += [k for k in ("byte_fallback", "ignore_merges") if model.get(k)]
    return f"its BPE sets {', '.join(odd)}" if odd else None


def _bpe(ranks: dict[bytes, int], piece: bytes, max_rank: int) -> list[bytes]:
    """tiktoken's merge rule on `piece`: merge the adjacent pair whose concatenation has the lowest
    rank below `max_rank`, until none is left."""
    parts = [bytes([b]) for b in piece]
    while True:
        best, at = max_rank, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and rank < best:
                best, at = rank, i
        if at < 0:
            return parts
        parts[at : at + 2] = [parts[at] + parts[at + 1]]


def tiktoken_ranks(tokenizer_json: str) -> tuple[dict[bytes, int] | None, str]:
    """(mergeable ranks that make tiktoken give `tokenizer_json`'s ids, "") or (None, why not)."""
    spec = json.loads(tokenizer_json)
    reason = _unsupported(spec)
    if reason:
        return None, reason
    added = {t["content"] for t in spec.get("added_tokens", [])}
    ranks: dict[bytes, int] = {}
    for token, rank in spec["model"]["vocab"].items():
        if token in added:
            continue
        raw = _to_bytes(token)
        if raw is None or raw in ranks:
            return None, f"its vocabulary entry {token!r} is not a byte-level token"
        ranks[raw] = rank
    if any(bytes([b]) not in ranks for b in range(256)):
        return None, "its vocabulary lacks some of the 256 single bytes"
    for merge in spec["model"]["merges"]:
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        a, b = _to_bytes(left), _to_bytes(right)
        if a is None or b is None or a + b not in ranks or _bpe(ranks, a + b, ranks[a + b]) != [a, b]:
            return None, f"its merge '{left} {right}' is not what merging by token id gives"
    return ranks, ""


def tiktoken_encoding(ranks: dict[bytes, int]):
    """The tiktoken `Encoding` over `ranks` from `tiktoken_ranks` (encode with `encode_ordinary_batch`)."""
    import tiktoken

    return tiktoken.Encoding("encoderlab-bpe", pat_str=GPT2_PATTERN, mergeable_ranks=ranks, special_tokens={})
