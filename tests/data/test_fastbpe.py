"""tiktoken as `prepare`'s encoder for byte-level BPE: the same ids as `tokenizers`, or refused.

The reference is `tokenizers` itself (the Rust library every HF tokenizer runs on), on the tokenizer
`data tokenizer` trains by default in GPT-2's layout and in Llama 3's (a regex Split, then
ByteLevel), over arbitrary Unicode, and on a real corpus when it is fetched.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from corpus_fixtures import tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

from encoderlab.data.fastbpe import tiktoken_bpe
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.sources import SourceConfig

TRICKY = [
    "",
    "literal <s> and </s> and <mask> text <pad>",
    "  leading spaces\n\n\ttabs 123 4567 don't we'll THEY'RE",
    "café 漢字 🙂 émoji 🎉🎉 Ωμέγα",
    "a\u00a0b\u200bc \r\n\x00 end   ",
    "the  of   and\n    river\t\tschool  ",  # space runs before words: the regex's (?!\S)
]

LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
"""The pre-tokenization regex of Llama 3's tokenizer (and so EuroBERT's)."""


def _byte_level(**kw):
    return pre_tokenizers.ByteLevel(add_prefix_space=False, **kw)


def _llama3_layout(tok: Tokenizer) -> Tokenizer:
    """`tok` with Llama 3's pre-tokenizer: a regex Split, then ByteLevel without its own regex."""
    split = pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False)
    tok.pre_tokenizer = pre_tokenizers.Sequence([split, _byte_level(use_regex=False)])
    return tok


def _with_ignore_merges(tok: Tokenizer) -> Tokenizer:
    spec = json.loads(tok.to_str())
    spec["model"]["ignore_merges"] = True
    return Tokenizer.from_str(json.dumps(spec))


LAYOUTS = {
    "gpt2": lambda tok: tok,
    "llama3": _llama3_layout,
    "llama3-ignore-merges": lambda tok: _with_ignore_merges(_llama3_layout(tok)),
}


def _trained(folder, layout: str = "gpt2") -> Tokenizer:
    return LAYOUTS[layout](Tokenizer.from_file(str(folder / "tokenizer.json")))


def _encode_both(tok: Tokenizer, texts: list[str]) -> tuple[list[list[int]], list[list[int]]]:
    fast, why = tiktoken_bpe(tok.to_str())
    assert fast is not None, why
    tok.encode_special_tokens = True  # as prepare encodes documents
    reference = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    return fast.encoding().encode_ordinary_batch(texts, num_threads=1), reference


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_the_trained_bpe_gives_tokenizers_ids_on_tricky_texts(tokenizer_dir, layout):  # noqa: F811
    ours, ref = _encode_both(_trained(tokenizer_dir, layout), TRICKY)
    assert ours == ref


@functools.cache
def _both_encoders(folder: Path, layout: str):
    """(tokenizers' Tokenizer, tiktoken's Encoding) of the trained BPE in `layout`, as `_encode_both` builds
    them: built once per layout, not once per hypothesis example (600 builds were most of the time)."""
    tok = _trained(folder, layout)
    fast, why = tiktoken_bpe(tok.to_str())
    assert fast is not None, why
    tok.encode_special_tokens = True  # as prepare encodes documents
    return tok, fast.encoding()


@pytest.mark.parametrize("layout", list(LAYOUTS))
@settings(max_examples=200, deadline=None)
@given(texts=st.lists(st.text(max_size=80), min_size=1, max_size=8))
def test_the_trained_bpe_gives_tokenizers_ids_on_any_text(tokenizer_dir, layout, texts):  # noqa: F811
    tok, fast = _both_encoders(tokenizer_dir, layout)
    reference = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    assert fast.encode_ordinary_batch(texts, num_threads=1) == reference


def _bpe_json(vocab: dict[str, int], merges: list[str]) -> str:
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m.split(" ")) for m in merges]))
    tok.pre_tokenizer = _byte_level()
    return tok.to_str()


