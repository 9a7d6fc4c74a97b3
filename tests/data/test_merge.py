"""Sharded prepare and `data merge`: N workers, each on a disjoint slice of the files, then a merge,
give the bytes of one worker; every document exactly once; missing or mixed parts are refused."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from hub_corpus_fixtures import FINEWEB_EDU, make_fineweb_edu
from tests.reliability.errors_doc import assert_printed_as_documented

from encoderlab.data.hub import HUB_DATA_ENV
from encoderlab.data.merge import merge
from encoderlab.data.packed import identity
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.shard import Shard, parse_shard, shard_dir, shard_from_env
from encoderlab.data.sources import SourceConfig
from encoderlab.errors import UserError

FILES = ("tokens.bin", "doc_offsets.npy", "val/tokens.bin", "val/doc_offsets.npy", "tokenizer/tokenizer.json")
RUN = dict(workers=1, chunk_docs=7, progress=False)  # chunks straddle file boundaries


@pytest.fixture(scope="module")
def fineweb(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub")
    make_fineweb_edu(root, files_10bt=5, rows_per_file=30)
    return root


def _cfg(tok, **kw) -> PrepareConfig:
    # val_fraction 0.13: its held-out pattern does not repeat at the part boundary (60 documents), so a
    # merge that drew the split per part instead of over the whole corpus would give other bytes
    source = SourceConfig(location=f"hf:{FINEWEB_EDU}", hf_config="sample-10BT")
    return PrepareConfig(sources=(source,), tokenizer=str(tok), decontaminate=(), val_fraction=0.13, **kw)


def _docs(root) -> list[list[int]]:
    meta = read_meta(root)
    out = []
    for sub in (".", "val"):
        tokens = np.fromfile(root / sub / "tokens.bin", dtype=meta["dtype"])
        offsets = np.load(root / sub / "doc_offsets.npy")
        out += [tokens[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
    return out


def test_two_workers_then_merge_give_the_bytes_of_one_worker(fineweb, tmp_path, monkeypatch, tokenizer_dir):  # noqa: F811
    monkeypatch.setenv(HUB_DATA_ENV, str(fineweb))
    one = prepare(_cfg(tokenizer_dir), tmp_path / "one", **RUN)
    out = tmp_path / "two"
    parts = [prepare(_cfg(tokenizer_dir), out, shard=Shard(i, 2), **RUN) for i in (1, 0)]  # any order
    assert parts == [shard_dir(out, Shard(1, 2)), shard_dir(out, Shard(0, 2))] and not out.exists()
    assert merge(out) == out
    for name in FILES:
        assert (out / name).read_bytes() == (one / name).read_bytes(), name
    a, b = read_meta(one), read_meta(out)
    for key in ("recipe", "splits", "unique_tokens", "max_token_id", "spec", "dtype", "wrap"):
        assert a[key] == b[key], key
    for key in ("docs", "files", "identity", "tokens", "unique_tokens"):
        assert a["sources"][0][key] == b["sources"][0][key], key
    assert identity(a) == identity(b)  # a run that started on one resumes on the other
    # every document exactly once: as many as rows, none twice, the parts split the files
    docs = _docs(out)
    assert len(docs) == 150 and len({tuple(d) for d in docs}) == 150
    files = [[f["path"] for f in read_meta(p)["sources"][0]["files"]] for p in parts[::-1]]
    assert files == [[f"sample/10BT/{k:03d}_00000.parquet" for k in r] for r in ((0, 1), (2, 3, 4))]
    assert [p["shard"] for p in b["parts"]] == [{"index": 0, "count": 2}, {"index": 1, "count": 2}]
    # merging again, or preparing the one-worker recipe into the merged folder, is a no-op
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    merge(out)
    prepare(_cfg(tokenizer_dir), out, **RUN)
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before


def _two_files(tmp_path: Path, tokenizer: Path, **options) -> PrepareConfig:
    """A source folder of two 20-document JSONL files, prepared with `tokenizer` and `options`."""
    for k in range(2):
        write_jsonl(tmp_path / "src" / f"{k}.jsonl", corpus_records(20, prefix=f"f{k}-"))
    source = (SourceConfig(location=str(tmp_path / "src")),)
    return PrepareConfig(sources=source, tokenizer=str(tokenizer), decontaminate=(), **options)


def test_local_files_shard_too_and_a_worker_without_files_writes_an_empty_part(tmp_path, tokenizer_dir):  # noqa: F811
    cfg = _two_files(tmp_path, tokenizer_dir)
    one = prepare(cfg, tmp_path / "one", **RUN)
    parts = [prepare(cfg, tmp_path / "three", shard=Shard(i, 3), **RUN) for i in range(3)]
    assert read_meta(parts[0])["splits"]["train"]["docs"] == 0  # 2 files over 3 workers
    merge(tmp_path / "three", delete_parts=True)
    for name in FILES:
        assert (tmp_path / "three" / name).read_bytes() == (one / name).read_bytes(), name
    assert not parts[0].parent.exists()


def test_delete_parts_keeps_what_else_someone_put_in_the_shards_folder(tmp_path, tokenizer_dir):  # noqa: F811
    """`--delete-parts` removed OUT.shards whole, with a user's notes and folders in it."""
    write_jsonl(tmp_path / "src" / "0.jsonl", corpus_records(20))
    cfg = PrepareConfig(
        sources=(SourceConfig(location=str(tmp_path / "src")),),
        tokenizer=str(tokenizer_dir),
        decontaminate=(),
    )
    parts = [prepare(cfg, tmp_path / "two", shard=Shard(i, 2), **RUN) for i in range(2)]
    folder = parts[0].parent
    (folder / "notes.txt").write_text("mine")
    (folder / "mine").mkdir()
    (folder / "mine" / "keep.txt").write_text("keep me")
    merge(tmp_path / "two", delete_parts=True)
    assert sorted(p.name for p in folder.iterdir()) == [".encoderlab.json", "mine", "notes.txt"]
    assert (folder / "notes.txt").read_text() == "mine" and (
        folder / "mine" / "keep.txt"
    ).read_text() == "keep me"


