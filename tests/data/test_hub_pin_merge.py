# ruff: noqa: F811 (the fixtures, imported)
"""The parts of a sharded prepare of a hub source that read the same commit are one recipe however each
worker spelled its pin (none, a branch, a tag, the commit's sha), and the merged folder's identity does not
hang on which part spelled it how. The hub is simulated as in test_hub_revision.py (its fixture)."""

from __future__ import annotations

import pytest
from corpus_fixtures import tokenizer_dir  # noqa: F401 (fixture)
from hub_corpus_fixtures import FINEWEB_EDU, fineweb_config
from test_hub_revision import RUN, SHA_A, SHA_B, fake_hub  # noqa: F401 (fixture)

from encoderlab.data.merge import merge
from encoderlab.data.packed import identity
from encoderlab.data.prepare import prepare, read_meta
from encoderlab.data.shard import Shard
from encoderlab.errors import UserError
from encoderlab.study.prepared import check_corpus

HUB = f"hf:{FINEWEB_EDU}#hf_config=sample-10BT"
BYTES = ("tokens.bin", "doc_offsets.npy", "val/tokens.bin", "val/doc_offsets.npy")


def _merged(tmp_path, tok, first, second):
    """`data merge` of worker 0 pinned `first` and worker 1 pinned `second` (None: unpinned)."""
    out = tmp_path / f"m-{first}-{second}"
    prepare(fineweb_config(tok, first), out, shard=Shard(0, 2), **RUN)
    prepare(fineweb_config(tok, second), out, shard=Shard(1, 2), **RUN)
    return merge(out)


def test_parts_pinned_to_a_branch_or_tag_naming_the_commit_another_read_merge(
    fake_hub, tmp_path, tokenizer_dir
):
    """The default branch `main` and a tag `v2` name commit B: a part read unpinned, one pinned to `main` and
    one to `v2` read B's files, so they merge into the bytes one worker writes (were refused as "prepared
    differently ... (sources differ)": the pin was compared as spelled, only a full sha matched). A part
    pinned to the tag `v1` (commit A) with one read unpinned (commit B) is still refused."""
    fake_hub.refs["v2"] = SHA_B
    whole = tmp_path / "whole"
    prepare(fineweb_config(tokenizer_dir), whole, **RUN)
    for first, second in ((None, "v2"), ("main", None), ("v2", "main"), ("main", SHA_B)):
        out = _merged(tmp_path, tokenizer_dir, first, second)
        for name in BYTES:
            assert (out / name).read_bytes() == (whole / name).read_bytes(), (first, second, name)
    other = tmp_path / "other"
    prepare(fineweb_config(tokenizer_dir), other, shard=Shard(0, 2), **RUN)
    prepare(fineweb_config(tokenizer_dir, "v1"), other, shard=Shard(1, 2), **RUN)
    with pytest.raises(UserError, match=r"00001-of-00002 was prepared differently from .*\(sources differ\)"):
        merge(other)
    assert not other.exists()


def test_a_merged_folders_identity_does_not_hang_on_which_part_spelled_the_pin_how(
    fake_hub, tmp_path, tokenizer_dir
):
    """Parts that read commit B, unpinned and pinned to its sha, merged either way round (and parts pinned
    to a branch and a tag naming B): one recipe, pinned to B, so one identity (`packed.identity`, the
    study's key of a `--prepared` folder) and one study corpus; it was part 0's recipe, so the order of the
    spellings moved every key. Parts that all spelled it one way keep that recipe, a one-worker prepare's."""
    fake_hub.refs["v2"] = SHA_B
    merged = [_merged(tmp_path, tokenizer_dir, *pins) for pins in ((None, SHA_B), (SHA_B, None))]
    assert identity(read_meta(merged[0])) == identity(read_meta(merged[1]))
    merged += [_merged(tmp_path, tokenizer_dir, *pins) for pins in (("main", "v2"), ("v2", None))]
    metas = [read_meta(out) for out in merged]
    assert {identity(meta) for meta in metas} == {identity(metas[0])}
    assert {meta["recipe"]["sources"][0]["hf_revision"] for meta in metas} == {SHA_B}
    check_corpus(metas[0], (f"{HUB},hf_revision={SHA_B}",), "main", merged[0])
    assert (
        prepare(fineweb_config(tokenizer_dir, SHA_B), merged[0], **RUN) == merged[0]
    )  # a one-worker sha pin's folder
    with pytest.raises(
        UserError, match=rf"it holds hf:{FINEWEB_EDU} at revision {SHA_B} \(pinned as {SHA_B}\)"
    ):
        prepare(fineweb_config(tokenizer_dir), merged[0], **RUN)
    for pin in (None, "main"):  # all parts one way: that way, as one worker records it
        whole = tmp_path / f"whole-{pin}"
        prepare(fineweb_config(tokenizer_dir, pin), whole, **RUN)
        out = _merged(tmp_path, tokenizer_dir, pin, pin)
        assert read_meta(out)["recipe"] == read_meta(whole)["recipe"]
        assert identity(read_meta(out)) == identity(read_meta(whole))
