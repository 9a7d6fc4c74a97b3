"""An interrupted prepare rerun with the same files reached by another path (`--source a/c.jsonl` in the
parent, then `--source c.jsonl` in a/) continues its checkpoint (`data/resume.py`); it warned "another
recipe" and started over, since progress.json recorded no resolved path and its hash chain held the
documents' ids, which hold the path as written. Other files at the new path still start over."""

from __future__ import annotations

import json
import os

import pytest
from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from tests.data.prepare_fixtures import RESUMABLE, count_tokenized, interrupt_prepare, prepared_bytes

from encoderlab.data import resume
from encoderlab.data.packed import identity
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.sources import SourceConfig

ANOTHER_RECIPE = "holds an interrupted prepare of another recipe (or version); starting over"


def _cfg(src, tok) -> PrepareConfig:
    return PrepareConfig(sources=(SourceConfig(location=src),), tokenizer=str(tok), decontaminate=())


@pytest.fixture
def parent(tmp_path, monkeypatch):
    """a/c.jsonl, whose records have ids (`c.jsonl#doc3`), and a/d.jsonl, whose have none (`d.jsonl:3`)."""
    write_jsonl(tmp_path / "a" / "c.jsonl", corpus_records(120))
    write_jsonl(tmp_path / "a" / "d.jsonl", [{"text": r["text"]} for r in corpus_records(120, prefix="x")])
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "there, here",
    [("a/c.jsonl", "c.jsonl"), ("a", "."), ("a/*.jsonl", "*.jsonl"), ("ABS/a/d.jsonl", "./d.jsonl")],
)
def test_a_resume_through_another_path_to_the_same_files_continues(
    parent,
    tokenizer_dir,  # noqa: F811
    monkeypatch,
    caplog,
    there,
    here,
):
    there = there.replace("ABS", str(parent))
    interrupt_prepare(
        _cfg(there, tokenizer_dir), parent / "out", 11, KeyboardInterrupt()
    )  # the checkpoint: 4 chunks
    progress = json.loads((parent / "out.tmp" / "progress.json").read_text())
    assert progress["chunks"] == 4 and progress["resolved"] == [os.path.realpath(parent / there)]
    monkeypatch.chdir(parent / "a")
    clean = prepare(_cfg(here, tokenizer_dir), parent / "clean", **RESUMABLE)
    with caplog.at_level("WARNING"), pytest.MonkeyPatch.context() as mp:
        tokenized = count_tokenized(mp)
        out = prepare(_cfg(here, tokenizer_dir), parent / "out", **RESUMABLE)
    assert "starting over" not in caplog.text
    docs = sum(split["docs"] for split in read_meta(clean)["splits"].values())
    assert len(tokenized) == -(-docs // 10) - 4  # chunks of 10: only the unfinished ones
    assert (
        prepared_bytes(out) == prepared_bytes(clean)
        and read_meta(out)["resumed_after_docs"] == progress["kept"] > 0
    )
    # what a prepare from here records: the location as given now, the files as named from here
    assert identity(read_meta(out)) == identity(read_meta(clean))
    assert read_meta(out)["sources"] == read_meta(clean)["sources"]


def test_other_files_at_the_new_path_start_over(parent, tokenizer_dir, monkeypatch, caplog):  # noqa: F811
    write_jsonl(parent / "b" / "c.jsonl", corpus_records(120))  # the same documents, another file
    interrupt_prepare(_cfg("a/c.jsonl", tokenizer_dir), parent / "out", 11, KeyboardInterrupt())
    monkeypatch.chdir(parent / "b")
    with caplog.at_level("WARNING"):
        out = prepare(_cfg("c.jsonl", tokenizer_dir), parent / "out", **RESUMABLE)
    assert f"out.tmp {ANOTHER_RECIPE}" in caplog.text
    fresh = prepare(_cfg("c.jsonl", tokenizer_dir), parent / "fresh", **RESUMABLE)
    assert prepared_bytes(out) == prepared_bytes(fresh) and read_meta(out)["resumed_after_docs"] == 0
    assert read_meta(out)["sources"][0]["resolved"] == os.path.realpath(parent / "b" / "c.jsonl")


def _old_checkpoint(cfg, out) -> None:
    """An interrupted prepare as the code before `chain_version` left it: no resolved paths, ids as read."""
    here = resume.Chain.here
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(resume.Chain, "here", classmethod(lambda cls, s: here(s).continuing({})))
        interrupt_prepare(cfg, out, 11, KeyboardInterrupt())
    progress = json.loads((out.with_name(out.name + ".tmp") / "progress.json").read_text())
    assert progress["chunks"] == 4 and "resolved" not in progress and "chain_version" not in progress


def test_a_checkpoint_from_before_resumes_by_the_same_path_and_starts_over_by_another(
    parent,
    tokenizer_dir,  # noqa: F811
    monkeypatch,
    caplog,
):
    cfg = _cfg("a/c.jsonl", tokenizer_dir)
    clean = prepare(cfg, parent / "clean", **RESUMABLE)
    _old_checkpoint(cfg, parent / "out")
    with caplog.at_level("WARNING"):
        out = prepare(cfg, parent / "out", **RESUMABLE)
    assert "starting over" not in caplog.text and read_meta(out)["resumed_after_docs"] > 0
    assert prepared_bytes(out) == prepared_bytes(clean)
    _old_checkpoint(cfg, parent / "again")
    monkeypatch.chdir(parent / "a")
    with caplog.at_level("WARNING"):
        again = prepare(_cfg("c.jsonl", tokenizer_dir), parent / "again", **RESUMABLE)
    assert f"again.tmp {ANOTHER_RECIPE}" in caplog.text and read_meta(again)["resumed_after_docs"] == 0
    assert prepared_bytes(again) == prepared_bytes(clean)


def test_data_prepared_with_refuse_is_the_recipe_of_raise(parent, tokenizer_dir, caplog):  # noqa: F811
    """A study's prepare node passes on_error="refuse" (its line offers no --on-error) since 2026-12-06: the
    same bytes as "raise", so one recipe; a study folder prepared before is reused, not prepared again."""
    from dataclasses import replace

    out = prepare(replace(_cfg("a/c.jsonl", tokenizer_dir), on_error="refuse"), parent / "out")
    assert read_meta(out)["recipe"]["on_error"] == "raise"
    with caplog.at_level("INFO"):
        prepare(_cfg("a/c.jsonl", tokenizer_dir), parent / "out")
    assert "already holds this recipe" in caplog.text and "nothing to do" in caplog.text
