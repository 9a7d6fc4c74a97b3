"""A JSON line cut short inside its text (a shard truncated mid-record, a record split by a raw newline) is
refused naming the column the decoder stopped at. Was "(Invalid control character at)" and "(Unterminated
string starting at)", Python's `JSONDecodeError.msg` without the place it points to (`jsonlines.why_not_json`),
found refusing a bad line 2,000,000 deep in a 1.5 GB corpus."""

from __future__ import annotations

import pytest

from encoderlab.data.sources import SourceConfig, SourceStats, iter_documents
from encoderlab.errors import UserError
from encoderlab.jsonlines import json_objects


def _refusal(path) -> str:
    with pytest.raises(UserError) as exc:
        list(iter_documents(SourceConfig(location=str(path)), SourceStats("c"), on_error="raise"))
    return str(exc.value)


def test_a_line_cut_inside_its_text_names_the_column_in_a_corpus(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "one"}\n{"text": "two\n{"text": "three"}\n{"text": "fo', encoding="utf-8")
    assert "c.jsonl:2 is not valid JSON (Invalid control character at column 14);" in _refusal(path)
    path.write_text('{"text": "one"}\n{"text": "fo', encoding="utf-8")  # the last line, no newline left
    assert "c.jsonl:2 is not valid JSON (Unterminated string starting at column 10);" in _refusal(path)


def test_other_decoder_words_are_kept_as_they_were(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "one"}\n{"text": }\n', encoding="utf-8")
    assert "c.jsonl:2 is not valid JSON (Expecting value);" in _refusal(path)


def test_a_user_jsonl_file_names_the_column_too(tmp_path):
    with pytest.raises(
        UserError, match=r"t.jsonl:1: not valid JSON \(Invalid control character at column 9\)"
    ):
        list(json_objects(tmp_path / "t.jsonl", '{"a": "x\ry"}'))
