"""tiktoken as `prepare`'s encoder for byte-level BPE: the same ids as `tokenizers`, or refused.

The reference is `tokenizers` itself (the Rust library every HF tokenizer runs on), on the tokenizer
`data tokenizer` trains by default, over arbitrary Unicode, and on a real corpus when it is fetched.
"""

from __future__ import annotations

import json

import pytest
from corpus_fixtures import tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from encoderlab.data.fastbpe import tiktoken_encoding, tiktoken_ranks
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


def _reference(folder) -> Tokenizer:
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.encode_special_tokens = True  # as prepare encodes documents
    return tok


def _encode_both(folder, texts):
    ranks, why = tiktoken_ranks((folder / "tokenizer.json").read_text(encoding="utf-8"))
    assert ranks is not None, why
    ours = tiktoken_encoding(ranks).encode_ordinary_batch(texts, num_threads=1)
    return ours, [e.ids for e in _reference(folder).encode_batch(texts, add_special_tokens=False)]


def test_the_trained_bpe_gives_tokenizers_ids_on_tricky_texts(tokenizer_dir):  # noqa: F811
    ours, ref = _encode_both(tokenizer_dir, TRICKY)
    assert ours == ref


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=80), min_size=1, max_size=8))
def test_the_trained_bpe_gives_tokenizers_ids_on_any_text(tokenizer_dir, texts):  # noqa: F811
    ours, ref = _encode_both(tokenizer_dir, texts)
    assert ours == ref


def _bpe_json(vocab: dict[str, int], merges: list[str], **pre) -> str:
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m.split(" ")) for m in merges]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, **pre)
    return tok.to_str()


def _byte_vocab() -> dict[str, int]:
    return {ch: i for i, ch in enumerate(pre_tokenizers.ByteLevel.alphabet())}


def test_merges_that_disagree_with_merging_by_id_are_refused():
    # "bc" (256) is merged before "ab" (257), and "abc" (258) comes from "ab c". tokenizers gives
    # "a bc" for "abc" (no merge "a bc"); merging by id would give "abc": not the same tokenizer.
    vocab = _byte_vocab()
    vocab |= {"bc": 256, "ab": 257, "abc": 258}
    spec = _bpe_json(vocab, ["b c", "a b", "ab c"])
    ranks, why = tiktoken_ranks(spec)
    assert ranks is None and "merge 'ab c'" in why
    assert Tokenizer.from_str(spec).encode("abc").tokens == ["a", "bc"]  # the disagreement, for real


def test_consistent_handmade_merges_are_accepted_and_agree():
    vocab = _byte_vocab()
    vocab |= {"ab": 256, "abc": 257, "Ġab": 258}
    spec = _bpe_json(vocab, ["a b", "ab c", "Ġ ab"])
    ranks, why = tiktoken_ranks(spec)
    assert ranks is not None, why
    text = "abc ab abcab cab"
    ours = tiktoken_encoding(ranks).encode_ordinary(text)
    assert ours == Tokenizer.from_str(spec).encode(text).ids


@pytest.mark.parametrize(
    "change,why",
    [
        (lambda t: setattr(t, "normalizer", normalizers.NFKC()), "normaliser"),
        (
            lambda t: setattr(t, "pre_tokenizer", pre_tokenizers.ByteLevel(add_prefix_space=True)),
            "pre-tokenizer",
        ),
        (lambda t: setattr(t, "pre_tokenizer", pre_tokenizers.Whitespace()), "pre-tokenizer"),
        (
            lambda t: setattr(t, "model", models.WordPiece({"[UNK]": 0, "a": 1}, unk_token="[UNK]")),
            "WordPiece",
        ),
    ],
    ids=["normaliser", "prefix-space", "whitespace", "wordpiece"],
)
def test_other_pipelines_keep_tokenizers_and_say_why(tokenizer_dir, change, why):  # noqa: F811
    tok = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
    change(tok)
    ranks, reason = tiktoken_ranks(tok.to_str())
    assert ranks is None and why in reason


def test_prepare_writes_the_same_tokens_through_either_encoder(tmp_path, tokenizer_dir, monkeypatch):  # noqa: F811
    records = [{"id": str(i), "text": t + f" doc {i}"} for i, t in enumerate(TRICKY * 6)]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", records)
    cfg = PrepareConfig(
        sources=(SourceConfig(location=str(corpus)),), tokenizer=str(tokenizer_dir), decontaminate=()
    )
    fast = prepare(cfg, tmp_path / "fast", workers=1, progress=False)
    import encoderlab.data.prepare as prep

    monkeypatch.setattr(prep, "tiktoken_ranks", lambda text: (None, "forced"))
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
    ours, ref = _encode_both(tmp_path / "tok", texts)
    assert ours == ref
