# ruff: noqa: F811 (the tokenizer_dir and mirror fixtures, imported)
"""A hub corpus read unpinned from a mirror (`ENCODERLAB_HUB_DATA`) records the commit its download records
verified when it was read (the source's `mirror_commit`), so its parts merge with parts pinned to that commit,
and a study takes it for a corpus pinned to it, on a machine without the mirror: both read the records at
that time, and refused there. A part from before the record keeps the old way (the mirror's records, read
now) and, without its mirror, is refused in one line naming why and the fix."""

from __future__ import annotations

import shutil

import pytest
from corpus_fixtures import tokenizer_dir  # noqa: F401 (fixture)
from hub_corpus_fixtures import FINEWEB_EDU, fineweb_config, forget_mirror_commit
from test_mirror_pin import FILES, RUN, SHA_A, SHA_B, mirror  # noqa: F401 (fixture)
from tests.data.hub_cache_fixtures import download_record
from tests.reliability.errors_doc import assert_printed_as_documented

from encoderlab.data.hub import _resolve
from encoderlab.data.merge import merge
from encoderlab.data.packed import identity
from encoderlab.data.prepare import prepare, read_meta
from encoderlab.data.shard import Shard
from encoderlab.errors import UserError
from encoderlab.study.prepared import check_corpus


def _parts(tok, out, pins) -> None:
    for index, pin in enumerate(pins):
        _resolve.cache_clear()
        prepare(fineweb_config(tok, pin), out, shard=Shard(index, len(pins)), **RUN)


def _part(out, i: int, n: int = 2):
    return out.with_name(out.name + ".shards") / f"{i:05d}-of-{n:05d}"


def test_mirror_parts_read_unpinned_and_pinned_merge_where_the_mirror_is_not(mirror, tmp_path, tokenizer_dir):
    """Parts read unpinned from a mirror downloaded at A and pinned to A, merged after the mirror was moved
    away (another machine): they merge as they do beside it, into what a prepare pinned to A records (were
    refused as "prepared differently": the unpinned part's commit was read from the mirror at merge time).
    The record is no part of any key: the unpinned folder's identity is as before it was written."""
    whole, out = tmp_path / "whole", tmp_path / "fw"
    prepare(fineweb_config(tokenizer_dir, SHA_A), whole, **RUN)
    _parts(tokenizer_dir, out, (None, SHA_A))
    _parts(tokenizer_dir, tmp_path / "both", (None, None))
    unpinned = read_meta(_part(out, 0))
    assert unpinned["sources"][0]["mirror_commit"] == SHA_A
    assert "mirror_commit" not in read_meta(_part(out, 1))["sources"][0]  # its identity names A
    earlier = {
        **unpinned,
        "sources": [{k: v for k, v in unpinned["sources"][0].items() if k != "mirror_commit"}],
    }
    assert identity(unpinned) == identity(earlier)
    shutil.move(tmp_path / "hub", tmp_path / "elsewhere")
    _resolve.cache_clear()
    meta = read_meta(merge(out))
    assert meta["recipe"] == read_meta(whole)["recipe"]
    assert meta["sources"][0]["identity"] == read_meta(whole)["sources"][0]["identity"]
    assert "mirror_commit" not in meta["sources"][0]
    for name in ("tokens.bin", "val/tokens.bin"):
        assert (out / name).read_bytes() == (whole / name).read_bytes()
    both = read_meta(merge(tmp_path / "both"))  # unpinned all: the commit every part recorded
    assert (both["sources"][0]["identity"]["revision"], both["sources"][0]["mirror_commit"]) == (
        "local",
        SHA_A,
    )
    hub = f"hf:{FINEWEB_EDU}#hf_config=sample-10BT"
    check_corpus(both, (f"{hub},hf_revision={SHA_A}",), "main", tmp_path / "both")


