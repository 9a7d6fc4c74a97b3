"""A prepared folder, or a `--shard` part, read from sources that changed since is refused, never reused
(`data/freshness.py`): `data prepare` of the same recipe said "nothing to do", a leftover part was
kept and `data merge` joined it, after the source files changed in place."""

from __future__ import annotations

import json
import os
import shutil
from contextlib import chdir

import pytest
from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from tests.data.prepare_fixtures import prepare_cli
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.data.merge import merge
from encoderlab.data.packed import identity
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.shard import Shard, shard_dir
from encoderlab.data.sources import SourceConfig
from encoderlab.errors import UserError

RUN = dict(workers=1, progress=False)


def _cfg(src, tok, **kw) -> PrepareConfig:
    return PrepareConfig(
        sources=(SourceConfig(location=str(src)),), tokenizer=str(tok), decontaminate=(), **kw
    )


def _shuffle(path) -> None:
    """The same lines in another order: the same size and counts, other rows."""
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[::-1]))


def _folder_corpus(root, n_files=3):
    root.mkdir()
    for i in range(n_files):
        write_jsonl(root / f"part{i}.jsonl", corpus_records(30, prefix=f"f{i}-"))
    return root


def test_a_prepare_over_sources_changed_since_is_refused_and_untouched(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
    monkeypatch,
):
    """Was "already holds this recipe; nothing to do": the folder kept the old rows without a word."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    src = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(60))
    out = tmp_path / "o"
    assert prepare_cli(src, tokenizer_dir, out, capsys)[0] == 0
    _shuffle(src)
    before = world_state(out, tmp_path)
    code, err = prepare_cli(src, tokenizer_dir, out, capsys)
    assert_one_line(
        code,
        err,
        r"o was prepared from sources that changed since \(\S+corpus.jsonl now holds other bytes\); nothing "
        r"was changed: choose another --out, or delete \S+o and run the command again",
    )
    assert_printed_as_documented("prepare-over-changed-sources", err, tmp_path)
    assert_unchanged(before)


def test_the_same_files_touched_or_copied_back_are_still_nothing_to_do(tmp_path, tokenizer_dir):  # noqa: F811
    """Another mtime, the same bytes: hashed again, and found the same (no refusal, nothing written)."""
    src = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(60))
    out = prepare(_cfg(src, tokenizer_dir), tmp_path / "o", **RUN)
    meta = read_meta(out)
    assert meta["sources"][0]["files"][0]["mtime_ns"] == src.stat().st_mtime_ns
    src.write_bytes(src.read_bytes())
    os.utime(src, ns=(src.stat().st_atime_ns, meta["sources"][0]["files"][0]["mtime_ns"] + 10**9))
    prepare(_cfg(src, tokenizer_dir), out, **RUN)
    assert (out / "meta.json").read_text() == json.dumps(meta, indent=2)


def test_the_mtime_is_no_part_of_the_identity(tmp_path, tokenizer_dir):  # noqa: F811
    """Resume checks and study node keys (`packed.identity`) stay those of folders from before it was recorded."""
    src = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(60))
    meta = read_meta(prepare(_cfg(src, tokenizer_dir), tmp_path / "o", **RUN))
    files = meta["sources"][0]["files"]
    assert "mtime_ns" in files[0]
    older = {**meta, "sources": [{**meta["sources"][0], "files": [{**files[0], "mtime_ns": 1}]}]}
    assert identity(older) == identity(meta)


def test_a_file_added_to_or_gone_from_a_folder_source_is_refused(tmp_path, tokenizer_dir):  # noqa: F811
    src = _folder_corpus(tmp_path / "corpus")
    out = prepare(_cfg(src, tokenizer_dir), tmp_path / "o", **RUN)
    write_jsonl(src / "part3.jsonl", corpus_records(5, prefix="new-"))
    with pytest.raises(UserError, match=r"\(\S+part3.jsonl is new in \S+corpus\); nothing was changed"):
        prepare(_cfg(src, tokenizer_dir), out, **RUN)
    (src / "part3.jsonl").unlink()
    (src / "part1.jsonl").unlink()
    with pytest.raises(UserError, match=r"\(\S+part1.jsonl is no longer in \S+corpus\)"):
        prepare(_cfg(src, tokenizer_dir), out, **RUN)


def test_files_a_prepare_with_max_docs_never_read_may_change(tmp_path, tokenizer_dir):  # noqa: F811
    """--max-docs 10 reads part of part0.jsonl: a file after it, new or changed, is no change."""
    from encoderlab.data.freshness import source_change

    src = _folder_corpus(tmp_path / "corpus")
    out = prepare(_cfg(src, tokenizer_dir, max_docs=10), tmp_path / "o", **RUN)
    assert source_change(read_meta(out)) is None
    _shuffle(src / "part2.jsonl")
    write_jsonl(src / "part9.jsonl", corpus_records(5, prefix="new-"))
    assert source_change(read_meta(out)) is None
    _shuffle(src / "part0.jsonl")
    assert source_change(read_meta(out)) == f"{src / 'part0.jsonl'} now holds other bytes"


def test_a_file_added_to_the_source_a_mixture_ran_out_of_is_refused(tmp_path, tokenizer_dir):  # noqa: F811
    """Two sources, first_exhausted: the mixture stops when the smaller one runs out, so a file added to it
    would be read (other rows), and one added to the other, after files it never read, would not. Was
    "nothing to do" for both (only a lone source, or all_exhausted, counted as read to its end)."""
    big, small = _folder_corpus(tmp_path / "big", n_files=3), _folder_corpus(tmp_path / "small", n_files=1)
    cfg = PrepareConfig(
        sources=(SourceConfig(location=str(big)), SourceConfig(location=str(small))),
        tokenizer=str(tokenizer_dir),
        decontaminate=(),
    )
    out = prepare(cfg, tmp_path / "o", **RUN)
    assert [s["exhausted"] for s in read_meta(out)["sources"]] == [False, True]
    write_jsonl(big / "part9.jsonl", corpus_records(5, prefix="new-"))
    prepare(cfg, out, **RUN)  # the big source was never read to its end: nothing to do
    write_jsonl(small / "part9.jsonl", corpus_records(5, prefix="new-"))
    with pytest.raises(UserError, match=r"\(\S+part9.jsonl is new in \S+small\); nothing was changed"):
        prepare(cfg, out, **RUN)


def test_a_leftover_part_of_changed_sources_is_refused(tmp_path, tokenizer_dir, monkeypatch):  # noqa: F811
    """Was reused as done: `data merge` would have joined the old rows."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    src = _folder_corpus(tmp_path / "corpus", n_files=4)
    out = tmp_path / "o"
    part = prepare(_cfg(src, tokenizer_dir), out, shard=Shard(0, 2), **RUN)
    assert (
        prepare(_cfg(src, tokenizer_dir), out, shard=Shard(0, 2), **RUN) == part
    )  # unchanged: nothing to do
    _shuffle(src / "part3.jsonl")  # another part's file: not this one's change
    assert prepare(_cfg(src, tokenizer_dir), out, shard=Shard(0, 2), **RUN) == part
    _shuffle(src / "part1.jsonl")
    before = world_state(part, tmp_path)
    with pytest.raises(
        UserError, match=r"00000-of-00002 was prepared from sources that changed since \(\S+part1"
    ):
        prepare(_cfg(src, tokenizer_dir), out, shard=Shard(0, 2), **RUN)
    assert_unchanged(before)


