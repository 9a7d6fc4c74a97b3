"""`data merge --out OUT` refused: the line names a fix that works for a merge. Its --out also names where
its parts are (OUT.shards), so "choose another --out", which `outdir` and the folder lock said, only
moved the refusal on to "no parts to merge: OTHER.shards does not exist"."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
from contextlib import chdir

import pytest
from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.data.merge import merge
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.shard import Shard
from encoderlab.data.sources import SourceConfig
from encoderlab.errors import UserError

RUN = dict(workers=1, progress=False)


@pytest.fixture
def parts(tmp_path, tokenizer_dir):  # noqa: F811
    """OUT = tmp_path/merged, its two parts prepared into merged.shards."""
    src = tmp_path / "corpus"
    src.mkdir()
    for i in range(2):
        write_jsonl(src / f"part{i}.jsonl", corpus_records(20, prefix=f"f{i}-"))
    cfg = PrepareConfig(
        sources=(SourceConfig(location=str(src)),), tokenizer=str(tokenizer_dir), decontaminate=()
    )
    out = tmp_path / "merged"
    for i in (0, 1):
        prepare(cfg, out, shard=Shard(i, 2), **RUN)
    return out


def _refused_then_moved(tmp_path, out, capsys, line: str, row: str | None = None) -> None:
    """One line ending in the merge's fix, nothing changed; then that fix (the parts moved to NEW.shards,
    `data merge --out NEW`) merges. The old line's fix, `data merge --out NEW` alone, finds no parts."""
    with chdir(tmp_path):  # the working folder is one a refusal may not change
        before = world_state(tmp_path)
        code, err = cli(["data", "merge", "--out", out], capsys)
    shards = out.with_name("merged.shards")
    fix = f"move {shards} to NEW.shards and run `encoderlab data merge --out NEW`"
    assert_one_line(code, err, line)
    assert err.strip().endswith(fix), err
    if row:
        assert_printed_as_documented(row, err, tmp_path)
    assert_unchanged(before)
    new = tmp_path / "new"
    shards.rename(new.with_name("new.shards"))
    assert merge(new) == new and read_meta(new)["recipe"]


def test_a_merge_into_someone_elses_folder_names_a_fix_that_works(parts, tmp_path, capsys):
    parts.mkdir()
    (parts / "mine.txt").write_text("not encoderlab's")
    _refused_then_moved(
        tmp_path,
        parts,
        capsys,
        r"--out \S+merged is a non-empty folder that encoderlab did not create; nothing in it was changed: "
        r"move it away, or move \S+merged.shards to NEW.shards",
        "merge-into-foreign",
    )


def test_a_merge_onto_a_file_or_another_commands_folder_names_a_fix_that_works(parts, tmp_path, capsys):
    parts.write_text("a file")
    _refused_then_moved(tmp_path, parts, capsys, r"merged is a file, not a folder; move it away, or move ")
    shutil.rmtree(tmp_path / "new")
    parts.unlink()
    tmp_path.joinpath("new.shards").rename(tmp_path / "merged.shards")
    parts.mkdir()
    (parts / ".encoderlab.json").write_text(json.dumps({"kind": "eval"}))
    (parts / "scores.json").write_text("{}")
    _refused_then_moved(
        tmp_path,
        parts,
        capsys,
        r"holds the output of `eval`, not `data prepare`; nothing in it was changed: move ",
    )


def test_a_merge_whose_lock_is_held_does_not_say_another_out(parts, tmp_path, capsys):
    """Another merge into OUT runs: wait for it (or delete a stale lock); another --out finds no parts."""
    lock = parts.with_name("merged.lock")
    lock.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "what": "data merge"}))
    code, err = cli(["data", "merge", "--out", parts], capsys)
    assert_one_line(
        code, err, r"merged is in use by data merge \(pid \d+ .*\); wait for it, or delete \S+merged.lock"
    )
    assert "--out" not in err
    lock.unlink()
    assert merge(parts) == parts


@pytest.mark.parametrize("out", [".", ".."])
def test_a_merge_out_without_a_name_of_its_own_is_one_line(tmp_path, monkeypatch, capsys, out):
    """`--out .` was a ValueError traceback (no name to put `.shards` after), `--out ..` looked for `...shards`."""
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    code, err = cli(["data", "merge", "--out", out], capsys)
    assert_one_line(
        code, err, rf"--out {re.escape(out)} names no folder of its own .*; give it a name, e.g. --out "
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here"]


def test_a_merge_rerun_after_delete_parts_is_done_not_refused(parts, tmp_path, capsys, caplog, monkeypatch):
    """A rerun of `data merge --delete-parts` said "no parts to merge ... run data prepare --shard" beside the
    merged folder; it is done, as a rerun beside the parts is. A folder never merged is still refused."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    merge(parts, delete_parts=True)
    before = world_state(tmp_path)
    with caplog.at_level("INFO"):
        code, _ = cli(["data", "merge", "--out", parts, "--delete-parts"], capsys)
    assert code == 0
    assert_unchanged(before)
    assert "already holds the merge of 2 parts" in caplog.text
    with pytest.raises(UserError, match=r"no parts to merge: \S*other.shards does not exist"):
        merge(tmp_path / "other")


def test_a_merge_out_that_is_a_part_names_the_merge_of_its_folder(parts, tmp_path, capsys, monkeypatch):
    """`data merge --out OUT.shards/I-of-N` said "no parts to merge" and told the user to prepare every part
    into that part; it names `data merge --out OUT`, which merges."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    part = tmp_path / "merged.shards" / "00000-of-00002"
    before = world_state(tmp_path)
    code, err = cli(["data", "merge", "--out", part], capsys)
    assert_one_line(
        code, err, rf"--out {re.escape(str(part))} is part 0/2 of a sharded prepare into \S*merged,"
    )
    assert err.strip().endswith(f"run `encoderlab data merge --out {parts}`"), err
    assert_printed_as_documented("merge-out-is-a-part", err, tmp_path)
    assert_unchanged(before)
    assert merge(parts) == parts


def test_a_sharded_prepare_into_a_link_to_nothing_is_refused_and_writes_nothing(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
    monkeypatch,
):
    """`--shard 0/2 --out data` with `data -> scratch/data`, a folder not made yet: the part went to
    `data.shards` beside the link, not onto the storage the link names, and `data merge --out data` then
    refused the link after every worker's tokenizing. Refused before anything is written, as a prepare
    without --shard is."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    write_jsonl(tmp_path / "c.jsonl", corpus_records(20))
    (tmp_path / "data").symlink_to(tmp_path / "scratch" / "data")
    argv = ["data", "prepare", "--source", tmp_path / "c.jsonl", "--tokenizer", tokenizer_dir]
    argv += ["--decontaminate", "none", "--workers", "1", "--shard", "0/2", "--out", tmp_path / "data"]
    before = world_state(tmp_path)
    code, err = cli(argv, capsys)
    assert_one_line(
        code,
        err,
        r"--out \S+/data is a symlink to \S+/scratch/data, which does not exist; remove it or choose",
    )
    assert_printed_as_documented("prepare-shard-into-link-to-nothing", err.strip(), tmp_path)
    assert_unchanged(before)