def test_missing_or_mixed_parts_are_refused_by_name(fineweb, tmp_path, monkeypatch, tokenizer_dir):  # noqa: F811
    monkeypatch.setenv(HUB_DATA_ENV, str(fineweb))
    out = tmp_path / "fw"
    with pytest.raises(UserError, match=r"no parts to merge: .*fw.shards does not exist"):
        merge(out)
    (tmp_path / "fw.shards").write_text("a file")  # was said not to exist
    with pytest.raises(UserError, match=r"no parts to merge: .*fw.shards is not a folder"):
        merge(out)
    (tmp_path / "fw.shards").unlink()
    prepare(_cfg(tokenizer_dir), out, shard=Shard(0, 3), **RUN)
    with pytest.raises(UserError, match=r"lacks 2 of 3 parts, first --shard 1/3"):
        merge(out)
    prepare(_cfg(tokenizer_dir), out, shard=Shard(1, 3), **RUN)
    prepare(_cfg(tokenizer_dir, seed=5), out, shard=Shard(2, 3), **RUN)
    with pytest.raises(UserError, match=r"00002-of-00003 was prepared differently .*\(seed differ\)"):
        merge(out)
    assert not out.exists()
    prepare(_cfg(tokenizer_dir), out, shard=Shard(0, 2), **RUN)
    with pytest.raises(UserError, match=r"parts of 2 different shard counts"):
        merge(out)


def test_shards_come_from_the_flag_a_slurm_array_or_torchrun():
    assert parse_shard(None) is None and parse_shard("3/8") == Shard(3, 8)
    slurm = {"SLURM_ARRAY_TASK_ID": "12", "SLURM_ARRAY_TASK_MIN": "10", "SLURM_ARRAY_TASK_COUNT": "4"}
    assert shard_from_env(slurm) == Shard(2, 4)
    assert shard_from_env({**slurm, "SLURM_ARRAY_TASK_ID": "14", "SLURM_ARRAY_TASK_STEP": "2"}) == Shard(2, 4)
    assert parse_shard("auto", {"RANK": "1", "WORLD_SIZE": "2"}) == Shard(1, 2)
    assert [Shard(i, 3).select(10) for i in range(3)] == [range(0, 3), range(3, 6), range(6, 10)]
    for bad, match in (("8/8", "out of range"), ("a/b", "is not I/N"), ("auto", "neither a SLURM array")):
        with pytest.raises(UserError, match=match):
            parse_shard(bad, {})


def test_a_mixture_or_a_sample_cannot_be_sharded(tmp_path, tokenizer_dir):  # noqa: F811
    src = write_jsonl(tmp_path / "a.jsonl", corpus_records(5))
    two = (SourceConfig(location=str(src)), SourceConfig(location=str(src)))
    for cfg in (
        PrepareConfig(sources=two, tokenizer=str(tokenizer_dir), decontaminate=()),
        PrepareConfig(sources=two[:1], tokenizer=str(tokenizer_dir), decontaminate=(), max_docs=3),
    ):
        with pytest.raises(UserError, match="--shard splits one --source by its files"):
            prepare(cfg, tmp_path / "x", shard=Shard(0, 2), **RUN)