def test_a_part_read_while_the_mirror_verified_no_commit_is_not_that_commits_later(
    mirror, tmp_path, tokenizer_dir
):
    """What counts is what the records verified when the part was read: one read while a file's record named
    another download is not A's data once the mirror verifies A again (it was merged: its records were read
    at merge time), and one read while they verified A still is after a record changes."""
    late, out, folder = tmp_path / "late", tmp_path / "fw", tmp_path / "one"
    download_record(mirror, FILES[2], SHA_B)  # the mirror verifies no one commit while these are read
    prepare(fineweb_config(tokenizer_dir, None), late, shard=Shard(0, 2), **RUN)
    prepare(fineweb_config(tokenizer_dir, None), folder, **RUN)
    assert read_meta(_part(late, 0))["sources"][0]["mirror_commit"] is None
    download_record(mirror, FILES[2], SHA_A)
    _resolve.cache_clear()
    prepare(fineweb_config(tokenizer_dir, SHA_A), late, shard=Shard(1, 2), **RUN)
    with pytest.raises(UserError, match=r"00001-of-00002 was prepared differently from .*\(sources differ\)"):
        merge(late)
    hub = f"hf:{FINEWEB_EDU}#hf_config=sample-10BT"
    with pytest.raises(UserError, match=r"^dataset main: .* not from its corpus"):
        check_corpus(read_meta(folder), (f"{hub},hf_revision={SHA_A}",), "main", folder)
    _parts(tokenizer_dir, out, (None, SHA_A))
    download_record(
        mirror, FILES[2], SHA_B
    )  # after the read: the part read A's files (their bytes are checked)
    assert read_meta(merge(out))["sources"][0]["identity"]["revision"] == SHA_A


def test_an_earlier_unpinned_mirror_part_without_its_mirror_is_refused_naming_why_and_the_fix(
    mirror, tmp_path, tokenizer_dir
):
    """A part an earlier encoderlab read unpinned from a mirror records no commit: merged with a part pinned
    to A, its mirror's records are read now, as before; without the mirror, one line says so and how to
    merge (was "prepared differently ... prepare every part with the same arguments", which they were)."""
    out = tmp_path / "fw"
    _parts(tokenizer_dir, out, (SHA_A, None))
    forget_mirror_commit(_part(out, 1))
    shutil.move(tmp_path / "hub", tmp_path / "elsewhere")
    mirrored = tmp_path / "hub" / FINEWEB_EDU
    with pytest.raises(
        UserError,
        match=rf"^{_part(out, 1)} read hf:{FINEWEB_EDU} unpinned from the mirror {mirrored}, which is not on "
        rf"this machine, and records no commit it read \(an earlier encoderlab prepared it\), so it cannot be "
        rf"told to hold commit {SHA_A}, as {_part(out, 0)} does; run `encoderlab data merge` where {mirrored} is, "
        rf"or delete {_part(out, 1)} and prepare it again with --shard 1/2$",
    ) as refused:
        merge(out)
    assert_printed_as_documented(
        "merge-of-an-unrecorded-mirror-part", f"encoderlab: error: {refused.value}", tmp_path
    )
    assert not out.exists()
    shutil.move(tmp_path / "elsewhere", tmp_path / "hub")
    assert read_meta(merge(out))["sources"][0]["identity"]["revision"] == SHA_A


def test_a_study_takes_an_unpinned_mirror_folder_for_its_pinned_corpus_where_the_mirror_is_not(
    mirror, tmp_path, tokenizer_dir
):
    """`study --prepared` of a folder read unpinned from a mirror downloaded at A, for a corpus pinned to A,
    on a machine without the mirror: accepted (was refused: the commit was read from the mirror's records);
    one pinned to another commit is still refused."""
    out = tmp_path / "fw"
    prepare(fineweb_config(tokenizer_dir, None), out, **RUN)
    shutil.rmtree(tmp_path / "hub")
    hub = f"hf:{FINEWEB_EDU}#hf_config=sample-10BT"
    check_corpus(read_meta(out), (f"{hub},hf_revision={SHA_A}",), "main", out)
    with pytest.raises(UserError, match=r"^dataset main: .* not from its corpus"):
        check_corpus(read_meta(out), (f"{hub},hf_revision={SHA_B}",), "main", out)
