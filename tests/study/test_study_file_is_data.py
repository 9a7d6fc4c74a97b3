"""A corpus or a task's data file given as the study file is named as such (docs/errors.md
`study-file-is-a-data-file`): before, each was read as YAML and refused with a fix for another mistake."""

from __future__ import annotations

import gzip

import pytest
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli

_ROWS = b'{"text": "the cat sat on the mat"}\n{"text": "a dog ran far away"}\n'


def _write(path, data: bytes) -> None:
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("corpus.jsonl", _ROWS),  # was "not valid YAML at line 2 ...; fix the syntax"
        ("corpus.jsonl.gz", _ROWS),  # was "not UTF-8 text ...; save it as UTF-8, e.g. `iconv ...`"
        ("train.csv", b"review,stars\ngood film,good\n"),  # was "holds 'review,stars good film,good'"
        ("corpus.txt.gz", b"the cat sat on the mat\n"),
    ],
)
@pytest.mark.parametrize("command", ["run", "plan"])
def test_a_data_file_given_as_the_study_says_it_is_a_data_file(tmp_path, capsys, name, data, command):
    path = tmp_path / name
    _write(path, data)
    kind = name[name.index(".") :]
    code, err = cli(["study", command, path, "--out", tmp_path / "s"], capsys)
    assert_one_line(
        code, err, rf"study file {path} is a \{kind} data file, not a study file; pass the study's YAML"
    )
    if name == "corpus.jsonl" and command == "run":
        assert_printed_as_documented("study-file-is-a-data-file", err, tmp_path)
    assert not (tmp_path / "s").exists()


def test_a_study_file_named_txt_is_still_read_as_yaml(tmp_path, capsys):
    """Only data suffixes are refused unread: a `.txt` file may hold the study's YAML."""
    path = tmp_path / "study.txt"
    path.write_text("name: x\nruns: []\n")
    code, err = cli(["study", "plan", path], capsys)
    assert code == 2 and "missing fields data, baseline" in err and "data file," not in err, err
