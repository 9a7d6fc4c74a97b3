# ruff: noqa: F811 (the tokenizer_dir fixture, imported)
"""A pin (`#hf_revision=SHA`) on a dataset mirror (`ENCODERLAB_HUB_DATA`) is checked against the records
`hf download --revision SHA --local-dir DIR` leaves in `DIR/.cache/huggingface/download/PATH.metadata`
(commit sha, etag, time written: huggingface_hub's `_local_folder.py`) and read when they name that commit;
it was refused whatever the mirror held. The records are written here as huggingface_hub writes them."""

from __future__ import annotations

import os

import pytest
from corpus_fixtures import tokenizer_dir  # noqa: F401 (fixture)
from hub_corpus_fixtures import FINEWEB_EDU, fineweb_config, forget_mirror_commit, make_fineweb_edu
from tests.data.hub_cache_fixtures import download_record
from tests.reliability.errors_doc import assert_printed_as_documented

from encoderlab.data.hub import HUB_DATA_ENV, _resolve
from encoderlab.data.merge import merge
from encoderlab.data.packed import identity
from encoderlab.data.prepare import prepare, read_meta
from encoderlab.data.shard import Shard
from encoderlab.errors import UserError
from encoderlab.study.prepared import check_corpus

SHA_A, SHA_B = "a" * 40, "b" * 40
RUN = dict(workers=1, chunk_docs=7, progress=False)
FILES = [f"sample/10BT/{k:03d}_00000.parquet" for k in range(3)]


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """fineweb-edu mirrored with `hf download --revision <commit A>`: a record of A for every file."""
    root = tmp_path / "hub"
    repo = make_fineweb_edu(root, files_10bt=3, rows_per_file=10)
    for path in ["README.md", *FILES]:
        download_record(repo, path, SHA_A)
    monkeypatch.setenv(HUB_DATA_ENV, str(root))
    _resolve.cache_clear()
    yield repo
    _resolve.cache_clear()


def test_a_pin_of_the_commit_a_mirror_was_downloaded_at_is_read_and_recorded(mirror, tmp_path, tokenizer_dir):
    out = tmp_path / "fw"
    prepare(fineweb_config(tokenizer_dir, SHA_A), out, **RUN)
    meta = read_meta(out)
    assert meta["recipe"]["sources"][0]["hf_revision"] == SHA_A
    ident = meta["sources"][0]["identity"]
    assert (ident["revision"], ident["mirror"], ident["files"]) == (SHA_A, str(mirror), FILES)
    assert all(len(f["sha256"]) == 64 for f in meta["sources"][0]["files"])  # checked as a mirror's files
    _resolve.cache_clear()
    assert prepare(fineweb_config(tokenizer_dir, SHA_A), out, **RUN) == out


def test_a_mirror_pin_of_another_commit_is_refused_before_anything_is_written(
    mirror, tmp_path, tokenizer_dir
):
    out = tmp_path / "fw"
    with pytest.raises(
        UserError,
        match=rf"^hf:{FINEWEB_EDU}#hf_revision={SHA_B}: {HUB_DATA_ENV} mirrors {FINEWEB_EDU} in {mirror}, and "
        rf"its README.md was downloaded at commit {SHA_A}, not {SHA_B}; download it at {SHA_B} with: hf download "
        rf"--repo-type dataset --revision {SHA_B} {FINEWEB_EDU} --local-dir {mirror} \(or pin "
        rf"hf_revision={SHA_A} if that commit is the one meant\)$",
    ) as refused:
        prepare(fineweb_config(tokenizer_dir, SHA_B), out, **RUN)
    assert_printed_as_documented("mirror-pin-other-commit", f"encoderlab: error: {refused.value}", tmp_path)
    download_record(mirror, FILES[1], SHA_B)  # one file of another download
    with pytest.raises(UserError, match=rf"its {FILES[1]} was downloaded at commit {SHA_B}, not {SHA_A}; "):
        prepare(fineweb_config(tokenizer_dir, SHA_A), out, **RUN)
    assert not out.exists() and not (tmp_path / "fw.tmp").exists()


