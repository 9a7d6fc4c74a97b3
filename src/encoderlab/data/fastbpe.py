"""A faster encoder for byte-level BPE tokenizers: the same ids as `tokenizers`, through tiktoken.

`data prepare` spends almost all of its time in the tokenizer (docs/benchmarks.md: the Rust
`tokenizers` BPE takes about 85% of the CPU time). tiktoken encodes the same byte-level BPE about
twice as fast on one thread, because it merges by token rank over bytes with a simpler loop. This
module builds a tiktoken `Encoding` from a `tokenizer.json` **only when it provably gives the same
ids**, and says why not otherwise (the caller then keeps `tokenizers`):

* the pipeline is one tiktoken replays: no normaliser; a `ByteLevel` pre-tokenizer with its GPT-2
  regex, or a regex `Split` (isolated matches) then `ByteLevel` without a regex (the layout of
  Llama 3's and EuroBERT's tokenizers); no added prefix space; a plain BPE model (no dropout, affixes
  or byte fallback); every one of the 256 bytes in the vocabulary;
* tiktoken applies the pair whose merged token has the lowest id; `tokenizers` the pair listed
  first in `merges`. The two agree when, for every merge `(a, b) -> t`, tiktoken's own BPE of `t`'s
  bytes with only lower ids allowed stops at exactly `a`, `b` (HF's tiktoken converter recovers
  merges by this rule), and the merges are listed in the order of their tokens' ids (tiktoken's
  priority; a list in another order gave other ids, e.g. "ab c" against "a bc" for "abc" with
  merges "a b", "b c" into ids 257, 256). This is checked for every merge, once per tokenizer (0.4 s
  for 32k merges).
  It also makes every token the BPE of its own bytes, so `ignore_merges` (a whole word found in the
  vocabulary is taken as is, as tiktoken does too) cannot change the result either.

Added (special) tokens are left out of the ranks: `prepare` encodes a literal `<s>` in a document as
text, and a BPE never merges its way into an added token. Trade-off: one more dependency (tiktoken,
a small Rust wheel) for about half of `prepare`'s CPU time; other tokenizers (WordPiece,
SentencePiece-style, normalised ones such as Qwen's) keep `tokenizers`.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

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


@functools.cache
def _byte_table() -> dict[int, str]:
    """`str.translate`'s table from `_unicode_to_byte`'s characters to the Latin-1 character of their byte; the
    other characters below 256 (not in that map) go to one Latin-1 cannot encode, so they are refused as a
    character above the map is."""
    table = {code: "\uffff" for code in range(256)}
    table.update({ord(ch): chr(b) for ch, b in _unicode_to_byte().items()})
    return table


def _to_bytes(token: str) -> bytes | None:
    """The bytes of a byte-level vocabulary entry, None when it is not one. One `translate` and one `encode`
    in C, where a generator over the characters cost 1 s of a 128k vocabulary's 2 s check."""
    try:
        return token.translate(_byte_table()).encode("latin-1")
    except UnicodeEncodeError:
        return None


def _pattern(pre: dict) -> tuple[str | None, str]:
    """(the pre-tokenization regex, "") of a byte-level pre-tokenizer tiktoken can replay, or (None, why):
    `ByteLevel` with its GPT-2 regex, or a regex `Split` (isolated) then `ByteLevel` without one
    (Llama 3's and EuroBERT's layout); neither may add a prefix space."""
    steps = pre.get("pretokenizers", []) if pre.get("type") == "Sequence" else [pre]
    *split, byte_level = steps or [{}]
    if byte_level.get("type") != "ByteLevel" or byte_level.get("add_prefix_space"):
        return None, "its pre-tokenizer does not end in ByteLevel without a prefix space"
    if not split:
        return (GPT2_PATTERN, "") if byte_level.get("use_regex", True) else (None, "it has no regex split")
    if len(split) > 1 or byte_level.get("use_regex", True):
        return None, "its pre-tokenizer splits twice"
    (rule,) = split
    regex = (rule.get("pattern") or {}).get("Regex")
    if (
        rule.get("type") != "Split"
        or regex is None
        or rule.get("behavior") != "Isolated"
        or rule.get("invert")
    ):
        return None, "its pre-tokenizer is not a regex Split that isolates the matches"
    return regex, ""


def _unsupported(spec: dict) -> str | None:
    """Why `spec` (a parsed tokenizer.json)'s model is not a plain BPE tiktoken can replay, or None."""
    model = spec.get("model") or {}
    if model.get("type") != "BPE":
        return f"its model is {model.get('type')}, not BPE"
    if spec.get("normalizer") is not None:
        return "it has a normaliser"
    odd = [
        k
        for k in ("dropout", "continuing_subword_prefix", "end_of_word_suffix", "byte_fallback")
        if model.get(k)
    ]
    return f"its BPE sets {', '.join(odd)}" if odd else None


