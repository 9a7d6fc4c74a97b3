"""A study's prepare node interrupted after training its tokenizer, rerun over a corpus edited since, is
refused: it reused the tokenizer trained on the old text, silently (its folder recorded no sources).

`train_tokenizer` now records what it read beside the tokenizer (`sources.json`, in meta.json's form),
and the study checks it with `data/freshness.py`, as it checks the data (`test_stale_corpus.py`).
"""

from __future__ import annotations

import os
import shutil

import pytest
from fake_study import tiny_corpus
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.treestate import assert_unchanged, tree_state, world_state
from tests.study.stale_fixtures import (  # noqa: F401 (fixtures)
    edit_corpus,
    stale_backend,
    stale_spec,
    stale_template,
    stale_world,
)

from encoderlab.errors import UserError
from encoderlab.study.graph import build_graph
from encoderlab.study.marker import MARKER
from encoderlab.study.runner import node_dir, run_study

STALE = (
    r"study mini, dataset main: \S+/tokenizer was trained on sources that changed since "
    r"\(\S+/corpus.jsonl now holds other bytes\); nothing was changed: restore the corpus as it was, or run "
    r"the study in another --out folder to train on the corpus as it is now"
)


def _interrupted_after_the_tokenizer(world):
    """A study run to its end (`stale_world`), then its prepare node put back as a kill after the tokenizer
    left it."""
    corpus = world / "corpus.jsonl"
    spec, study = stale_spec(corpus), world / "s"
    folder = node_dir(study, build_graph(spec, stale_backend()).nodes["prepare/main"])
    (folder / MARKER).unlink()
    shutil.rmtree(folder / "data")
    for name in os.listdir(folder):  # the node's result and the fake's documents come after the data
        if name != "tokenizer" and (folder / name).is_file():
            (folder / name).unlink()
    return corpus, spec, study, folder


def test_a_tokenizer_trained_before_an_interruption_is_not_reused_over_an_edited_corpus(
    stale_world,  # noqa: F811
    monkeypatch,
):
    """Was: the rerun trained the data and every run on the tokenizer of the old text, without a word."""
    monkeypatch.chdir(stale_world)  # the working folder is one a refusal may not change
    corpus, spec, study, folder = _interrupted_after_the_tokenizer(stale_world)
    edit_corpus(corpus)
    for checked in (True, False):  # refused before the study runs, and by the node itself
        before = world_state(stale_world)
        with pytest.raises(UserError, match=STALE) as exc:
            run_study(spec, study, stale_backend(checked), progress=False)
        assert "\n" not in str(exc.value)
        if checked:
            assert_unchanged(before)
        assert f"main: {folder / 'tokenizer'} was" in str(exc.value)
    err = f"encoderlab: error: {exc.value}\n".replace(folder.name, "main-KEY")  # the key holds a path
    assert_printed_as_documented("study-tokenizer-over-a-changed-corpus", err, stale_world)
    run_study(spec, stale_world / "new", stale_backend(), progress=False)  # the fix: another --out


def test_a_tokenizer_trained_before_an_interruption_is_reused_over_the_same_corpus(stale_world):  # noqa: F811
    """A corpus touched but unchanged (its mtime moved) is hashed, found the same, and the tokenizer kept."""
    corpus, spec, study, folder = _interrupted_after_the_tokenizer(stale_world)
    trained = (folder / "tokenizer" / "tokenizer.json").read_bytes()
    os.utime(corpus, ns=(corpus.stat().st_atime_ns, corpus.stat().st_mtime_ns + 10**9))
    run_study(spec, study, stale_backend(), progress=False)
    assert (folder / "tokenizer" / "tokenizer.json").read_bytes() == trained and (folder / MARKER).exists()


def test_train_tokenizer_records_what_it_read_as_meta_json_does(tmp_path):
    """Each source's config and the files read (bytes, sha256, mtime): `source_change` reads it."""
    from encoderlab.data.freshness import source_change
    from encoderlab.data.sources import SourceConfig
    from encoderlab.data.tokenizer_training import SOURCES, train_tokenizer, trained_from

    corpus = tiny_corpus(tmp_path / "corpus.jsonl", 40)
    train_tokenizer(SourceConfig(location=str(corpus)), 300, tmp_path / "tok", progress=False)
    record = trained_from(tmp_path / "tok")
    assert (tmp_path / "tok" / SOURCES).is_file() and record["recipe"]["sources"][0]["location"] == str(
        corpus
    )
    (entry,) = record["sources"][0]["files"]
    assert entry["path"] == str(corpus) and entry["complete"] and entry["bytes"] == corpus.stat().st_size
    assert source_change(record) is None
    edit_corpus(corpus)
    assert source_change(record) == f"{corpus} now holds other bytes"
    tiny_corpus(tmp_path / "few.jsonl", 40)  # max_docs: the part read is recorded, its hash that part's
    train_tokenizer(
        SourceConfig(location=str(tmp_path / "few.jsonl")), 300, tmp_path / "few", max_docs=3, progress=False
    )
    assert source_change(trained_from(tmp_path / "few")) is None


UNRECORDED = (
    r"study mini, dataset main: \S+/tokenizer records no sources it was trained on \(no "
    r"sources.json: an earlier encoderlab trained it\), so it cannot be checked against the corpus as it is "
    r"now; nothing was changed: delete \S+/tokenizer to train it again on the corpus, or run the study in "
    r"another --out folder$"
)