def test_cli_shard_then_merge(fineweb, tmp_path, monkeypatch, capsys, tokenizer_dir):  # noqa: F811
    from encoderlab.cli import main

    monkeypatch.setenv(HUB_DATA_ENV, str(fineweb))
    out = tmp_path / "cli"
    args = ["data", "prepare", "--source", f"hf:{FINEWEB_EDU}#hf_config=sample-10BT", "--tokenizer",
            str(tokenizer_dir), "--out", str(out), "--decontaminate", "none", "--workers", "1"]  # fmt: skip
    for rank in ("0", "1"):
        monkeypatch.setenv("RANK", rank)
        monkeypatch.setenv("WORLD_SIZE", "2")
        main([*args, "--shard", "auto"])
        assert json.loads(capsys.readouterr().out)["out"] == str(shard_dir(out, Shard(int(rank), 2)))
    main(["data", "merge", "--out", str(out)])
    summary = json.loads(capsys.readouterr().out)
    assert summary["splits"] == read_meta(out)["splits"] and summary["splits"]["train"]["docs"] > 0


def test_an_interrupted_hub_part_resumes_to_the_same_bytes(fineweb, tmp_path, monkeypatch, tokenizer_dir):  # noqa: F811
    """Ctrl-C after a checkpoint of a streamed hub part: the rerun re-streams the prefix, checks its
    hash chain and continues; the part equals an uninterrupted one."""
    from encoderlab.data import prepare as prep

    monkeypatch.setenv(HUB_DATA_ENV, str(fineweb))
    run = dict(RUN, checkpoint_every=2)
    clean = prepare(_cfg(tokenizer_dir), tmp_path / "clean", shard=Shard(1, 2), **run)
    real, calls = prep.SplitWriter.append, []

    def append(self, tokens, lengths):
        calls.append(1)
        if len(calls) > 9:  # two appends (train, val) per chunk: after the checkpoint of chunk 4
            raise KeyboardInterrupt
        real(self, tokens, lengths)

    with monkeypatch.context() as mp:
        mp.setattr(prep.SplitWriter, "append", append)
        with pytest.raises(KeyboardInterrupt):
            prepare(_cfg(tokenizer_dir), tmp_path / "cut", shard=Shard(1, 2), **run)
    part = prepare(_cfg(tokenizer_dir), tmp_path / "cut", shard=Shard(1, 2), **run)
    assert read_meta(part)["resumed_after_docs"] == 28  # 4 chunks of 7
    for name in FILES[:2]:
        assert (part / name).read_bytes() == (clean / name).read_bytes(), name


def test_a_slice_of_the_files_shards_and_merges_to_the_bytes_of_one_worker(
    fineweb,
    tmp_path,
    monkeypatch,
    tokenizer_dir,  # noqa: F811
):
    """`hf_files=A:B` reads files A..B-1 of the split (a part of a sample a run needs); two workers split
    that slice, and the merge equals one worker reading it. A whole split's recipe has no `hf_files`."""
    monkeypatch.setenv(HUB_DATA_ENV, str(fineweb))
    source = SourceConfig(location=f"hf:{FINEWEB_EDU}", hf_config="sample-10BT", hf_files="1:4")
    cfg = PrepareConfig(sources=(source,), tokenizer=str(tokenizer_dir), decontaminate=(), val_fraction=0.13)
    one = prepare(cfg, tmp_path / "one", **RUN)
    parts = [prepare(cfg, tmp_path / "two", shard=Shard(i, 2), **RUN) for i in (0, 1)]
    merge(tmp_path / "two")
    for name in FILES:
        assert (tmp_path / "two" / name).read_bytes() == (one / name).read_bytes(), name
    files = [[f["path"] for f in read_meta(p)["sources"][0]["files"]] for p in parts]
    assert files == [
        ["sample/10BT/001_00000.parquet"],
        ["sample/10BT/002_00000.parquet", "sample/10BT/003_00000.parquet"],
    ]
    meta = read_meta(one)
    assert meta["sources"][0]["identity"]["file_span"] == [1, 4] and len(_docs(one)) == 90  # 3 files of 30
    assert meta["recipe"]["sources"][0]["hf_files"] == "1:4"
    whole = prepare(_cfg(tokenizer_dir), tmp_path / "whole", **RUN)
    assert "hf_files" not in read_meta(whole)["recipe"]["sources"][0]  # folders prepared before it stay valid
    assert "file_span" not in read_meta(whole)["sources"][0]["identity"]
    for bad, match in (
        ("4:2", r"hf_files=4:2 is not a slice A:B of its 5 data files"),
        ("x", "is not a slice"),
    ):
        with pytest.raises(UserError, match=match):
            prepare(PrepareConfig(sources=(replace(source, hf_files=bad),), tokenizer=str(tokenizer_dir),
                                  decontaminate=()), tmp_path / "bad", **RUN)  # fmt: skip
    local = SourceConfig(location=str(write_jsonl(tmp_path / "a.jsonl", corpus_records(5))), hf_files="0:1")
    with pytest.raises(UserError, match="hf_files=0:1 selects files of a hub dataset"):
        prepare(
            PrepareConfig(sources=(local,), tokenizer=str(tokenizer_dir), decontaminate=()),
            tmp_path / "x",
            **RUN,
        )
    assert not (tmp_path / "bad").exists() and not (tmp_path / "x").exists()


