"""`.ndjson` (newline-delimited JSON, the name some exporters give JSON lines) is read as `.jsonl` is, plain
and compressed (`.ndjson.gz`, ...). Before, `--source x.ndjson` was refused as an unknown suffix, and a folder
left its `.ndjson` files out (a note said so) while reading its `.jsonl` ones."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from corpus_fixtures import write_jsonl

from encoderlab.data.filekinds import file_kind, misnamed
from encoderlab.data.sources import SourceConfig, iter_documents


@pytest.mark.parametrize("name", ["x.ndjson", "x.NDJSON", "x.ndjson.gz", "x.ndjson.bz2", "x.ndjson.zst"])
def test_ndjson_names_are_json_lines(name):
    assert file_kind(Path(name)) == "jsonl"


def test_an_ndjson_file_and_its_gzip_read_as_the_jsonl_file(tmp_path):
    records = [{"id": str(i), "text": f"doc {i}"} for i in range(5)]
    jsonl = write_jsonl(tmp_path / "a" / "c.jsonl", records)
    ndjson = tmp_path / "b" / "c.ndjson"
    ndjson.parent.mkdir()
    ndjson.write_bytes(jsonl.read_bytes())
    packed = tmp_path / "c" / "c.ndjson.gz"
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(jsonl.read_bytes()))
    expected = [d.text for d in iter_documents(SourceConfig(location=str(jsonl)))]
    for path in (ndjson, packed, ndjson.parent):  # a file, a compressed file, a folder holding one
        assert [d.text for d in iter_documents(SourceConfig(location=str(path)))] == expected


def test_a_gzip_named_ndjson_is_found_misnamed(tmp_path):
    path = tmp_path / "c.ndjson"
    path.write_bytes(gzip.compress(b'{"text": "a"}\n'))
    assert misnamed(path) is not None and ".gz" in misnamed(path)


def test_an_analysis_texts_file_may_be_ndjson(tmp_path):
    """`analyze` reads texts files by the same kinds (`analysis.inputs.read_records`): `.ndjson` was refused."""
    from encoderlab.analysis.inputs import read_records

    path = tmp_path / "t.ndjson"
    path.write_text('{"id": "a", "text": "hello", "meta": {}}\n')
    assert read_records(str(path)) == [{"id": "a", "text": "hello", "meta": {}}]
