"""Records and texts from files or assets; bad files are one-line errors."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma

import pytest

from encoderlab.analysis.inputs import read_records, read_texts
from encoderlab.errors import UserError


def test_txt_files_are_one_text_per_non_empty_line(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("first text\n\n  \nsecond text\n")
    assert read_texts(str(path)) == ["first text", "second text"]


def test_jsonl_records_keep_id_and_meta(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": "a", "text": "x", "meta": {"label": 1}}\n\n{"text": "y"}\n')
    assert read_records(str(path)) == [
        {"id": "a", "text": "x", "meta": {"label": 1}},
        {"id": "3", "text": "y", "meta": {}},
    ]


@pytest.mark.parametrize(
    "content,message",
    [
        ('{"text": "ok"}\n{broken\n', "r.jsonl:2: not valid JSON"),
        ('{"text": "ok"}\n["a list"]\n', "r.jsonl:2: expected a JSON object per line, got list"),
        ('{"body": "x"}\n', "no string 'text' field"),
    ],
)
def test_bad_jsonl_lines_are_named(tmp_path, content, message):
    path = tmp_path / "r.jsonl"
    path.write_text(content)
    with pytest.raises(UserError, match=message):
        read_records(str(path))


def test_unknown_names_folders_and_empty_files_are_refused(tmp_path):
    with pytest.raises(UserError, match="neither a file nor an asset"):
        read_records("no-such-asset-or-file")
    with pytest.raises(UserError, match="is a folder"):
        read_records(str(tmp_path))
    (tmp_path / "empty.txt").write_text("\n")
    with pytest.raises(UserError, match="holds no text"):
        read_texts(str(tmp_path / "empty.txt"))


def test_a_json_string_may_hold_a_line_separator_and_other_suffixes_are_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"text": "one\u2028record"}\n{"text": "two"}\n', encoding="utf-8")
    assert read_texts(str(path)) == ["one\u2028record", "two"]
    (tmp_path / "t.csv").write_text("text\nhello\n")
    with pytest.raises(
        UserError, match=r"t.csv is neither .jsonl \(records\) nor .txt \(one text per line\)"
    ):
        read_records(str(tmp_path / "t.csv"))
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(UserError, match="is not UTF-8"):
        read_texts(str(tmp_path / "latin1.txt"))


@pytest.mark.parametrize("packed", [".gz", ".bz2", ".xz", ".zst"])
def test_compressed_texts_read_as_the_plain_file(tmp_path, packed):
    from encoderlab.data.filekinds import ZSTD

    openers = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open, ".zst": ZSTD and ZSTD.open}
    if openers[packed] is None:
        pytest.skip("no zstd module here")
    records = "".join(json.dumps({"id": i, "text": f"text {i}"}) + "\n" for i in range(5))
    lines = "".join(f"line {i}\n" for i in range(5))
    for name, body in (("r.jsonl", records), ("r.json", records), ("t.txt", lines)):
        (tmp_path / name).write_text(body, encoding="utf-8")
        with openers[packed](tmp_path / f"{name}{packed}", "wt", encoding="utf-8") as f:
            f.write(body)
        assert read_records(str(tmp_path / f"{name}{packed}")) == read_records(str(tmp_path / name))


def test_bad_bytes_and_a_file_cut_short_are_one_line(tmp_path):
    (tmp_path / "latin1.jsonl").write_bytes('{"text": "caf\xe9"}\n'.encode("latin-1"))
    with pytest.raises(UserError, match=r"latin1.jsonl is not UTF-8 text \(byte 13\); save it as UTF-8"):
        read_texts(str(tmp_path / "latin1.jsonl"))  # was a UnicodeDecodeError traceback
    packed = gzip.compress("".join(json.dumps({"text": f"t{i}" * 50}) + "\n" for i in range(400)).encode())
    (tmp_path / "cut.jsonl.gz").write_bytes(packed[: len(packed) // 2])
    with pytest.raises(UserError, match=r"cannot read .*cut.jsonl.gz \(Compressed file ended"):
        read_texts(str(tmp_path / "cut.jsonl.gz"))
    (tmp_path / "r.jsonl.lz4").write_bytes(b"\x04\x22\x4d\x18")
    with pytest.raises(UserError, match=r"compressed as .lz4, .*lz4 -d"):
        read_texts(str(tmp_path / "r.jsonl.lz4"))


def test_bad_text_files_name_a_fix_analyze_has(tmp_path):
    """A .txt of bad bytes offered `--on-error skip` (data prepare's flag: analyze has none), and so did a
    compressed .txt; a compressed .jsonl was told to "save it as UTF-8" instead of its suffix."""
    (tmp_path / "latin1.txt").write_bytes("ok\ncaf\xe9\n".encode("latin-1"))
    (tmp_path / "packed.txt").write_bytes(gzip.compress(b"a text\n"))
    (tmp_path / "packed.jsonl").write_bytes(gzip.compress(b'{"text": "a"}\n'))
    fixes = {
        "latin1.txt": r"latin1\.txt:2 is not UTF-8 \(byte 3\); save it as UTF-8, e.g. `iconv -f latin1 -t utf-8 latin1\.txt > utf8-latin1\.txt`$"
    }
    fixes["packed.txt"] = "rename it packed.txt.gz$"
    fixes["packed.jsonl"] = "rename it packed.jsonl.gz$"
    for name, fix in fixes.items():
        with pytest.raises(UserError, match=fix) as e:
            read_texts(str(tmp_path / name))
        assert "--on-error" not in str(e.value) and "\n" not in str(e.value)


def test_a_text_file_that_is_not_utf8_is_refused_without_a_flag_the_command_lacks(tmp_path):
    """`analyze cka --texts` and `analyze probe --tasks` have no --on-error: the fix offered it."""
    path = tmp_path / "latin1.txt"
    path.write_bytes("café au lait\n".encode("latin-1"))
    with pytest.raises(
        UserError,
        match=r"latin1\.txt:1 is not UTF-8 \(byte 3\); save it as UTF-8, e.g. `iconv -f latin1 -t utf-8 latin1\.txt > utf8-latin1\.txt`$",
    ):
        read_texts(str(path))


def test_a_repeated_text_counts_once_with_a_note(tmp_path):
    """30 texts written twice passed CKA's minimum of 50 texts and weighed each text double."""
    path = tmp_path / "t.txt"
    path.write_text("b a\na b\nb a\nc\na b\n")
    with pytest.warns(
        UserWarning, match=r"t.txt holds 2 repeated texts; each text is counted once \(3 distinct"
    ):
        assert read_texts(str(path)) == ["b a", "a b", "c"]
