# ruff: noqa: F811 (the tokenizer_dir and mirror fixtures, imported)
"""An interrupted prepare of a mirror read unpinned (`ENCODERLAB_HUB_DATA`, revision `local`), resumed after
the mirror was downloaded again at another commit, does not mix the two commits' data: the rerun re-reads
the documents its checkpoint holds and checks them against its hash chain (`data/resume.py`), so it
continues only when the new commit yields those same documents, and then writes exactly what a prepare of
the new commit writes, recording that commit (`mirror_commit`, verified when the rerun read the mirror);
when they differ it starts over. So progress.json needs no record of the commit it started at: the commit
verified at the resume is the one the whole part holds (recording the first one would name a commit the
part's tail was not read at)."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from corpus_fixtures import tokenizer_dir  # noqa: F401 (fixture)
from hub_corpus_fixtures import FINEWEB_EDU_SCHEMA, fineweb_config, fineweb_edu_rows
from test_mirror_pin import FILES, SHA_A, SHA_B, mirror  # noqa: F401 (fixture)
from tests.data.hub_cache_fixtures import download_record
from tests.data.prepare_fixtures import count_tokenized, fail_after, prepared_bytes

from encoderlab.data.hub import _resolve
from encoderlab.data.packed import identity
from encoderlab.data.prepare import prepare, read_meta

RUN = dict(workers=1, chunk_docs=5, checkpoint_every=2, progress=False)
"""3 files of 10 documents: a checkpoint after 4 chunks holds the first two files' documents."""


def _interrupted(tok, out) -> dict:
    """An unpinned prepare into `out` stopped in its fifth chunk: the checkpoint holds four."""
    with pytest.MonkeyPatch.context() as mp, pytest.raises(KeyboardInterrupt):
        fail_after(mp, 9, KeyboardInterrupt())
        prepare(fineweb_config(tok, None), out, **RUN)
    _resolve.cache_clear()
    return json.loads((out.with_name(out.name + ".tmp") / "progress.json").read_text())


def _download_again(repo, changed: str) -> None:
    """The mirror downloaded again at commit B, which changed the file `changed` (others as they were)."""
    table = pa.table(fineweb_edu_rows(1000, 10), schema=FINEWEB_EDU_SCHEMA)
    pq.write_table(table, repo / changed)
    for path in ["README.md", *FILES]:
        download_record(repo, path, SHA_B)
    _resolve.cache_clear()


def _rerun(tok, out, caplog) -> tuple[list[int], str]:
    caplog.clear()
    with caplog.at_level("WARNING"), pytest.MonkeyPatch.context() as mp:
        tokenized = count_tokenized(mp)
        prepare(fineweb_config(tok, None), out, **RUN)
    _resolve.cache_clear()
    return tokenized, caplog.text


def _fresh(tok, out) -> dict:
    prepare(fineweb_config(tok, None), out, **RUN)
    _resolve.cache_clear()
    return read_meta(out)


def test_a_resume_after_the_mirror_moved_past_the_checkpoint_holds_the_new_commit_only(
    mirror, tmp_path, tokenizer_dir, caplog
):
    """B changed only the third file, past the checkpoint: the rerun continues (the documents it holds are
    B's too) and writes, and records, what a prepare of B does: B's third file, commit B."""
    out = tmp_path / "out"
    progress = _interrupted(tokenizer_dir, out)
    assert progress["chunks"] == 4 and progress["sources"][0]["identity"]["revision"] == "local"
    _download_again(mirror, FILES[2])
    tokenized, said = _rerun(tokenizer_dir, out, caplog)
    clean = _fresh(tokenizer_dir, tmp_path / "clean")
    assert "starting over" not in said and len(tokenized) == 2  # only the unfinished chunks
    assert prepared_bytes(out) == prepared_bytes(tmp_path / "clean")
    meta = read_meta(out)
    assert meta["resumed_after_docs"] == progress["kept"] > 0
    assert meta["sources"][0]["mirror_commit"] == clean["sources"][0]["mirror_commit"] == SHA_B
    assert identity(meta) == identity(clean)


def test_a_resume_after_the_mirror_moved_before_the_checkpoint_starts_over_at_the_new_commit(
    mirror, tmp_path, tokenizer_dir, caplog
):
    """B changed the first file, which the checkpoint holds: the rerun starts over, saying so, and writes
    what a prepare of B does, recording B."""
    out = tmp_path / "out"
    _interrupted(tokenizer_dir, out)
    _download_again(mirror, FILES[0])
    _, said = _rerun(tokenizer_dir, out, caplog)
    _fresh(tokenizer_dir, tmp_path / "clean")
    assert "the sources changed since the interrupted prepare" in said and "starting over" in said
    assert prepared_bytes(out) == prepared_bytes(tmp_path / "clean")
    meta = read_meta(out)
    assert meta["resumed_after_docs"] == 0 and meta["sources"][0]["mirror_commit"] == SHA_B
