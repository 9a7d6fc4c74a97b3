# ruff: noqa: F811 (the fixtures, imported)
"""Data read at the commit a pin names is that pin's data wherever it is met, not only by a `data prepare`
rerun (`data.freshness.pins_held`): a study's `--prepared` folder (`study.prepared.check_corpus`) and the
parts of a sharded prepare (`data merge`). The hub is simulated as in test_hub_revision.py (its fixture)."""

from __future__ import annotations

import pytest
from corpus_fixtures import tokenizer_dir  # noqa: F401 (fixture)
from hub_corpus_fixtures import FINEWEB_EDU, fineweb_config
from test_hub_revision import RUN, SHA_A, SHA_B, fake_hub  # noqa: F401 (fixture)

from encoderlab.data.prepare import prepare, read_meta
from encoderlab.errors import UserError
from encoderlab.study.prepared import check_corpus

HUB = f"hf:{FINEWEB_EDU}#hf_config=sample-10BT"


def test_a_study_corpus_pinned_to_the_commit_a_folder_read_accepts_it(fake_hub, tmp_path, tokenizer_dir):
    """Prepared unpinned (the default branch was commit B), or pinned to a tag that named commit A: a corpus
    entry pinned to that commit's sha is the folder's corpus (was refused as another corpus). Another sha,
    a branch naming the commit, or no pin for a tag's folder is still another corpus."""
    unpinned, tagged = tmp_path / "fw", tmp_path / "v1"
    prepare(fineweb_config(tokenizer_dir), unpinned, **RUN)
    prepare(fineweb_config(tokenizer_dir, "v1"), tagged, **RUN)
    for folder, sha in ((unpinned, SHA_B), (tagged, SHA_A)):
        meta = read_meta(folder)
        check_corpus(meta, (f"{HUB},hf_revision={sha}",), "main", folder)
        check_corpus(meta, (f"{HUB},hf_revision={sha},weight=2",), "main", folder)  # one entry: all of it
    check_corpus(read_meta(unpinned), (HUB,), "main", unpinned)
    check_corpus(read_meta(tagged), (f"{HUB},hf_revision=v1",), "main", tagged)
    for folder, corpus in (
        (unpinned, f"{HUB},hf_revision={SHA_A}"),
        (unpinned, f"{HUB},hf_revision=main"),
        (tagged, f"{HUB},hf_revision={SHA_B}"),
        (tagged, HUB),
        (unpinned, f"{HUB.replace('sample-10BT', 'default')},hf_revision={SHA_B}"),
    ):
        with pytest.raises(
            UserError, match=rf"^dataset main: {folder} was prepared from .*, not from its corpus"
        ):
            check_corpus(read_meta(folder), (corpus,), "main", folder)


def test_parts_one_pinned_to_the_commit_another_read_unpinned_merge(fake_hub, tmp_path, tokenizer_dir):
    """Worker 0 read the default branch (commit B), worker 1 pinned B's sha: the same files, so the parts
    merge (were refused as "prepared differently ... sources differ"), into the bytes one worker writes,
    under the recipe pinned to B (test_hub_pin_merge.py). Parts pinned to different commits, or one pinned
    to another commit than the other read, are still refused."""
    from encoderlab.data.merge import merge
    from encoderlab.data.shard import Shard

    out, whole = tmp_path / "fw", tmp_path / "whole"
    prepare(fineweb_config(tokenizer_dir), out, shard=Shard(0, 2), **RUN)
    prepare(fineweb_config(tokenizer_dir, SHA_B), out, shard=Shard(1, 2), **RUN)
    assert merge(out) == out
    prepare(fineweb_config(tokenizer_dir), whole, **RUN)
    recipe = read_meta(whole)["recipe"]
    assert read_meta(out)["recipe"] == {**recipe, "sources": [{**recipe["sources"][0], "hf_revision": SHA_B}]}
    for name in ("tokens.bin", "doc_offsets.npy", "val/tokens.bin", "val/doc_offsets.npy"):
        assert (out / name).read_bytes() == (whole / name).read_bytes(), name
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    assert (
        merge(out) == out and prepare(fineweb_config(tokenizer_dir, SHA_B), out, **RUN) == out
    )  # nothing to do
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    for first, second in ((SHA_A, SHA_B), (None, SHA_A), (SHA_A, None)):
        other = tmp_path / f"o{first}{second}"
        prepare(fineweb_config(tokenizer_dir, first), other, shard=Shard(0, 2), **RUN)
        prepare(fineweb_config(tokenizer_dir, second), other, shard=Shard(1, 2), **RUN)
        with pytest.raises(
            UserError, match=r"00001-of-00002 was prepared differently from .*\(sources differ\)"
        ):
            merge(other)
        assert not other.exists()
