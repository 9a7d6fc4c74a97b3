"""A UTF-16 corpus file without a byte order mark is refused, or skipped whole, as one with its mark is.

Latin-script UTF-16 decodes as UTF-8 (each character's other byte is NUL, valid UTF-8): with no mark to name
it, a .txt file was trained on as `h\\x00e\\x00l\\x00...` without a word, and a .jsonl file's lines failed one
by one as JSON. Now a high share of NUL bytes at even or odd offsets of the file's first block names it
(`filekinds.utf16_order`), with the `iconv` line in its byte order."""

from __future__ import annotations

import gzip

import pytest
from corpus_fixtures import tokenizer_dir  # noqa: F401 (fixture)
from prepare_fixtures import prepare_cli
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.data.prepare import read_meta
from encoderlab.data.sources import SourceConfig, SourceStats, iter_documents
from encoderlab.errors import UserError

BODY = "hello world\n\nsecond paragraph of plain ASCII\n"  # decodes as UTF-8 in UTF-16, NULs and all


@pytest.mark.parametrize(
    ("name", "encoding"),
    [("a.txt", "utf-16-le"), ("a.jsonl", "utf-16-be"), ("a.txt.gz", "utf-16-le"), ("a.txt", "utf-16-be")],
)
def test_a_utf16_file_without_its_mark_is_refused_naming_its_byte_order(tmp_path, name, encoding):
    body = '{"text": "hello"}\n{"text": "world"}\n' if ".jsonl" in name else BODY
    data = body.encode(encoding)
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    order = encoding.replace("-le", "le").replace("-be", "be")
    with pytest.raises(UserError) as err:
        list(iter_documents(SourceConfig(location=str(path))))
    assert str(err.value) == (
        f"{path} is UTF-16 text ({order}, no byte order mark), not UTF-8; save it as UTF-8, e.g. "
        f"`iconv -f {order} -t utf-8 {name} > utf8-{name}`"
    )  # was: the .txt read as NUL-laden documents, the .jsonl "is not valid JSON"
    stats = SourceStats(str(path))
    assert list(iter_documents(SourceConfig(location=str(path)), stats, on_error="skip")) == []
    assert (stats.bad_files, stats.bad_records) == (1, 0)


def test_utf8_text_and_text_with_a_stray_nul_are_not_utf16():
    from encoderlab.data.filekinds import utf16_order

    assert utf16_order(BODY.encode()) is None
    assert utf16_order(b"a line with one \x00 byte in it\n") is None
    assert utf16_order(b"\xff\xfe" + BODY.encode("utf-16-le")) is None  # its mark: named by the UTF-8 decode
    assert utf16_order(BODY.encode("utf-16-le")) == "utf-16le"
    # NULs at even and odd offsets alike are no byte order: were "utf-16le", with an iconv line that garbles them
    assert utf16_order(b"a header line\n" + bytes(4000) + BODY.encode()) is None  # NUL padding
    assert utf16_order(b"".join(i.to_bytes(4, "little") for i in range(1000))) is None  # int32s, valid UTF-8
    assert utf16_order(BODY.encode("utf-32-le")) is None  # not UTF-16 in either order
    assert utf16_order(("a" * 50 + "\u4e00" * 10).encode("utf-16-be")) == "utf-16be"  # a NUL low byte or two


def test_data_prepare_refuses_it_in_one_line_and_writes_nothing(tmp_path, tokenizer_dir, capsys, monkeypatch):  # noqa: F811
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.txt").write_text("a good paragraph of text\n\nanother good one\n")
    (corpus / "notes.txt").write_bytes(BODY.encode("utf-16-le"))
    monkeypatch.chdir(tmp_path)
    before = world_state(tmp_path)
    code, err = prepare_cli(corpus / "notes.txt", tokenizer_dir, tmp_path / "out", capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert_unchanged(before)
    assert_printed_as_documented("corpus-utf16-without-bom", err, tmp_path)
    code, err = prepare_cli(corpus, tokenizer_dir, tmp_path / "out", capsys, "--on-error", "skip")
    assert code == 0, err
    (source,) = read_meta(tmp_path / "out")["sources"]
    assert (source["bad_files"], source["bad_records"]) == (1, 0)
    assert source["first_skipped"]["bad_files"].startswith(f"{corpus / 'notes.txt'} is UTF-16 text (utf-16le")
