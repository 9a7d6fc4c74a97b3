"""A user's own corpus through `data prepare`, as found while preparing one: each case a way a corpus of
one's own (mixed encodings, kinds and sizes) was read wrong or said wrong."""

from __future__ import annotations

import re

import pytest
from corpus_fixtures import tokenizer_dir  # noqa: F401 (fixture)
from prepare_fixtures import prepare_cli

from encoderlab.data.prepare import read_meta
from encoderlab.data.tokenizer import load_tokenizer


def _texts(out) -> list[str]:
    """The documents of a prepared folder's train split, decoded."""
    import numpy as np

    meta = read_meta(out)
    tokens, offsets = np.fromfile(out / "tokens.bin", dtype=meta["dtype"]), np.load(out / "doc_offsets.npy")
    tok = load_tokenizer(out)
    return [
        tok.decode(tokens[a:b].tolist(), skip_special_tokens=True) for a, b in zip(offsets[:-1], offsets[1:])
    ]


@pytest.mark.parametrize("name", ["notepad.txt", "notepad.jsonl", "notepad.txt.gz"])
def test_a_utf16_file_skipped_is_skipped_whole_not_trained_on_as_nul_text(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
    name,
):
    """`--on-error skip` skipped a UTF-16 file's first line (the one with its byte order mark) and read the
    rest as UTF-8, which ASCII text in UTF-16 is (its NUL bytes too): a .txt file's paragraphs were trained on
    as "\\x00s\\x00e\\x00c...", a .jsonl file's lines each counted as a bad record."""
    import gzip

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.txt").write_text("a good paragraph of text\n\nanother good one\n")
    body = "".join(
        f'{{"text": "utf sixteen line {i}"}}\n' if ".jsonl" in name else f"utf sixteen paragraph {i}\n\n"
        for i in range(4)
    )
    data = body.encode("utf-16")
    (corpus / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    code, err = prepare_cli(corpus, tokenizer_dir, tmp_path / "out", capsys, "--on-error", "skip")
    assert code == 0, err
    assert _texts(tmp_path / "out") == ["a good paragraph of text", "another good one"]
    (source,) = read_meta(tmp_path / "out")["sources"]
    assert (source["bad_files"], source["bad_records"]) == (1, 0)
    assert source["first_skipped"]["bad_files"] == f"{corpus / name}:1 is UTF-16 text, not UTF-8"


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".txt.bz2"])
def test_an_empty_compressed_shard_is_refused_or_skipped_not_read_as_an_empty_file(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
    suffix,
):
    """A 0-byte `.jsonl.gz` (a shard whose download was cut short) holds no gzip stream, but gzip and bz2 read
    it as empty: the corpus lacked that shard without a word, where a 0-byte `.xz` was refused (its reader checks)."""
    from tests.reliability.errors_doc import assert_printed_as_documented
    from tests.reliability.test_hostile_inputs import assert_one_line

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("a good paragraph of text\n\nanother good one\n")
    (corpus / f"b{suffix}").write_bytes(b"")
    code, err = prepare_cli(corpus / f"b{suffix}", tokenizer_dir, tmp_path / "out", capsys)
    assert_one_line(
        code, err, rf"cannot read \S*b{re.escape(suffix)} \(0 bytes, so no \.{suffix.rsplit('.', 1)[1]} data"
    )
    assert not (tmp_path / "out").exists()
    if suffix == ".jsonl.gz":
        assert_printed_as_documented("empty-compressed-corpus", err, tmp_path)
    code, err = prepare_cli(corpus, tokenizer_dir, tmp_path / "out", capsys, "--on-error", "skip")
    assert code == 0, err
    (source,) = read_meta(tmp_path / "out")["sources"]
    assert source["bad_files"] == 1 and source["first_skipped"]["bad_files"].startswith(
        f"cannot read {corpus}/b{suffix}"
    )


def test_a_paragraph_with_a_line_skipped_as_not_utf8_is_skipped_whole_not_joined_around_it(tmp_path):
    """`--on-error skip` on a .txt paragraph holding a Latin-1 line dropped that line and joined the lines
    around it into one document, trained on as a paragraph that was never written; a document is the unit."""
    from encoderlab.data.sources import SourceConfig, SourceStats, iter_documents

    path = tmp_path / "mixed.txt"
    path.write_bytes(b"first line\ncaf\xe9 in Latin-1\nthird line\n\na clean paragraph\n\nlast\n")

    def texts(unit: str) -> tuple[list[str], int]:
        stats = SourceStats(str(path))
        cfg = SourceConfig(location=f"{path}", txt_unit=unit)
        return [d.text for d in iter_documents(cfg, stats, on_error="skip")], stats.bad_records

    assert texts("paragraph") == (["a clean paragraph", "last"], 1)
    assert texts("line") == (
        ["first line", "third line", "a clean paragraph", "last"],
        1,
    )  # lines are the unit