def _byte_vocab(**extra: int) -> dict[str, int]:
    return {**{ch: i for i, ch in enumerate(pre_tokenizers.ByteLevel.alphabet())}, **extra}


def test_merges_that_disagree_with_merging_by_id_are_refused():
    # "bc" (256) is merged before "ab" (257), and "abc" (258) comes from "ab c". tokenizers gives
    # "a bc" for "abc" (no merge "a bc"); merging by id would give "abc": not the same tokenizer.
    spec = _bpe_json(_byte_vocab(bc=256, ab=257, abc=258), ["b c", "a b", "ab c"])
    fast, why = tiktoken_bpe(spec)
    assert fast is None and "merge 'ab c'" in why
    assert Tokenizer.from_str(spec).encode("abc").tokens == ["a", "bc"]  # the disagreement, for real


def test_merges_listed_out_of_id_order_are_refused():
    # Each merge alone is what merging by id gives, but "a b" (into 257) is listed before "b c" (into
    # 256): tokenizers gives "ab c" for "abc", tiktoken (lowest id first) "a bc". Was accepted.
    spec = _bpe_json(_byte_vocab(bc=256, ab=257), ["a b", "b c"])
    fast, why = tiktoken_bpe(spec)
    assert fast is None and "merge 'b c' is listed after a merge into a higher id" in why
    assert Tokenizer.from_str(spec).encode("abc").tokens == ["ab", "c"]  # the disagreement, for real


def test_a_token_no_merge_makes_is_refused():
    # "abc" is in the vocabulary but no merge makes it: tokenizers never emits it for "abc",
    # tiktoken (which merges by the id of the result) would
    spec = _bpe_json(_byte_vocab(ab=256, abc=257), ["a b"])
    fast, why = tiktoken_bpe(spec)
    assert fast is None and "made by no merge" in why
    assert Tokenizer.from_str(spec).encode("abc").tokens == ["ab", "c"]


def test_consistent_handmade_merges_are_accepted_and_agree():
    spec = _bpe_json(_byte_vocab(ab=256, abc=257, Ġab=258), ["a b", "ab c", "Ġ ab"])
    fast, why = tiktoken_bpe(spec)
    assert fast is not None, why
    text = "abc ab abcab cab"
    assert fast.encoding().encode_ordinary(text) == Tokenizer.from_str(spec).encode(text).ids


def test_a_merge_of_an_entry_the_vocabulary_lacks_is_refused():
    spec = json.loads(_bpe_json(_byte_vocab(ab=256, abc=257), ["a b", "ab c"]))
    spec["model"]["merges"][1] = ["xy", "c"]  # "xy" is no vocabulary entry
    fast, why = tiktoken_bpe(json.dumps(spec))
    assert fast is None and "merge 'xy c'" in why


def _rescanned_bpe(ranks: dict[bytes, int], piece: bytes, max_rank: int) -> list[bytes]:
    """The merge rule as tiktoken states it, rescanning every pair after each merge (the reference)."""
    parts = [bytes([b]) for b in piece]
    while True:
        found = [
            (ranks[x + y], i)
            for i, (x, y) in enumerate(zip(parts, parts[1:]))
            if ranks.get(x + y, max_rank) < max_rank
        ]
        if not found:
            return parts
        _, at = min(found)
        parts[at : at + 2] = [parts[at] + parts[at + 1]]


