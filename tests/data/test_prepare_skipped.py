"""Files `data prepare --on-error skip` could not open are part of the freshness record
(`data/freshness.py`): their state then (unreadable) is what a rerun compares with. A file skipped
because it could not be read, then made readable (its permissions fixed), left the folder lacking it
while a rerun said "nothing to do"; an unreadable parquet file was not recorded at all, so every rerun
was refused as if it were new, though nothing had changed."""

from __future__ import annotations

import builtins
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.data import filereaders, filerecords
from encoderlab.data.freshness import source_change
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.sources import SourceConfig

RUN = dict(workers=1, progress=False)


def _locked(monkeypatch, path) -> None:
    """`path` cannot be opened, as a file without read permission (the tests may run as root, which
    reads anything, so the reader's `open` is refused instead)."""

    def fake_open(file, *args, **kwargs):
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return builtins.open(file, *args, **kwargs)

    # both readers' opens: a parquet file is hashed whole by `filerecords.file_record` (moved out of
    # filereaders, where this test alone then refused it: the parquet case read the file and failed)
    for module in (filereaders, filerecords):
        monkeypatch.setattr(module, "open", fake_open, raising=False)


def _folder(root, kind="jsonl"):
    root.mkdir()
    for i in range(3):
        records = corpus_records(20, prefix=f"f{i}-")
        if kind == "jsonl":
            write_jsonl(root / f"part{i}.jsonl", records)
        else:
            pq.write_table(pa.table({"text": [r["text"] for r in records]}), root / f"part{i}.parquet")
    return root


def _prepare(src, tok, out, capsys) -> tuple[int, str]:
    argv = ["data", "prepare", "--source", str(src), "--tokenizer", str(tok), "--decontaminate", "none"]
    return cli([*argv, "--workers", "1", "--on-error", "skip", "--out", str(out)], capsys)


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_a_skipped_file_made_readable_is_refused_and_one_still_unreadable_is_no_change(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
    monkeypatch,
    kind,
):
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    src = _folder(tmp_path / "corpus", kind)
    locked = src / f"part1.{kind}"
    out = tmp_path / "o"
    with monkeypatch.context() as mp:
        _locked(mp, locked)
        assert _prepare(src, tokenizer_dir, out, capsys)[0] == 0
        assert read_meta(out)["sources"][0]["bad_files"] == 1
        assert source_change(read_meta(out)) is None  # still unreadable: no change (parquet: was "is new")
        before = world_state(out, tmp_path)
        code, _ = _prepare(src, tokenizer_dir, out, capsys)
        assert code == 0
        assert_unchanged(before)
    code, err = _prepare(src, tokenizer_dir, out, capsys)  # readable now: the folder lacks its documents
    assert_one_line(
        code,
        err,
        rf"o was prepared from sources that changed since \(\S+part1.{kind} could not be read then \(skipped "
        r"by --on-error skip\) and can be now\); nothing was changed: choose another --out, or delete \S+o "
        r"and run the command again$",
    )
    assert_unchanged(before)


def test_a_skipped_file_that_is_gone_is_a_change(tmp_path, tokenizer_dir, monkeypatch):  # noqa: F811
    src = _folder(tmp_path / "corpus")
    with monkeypatch.context() as mp:
        _locked(mp, src / "part1.jsonl")
        cfg = PrepareConfig(
            sources=(SourceConfig(location=str(src)),),
            tokenizer=str(tokenizer_dir),
            decontaminate=(),
            on_error="skip",
        )
        out = prepare(cfg, tmp_path / "o", **RUN)
    (src / "part1.jsonl").unlink()
    assert "part1.jsonl is no longer in" in source_change(read_meta(out))


