"""A prepared folder or a trained tokenizer made by older .txt reading code is no longer up to date where the
reading differs (`data/freshness.py`: `TXT_READING`, `reading_change`): folders prepared before a lone `\\r`
ended a line still counted as up to date, so `data prepare` said "nothing to do" over documents the same
command now cuts otherwise. Where the .txt files hold no lone `\\r` (LF or CRLF line ends), the reading is the
same and they still are, unless their record is from before file mtimes were recorded (the first versions
kept `\\r\\n` in paragraphs)."""

from __future__ import annotations

import builtins
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from corpus_fixtures import corpus_records, tokenizer_dir  # noqa: F401 (fixture)
from tests.data.prepare_fixtures import prepare_cli
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.reliability.treestate import assert_unchanged, world_state

import encoderlab
from encoderlab.data import freshness, txtscans
from encoderlab.data.freshness import TXT_READING, lone_cr, reading_change
from encoderlab.data.prepare import read_meta
from encoderlab.data.tokenizer_training import SOURCES


@pytest.fixture(autouse=True)
def _home(tmp_path_factory, monkeypatch) -> Path:
    """A private $ENCODERLAB_HOME, outside `tmp_path` (whose snapshots say nothing was written there), where
    the scans' verdicts are remembered (`data/txtscans.py`); no verdict of another test is recalled."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("ENCODERLAB_HOME", str(home))
    freshness._scanned.cache_clear()
    return home


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
    monkeypatch,
):
    """Was "nothing to do": the folder kept the documents a lone `\\r` no longer makes."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    src = _txt(tmp_path / "mac.txt", "\r")
    out = tmp_path / "o"
    assert prepare_cli(src, tokenizer_dir, out, capsys)[0] == 0
    assert read_meta(out)["txt_reading"] == TXT_READING
    assert prepare_cli(src, tokenizer_dir, out, capsys)[0] == 0  # made by this code: nothing to do
    _made_by_older_code(out / "meta.json")
    before = world_state(tmp_path)
    code, err = prepare_cli(src, tokenizer_dir, out, capsys)
    assert_one_line(
        code,
        err,
        r"o was prepared from sources that changed since \(\S+mac.txt holds a lone \\r \(no \\n after it\), "
        r"which ends a line since an older encoderlab read it: it reads as other documents now\); nothing was changed: choose another "
        r"--out, or delete \S+o and run the command again",
    )
    assert_printed_as_documented("prepare-by-older-txt-reading", err, tmp_path)
    assert_unchanged(before)


def test_a_folder_prepared_by_older_txt_reading_of_files_without_a_cr_is_still_up_to_date(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
    monkeypatch,
):
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    src = _txt(tmp_path / "unix.txt", "\n")
    out = tmp_path / "o"
    assert prepare_cli(src, tokenizer_dir, out, capsys)[0] == 0
    _made_by_older_code(out / "meta.json")
    before = world_state(tmp_path)
    assert prepare_cli(src, tokenizer_dir, out, capsys)[0] == 0  # read the same: nothing to do
    assert_unchanged(before)


