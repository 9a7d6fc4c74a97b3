# ruff: noqa: F811 (the fixtures, imported)
"""An interrupted prepare of a hub source read unpinned, rerun pinned to the full sha of the commit it was
reading (from the hub, or from a mirror whose download records name it), continues its checkpoint
(`data/resume.py`): the same documents, as a finished folder is the same data (`freshness.pins_held`). It
warned "another recipe" and started over. A pin of another commit still starts over."""

from __future__ import annotations

import json

import pytest
from corpus_fixtures import tokenizer_dir  # noqa: F401 (fixture)
from hub_corpus_fixtures import fineweb_config
from test_hub_revision import SHA_A, SHA_B, fake_hub  # noqa: F401 (fixture)
from test_mirror_pin import mirror  # noqa: F401 (fixture)
from tests.data.prepare_fixtures import count_tokenized, fail_after, prepared_bytes

from encoderlab.data.hub import _resolve
from encoderlab.data.packed import identity
from encoderlab.data.prepare import prepare, read_meta
from encoderlab.errors import UserError

ANOTHER_RECIPE = "holds an interrupted prepare of another recipe (or version); starting over"
RUN = dict(workers=1, chunk_docs=5, checkpoint_every=2, progress=False)


def _interrupted(tok, out, pin=None) -> dict:
    """A prepare of `pin` into `out` stopped in its fifth chunk: the checkpoint holds four."""
    with pytest.MonkeyPatch.context() as mp, pytest.raises(KeyboardInterrupt):
        fail_after(mp, 9, KeyboardInterrupt())
        prepare(fineweb_config(tok, pin), out, **RUN)
    _resolve.cache_clear()
    return json.loads((out.with_name(out.name + ".tmp") / "progress.json").read_text())


def _rerun(tok, out, pin, caplog) -> tuple[list[int], str]:
    """`prepare` pinned to `pin` into `out`: the chunks it tokenized and the warnings it gave."""
    caplog.clear()
    with caplog.at_level("WARNING"), pytest.MonkeyPatch.context() as mp:
        tokenized = count_tokenized(mp)
        prepare(fineweb_config(tok, pin), out, **RUN)
    _resolve.cache_clear()
    return tokenized, caplog.text


def _check_resumes(tmp_path, tok, caplog, held: str, other: str) -> None:
    """Read unpinned (at commit `held`), then pinned to `held`: continued, to the bytes and identity of a
    prepare pinned to `held`; pinned to `other`: started over."""
    clean = tmp_path / "clean"
    prepare(fineweb_config(tok, held), clean, **RUN)
    _resolve.cache_clear()
    out = tmp_path / "out"
    progress = _interrupted(tok, out)
    assert progress["chunks"] == 4
    tokenized, said = _rerun(tok, out, held, caplog)
    docs = sum(split["docs"] for split in read_meta(clean)["splits"].values())
    assert "starting over" not in said and len(tokenized) == -(-docs // 5) - 4  # only the unfinished chunks
    assert (
        prepared_bytes(out) == prepared_bytes(clean)
        and read_meta(out)["resumed_after_docs"] == progress["kept"] > 0
    )
    assert read_meta(out)["recipe"] == read_meta(clean)["recipe"]
    assert identity(read_meta(out)) == identity(read_meta(clean))
    assert progress["sources"][0]["identity"]["revision"] == held  # what the checkpoint records
    again = tmp_path / "again"
    _interrupted(tok, again)
    _, said = _rerun(tok, again, other, caplog)
    assert f"again.tmp {ANOTHER_RECIPE}" in said and read_meta(again)["resumed_after_docs"] == 0


def test_an_unpinned_prepare_rerun_pinned_to_the_hub_commit_it_was_reading_continues(
    fake_hub, tmp_path, tokenizer_dir, caplog
):
    """The default branch is commit B: pinned to B it continues; pinned to A (other files) it starts over."""
    _check_resumes(tmp_path, tokenizer_dir, caplog, SHA_B, SHA_A)


def test_an_unpinned_prepare_of_a_mirror_rerun_pinned_to_the_commit_its_records_name_continues(
    mirror, tmp_path, tokenizer_dir, caplog
):
    """A mirror downloaded at commit A (`test_mirror_pin`): read unpinned (revision `local`), then pinned
    to A, it continues, to the bytes and identity of a prepare pinned to A; pinned to B it is refused by
    the pin's own check, the checkpoint kept."""
    clean = tmp_path / "clean"
    prepare(fineweb_config(tokenizer_dir, SHA_A), clean, **RUN)
    _resolve.cache_clear()
    out = tmp_path / "out"
    progress = _interrupted(tokenizer_dir, out)
    assert progress["chunks"] == 4
    with pytest.raises(UserError, match=rf"its README.md was downloaded at commit {SHA_A}, not {SHA_B}; "):
        prepare(fineweb_config(tokenizer_dir, SHA_B), out, **RUN)
    assert json.loads((tmp_path / "out.tmp" / "progress.json").read_text()) == progress
    _resolve.cache_clear()
    tokenized, said = _rerun(tokenizer_dir, out, SHA_A, caplog)
    docs = sum(split["docs"] for split in read_meta(clean)["splits"].values())
    assert "starting over" not in said and len(tokenized) == -(-docs // 5) - 4
    assert (
        prepared_bytes(out) == prepared_bytes(clean)
        and read_meta(out)["resumed_after_docs"] == progress["kept"] > 0
    )
    assert identity(read_meta(out)) == identity(read_meta(clean))
    assert progress["sources"][0]["identity"]["revision"] == "local"  # what the checkpoint records