def test_a_part_meta_edited_by_hand_is_one_line_naming_the_part(tmp_path, tokenizer_dir):  # noqa: F811
    """A part's meta.json that every reader accepts but the merge sums (its source's counts, its
    decontamination, its workers) was a KeyError or TypeError traceback when edited or cut by hand."""
    import json

    write_jsonl(tmp_path / "src" / "a.jsonl", corpus_records(20))
    cfg = PrepareConfig(
        sources=(SourceConfig(location=str(tmp_path / "src")),),
        tokenizer=str(tokenizer_dir),
        decontaminate=(),
    )
    parts = [prepare(cfg, tmp_path / "out", shard=Shard(i, 2), **RUN) for i in range(2)]
    original = json.loads((parts[1] / "meta.json").read_text())
    edits = {
        "recipe is not a mapping": {"recipe": ["a"]},
        "sources is not a list of its one source": {"sources": {}},
        "sources\\[0\\] lacks a count of docs": {"sources": [{**original["sources"][0], "docs": "many"}]},
        "decontamination lacks its counts": {"decontamination": None},
        "workers is None, not a whole number": {"workers": None},
    }
    for problem, edit in edits.items():
        (parts[1] / "meta.json").write_text(json.dumps({**original, **edit}))
        with pytest.raises(
            UserError,
            match=rf"^{parts[1]}/meta.json is corrupt \({problem}.*\); delete {parts[1]} and prepare it again "
            r"with --shard 1/2$",
        ):
            merge(tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_parts_that_read_the_hub_data_at_another_revision_or_file_list_are_refused(tmp_path, tokenizer_dir):  # noqa: F811
    """Hub data is not listed again by the freshness check (`data/freshness.py`: pinned by its revision),
    and the merge took every part's word for it: a worker that started after the mirror gained a file
    (or the hub's default branch moved) sliced another file list, and the merge held a file's documents
    twice, under the first part's identity."""
    from encoderlab.data.hub import _resolve

    hub = tmp_path / "hub"
    make_fineweb_edu(hub, files_10bt=3, rows_per_file=10)
    out = tmp_path / "fw"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(HUB_DATA_ENV, str(hub))
        prepare(_cfg(tokenizer_dir), out, shard=Shard(0, 2), **RUN)
        folder = hub / FINEWEB_EDU / "sample" / "10BT"
        (folder / "003_00000.parquet").write_bytes((folder / "002_00000.parquet").read_bytes())
        _resolve.cache_clear()  # the second worker: another process, on another machine
        prepare(_cfg(tokenizer_dir), out, shard=Shard(1, 2), **RUN)
        _resolve.cache_clear()
    with pytest.raises(
        UserError,
        match=r"00001-of-00002 read its source as revision local with 4 data files, \S+00000-of-00002 as "
        r"revision local with 3 data files \(the data changed between the parts\); delete the parts of the "
        r"old data and prepare them again with their --shard, then merge$",
    ) as refused:
        merge(out)
    assert_printed_as_documented(
        "merge-of-parts-of-other-hub-data", f"encoderlab: error: {refused.value}", tmp_path
    )
    assert not out.exists()
    part = shard_dir(out, Shard(1, 2))  # a part read from the hub at another commit says so too
    meta = read_meta(part)
    first = read_meta(shard_dir(out, Shard(0, 2)))["sources"][0]["identity"]
    meta["sources"][0]["identity"] = {**first, "revision": "0123abc"}
    (part / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(
        UserError, match=r"as revision 0123abc with 3 data files, \S+ as revision local with 3"
    ):
        merge(out)


def test_training_on_one_part_of_an_unmerged_prepare_is_refused_naming_data_merge(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
):
    """A part `OUT.shards/I-of-N` is one worker's slice of the files with every document in train; training
    on it was accepted silently (on 1/N of the corpus, without validation)."""
    from tests.reliability.test_hostile_inputs import assert_one_line, cli

    write_jsonl(tmp_path / "src" / "0.jsonl", corpus_records(20, prefix="f0-"))
    write_jsonl(tmp_path / "src" / "1.jsonl", corpus_records(20, prefix="f1-"))
    cfg = PrepareConfig(
        sources=(SourceConfig(location=str(tmp_path / "src")),),
        tokenizer=str(tokenizer_dir),
        decontaminate=(),
    )
    part = prepare(cfg, tmp_path / "d", shard=Shard(1, 2), **RUN)
    argv = ["pretrain", "--recipe", "smoke-mlm", "--set", f"data.path={part}", "--out", tmp_path / "run"]
    code, err = cli(argv, capsys)
    assert_one_line(
        code, err, rf"data.path {part} is part 1/2 of a sharded prepare \(one worker's slice of the files, no val "
        rf"split\); run `encoderlab data merge --out {tmp_path / 'd'}` once every part is written, and train on "
        rf"{tmp_path / 'd'}$"
    )  # fmt: skip
    assert not (tmp_path / "run").exists()


def test_a_val_fraction_that_holds_out_every_document_is_refused_by_merge_before_writing(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
):
    """A part holds every document in train (merge draws the split), so a sharded prepare with
    `--val-fraction 0.999` on a few documents was merged into a folder with an empty train split, which
    `pretrain` and `data inspect` then refused as too short for --seq-len."""
    from tests.reliability.test_hostile_inputs import assert_one_line, cli

    cfg = _two_files(tmp_path, tokenizer_dir, val_fraction=0.999)
    parts = [prepare(cfg, tmp_path / "d", shard=Shard(i, 2), **RUN) for i in range(2)]
    docs = sum(read_meta(p)["splits"]["train"]["docs"] for p in parts)
    code, err = cli(["data", "merge", "--out", tmp_path / "d"], capsys)
    assert_one_line(
        code, err, rf"the parts in {re.escape(str(tmp_path / 'd.shards'))} were prepared with --val-fraction 0.999, which holds out "
        rf"every one of their {docs} documents, leaving no train split; delete {re.escape(str(tmp_path / 'd.shards'))} and prepare "
        r"the parts again with a smaller --val-fraction \(e.g. 0.01\) or more text, then run data merge again$"
    )  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.shards", "src"]
    assert all(p.is_dir() for p in parts)  # the parts are kept: only the split is redrawn
    shutil.rmtree(tmp_path / "d.shards")  # the fix, followed
    for i in range(2):
        prepare(replace(cfg, val_fraction=0.01), tmp_path / "d", shard=Shard(i, 2), **RUN)
    code, _ = cli(["data", "merge", "--out", tmp_path / "d"], capsys)
    assert code == 0 and read_meta(tmp_path / "d")["splits"]["train"]["docs"] > 0


@pytest.mark.parametrize("fraction", [0.0, 0.01, 0.13, 0.5, 0.97, 0.999])
def test_the_held_out_count_merge_checks_is_what_the_split_holds_out(fraction):
    """`data merge` counts the held-out documents without drawing the split (a corpus of billions of
    documents would need an array of them); the count must be the rule's, at every size."""
    from encoderlab.data.holdout import held_out_count
    from encoderlab.data.packed import val_mask

    for n in range(1, 400):
        assert held_out_count(n, fraction) == int(val_mask(0, n, fraction).sum()), n


def test_a_merge_into_a_link_to_an_empty_folder_fills_that_folder(tmp_path, tokenizer_dir):  # noqa: F811
    """`--out data` with `data -> scratch` (empty): every part was read and copied into `data.tmp`, whose
    rename over the link then failed (NotADirectoryError). The link stands for its folder
    (`atomic.folder_named`): the workers' parts lie beside it and the merge writes it."""
    cfg = _two_files(tmp_path, tokenizer_dir)
    one = prepare(cfg, tmp_path / "one", **RUN)
    (tmp_path / "scratch").mkdir()
    (tmp_path / "data").symlink_to(tmp_path / "scratch")
    parts = [prepare(cfg, tmp_path / "data", shard=Shard(i, 2), **RUN) for i in range(2)]
    assert parts[0].parent == (tmp_path / "scratch.shards").resolve()
    assert merge(tmp_path / "data") == (tmp_path / "scratch").resolve() and (tmp_path / "data").is_symlink()
    for name in FILES:
        assert (tmp_path / "data" / name).read_bytes() == (one / name).read_bytes(), name