def test_merge_refuses_a_part_of_changed_sources(tmp_path, tokenizer_dir, capsys, monkeypatch):  # noqa: F811
    """Was merged: the folder mixed rows of the old files with the new."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    src = _folder_corpus(tmp_path / "corpus", n_files=4)
    out = tmp_path / "merged"
    for i in (0, 1):
        prepare(_cfg(src, tokenizer_dir), out, shard=Shard(i, 2), **RUN)
    _shuffle(src / "part3.jsonl")
    before = world_state(tmp_path)
    code, err = cli(["data", "merge", "--out", out], capsys)
    assert_one_line(
        code,
        err,
        r"00001-of-00002 was prepared from sources that changed since \(\S+part3.jsonl now holds other bytes\); "
        r"delete it and prepare it again with --shard 1/2, then merge",
    )
    assert_printed_as_documented("merge-of-a-stale-part", err, tmp_path)
    assert_unchanged(before)
    assert not out.exists()
    from encoderlab.data.freshness import source_change

    shutil.rmtree(shard_dir(out, Shard(1, 2)))  # the fix the line gives
    prepare(_cfg(src, tokenizer_dir), out, shard=Shard(1, 2), **RUN)
    assert merge(out) == out and source_change(read_meta(out)) is None
    assert read_meta(out)["sources"][0]["exhausted"] is True  # each part read its slice whole


def test_a_merge_away_from_the_source_files_merges_with_a_warning(tmp_path, tokenizer_dir, caplog):  # noqa: F811
    """Parts made where the corpus is, merged where it is not: nothing to check them against, said once
    per part, not refused (a file gone from a source that is here is refused, above)."""
    src = _folder_corpus(tmp_path / "corpus", n_files=2)
    out = tmp_path / "merged"
    for i in (0, 1):
        prepare(_cfg(src, tokenizer_dir), out, shard=Shard(i, 2), **RUN)
    src.rename(tmp_path / "elsewhere")
    assert merge(out) == out
    assert (
        sum(
            "what was read of" in r.getMessage() and "is not checked" in r.getMessage()
            for r in caplog.records
        )
        >= 2
    )


def test_a_merge_over_a_merged_folder_of_changed_sources_gives_a_fix_that_works(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
):
    """The part re-prepared after its file changed, the old merge still in OUT: the line said "choose
    another --out", and `data merge --out OTHER` looks for OTHER.shards, which does not exist."""
    src = _folder_corpus(tmp_path / "corpus", n_files=2)
    out = tmp_path / "merged"
    for i in (0, 1):
        prepare(_cfg(src, tokenizer_dir), out, shard=Shard(i, 2), **RUN)
    merge(out)
    _shuffle(src / "part1.jsonl")
    shutil.rmtree(shard_dir(out, Shard(1, 2)))
    prepare(_cfg(src, tokenizer_dir), out, shard=Shard(1, 2), **RUN)
    _refused_merge_then_fix(
        tmp_path,
        out,
        capsys,
        r"merged was prepared from sources that changed since \(\S+part1.jsonl now holds other bytes\); nothing "
        r"was changed: delete \S+merged \(or move it away\) and run the command again",
        "merge-over-a-stale-merge",
    )