_SINGLE = [bytes([b]) for b in range(256)]


def _bpe(ranks: dict[bytes, int], piece: bytes, max_rank: int) -> list[bytes]:
    """tiktoken's merge rule on `piece`: merge the adjacent pair whose concatenation has the lowest
    rank below `max_rank` (the leftmost of equals), until none is left. The pairs' ranks are kept in a
    list and only the two next to a merge are looked up again (tiktoken's own loop), where rescanning every
    pair after each merge cost most of the check's time."""
    parts = [_SINGLE[b] for b in piece]
    get = ranks.get
    pairs = [get(x + y, max_rank) for x, y in zip(parts, parts[1:])]
    while pairs:
        best = min(pairs)
        if best >= max_rank:  # a rank at or above it is no merge here, as one absent
            break
        at = pairs.index(best)
        parts[at] += parts.pop(at + 1)
        del pairs[at]
        if at:
            pairs[at - 1] = get(parts[at - 1] + parts[at], max_rank)
        if at < len(pairs):
            pairs[at] = get(parts[at] + parts[at + 1], max_rank)
    return parts


@dataclass(frozen=True)
class TiktokenBPE:
    """What tiktoken needs to give a `tokenizers` BPE's ids (picklable, for `prepare`'s workers)."""

    pattern: str
    """The pre-tokenization regex."""
    ranks: dict[bytes, int]
    """Token bytes -> id, added tokens left out."""

    def encoding(self):
        """The tiktoken `Encoding` (encode with `encode_ordinary_batch`)."""
        import tiktoken

        return tiktoken.Encoding(
            "encoderlab-bpe", pat_str=self.pattern, mergeable_ranks=self.ranks, special_tokens={}
        )


@functools.lru_cache(maxsize=4)
def tiktoken_bpe(tokenizer_json: str) -> tuple[TiktokenBPE | None, str]:
    """(what makes tiktoken give `tokenizer_json`'s ids, "") or (None, why not). Cached: the check
    walks every merge (seconds for Llama 3's 128k), and a process may prepare several folders."""
    spec = json.loads(tokenizer_json)
    pattern, reason = _pattern(spec.get("pre_tokenizer") or {})
    reason = reason or _unsupported(spec)
    if reason:
        return None, reason
    added = {t["content"] for t in spec.get("added_tokens", [])}
    ranks: dict[bytes, int] = {}
    raw_of: dict[str, bytes] = {}  # each entry's bytes, read once: a merge names two entries
    for token, rank in spec["model"]["vocab"].items():
        if token in added:
            continue
        raw = _to_bytes(token)
        if raw is None or raw in ranks:
            return None, f"its vocabulary entry {token!r} is not a byte-level token"
        ranks[raw], raw_of[token] = rank, raw
    if any(bytes([b]) not in ranks for b in range(256)):
        return None, "its vocabulary lacks some of the 256 single bytes"
    return _checked_merges(spec["model"]["merges"], ranks, raw_of, pattern)


def _checked_merges(
    merges: list, ranks: dict[bytes, int], raw_of: dict[str, bytes], pattern: str
) -> tuple[TiktokenBPE | None, str]:
    """(the BPE, "") when every merge is what merging by token id gives, in id order, and every longer token is
    made by one (the module docstring's rule); else (None, the first merge or entry that breaks it). A merge
    naming no vocabulary entry (or an added token) is refused too: no walk makes a part that is not a token."""
    made, last = set(), -1
    for merge in merges:
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        a, b = raw_of.get(left), raw_of.get(right)
        rank = None if a is None or b is None else ranks.get(a + b)
        # two single bytes are what any walk over two bytes stops at below their own pair's rank
        if rank is None or (len(a) + len(b) > 2 and _bpe(ranks, a + b, rank) != [a, b]):
            return None, f"its merge '{left} {right}' is not what merging by token id gives"
        if rank <= last:  # `tokenizers` applies merges in list order, tiktoken in id order
            return None, f"its merge '{left} {right}' is listed after a merge into a higher id"
        made.add(a + b)
        last = rank
    # tiktoken would merge into (or take whole) a token that no merge of `tokenizers` makes
    orphans = [raw for raw in ranks if len(raw) > 1 and raw not in made]
    if orphans:
        return None, f"its vocabulary entry {orphans[0]!r} is made by no merge"
    return TiktokenBPE(pattern, ranks), ""