def test_a_mirror_pin_that_cannot_be_checked_is_refused_before_anything_is_written(
    mirror, tmp_path, tokenizer_dir
):
    out = tmp_path / "fw"
    record = mirror / ".cache" / "huggingface" / "download" / f"{FILES[2]}.metadata"
    record.unlink()  # a file copied in, not downloaded there
    with pytest.raises(
        UserError,
        match=rf"^hf:{FINEWEB_EDU}#hf_revision={SHA_A}: {HUB_DATA_ENV} mirrors {FINEWEB_EDU} in {mirror}, and "
        rf"its {FILES[2]} has no download record \(.cache/huggingface/download/{FILES[2]}.metadata\), so the "
        rf"pin cannot be checked; download it again with: hf download --repo-type dataset --revision {SHA_A} "
        rf"{FINEWEB_EDU} --local-dir {mirror} \(or drop hf_revision to read the mirror as it is\)$",
    ) as refused:
        prepare(fineweb_config(tokenizer_dir, SHA_A), out, **RUN)
    assert_printed_as_documented("mirror-pin-unverifiable", f"encoderlab: error: {refused.value}", tmp_path)
    with pytest.raises(
        UserError,
        match=rf"^hf:{FINEWEB_EDU}#hf_revision=main: {HUB_DATA_ENV} mirrors {FINEWEB_EDU} in {mirror}, whose "
        r"download records name commits, not branches or tags; pin the 40-hex commit sha the mirror was "
        rf"downloaded at \(the first line of {mirror}/.cache/huggingface/download/\*.metadata\), or drop "
        "hf_revision to read the mirror as it is$",
    ) as refused:
        prepare(fineweb_config(tokenizer_dir, "main"), out, **RUN)
    assert_printed_as_documented("mirror-pin-branch", f"encoderlab: error: {refused.value}", tmp_path)
    download_record(mirror, FILES[2], SHA_A)
    (mirror / ".cache" / "huggingface" / "download" / "README.md.metadata").write_text("not a record\n")
    with pytest.raises(
        UserError, match=r"its README.md has an unreadable download record \(.cache/huggingface"
    ):
        prepare(fineweb_config(tokenizer_dir, SHA_A), out, **RUN)
    download_record(mirror, "README.md", SHA_A)
    edited = mirror / FILES[0]
    st = edited.stat()
    os.utime(edited, ns=(st.st_atime_ns, st.st_mtime_ns + 10 * 10**9))  # edited after its download
    with pytest.raises(UserError, match=rf"its {FILES[0]} was modified after it was downloaded, so the pin"):
        prepare(fineweb_config(tokenizer_dir, SHA_A), out, **RUN)
    assert not out.exists() and not (tmp_path / "fw.tmp").exists()


def test_a_rerun_pinned_to_the_commit_a_mirror_records_of_a_folder_read_unpinned_has_nothing_to_do(
    mirror, tmp_path, tokenizer_dir
):
    """Prepared unpinned from a mirror downloaded at commit A, then pinned to A: the files a pin of A reads
    (its records name A, none edited since), so nothing to do, the folder and its recipe untouched, as
    for a folder read from the hub itself (was refused as "prepared differently"). A pin of another commit,
    or of A once a file's record names another download, is still refused (by the pin's own check)."""
    out = tmp_path / "fw"
    prepare(fineweb_config(tokenizer_dir, None), out, **RUN)
    assert read_meta(out)["sources"][0]["identity"]["revision"] == "local"
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    _resolve.cache_clear()
    assert prepare(fineweb_config(tokenizer_dir, SHA_A), out, **RUN) == out
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    assert "hf_revision" not in read_meta(out)["recipe"]["sources"][0]
    with pytest.raises(UserError, match=rf"its README.md was downloaded at commit {SHA_A}, not {SHA_B}; "):
        prepare(fineweb_config(tokenizer_dir, SHA_B), out, **RUN)
    download_record(mirror, FILES[1], SHA_B)  # one file of another download
    with pytest.raises(UserError, match=rf"its {FILES[1]} was downloaded at commit {SHA_B}, not {SHA_A}; "):
        prepare(fineweb_config(tokenizer_dir, SHA_A), out, **RUN)
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before