def test_a_tokenizer_trained_by_older_txt_reading_on_a_file_with_a_cr_is_not_reused(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    src = _txt(tmp_path / "mac.txt", "\r")
    argv = ["data", "tokenizer", "--source", str(src), "--vocab-size", "300", "--out", str(tmp_path / "t")]
    assert cli(argv, capsys)[0] == 0
    assert cli(argv, capsys)[0] == 0  # trained by this code: nothing to do
    _made_by_older_code(tmp_path / "t" / SOURCES)
    before = world_state(tmp_path)
    code, err = cli(argv, capsys)
    assert_one_line(
        code,
        err,
        r"t already holds a tokenizer trained on sources that changed since \(\S+mac.txt holds a lone \\r "
        r"\(no \\n after it\), which ends a line since an older encoderlab read it",
    )
    assert_unchanged(before)


def test_a_folder_prepared_by_older_txt_reading_of_a_crlf_file_is_still_up_to_date(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
    monkeypatch,
):
    """Was refused as "holds a \\r": the reading before `txt_reading` ended lines at `\\r\\n` as this one does
    (only a lone `\\r` reads otherwise), so "nothing to do" was right."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    src = _txt(tmp_path / "crlf.txt", "\r\n")
    out = tmp_path / "o"
    assert prepare_cli(src, tokenizer_dir, out, capsys)[0] == 0
    _made_by_older_code(out / "meta.json")
    before = world_state(tmp_path)
    assert prepare_cli(src, tokenizer_dir, out, capsys)[0] == 0
    assert_unchanged(before)


def _meta_reading(tmp_path, text: bytes, mtimes: bool = True) -> dict:
    """A meta.json from before `txt_reading` recording that it read the file `a.txt` holding `text`."""
    path = tmp_path / "a.txt"
    path.write_bytes(text)
    entry = {"path": str(path), "bytes": len(text), "sha256": "x", "complete": True}
    entry |= {"mtime_ns": path.stat().st_mtime_ns} if mtimes else {}
    return {"recipe": {}, "sources": [{"files": [entry]}]}


def test_an_older_reading_is_a_change_only_where_a_lone_cr_reads_otherwise(tmp_path):
    assert reading_change(_meta_reading(tmp_path, b"a\r\nb\r\n")) is None
    assert reading_change(_meta_reading(tmp_path, b"a\nb\n")) is None
    for lone in (b"a\rb\n", b"a\r\r\nb", b"a\r\nb\r"):  # a Mac line end, one before a CRLF, one at the end
        assert "holds a lone \\r" in reading_change(_meta_reading(tmp_path, lone))
    assert reading_change({**_meta_reading(tmp_path, b"a\rb"), "txt_reading": TXT_READING}) is None


def test_a_crlf_file_recorded_before_mtimes_is_a_change_the_first_versions_kept_its_cr(tmp_path):
    """Folders recorded without mtimes may be the first versions', whose paragraphs kept `\\r\\n`."""
    meta = _meta_reading(tmp_path, b"a\r\nb\r\n", mtimes=False)
    assert "holds \\r\\n line ends, which an encoderlab from before file mtimes" in reading_change(meta)
    assert reading_change(_meta_reading(tmp_path, b"a\nb\n", mtimes=False)) is None


class _Reads(io.BytesIO):
    def __init__(self, data: bytes):
        super().__init__(data)
        self.reads = 0

    def read(self, size=-1):
        self.reads += 1
        return super().read(size)


@pytest.mark.parametrize(
    ("data", "lone", "chunks"), [(b"abc\rd" + b"\n" * 64, True, 2), (b"abc\r\nd" * 8, False, 13)]
)
def test_the_scan_for_a_lone_cr_stops_at_the_first_and_reads_a_crlf_file_whole(data, lone, chunks):
    f = _Reads(data)
    assert lone_cr(f, size=4) == (lone, True)
    assert f.reads == chunks  # a lone \r in the second chunk (`\r` ends the first): no more is read


def test_a_file_scanned_once_is_not_read_again_until_it_changes(tmp_path, monkeypatch):
    """A study checks its data's and its tokenizer's records over one corpus; a merge each part's."""
    scans = []
    real = freshness.lone_cr
    monkeypatch.setattr(freshness, "lone_cr", lambda f: scans.append(1) or real(f))
    meta = _meta_reading(tmp_path, b"a\r\nb\r\n")
    assert reading_change(meta) is None and reading_change(meta) is None
    assert len(scans) == 1
    (tmp_path / "a.txt").write_bytes(b"a\rb\r\n\n")  # another size: read again
    assert "lone" in reading_change(meta)
    assert len(scans) == 2


def test_a_file_unreadable_when_scanned_is_read_again_once_its_permissions_are_fixed(tmp_path, monkeypatch):
    """The scan was remembered by inode, size and mtime, which a chmod leaves alone: a .txt file unreadable
    at the first check (no reading to compare) stayed so for the process after `chmod u+r`, and its lone
    `\\r` went unsaid. Root reads a file of mode 000, so `open` here refuses such a file for root too."""

    def permission_checked_open(file, *args, **kwargs):
        if not os.stat(file).st_mode & 0o400:
            raise PermissionError(13, "Permission denied", str(file))
        return builtins.open(file, *args, **kwargs)

    monkeypatch.setattr(freshness, "open", permission_checked_open, raising=False)
    meta = _meta_reading(tmp_path, b"a\rb\n")
    path = tmp_path / "a.txt"
    path.chmod(0)
    try:
        assert reading_change(meta) is None  # unreadable now: no reading to compare
        locked = path.stat().st_ctime_ns
        path.chmod(0o644)
        while path.stat().st_ctime_ns == locked:  # a coarse clock: the same tick gives the same ctime
            path.chmod(0o644)
    finally:
        path.chmod(0o644)
    assert "holds a lone \\r" in reading_change(meta)


def _counted_scans(monkeypatch) -> list:
    """The reads of a file's bytes by the scan, counted, in a process that has scanned nothing yet."""
    scans = []
    real = freshness.lone_cr
    monkeypatch.setattr(freshness, "lone_cr", lambda f: scans.append(1) or real(f))
    freshness._scanned.cache_clear()  # what a new command's process starts with
    return scans


def test_a_file_scanned_by_one_command_is_not_read_again_by_the_next_until_it_changes(tmp_path, monkeypatch):
    """A folder from before `txt_reading` had each of its .txt files read in full by every command over it
    (each `data prepare`, `study run`, `study plan`): the verdict was remembered for the process only. The
    first command here is another process; nothing is written beside the corpus or into the folder."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    meta = _meta_reading(tmp_path, b"a\r\nb\r\n")
    before = world_state(tmp_path)
    src = Path(encoderlab.__file__).parents[1]
    first = (
        "import json, sys; from encoderlab.data.freshness import reading_change; "
        "print(reading_change(json.loads(sys.argv[1])))"
    )
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        [sys.executable, "-c", first, json.dumps(meta)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout == "None\n", done.stderr
    scans = _counted_scans(monkeypatch)
    assert reading_change(meta) is None
    assert scans == []  # remembered by the command before
    assert_unchanged(before)
    (tmp_path / "a.txt").write_bytes(b"a\rb\r\n")  # the same size, other bytes: its mtime and ctime moved
    os.utime(tmp_path / "a.txt", ns=(meta["sources"][0]["files"][0]["mtime_ns"],) * 2)  # the mtime put back
    assert "holds a lone \\r" in reading_change(meta)
    assert scans == [1]
    scans = _counted_scans(monkeypatch)
    assert "holds a lone \\r" in reading_change(meta)
    assert scans == []  # the new bytes' verdict, remembered in turn


def test_a_verdict_that_cannot_be_kept_or_read_back_costs_a_scan_never_a_refusal(
    tmp_path, monkeypatch, _home
):
    meta = _meta_reading(tmp_path, b"a\rb\n")
    scans = _counted_scans(monkeypatch)
    assert "holds a lone \\r" in reading_change(meta)
    (kept,) = (_home / "cache" / "txt-scans").iterdir()
    kept.write_text('{"key": [')  # cut short
    scans = _counted_scans(monkeypatch)
    assert "holds a lone \\r" in reading_change(meta) and scans == [1]  # scanned again, and kept again
    assert json.loads(kept.read_text())["lone"] is True
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "a.txt"))  # a file: no verdict can be kept there
    scans = _counted_scans(monkeypatch)
    assert "holds a lone \\r" in reading_change(meta) and scans == [1]
    assert txtscans.recalled(txtscans.scan_key(str(tmp_path / "a.txt"), (tmp_path / "a.txt").stat())) is None
