# ruff: noqa: F811 (the tokenizer_dir and mirror fixtures, imported)
"""`data merge` of parts read unpinned from a mirror (`ENCODERLAB_HUB_DATA`) at different commits: each part's
commit is the one it recorded when read (`mirror_commit`), or for a part from before the record, the one the
mirror's download records name now (`freshness.held_commit`). Parts of two commits are refused in one line
(were merged, the merged folder naming no commit or, beside a part from before, whatever the mirror names
later); parts of one commit merge into a folder recording it, and one whose commit cannot be told records
null (was absent: read from the mirror later)."""

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
from encoderlab.data.prepare import prepare, read_meta
from encoderlab.data.shard import Shard
from encoderlab.errors import UserError
from encoderlab.study.prepared import check_corpus

HUB = f"hf:{FINEWEB_EDU}#hf_config=sample-10BT"


def _part(out, i: int, n: int = 2):
    return out.with_name(out.name + ".shards") / f"{i:05d}-of-{n:05d}"


def _prepare_part(tok, out, index: int) -> None:
    _resolve.cache_clear()
    prepare(fineweb_config(tok, None), out, shard=Shard(index, 2), **RUN)


def _download_again(repo, commit: str) -> None:
    """The mirror as `hf download --revision <commit>` leaves it: every file's record names that commit."""
    for path in ["README.md", *FILES]:
        download_record(repo, path, commit)
    _resolve.cache_clear()


def test_unpinned_mirror_parts_of_two_commits_are_refused(mirror, tmp_path, tokenizer_dir):
    """Part 0 read while the mirror verified A, part 1 after it was downloaded again at B: refused naming both
    commits and the fix (was merged, recording `mirror_commit` null)."""
    out = tmp_path / "fw"
    _prepare_part(tokenizer_dir, out, 0)
    _download_again(mirror, SHA_B)
    _prepare_part(tokenizer_dir, out, 1)
    with pytest.raises(
        UserError,
        match=rf"^{_part(out, 1)} read hf:{FINEWEB_EDU} from the mirror {mirror} at commit {SHA_B}, "
        rf"{_part(out, 0)} at commit {SHA_A} \(the mirror was downloaded again between the parts\); delete the "
        r"parts not of the commit to keep and prepare them again with their --shard, then merge$",
    ) as refused:
        merge(out)
    assert_printed_as_documented(
        "merge-of-mirror-parts-of-two-commits", f"encoderlab: error: {refused.value}", tmp_path
    )
    assert not out.exists()
    shutil.rmtree(_part(out, 0))
    _prepare_part(tokenizer_dir, out, 0)
    assert read_meta(merge(out))["sources"][0]["mirror_commit"] == SHA_B


def test_a_part_from_before_the_record_of_another_commit_than_the_mirror_names_now_is_refused(
    mirror, tmp_path, tokenizer_dir
):
    """Part 1 from before `mirror_commit` was recorded, merged after the mirror was downloaded again at B, with
    part 0 recording A: refused, saying part 1's commit is the mirror's now (was merged recording no commit,
    so the folder was later taken for B's, which part 0 did not read)."""
    out = tmp_path / "fw"
    _prepare_part(tokenizer_dir, out, 0)
    _prepare_part(tokenizer_dir, out, 1)
    forget_mirror_commit(_part(out, 1))
    _download_again(mirror, SHA_B)
    with pytest.raises(
        UserError,
        match=rf"^{_part(out, 1)} read .* at commit {SHA_B} \(it records none: what the mirror's download "
        rf"records name now\), {_part(out, 0)} at commit {SHA_A} \(the mirror was downloaded again",
    ):
        merge(out)
    assert not out.exists()


def test_a_part_from_before_the_record_merges_with_one_of_the_commit_its_mirror_names(
    mirror, tmp_path, tokenizer_dir
):
    """Part 1 from before the record, the mirror still verifying A, with part 0 recording A: merged, the folder
    recording A, so a study pinned to A takes it where the mirror is not (was absent: read from the mirror)."""
    out = tmp_path / "fw"
    _prepare_part(tokenizer_dir, out, 0)
    _prepare_part(tokenizer_dir, out, 1)
    forget_mirror_commit(_part(out, 1))
    meta = read_meta(merge(out))
    assert meta["sources"][0]["mirror_commit"] == SHA_A
    shutil.rmtree(tmp_path / "hub")
    check_corpus(meta, (f"{HUB},hf_revision={SHA_A}",), "main", out)


def test_a_merge_with_a_part_whose_commit_cannot_be_told_records_null(mirror, tmp_path, tokenizer_dir):
    """Part 1 from before the record, merged where its mirror is not, with part 0 recording A: the folder
    records null, no commit (was absent, so the mirror's records read later, at whatever commit, were taken
    for all of it), and a study pinned to A refuses it even once a mirror at A is back."""
    out = tmp_path / "fw"
    _prepare_part(tokenizer_dir, out, 0)
    _prepare_part(tokenizer_dir, out, 1)
    forget_mirror_commit(_part(out, 1))
    shutil.move(tmp_path / "hub", tmp_path / "elsewhere")
    _resolve.cache_clear()
    meta = read_meta(merge(out))
    assert meta["sources"][0]["mirror_commit"] is None
    shutil.move(tmp_path / "elsewhere", tmp_path / "hub")
    with pytest.raises(UserError, match=r"^dataset main: .* not from its corpus"):
        check_corpus(meta, (f"{HUB},hf_revision={SHA_A}",), "main", out)