def test_the_merge_walk_is_the_rescanning_one():
    """`_bpe` keeps the pairs' ranks and looks up only the two beside a merge: the same parts as rescanning,
    on random vocabularies over three letters (dense enough that most pieces merge several times)."""
    import random

    from encoderlab.data.fastbpe import _bpe

    rng = random.Random(0)
    for _ in range(400):
        ranks = {bytes([b]): b for b in range(256)}
        for _ in range(rng.randint(0, 30)):
            ranks.setdefault(bytes(rng.choice(b"abc") for _ in range(rng.randint(2, 5))), len(ranks))
        piece = bytes(rng.choice(b"abc") for _ in range(rng.randint(0, 12)))
        max_rank = 256 + rng.randint(0, 40)
        assert _bpe(ranks, piece, max_rank) == _rescanned_bpe(ranks, piece, max_rank), (
            ranks,
            piece,
            max_rank,
        )


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=400), max_size=8))
def test_an_entry_reads_as_the_byte_map_reads_it(token):
    """`_to_bytes` (a C translate) gives GPT-2's map character by character, and None for a character outside it."""
    from encoderlab.data.fastbpe import _to_bytes, _unicode_to_byte

    table = _unicode_to_byte()
    expected = bytes(table[ch] for ch in token) if all(ch in table for ch in token) else None
    assert _to_bytes(token) == expected


def _set(attribute: str, value):
    return lambda tok: setattr(tok, attribute, value)


@pytest.mark.parametrize(
    "change,why",
    [
        (_set("normalizer", normalizers.NFKC()), "normaliser"),
        (_set("pre_tokenizer", pre_tokenizers.ByteLevel(add_prefix_space=True)), "prefix space"),
        (_set("pre_tokenizer", pre_tokenizers.Whitespace()), "does not end in ByteLevel"),
        (_set("model", models.WordPiece({"[UNK]": 0, "a": 1}, unk_token="[UNK]")), "WordPiece"),
        (
            _set(
                "pre_tokenizer",
                pre_tokenizers.Sequence(
                    [pre_tokenizers.Split(Regex(r"\d"), behavior="removed"), _byte_level(use_regex=False)]
                ),
            ),
            "isolates",
        ),
        (
            _set("pre_tokenizer", pre_tokenizers.Sequence([pre_tokenizers.Digits(), _byte_level()])),
            "splits twice",
        ),
    ],
    ids=["normaliser", "prefix-space", "whitespace", "wordpiece", "split-removes", "digits-then-bytelevel"],
)
def test_other_pipelines_keep_tokenizers_and_say_why(tokenizer_dir, change, why):  # noqa: F811
    tok = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    change(tok)
    fast, reason = tiktoken_bpe(tok.to_str())
    assert fast is None and why in reason


def test_prepare_writes_the_same_tokens_through_either_encoder(tmp_path, tokenizer_dir, monkeypatch):  # noqa: F811
    import encoderlab.data.prepare as prep

    records = [{"id": str(i), "text": t + f" doc {i}"} for i, t in enumerate(TRICKY * 6)]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", records)
    cfg = PrepareConfig(
        sources=(SourceConfig(location=str(corpus)),), tokenizer=str(tokenizer_dir), decontaminate=()
    )
    fast = prepare(cfg, tmp_path / "fast", workers=1, progress=False)
    monkeypatch.setattr(prep, "tiktoken_bpe", lambda text: (None, "forced"))
    slow = prepare(cfg, tmp_path / "slow", workers=1, progress=False)
    assert (read_meta(fast)["encoder"], read_meta(slow)["encoder"]) == ("tiktoken", "tokenizers")
    for name in ("tokens.bin", "doc_offsets.npy", "val/tokens.bin", "val/doc_offsets.npy"):
        assert (fast / name).read_bytes() == (slow / name).read_bytes(), name


@pytest.mark.assets
def test_a_real_corpus_and_its_trained_tokenizer_agree(tmp_path):
    from encoderlab.data.assets import asset_jsonl, is_fetched
    from encoderlab.data.tokenizer import train_tokenizer

    if not is_fetched("wiki-leads"):
        pytest.skip("wiki-leads is not fetched (encoderlab assets fetch wiki-leads)")
    train_tokenizer(SourceConfig(location="wiki-leads"), 4096, tmp_path / "tok", progress=False)
    texts = [json.loads(line)["text"] for line in asset_jsonl("wiki-leads").open(encoding="utf-8")]
    for layout in LAYOUTS:
        ours, ref = _encode_both(_trained(tmp_path / "tok", layout), texts)
        assert ours == ref, layout