def _refused_merge_then_fix(tmp_path, out, capsys, line: str, row: str) -> None:
    """`data merge --out OUT` refused in one line, as errors.md's `row` prints it, with nothing changed;
    then the fix it gives (delete OUT) merges."""
    with chdir(tmp_path):  # the working folder is one a refusal may not change
        before = world_state(tmp_path)
        code, err = cli(["data", "merge", "--out", out], capsys)
    assert_one_line(code, err, line)
    assert_printed_as_documented(row, err, tmp_path)
    assert_unchanged(before)
    shutil.rmtree(out)  # the fix the line gives
    assert merge(out) == out


def test_a_merge_over_a_merged_folder_of_another_recipe_gives_a_fix_that_works(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
):
    """The parts prepared again with another --seed, the old merge still in OUT: the line said "choose
    another --out", and `data merge --out OTHER` looks for OTHER.shards, which does not exist."""
    src = _folder_corpus(tmp_path / "corpus", n_files=2)
    out = tmp_path / "merged"
    for seed in (1, 2):
        shutil.rmtree(out.with_name("merged.shards"), ignore_errors=True)
        for i in (0, 1):
            prepare(_cfg(src, tokenizer_dir, seed=seed), out, shard=Shard(i, 2), **RUN)
        if seed == 1:
            merge(out)
    _refused_merge_then_fix(
        tmp_path,
        out,
        capsys,
        r"merged already holds data prepared differently \(seed differ\); nothing was changed: delete "
        r"\S+merged \(or move it away\) and run the command again",
        "merge-over-another-recipe",
    )
    assert read_meta(out)["recipe"]["seed"] == 2


def test_a_relative_source_run_from_another_folder_says_it_is_another_file(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
    monkeypatch,
):
    """`--source c.jsonl` prepared in a/, run again in b/ whose c.jsonl differs: the line said "c.jsonl now
    holds other bytes", as if the file prepared from had changed; a/c.jsonl is untouched."""
    for name, n in (("a", 60), ("b", 61)):
        (tmp_path / name).mkdir()
        write_jsonl(tmp_path / name / "c.jsonl", corpus_records(n))
    out = tmp_path / "o"
    monkeypatch.chdir(tmp_path / "a")
    assert prepare_cli("c.jsonl", tokenizer_dir, out, capsys)[0] == 0
    monkeypatch.chdir(tmp_path / "b")
    before = world_state(tmp_path)
    code, err = prepare_cli("c.jsonl", tokenizer_dir, out, capsys)
    assert_one_line(
        code,
        err,
        r"o was prepared from sources that changed since \(c.jsonl is \S+/b/c.jsonl here, not \S+/a/c.jsonl, what "
        r"it was prepared from \(a relative path is read from the working folder\)\); nothing was changed",
    )
    assert_unchanged(before)
    monkeypatch.chdir(tmp_path / "a")  # where it was prepared: nothing to do
    assert prepare_cli("c.jsonl", tokenizer_dir, out, capsys)[0] == 0
    assert_unchanged(before)


@pytest.mark.parametrize(
    "there, here",
    [("a/c.jsonl", "c.jsonl"), ("a", "."), ("a/*.jsonl", "*.jsonl"), ("ABS/a/c.jsonl", "./c.jsonl")],
)
def test_the_same_file_reached_by_another_path_is_the_same_source(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
    monkeypatch,
    there,
    here,
):
    """`--source a/c.jsonl` prepared in the parent, then `--source c.jsonl` in a/ (or a folder, a glob, an
    absolute path): the same file, so the same recipe (nothing to do), and a change to it is still seen;
    the line said "sources differ". The folder's meta.json keeps the location as first given."""
    (tmp_path / "a").mkdir()
    write_jsonl(tmp_path / "a" / "c.jsonl", corpus_records(60))
    out = tmp_path / "o"
    monkeypatch.chdir(tmp_path)
    assert prepare_cli(there.replace("ABS", str(tmp_path)), tokenizer_dir, out, capsys)[0] == 0
    meta = (out / "meta.json").read_text()
    monkeypatch.chdir(tmp_path / "a")
    before = world_state(tmp_path)
    assert prepare_cli(here, tokenizer_dir, out, capsys)[0] == 0
    assert_unchanged(before)
    assert (out / "meta.json").read_text() == meta
    _shuffle(tmp_path / "a" / "c.jsonl")
    code, err = prepare_cli(here, tokenizer_dir, out, capsys)
    assert_one_line(
        code, err, r"o was prepared from sources that changed since \((\./)?c.jsonl now holds other bytes\)"
    )
