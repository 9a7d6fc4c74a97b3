# ruff: noqa: F811 (the tokenizer_dir fixture, imported)
"""A hub corpus read from a mirror (`ENCODERLAB_HUB_DATA`) whose files were edited in place is refused
like an edited local corpus (`data/freshness.py`): its identity was the file names and per-file document
counts, so a file rewritten to the same count of other rows passed, and a rerun said "nothing to do", a
leftover part was merged, a study reused its prepare node."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from corpus_fixtures import tokenizer_dir  # noqa: F401 (fixture)
from hub_corpus_fixtures import FINEWEB_EDU, FINEWEB_EDU_SCHEMA, fineweb_edu_rows, make_fineweb_edu

from encoderlab.data.freshness import source_change
from encoderlab.data.hub import HUB_DATA_ENV, _resolve
from encoderlab.data.merge import merge
from encoderlab.data.packed import identity
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.shard import Shard, shard_dir
from encoderlab.data.sources import SourceConfig
from encoderlab.errors import UserError

RUN = dict(workers=1, chunk_docs=7, progress=False)
SOURCE = SourceConfig(location=f"hf:{FINEWEB_EDU}", hf_config="sample-10BT")


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    root = tmp_path / "hub"
    make_fineweb_edu(root, files_10bt=3, rows_per_file=10)
    monkeypatch.setenv(HUB_DATA_ENV, str(root))
    _resolve.cache_clear()
    yield root / FINEWEB_EDU
    _resolve.cache_clear()


def _cfg(tok) -> PrepareConfig:
    return PrepareConfig(sources=(SOURCE,), tokenizer=str(tok), decontaminate=(), val_fraction=0.1)


def _edit(path) -> None:
    """The file's rows in another order: the same file name and document count, other rows."""
    rows = pq.read_table(path).to_pylist()[::-1]
    pq.write_table(pa.Table.from_pylist(rows, schema=FINEWEB_EDU_SCHEMA), path)


