"""Records and texts from files or assets; bad files are one-line errors."""

from __future__ import annotations

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