def test_mirror_parts_read_unpinned_and_pinned_to_the_commit_its_records_name_merge(
    mirror, tmp_path, tokenizer_dir
):
    """A part read unpinned from a mirror downloaded at A (identity revision `local`) and one pinned to A
    read the same files: they merge, either way round, into one folder identity, its recipe and source
    pinned to A as a one-worker prepare pinned to A records them (were refused: the parts' identities said
    `local` and A). Parts from before the unpinned one recorded the commit it read (`mirror_commit`) have
    it read from the mirror's records now: once a file's record names another download, they are refused
    again (`test_mirror_pin_recorded.py`: a part that records it)."""
    merged = []
    for pins in ((None, SHA_A), (SHA_A, None)):
        out = tmp_path / f"m-{pins[0]}"
        for index, pin in enumerate(pins):
            _resolve.cache_clear()
            prepare(fineweb_config(tokenizer_dir, pin), out, shard=Shard(index, 2), **RUN)
        merged.append(read_meta(merge(out)))
    whole = tmp_path / "whole"
    prepare(fineweb_config(tokenizer_dir, SHA_A), whole, **RUN)
    assert identity(merged[0]) == identity(merged[1])
    for meta in merged:
        assert meta["recipe"] == read_meta(whole)["recipe"]
        assert meta["sources"][0]["identity"] == read_meta(whole)["sources"][0]["identity"]
    for name in ("tokens.bin", "val/tokens.bin"):
        assert (tmp_path / "m-None" / name).read_bytes() == (whole / name).read_bytes()
    out = tmp_path / "again"
    for index, pin in enumerate((None, SHA_A)):
        _resolve.cache_clear()
        prepare(fineweb_config(tokenizer_dir, pin), out, shard=Shard(index, 2), **RUN)
    forget_mirror_commit(tmp_path / "again.shards" / "00000-of-00002")
    download_record(mirror, FILES[2], SHA_B)  # the mirror no longer verifies A: the unpinned part is not A's
    with pytest.raises(UserError, match=r"00001-of-00002 was prepared differently from .*\(sources differ\)"):
        merge(out)
    assert not out.exists()


def test_a_folder_read_unpinned_from_a_mirror_is_a_study_corpus_pinned_to_the_commit_its_records_name(
    mirror, tmp_path, tokenizer_dir
):
    """`study --prepared` of a folder read unpinned from a mirror downloaded at A, for a corpus pinned to A:
    the files a pin of A reads, so accepted, as a folder read from the hub at A is (was refused: only the
    commits recorded in the folder counted). A corpus pinned to another commit is refused, and, for a folder
    from before it recorded the commit it read (`mirror_commit`), one pinned to A once the mirror's records
    name another download."""
    out = tmp_path / "fw"
    prepare(fineweb_config(tokenizer_dir, None), out, **RUN)
    meta = read_meta(out)
    hub = f"hf:{FINEWEB_EDU}#hf_config=sample-10BT"
    check_corpus(meta, (f"{hub},hf_revision={SHA_A}",), "main", out)
    check_corpus(meta, (hub,), "main", out)
    with pytest.raises(UserError, match=r"^dataset main: .* not from its corpus"):
        check_corpus(meta, (f"{hub},hf_revision={SHA_B}",), "main", out)
    forget_mirror_commit(out)
    download_record(mirror, FILES[0], SHA_B)
    with pytest.raises(UserError, match=r"^dataset main: .* not from its corpus"):
        check_corpus(read_meta(out), (f"{hub},hf_revision={SHA_A}",), "main", out)