def test_a_rerun_over_an_edited_mirror_file_is_refused_and_a_touched_one_is_not(
    mirror, tmp_path, tokenizer_dir
):
    out = tmp_path / "fw"
    prepare(_cfg(tokenizer_dir), out, **RUN)
    meta = read_meta(out)
    assert [f["bytes"] for f in meta["sources"][0]["files"]] == [
        (mirror / f"sample/10BT/{k:03d}_00000.parquet").stat().st_size for k in range(3)
    ]
    edited = mirror / "sample" / "10BT" / "001_00000.parquet"
    st = edited.stat()
    os.utime(edited, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # touched, the same bytes: hashed, kept
    assert prepare(_cfg(tokenizer_dir), out, **RUN) == out
    before = (out / "meta.json").read_bytes()
    _edit(edited)
    with pytest.raises(
        UserError,
        match=rf"^{out} was prepared from sources that changed since \({edited} now holds [\d,]+ bytes, [\d,]+ were read\); "
        rf"nothing was changed: choose another --out, or delete {out} and run the command again$",
    ):
        prepare(_cfg(tokenizer_dir), out, **RUN)
    assert (out / "meta.json").read_bytes() == before
    edited.unlink()
    assert source_change(meta) == f"{edited} is no longer in hf:{FINEWEB_EDU}"  # as of a local folder


def test_a_folder_from_before_mirror_files_were_recorded_keeps_its_identity_and_is_not_checked(
    mirror, tmp_path, tokenizer_dir
):
    out = tmp_path / "fw"
    prepare(_cfg(tokenizer_dir), out, **RUN)
    meta = read_meta(out)
    for entry in meta["sources"][0]["files"]:  # as the code before wrote it: path, docs, complete
        for key in ("bytes", "sha256", "mtime_ns"):
            del entry[key]
    old = identity(meta)
    (out / "meta.json").write_text(json.dumps(meta, indent=2))
    _edit(mirror / "sample" / "10BT" / "000_00000.parquet")
    assert source_change(meta) is None and identity(read_meta(out)) == old
    assert prepare(_cfg(tokenizer_dir), out, **RUN) == out


def test_a_part_of_an_edited_mirror_file_is_refused_by_the_merge_and_a_rerun(mirror, tmp_path, tokenizer_dir):
    out = tmp_path / "fw"
    for i in (0, 1):
        prepare(_cfg(tokenizer_dir), out, shard=Shard(i, 2), **RUN)
    edited = mirror / "sample" / "10BT" / "002_00000.parquet"  # the last file: in part 1's slice
    _edit(edited)
    part = shard_dir(out, Shard(1, 2))
    with pytest.raises(
        UserError,
        match=rf"^{part} was prepared from sources that changed since \({edited} now holds [\d,]+ bytes, [\d,]+ were read\); "
        r"delete it and prepare it again with --shard 1/2, then merge$",
    ):
        merge(out)
    assert not out.exists()
    with pytest.raises(UserError, match=rf"^{part} was prepared from sources that changed since \({edited} "):
        prepare(_cfg(tokenizer_dir), out, shard=Shard(1, 2), **RUN)
    assert prepare(_cfg(tokenizer_dir), out, shard=Shard(0, 2), **RUN) == shard_dir(out, Shard(0, 2))


def test_a_study_prepare_node_of_an_edited_mirror_file_is_refused(mirror, tmp_path, tokenizer_dir):
    from encoderlab.study.checks import refuse_stale_data

    node = tmp_path / "nodes" / "prepare" / "main-KEY"
    prepare(_cfg(tokenizer_dir), node / "data", **RUN)
    spec = SimpleNamespace(name="mini")
    refuse_stale_data(spec, "main", node)  # unchanged: reused
    edited = mirror / "sample" / "10BT" / "000_00000.parquet"
    pq.write_table(pa.table(fineweb_edu_rows(500, 10), schema=FINEWEB_EDU_SCHEMA), edited)
    with pytest.raises(
        UserError,
        match=rf"^study mini, dataset main: {node}/data was prepared from sources that changed since "
        rf"\({edited} now holds [\d,]+ bytes, [\d,]+ were read\); nothing was changed: restore the corpus",
    ):
        refuse_stale_data(spec, "main", node)


def _add_file(mirror, k: int):
    added = mirror / "sample" / "10BT" / f"{k:03d}_00000.parquet"
    pq.write_table(pa.table(fineweb_edu_rows(900, 10), schema=FINEWEB_EDU_SCHEMA), added)
    _resolve.cache_clear()  # as in a new process
    return added


def test_a_file_added_to_the_mirror_is_refused_by_a_rerun_unless_outside_what_was_read(
    mirror, tmp_path, tokenizer_dir
):
    """A file added to the mirror's split was found only by `data merge` (the parts then listed other
    files); a rerun said "nothing to do" over a corpus the source now reads more of. Outside an `hf_files`
    slice it is none of what was read."""
    out, sliced = tmp_path / "fw", tmp_path / "sliced"
    prepare(_cfg(tokenizer_dir), out, **RUN)
    first_two = PrepareConfig(
        sources=(SourceConfig(location=SOURCE.location, hf_config=SOURCE.hf_config, hf_files="0:2"),),
        tokenizer=str(tokenizer_dir),
        decontaminate=(),
        val_fraction=0.1,
    )
    prepare(first_two, sliced, **RUN)
    before = (out / "meta.json").read_bytes()
    added = _add_file(mirror, 3)
    with pytest.raises(
        UserError,
        match=rf"^{out} was prepared from sources that changed since \({added} is new in hf:{FINEWEB_EDU}\); "
        rf"nothing was changed: choose another --out, or delete {out} and run the command again$",
    ):
        prepare(_cfg(tokenizer_dir), out, **RUN)
    assert (out / "meta.json").read_bytes() == before
    assert prepare(first_two, sliced, **RUN) == sliced
    added.unlink()
    gone = mirror / "sample" / "10BT" / "002_00000.parquet"
    gone.unlink()
    _resolve.cache_clear()
    assert source_change(read_meta(out)) == f"{gone} is no longer in hf:{FINEWEB_EDU}"


def test_a_mirror_whose_split_cannot_be_listed_here_still_has_its_files_checked(
    mirror, tmp_path, tokenizer_dir, monkeypatch, caplog
):
    """A merge on a machine without `datasets` (or a card it cannot read): the files read are compared."""
    from encoderlab.data import freshness

    out = tmp_path / "fw"
    prepare(_cfg(tokenizer_dir), out, shard=Shard(1, 2), **RUN)
    part = shard_dir(out, Shard(1, 2))

    def unlisted(*args):
        raise UserError("reading a hub dataset needs the `datasets` package, which is not installed")

    monkeypatch.setattr(freshness, "list_mirror", unlisted)
    assert source_change(read_meta(part)) is None
    assert f"the files hf:{FINEWEB_EDU} lists now are not checked: reading a hub dataset needs" in caplog.text
    edited = mirror / "sample" / "10BT" / "002_00000.parquet"
    _edit(edited)
    assert source_change(read_meta(part)).startswith(f"{edited} now holds ")
