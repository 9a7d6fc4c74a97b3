"""A prepared folder or a trained tokenizer made by older .txt reading code is no longer up to date where the
reading differs (`data/freshness.py`: `TXT_READING`, `reading_change`): folders prepared before a lone `\\r`
ended a line still counted as up to date, so `data prepare` said "nothing to do" over documents the same
command now cuts otherwise. Where the .txt files hold no `\\r`, the reading is the same and they still are."""

from __future__ import annotations

import json

from corpus_fixtures import corpus_records, tokenizer_dir  # noqa: F401 (fixture)
from tests.data.test_prepare_stale import _prepare_cli
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli, snapshot

from encoderlab.data.freshness import TXT_READING
from encoderlab.data.prepare import read_meta
from encoderlab.data.tokenizer_training import SOURCES


def _txt(path, end: str):
    """A .txt corpus of paragraphs, its lines ended by `end`."""
    paragraphs = [r["text"].replace(". ", "." + end) for r in corpus_records(60)]
    path.write_bytes((end + end).join(paragraphs).encode() + end.encode())
    return path


def _made_by_older_code(record) -> None:
    """What an encoderlab from before `txt_reading` wrote: the same record without it."""
    data = json.loads(record.read_text())
    assert data.pop("txt_reading") == TXT_READING
    record.write_text(json.dumps(data, indent=2))


def test_a_folder_prepared_by_older_txt_reading_of_a_file_with_a_cr_is_refused(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
):
    """Was "nothing to do": the folder kept the documents a lone `\\r` no longer makes."""
    src = _txt(tmp_path / "mac.txt", "\r")
    out = tmp_path / "o"
    assert _prepare_cli(src, tokenizer_dir, out, capsys)[0] == 0
    assert read_meta(out)["txt_reading"] == TXT_READING
    assert _prepare_cli(src, tokenizer_dir, out, capsys)[0] == 0  # made by this code: nothing to do
    _made_by_older_code(out / "meta.json")
    before = snapshot(tmp_path)
    code, err = _prepare_cli(src, tokenizer_dir, out, capsys)
    assert_one_line(
        code,
        err,
        r"o was prepared from sources that changed since \(\S+mac.txt holds a \\r, which ends a line since an "
        r"older encoderlab read it: it reads as other documents now\); nothing was changed: choose another "
        r"--out, or delete \S+o and run the command again",
    )
    assert_printed_as_documented("prepare-by-older-txt-reading", err, tmp_path)
    assert snapshot(tmp_path) == before


def test_a_folder_prepared_by_older_txt_reading_of_files_without_a_cr_is_still_up_to_date(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
):
    src = _txt(tmp_path / "unix.txt", "\n")
    out = tmp_path / "o"
    assert _prepare_cli(src, tokenizer_dir, out, capsys)[0] == 0
    _made_by_older_code(out / "meta.json")
    before = snapshot(tmp_path)
    assert _prepare_cli(src, tokenizer_dir, out, capsys)[0] == 0  # read the same: nothing to do
    assert snapshot(tmp_path) == before


def test_a_tokenizer_trained_by_older_txt_reading_on_a_file_with_a_cr_is_not_reused(tmp_path, capsys):
    src = _txt(tmp_path / "crlf.txt", "\r\n")
    argv = ["data", "tokenizer", "--source", str(src), "--vocab-size", "300", "--out", str(tmp_path / "t")]
    assert cli(argv, capsys)[0] == 0
    assert cli(argv, capsys)[0] == 0  # trained by this code: nothing to do
    _made_by_older_code(tmp_path / "t" / SOURCES)
    before = snapshot(tmp_path)
    code, err = cli(argv, capsys)
    assert_one_line(
        code,
        err,
        r"t already holds a tokenizer trained on sources that changed since \(\S+crlf.txt holds a \\r, which "
        r"ends a line since an older encoderlab read it",
    )
    assert snapshot(tmp_path) == before