def test_a_val_fraction_that_holds_out_every_document_is_refused_and_leaves_nothing(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
    monkeypatch,
):
    """`--val-fraction 0.999` on a small corpus put every document in val: the folder was written with an
    empty train split, which `pretrain` and `data inspect` then refused as "fewer than one row"."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(20))
    before = world_state(tmp_path)
    argv = ["data", "prepare", "--source", corpus, "--tokenizer", tokenizer_dir, "--decontaminate", "none",
            "--workers", "1", "--out", tmp_path / "o"]  # fmt: skip
    code, err = cli([*argv, "--val-fraction", "0.999"], capsys)
    last = err.strip().splitlines()[-1]  # after the progress bar's lines
    assert code == 2 and re.fullmatch(
        r"encoderlab: error: --val-fraction 0.999 held out every one of the 20 documents, leaving no train split; "
        r"prepare with a smaller --val-fraction \(e.g. 0.01\) or more text",
        last,
    ), err
    assert_printed_as_documented("val-fraction-holds-out-everything", last, tmp_path)
    assert_unchanged(before)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl"]
    assert cli(argv, capsys)[0] == 0 and read_meta(tmp_path / "o")["splits"]["train"]["docs"] > 0


def test_a_symlink_to_nothing_in_a_folder_is_refused_or_skipped_and_then_no_change(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    capsys,
    monkeypatch,
):
    """A folder dropped a `.jsonl` symlink whose target was gone (shared storage unmounted) without a word,
    and its documents with it; a glob read it, but `--on-error skip` left a folder every rerun refused as
    changed ("is gone"), the skipped link's stat failing as its open had."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    src = _folder(tmp_path / "corpus")
    (src / "shared.jsonl").symlink_to(tmp_path / "unmounted" / "shared.jsonl")
    argv = ["data", "prepare", "--source", src, "--tokenizer", tokenizer_dir, "--decontaminate", "none"]
    argv += ["--workers", "1", "--out", tmp_path / "o"]
    before = world_state(tmp_path)
    code, err = cli(argv, capsys)
    assert code == 2 and re.fullmatch(  # the last line, after the progress bar's (it is read 4th)
        r"encoderlab: error: cannot read \S+shared.jsonl: it is a symlink to \S+unmounted/shared.jsonl, which "
        r"does not exist; fix or remove it, or pass --on-error skip to skip and count such input",
        err.strip().splitlines()[-1],
    ), err
    assert_printed_as_documented("corpus-symlink-to-nothing", err.strip().splitlines()[-1], tmp_path)
    assert_unchanged(before)
    assert not (tmp_path / "o").exists()
    for source in (src, f"{src}/*.jsonl"):  # a folder and a glob alike
        out = tmp_path / f"o{len(str(source))}"
        assert _prepare(source, tokenizer_dir, out, capsys)[0] == 0
        assert read_meta(out)["sources"][0]["bad_files"] == 1
        assert source_change(read_meta(out)) is None  # still a link to nothing: no change
        (tmp_path / "unmounted").mkdir(exist_ok=True)
        write_jsonl(tmp_path / "unmounted" / "shared.jsonl", corpus_records(5, prefix="s-"))
        assert "shared.jsonl could not be read then" in source_change(read_meta(out))
        (tmp_path / "unmounted" / "shared.jsonl").unlink()


def test_a_corpus_whose_every_record_was_skipped_as_bad_says_so(tmp_path, tokenizer_dir, capsys, monkeypatch):  # noqa: F811
    """With `--on-error skip`, a corpus whose text field holds ints (every record bad, none empty) was
    refused as "has no non-empty document; check --source", which sent the user looking for empty text."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    write_jsonl(tmp_path / "ints.jsonl", [{"text": i} for i in range(5)])
    pq.write_table(pa.table({"text": [1, 2]}), tmp_path / "ints.parquet")
    before = world_state(tmp_path)
    for name, skipped in (("ints.jsonl", "5 bad records"), ("ints.parquet", "1 bad file")):
        code, err = _prepare(tmp_path / name, tokenizer_dir, tmp_path / "o", capsys)
        assert_one_line(
            code,
            err,
            rf"the corpus \S+{name} has no non-empty document \(--on-error skip skipped {skipped}: rerun "
            r"without it to see the first\); check --source$",
        )
    assert_unchanged(before)
    assert not (tmp_path / "o").exists()
    write_jsonl(
        tmp_path / "good.jsonl", corpus_records(5)
    )  # a mixture (`data tokenizer`): the source is named
    argv = [
        "data",
        "tokenizer",
        "--source",
        tmp_path / "ints.jsonl",
        tmp_path / "good.jsonl",
        "--vocab-size",
        "300",
    ]
    code, err = cli([*argv, "--on-error", "skip", "--out", tmp_path / "t"], capsys)
    assert_one_line(
        code, err, r"source '\S+ints.jsonl' has no non-empty document \(--on-error skip skipped 5 bad "
    )
