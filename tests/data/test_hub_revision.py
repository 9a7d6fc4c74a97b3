# ruff: noqa: F811 (the tokenizer_dir fixture, imported)
"""Pinning a hub corpus's revision (`#hf_revision=SHA_OR_BRANCH`): passed to `datasets`' builder and
stream, recorded, validated; a folder holding one revision is refused for another, and a rerun without a
pin says which revision its folder holds. The hub is simulated: `datasets`' two calls read a local
repo folder per commit (tests/data/hub_corpus_fixtures.py) and name its files `hf://...@SHA/...` as they
do for the hub; nothing downloads."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
from corpus_fixtures import tokenizer_dir  # noqa: F401 (fixture)
from hub_corpus_fixtures import FINEWEB_EDU, fineweb_config, make_fineweb_edu
from tests.reliability.errors_doc import assert_printed_as_documented

from encoderlab.data import hub
from encoderlab.data.hub import HUB_DATA_ENV
from encoderlab.data.prepare import prepare, read_meta
from encoderlab.data.sources import SourceConfig, describe, expand, parse_source
from encoderlab.errors import UserError

SHA_A, SHA_B, SHA_C = "a" * 40, "b" * 40, "c" * 40
RUN = dict(workers=1, chunk_docs=7, progress=False)


@pytest.fixture
def fake_hub(tmp_path, monkeypatch):
    """The hub at three commits (3, 4 and 2 files of sample-10BT), `main` at B, tag `v1` at A; `calls`
    records the revision keyword each `datasets` call got (absent: None)."""
    import datasets

    folders = {}
    for sha, n_files in ((SHA_A, 3), (SHA_B, 4), (SHA_C, 2)):
        folders[sha] = make_fineweb_edu(tmp_path / "at" / sha[:1], files_10bt=n_files, rows_per_file=8)
    refs = {"main": SHA_B, "v1": SHA_A, **{sha: sha for sha in folders}}
    calls = []
    builder, load = datasets.load_dataset_builder, datasets.load_dataset

    def commit(revision) -> str:
        if (revision or "main") not in refs:
            raise FileNotFoundError(f"Revision '{revision}' does not exist")
        return refs[revision or "main"]

    def fake_builder(location, config, data_dir=None, **kw):
        assert location == FINEWEB_EDU
        calls.append(("builder", kw.get("revision")))
        sha = commit(kw.get("revision"))
        real = builder(str(folders[sha]), config, data_dir=data_dir)
        urls = {
            split: [
                f"hf://datasets/{FINEWEB_EDU}@{sha}/{Path(f).relative_to(folders[sha]).as_posix()}"
                for f in fs
            ]
            for split, fs in real.config.data_files.items()
        }
        return SimpleNamespace(config=SimpleNamespace(name=real.config.name, data_files=urls))

    def fake_load(location, config, **kw):
        calls.append(("load", kw.pop("revision", None)))
        return load(str(folders[refs.get(calls[-1][1] or "main", "")]), config, **kw)

    monkeypatch.delenv(HUB_DATA_ENV, raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(datasets, "load_dataset_builder", fake_builder)
    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    monkeypatch.setattr(hub, "reach_hub", lambda *a, **kw: None)
    hub._resolve.cache_clear()
    yield SimpleNamespace(refs=refs, calls=calls, folders=folders)
    hub._resolve.cache_clear()


def test_a_pinned_revision_is_read_recorded_and_another_is_refused(fake_hub, tmp_path, tokenizer_dir):
    out = tmp_path / "fw"
    prepare(fineweb_config(tokenizer_dir, "v1"), out, **RUN)
    meta = read_meta(out)
    assert meta["recipe"]["sources"][0]["hf_revision"] == "v1"
    assert meta["sources"][0]["identity"]["revision"] == SHA_A and len(meta["sources"][0]["files"]) == 3
    # the builder got the pin, the stream the commit it resolved to (a branch may move meanwhile)
    assert ("builder", "v1") in fake_hub.calls and ("load", SHA_A) in fake_hub.calls
    with pytest.raises(
        UserError,
        match=rf"^{out} already holds data prepared differently \(sources differ: it holds hf:{FINEWEB_EDU} at "
        rf"revision {SHA_A} \(pinned as v1\), this asks for revision {SHA_B}\); nothing was changed: choose "
        rf"another --out, or delete {out} and run the command again$",
    ) as refused:
        prepare(fineweb_config(tokenizer_dir, SHA_B), out, **RUN)
    assert_printed_as_documented(
        "prepare-at-another-revision", f"encoderlab: error: {refused.value}", tmp_path
    )
    with pytest.raises(UserError, match=rf"it holds hf:\S+ at revision {SHA_A} \(pinned as v1\), this asks "
                       "for the default branch\\)"):  # fmt: skip
        prepare(fineweb_config(tokenizer_dir), out, **RUN)


def test_without_a_pin_the_calls_are_unchanged_and_a_moved_branch_keeps_the_folder(
    fake_hub, tmp_path, tokenizer_dir, caplog
):
    out = tmp_path / "fw"
    prepare(fineweb_config(tokenizer_dir), out, **RUN)
    meta = read_meta(out)
    assert "hf_revision" not in meta["recipe"]["sources"][0]  # the recipe of a folder from before pinning
    assert meta["sources"][0]["identity"]["revision"] == SHA_B
    assert {revision for _, revision in fake_hub.calls} == {None}  # no revision keyword at all
    fake_hub.refs["main"] = SHA_C  # the default branch moved
    hub._resolve.cache_clear()
    with caplog.at_level(logging.INFO, logger="encoderlab.data.prepare"):
        assert prepare(fineweb_config(tokenizer_dir), out, **RUN) == out
    assert (
        f"{out} already holds this recipe (hf:{FINEWEB_EDU} at revision {SHA_B}, kept whatever the hub holds "
        "now; to read another, pin #hf_revision into another --out); nothing to do"
    ) in caplog.messages
    assert read_meta(out)["sources"][0]["identity"]["revision"] == SHA_B
    with pytest.raises(UserError, match=rf"at revision {SHA_B} \(the default branch then\), this asks for "
                       rf"revision {SHA_C}\)"):  # fmt: skip
        prepare(fineweb_config(tokenizer_dir, SHA_C), out, **RUN)


def test_a_pin_of_the_commit_a_folder_holds_is_the_same_data(fake_hub, tmp_path, tokenizer_dir, caplog):
    """Unpinned (the default branch was commit B), or pinned to a tag that named commit A: a rerun pinned to
    that commit's sha reads the same files, so it finds nothing to do (was refused as prepared differently);
    the folder keeps its recipe and identity. A branch naming the commit is no pin of it (it may move)."""
    out, tagged = tmp_path / "fw", tmp_path / "v1"
    prepare(fineweb_config(tokenizer_dir), out, **RUN)
    prepare(fineweb_config(tokenizer_dir, "v1"), tagged, **RUN)
    before = [(f / "meta.json").read_bytes() for f in (out, tagged)]
    with caplog.at_level(logging.INFO, logger="encoderlab.data.prepare"):
        assert prepare(fineweb_config(tokenizer_dir, SHA_B), out, **RUN) == out
        assert prepare(fineweb_config(tokenizer_dir, SHA_A), tagged, **RUN) == tagged
    assert f"{out} already holds this recipe (hf:{FINEWEB_EDU} at revision {SHA_B}, kept" in caplog.text
    assert [(f / "meta.json").read_bytes() for f in (out, tagged)] == before
    with pytest.raises(UserError, match=rf"at revision {SHA_A} \(pinned as v1\), this asks for revision "
                       rf"{SHA_B}\)"):  # fmt: skip
        prepare(fineweb_config(tokenizer_dir, SHA_B), tagged, **RUN)
    with pytest.raises(UserError, match=rf"at revision {SHA_B} \(the default branch then\), this asks for "
                       r"revision main\)"):  # fmt: skip
        prepare(fineweb_config(tokenizer_dir, "main"), out, **RUN)


def test_a_bad_revision_is_one_line_before_anything_is_written(
    fake_hub, tmp_path, tokenizer_dir, monkeypatch
):
    assert parse_source(f"hf:{FINEWEB_EDU}#hf_revision=0123").hf_revision == "0123"  # text, not a number
    assert (
        parse_source(f"hf:{FINEWEB_EDU}#hf_revision=refs/convert/parquet").hf_revision
        == "refs/convert/parquet"
    )
    for bad in ("", "a..b", "main.lock", "-x", "a b"):
        with pytest.raises(
            UserError, match=rf"^source 'hf:[^']+': hf_revision='{bad}' is not a hub revision \(a commit sha, or "
            "a branch or tag name\\); fix it, e.g. hf_revision=main or the 40-hex commit sha"
        ):  # fmt: skip
            parse_source(f"hf:{FINEWEB_EDU}#hf_revision={bad}")
    with pytest.raises(UserError, match=r"hf_revision=v1 selects files of a hub dataset \(hf:...\), which"):
        describe(SourceConfig(location=str(tmp_path), hf_revision="v1"))
    with pytest.raises(UserError, match=rf"cannot resolve hub dataset '{FINEWEB_EDU}' \(Revision 'nope' does not "
                       r"exist\); check the id and #hf_revision=nope$"):  # fmt: skip
        describe(SourceConfig(location=f"hf:{FINEWEB_EDU}", hf_config="sample-10BT", hf_revision="nope"))
    assert (
        expand(parse_source("fineweb-edu-10bt#hf_revision=v1")).hf_revision == "v1"
    )  # a named corpus keeps it
    monkeypatch.setenv(HUB_DATA_ENV, str(fake_hub.folders[SHA_A].parents[1]))
    with pytest.raises(
        UserError,
        match=rf"^hf:{FINEWEB_EDU}#hf_revision=v1: {HUB_DATA_ENV} mirrors {FINEWEB_EDU} in \S+, whose "
        r"download records name commits, not branches or tags; pin the 40-hex commit sha",
    ):  # a tag: only a commit can be checked on a mirror (tests/data/test_mirror_pin.py)
        prepare(fineweb_config(tokenizer_dir, "v1"), tmp_path / "o", **RUN)
    assert not (tmp_path / "o").exists()


def test_a_revision_the_hub_lacks_is_one_line(monkeypatch):
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import RevisionNotFoundError

    def missing(self, repo_id, **kw):  # asked once, bounded by huggingface_hub's HF_HUB_ETAG_TIMEOUT
        assert kw == {"repo_type": "dataset", "revision": "v9", "timeout": constants.HF_HUB_ETAG_TIMEOUT}
        exc = RevisionNotFoundError.__new__(RevisionNotFoundError)  # as the hub's 404 for a revision
        Exception.__init__(exc, "404 Revision Not Found")
        raise exc

    monkeypatch.setattr(HfApi, "repo_info", missing)
    with pytest.raises(
        UserError, match=rf"^hub dataset '{FINEWEB_EDU}' has no revision 'v9' on the Hugging Face hub; fix "
        r"#hf_revision \(a commit sha, branch or tag of the repo\)$"
    ):  # fmt: skip
        hub.reach_hub(FINEWEB_EDU, "dataset", "hub dataset", "fix", "v9")


def test_a_prepared_folder_at_a_pinned_revision_is_another_corpus_for_a_study(
    fake_hub, tmp_path, tokenizer_dir
):
    from encoderlab.study.prepared import check_corpus

    out = tmp_path / "fw"
    prepare(fineweb_config(tokenizer_dir, "v1"), out, **RUN)
    meta = read_meta(out)
    check_corpus(meta, (f"hf:{FINEWEB_EDU}#hf_config=sample-10BT,hf_revision=v1",), "main", out)
    with pytest.raises(
        UserError, match=rf"was prepared from hf:{FINEWEB_EDU}#hf_config=sample-10BT,hf_revision=v1, not from "
        rf"its corpus hf:{FINEWEB_EDU}#hf_config=sample-10BT; pass a folder prepared from the corpus$"
    ):  # fmt: skip
        check_corpus(meta, (f"hf:{FINEWEB_EDU}#hf_config=sample-10BT",), "main", out)


def test_a_rerun_pinned_to_a_commit_sha_asks_no_hub_and_a_branch_pin_still_does(
    fake_hub, tmp_path, tokenizer_dir, monkeypatch, caplog
):
    """A full sha names files that cannot change: the folder that holds them answers a rerun with the hub
    offline and every hub call failing (it resolved the dataset first). A tag may move: it still asks."""

    out, tagged = tmp_path / "fw", tmp_path / "v1"
    prepare(fineweb_config(tokenizer_dir, SHA_A), out, **RUN)
    prepare(fineweb_config(tokenizer_dir, "v1"), tagged, **RUN)

    forbid_hub(monkeypatch)
    with caplog.at_level(logging.INFO, logger="encoderlab.data.prepare"):
        assert prepare(fineweb_config(tokenizer_dir, SHA_A), out, **RUN) == out
    assert f"{out} already holds this recipe (hf:{FINEWEB_EDU} at revision {SHA_A}, kept" in caplog.text
    with pytest.raises(UserError, match=rf"^hub dataset '{FINEWEB_EDU}' pinned at #hf_revision=v1 needs the "
                       "Hugging Face hub but HF_HUB_OFFLINE=1"):  # fmt: skip
        prepare(fineweb_config(tokenizer_dir, "v1"), tagged, **RUN)
    with pytest.raises(UserError, match=rf"^hub dataset '{FINEWEB_EDU}' pinned at #hf_revision={SHA_B} needs "
                       "the Hugging Face hub but HF_HUB_OFFLINE=1"):  # fmt: skip
        prepare(
            fineweb_config(tokenizer_dir, SHA_B), tmp_path / "new", **RUN
        )  # a sha not prepared: listed first
    monkeypatch.delenv("HF_HUB_OFFLINE")
    with pytest.raises(AssertionError, match="the hub was asked"):
        prepare(fineweb_config(tokenizer_dir, "v1"), tagged, **RUN)
    assert not (tmp_path / "new").exists()


def forbid_hub(monkeypatch) -> None:
    """Every way encoderlab asks the hub about a corpus fails the test, the hub offline, as in a new process."""
    import datasets

    def no_hub(*args, **kwargs):
        raise AssertionError("the hub was asked")

    for module, name in ((hub, "reach_hub"), (datasets, "load_dataset_builder"), (datasets, "load_dataset")):
        monkeypatch.setattr(module, name, no_hub)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub._resolve.cache_clear()