def test_a_tokenizer_recording_no_sources_is_not_reused_for_data_not_prepared_yet(stale_world, monkeypatch):  # noqa: F811
    """A tokenizer an earlier encoderlab trained (no sources.json) before an interruption: was reused
    unchecked, whatever the corpus had become since. What it was trained on cannot be known (its corpus
    may be the same, or not), so it is refused until deleted; deleted, the node trains it again."""
    from encoderlab.data.tokenizer_training import SOURCES

    monkeypatch.chdir(stale_world)  # the working folder is one a refusal may not change
    corpus, spec, study, folder = _interrupted_after_the_tokenizer(stale_world)
    (folder / "tokenizer" / SOURCES).unlink()
    edit_corpus(corpus)
    for checked in (True, False):  # refused before the study runs, and by the node itself
        before = world_state(stale_world)
        with pytest.raises(UserError, match=UNRECORDED) as exc:
            run_study(spec, study, stale_backend(checked), progress=False)
        assert f"main: {folder / 'tokenizer'} records" in str(exc.value)
        if checked:
            assert_unchanged(before)
    err = f"encoderlab: error: {exc.value}\n".replace(folder.name, "main-KEY")  # the key holds a path
    assert_printed_as_documented("study-tokenizer-without-sources", err, stale_world)
    (folder / "data").mkdir()  # data begun with that tokenizer goes too
    with pytest.raises(UserError, match=r"delete \S+/tokenizer and \S+/data to train it again"):
        run_study(spec, study, stale_backend(), progress=False)
    shutil.rmtree(folder / "tokenizer")  # the fix it names
    (folder / "data").rmdir()
    run_study(spec, study, stale_backend(), progress=False)
    assert (folder / MARKER).exists() and (folder / "tokenizer" / SOURCES).is_file()


def test_a_finished_prepare_node_whose_tokenizer_records_no_sources_is_kept(stale_world):  # noqa: F811
    """Its data, prepared to the end with that tokenizer, is what the runs read: checked itself, kept."""
    from encoderlab.data.tokenizer_training import SOURCES

    spec, study = stale_spec(stale_world / "corpus.jsonl"), stale_world / "s"  # run to its end
    folder = node_dir(study, build_graph(spec, stale_backend()).nodes["prepare/main"])
    (folder / "tokenizer" / SOURCES).unlink()
    before = tree_state(study)
    run_study(spec, study, stale_backend(), progress=False)  # nothing to refuse, nothing to run again
    assert not (folder / "tokenizer" / SOURCES).exists() and (folder / MARKER).exists()
    assert {k: v for k, v in tree_state(study).items() if k.startswith("nodes/prepare")} == {
        k: v for k, v in before.items() if k.startswith("nodes/prepare")
    }


def _damaged(reason: str) -> str:
    return (
        r"study mini, dataset main: (\S+/tokenizer)/sources.json, the record of what \1 was trained on, "
        rf"is damaged \({reason}\), so it cannot be checked against the corpus as it is now; nothing was "
        r"changed: delete \1 to train it again on the corpus, or run the study in another --out folder$"
    )


@pytest.mark.parametrize(
    ("written", "reason"),
    [
        (b'{"recipe": {"sources": [', "not valid JSON"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        (b"[]", "not an object with a recipe and a list of sources"),
        (b'{"recipe": {}}', "not an object with a recipe and a list of sources"),
        (b"{}", "not an object with a recipe and a list of sources"),
        (None, "unreadable: Is a directory"),
    ],
)
def test_a_tokenizer_whose_sources_json_is_damaged_says_so(stale_world, written, reason, monkeypatch):  # noqa: F811
    """Was: "no readable sources.json: an earlier encoderlab trained it", of a file this encoderlab wrote
    and something damaged since; `{}` (no recipe, no sources) was not even refused, but reused unchecked.
    The line names the file and the damage, and gives the same fix (delete the tokenizer)."""
    from encoderlab.data.tokenizer_training import SOURCES

    monkeypatch.chdir(stale_world)  # the working folder is one a refusal may not change
    corpus, spec, study, folder = _interrupted_after_the_tokenizer(stale_world)
    if written is None:
        (folder / "tokenizer" / SOURCES).unlink()
        (folder / "tokenizer" / SOURCES).mkdir()
    else:
        (folder / "tokenizer" / SOURCES).write_bytes(written)
    for checked in (True, False):  # refused before the study runs, and by the node itself
        before = world_state(stale_world)
        with pytest.raises(UserError, match=_damaged(reason)) as exc:
            run_study(spec, study, stale_backend(checked), progress=False)
        assert f"main: {folder / 'tokenizer' / SOURCES}, the record" in str(exc.value)
        if checked:
            assert_unchanged(before)
    err = f"encoderlab: error: {exc.value}\n".replace(folder.name, "main-KEY")  # the key holds a path
    if reason != "not valid JSON":  # the row's case: the fix is the same whatever the damage was
        return
    assert_printed_as_documented("study-tokenizer-damaged-sources", err, stale_world)
    shutil.rmtree(folder / "tokenizer")  # the fix it names
    run_study(spec, study, stale_backend(), progress=False)
    assert (folder / MARKER).exists() and (folder / "tokenizer" / SOURCES).is_file()
