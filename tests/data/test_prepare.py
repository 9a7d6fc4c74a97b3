"""Prepare: tokens on disk equal the tokenizer's own output; the folder is safe against misuse."""

from __future__ import annotations

import errno
import hashlib
import json
import os

import numpy as np
import pytest
from corpus_fixtures import corpus_records, sentence, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from tests.data.prepare_fixtures import RESUMABLE, count_tokenized, interrupt_prepare, prepared_bytes
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.data import prepare as prep
from encoderlab.data.prepare import PrepareConfig, choose_dtype, prepare, read_meta, split_dir, val_mask
from encoderlab.data.sources import SourceConfig
from encoderlab.data.tokenizer import load_tokenizer, tokenizer_hash
from encoderlab.errors import UserError


def _cfg(src, tok, **kw) -> PrepareConfig:
    kw.setdefault("decontaminate", ())
    return PrepareConfig(sources=(SourceConfig(location=str(src)),), tokenizer=str(tok), **kw)


def _docs(root, split="train") -> list[np.ndarray]:
    meta = read_meta(root)
    folder = split_dir(root, split)
    tokens = np.fromfile(folder / "tokens.bin", dtype=meta["dtype"])
    offsets = np.load(folder / "doc_offsets.npy")
    return [tokens[a:b] for a, b in zip(offsets[:-1], offsets[1:])]


@pytest.fixture
def corpus(tmp_path):
    return write_jsonl(tmp_path / "corpus.jsonl", corpus_records(120))


def test_tokens_match_the_tokenizer_and_round_trip(tmp_path, corpus, tokenizer_dir):  # noqa: F811
    out = prepare(_cfg(corpus, tokenizer_dir, val_fraction=0.1), tmp_path / "out", workers=1, progress=False)
    tok = load_tokenizer(tokenizer_dir)
    texts = [r["text"] for r in corpus_records(120)]
    held = val_mask(0, len(texts), 0.1)
    assert held.sum() == 12
    for split, want in (("train", ~held), ("val", held)):
        docs = _docs(out, split)
        chosen = [t for t, keep in zip(texts, want) if keep]
        assert len(docs) == len(chosen)
        for doc, text in zip(docs, chosen):
            assert doc.tolist() == tok(text)["input_ids"]  # <s> text </s> by the HF tokenizer itself
            assert tok.decode(doc[1:-1]) == text
    meta = read_meta(out)
    assert meta["encoder"] == "tiktoken"  # a byte-level BPE: the fast path, checked against HF above
    assert meta["dtype"] == "uint16" and meta["tokenizer"]["hash"] == tokenizer_hash(tok)
    assert meta["splits"]["train"]["docs"] + meta["splits"]["val"]["docs"] == 120
    assert meta["sources"][0]["files"][0]["sha256"] == hashlib.sha256(corpus.read_bytes()).hexdigest()
    assert tokenizer_hash(load_tokenizer(out / "tokenizer")) == tokenizer_hash(tok)
    assert not (tmp_path / "out.tmp").exists()


def test_a_finished_dataset_named_like_the_temporary_folder_is_refused_not_deleted(
    tmp_path,
    corpus,
    tokenizer_dir,  # noqa: F811
    monkeypatch,
):
    prepare(_cfg(corpus, tokenizer_dir), tmp_path / "out.tmp", workers=1, progress=False)
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    before = world_state(tmp_path)
    with pytest.raises(UserError, match=r"out\.tmp holds a finished prepared dataset.*nothing was changed"):
        prepare(_cfg(corpus, tokenizer_dir), tmp_path / "out", workers=1, progress=False)
    assert_unchanged(before)  # out.tmp kept, no out made


@pytest.mark.slow
def test_output_is_identical_for_any_worker_count(tmp_path, corpus, tokenizer_dir):  # noqa: F811
    one = prepare(_cfg(corpus, tokenizer_dir), tmp_path / "one", workers=1, chunk_docs=7, progress=False)
    two = prepare(_cfg(corpus, tokenizer_dir), tmp_path / "two", workers=2, chunk_docs=5, progress=False)
    for name in ("tokens.bin", "doc_offsets.npy", "val/tokens.bin", "val/doc_offsets.npy"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), name


def test_dtype_choice_and_refusal():
    assert choose_dtype(65_536) == np.uint16 and choose_dtype(65_537) == np.uint32
    assert choose_dtype(128_256) == np.uint32
    with pytest.raises(UserError, match="does not fit in uint16"):
        choose_dtype(128_256, "uint16")


def test_uint32_files(tmp_path, corpus, tokenizer_dir):  # noqa: F811
    a = prepare(_cfg(corpus, tokenizer_dir), tmp_path / "a", workers=1, progress=False)
    b = prepare(_cfg(corpus, tokenizer_dir, dtype="uint32"), tmp_path / "b", workers=1, progress=False)
    assert read_meta(b)["dtype"] == "uint32"
    assert [d.tolist() for d in _docs(a)] == [d.tolist() for d in _docs(b)]


def test_gpt_style_single_separator(tmp_path, corpus, tokenizer_dir):  # noqa: F811
    from transformers import PreTrainedTokenizerFast

    base = load_tokenizer(tokenizer_dir)
    gpt = PreTrainedTokenizerFast(tokenizer_object=base.backend_tokenizer, bos_token="</s>", eos_token="</s>")
    gpt.save_pretrained(tmp_path / "gpt")
    out = prepare(_cfg(corpus, tmp_path / "gpt", val_fraction=0), tmp_path / "out", workers=1, progress=False)
    first = _docs(out)[0].tolist()
    assert first[0] != 2 and first[-1] == 2 and first.count(2) == 1


def test_same_recipe_is_a_no_op_and_another_is_refused(tmp_path, corpus, tokenizer_dir):  # noqa: F811
    out = prepare(_cfg(corpus, tokenizer_dir), tmp_path / "out", workers=1, progress=False)
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    prepare(_cfg(corpus, tokenizer_dir), out, workers=1, progress=False)
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    with pytest.raises(UserError, match="prepared differently.*val_fraction"):
        prepare(_cfg(corpus, tokenizer_dir, val_fraction=0.2), out, workers=1, progress=False)
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(UserError, match="non-empty folder that encoderlab did not create"):
        prepare(_cfg(corpus, tokenizer_dir), tmp_path / "mine", workers=1, progress=False)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"


FULL = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "tokens.bin")


def test_disk_full_leaves_nothing_that_looks_prepared(tmp_path, corpus, tokenizer_dir):  # noqa: F811
    cfg, out = _cfg(corpus, tokenizer_dir), tmp_path / "out"
    err = interrupt_prepare(
        cfg, out, 3, FULL, expect=UserError, match="disk full .*removed", checkpoint_every=100
    )
    assert "\n" not in str(err)
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.tmp").exists()


def test_an_interrupted_prepare_resumes_from_its_checkpoint_to_the_same_bytes(
    tmp_path,
    corpus,
    tokenizer_dir,  # noqa: F811
):
    cfg = _cfg(corpus, tokenizer_dir)
    clean = prepare(cfg, tmp_path / "clean", **RESUMABLE)
    interrupt_prepare(cfg, tmp_path / "out", 11, KeyboardInterrupt())  # in chunk 6; the checkpoint holds 1-4
    progress = json.loads((tmp_path / "out.tmp" / "progress.json").read_text())
    assert progress["chunks"] == 4 and not (tmp_path / "out").exists()
    with pytest.MonkeyPatch.context() as mp:
        tokenized = count_tokenized(mp)
        out = prepare(cfg, tmp_path / "out", **RESUMABLE)
    assert len(tokenized) == 12 - 4  # 120 documents in chunks of 10: only the unfinished ones
    assert prepared_bytes(out) == prepared_bytes(clean)
    assert read_meta(out)["splits"] == read_meta(clean)["splits"]
    assert read_meta(out)["resumed_after_docs"] == progress["kept"] > 0
    assert not (tmp_path / "out.tmp").exists()


def test_a_changed_corpus_is_not_resumed_but_prepared_again(tmp_path, tokenizer_dir, caplog):  # noqa: F811
    records = corpus_records(120)
    src = write_jsonl(tmp_path / "corpus.jsonl", records)
    interrupt_prepare(_cfg(src, tokenizer_dir), tmp_path / "out", 11, KeyboardInterrupt())
    records[3] = {**records[3], "text": "An edited document, so the checkpoint's prefix no longer matches."}
    write_jsonl(src, records)
    with caplog.at_level("WARNING"):
        out = prepare(_cfg(src, tokenizer_dir), tmp_path / "out", **RESUMABLE)
    assert "sources changed" in caplog.text
    fresh = prepare(_cfg(src, tokenizer_dir), tmp_path / "fresh", **RESUMABLE)
    assert prepared_bytes(out) == prepared_bytes(fresh) and read_meta(out)["resumed_after_docs"] == 0


def test_an_interrupted_prepare_of_another_recipe_is_said_to_start_over(
    tmp_path,
    corpus,
    tokenizer_dir,  # noqa: F811
    caplog,
):
    # Was: its checkpoint (hours of tokenizing, at scale) was deleted without a word.
    interrupt_prepare(_cfg(corpus, tokenizer_dir), tmp_path / "out", 11, KeyboardInterrupt())
    other = _cfg(corpus, tokenizer_dir, val_fraction=0.05)
    with caplog.at_level("WARNING"):
        out = prepare(other, tmp_path / "out", **RESUMABLE)
    assert "out.tmp holds an interrupted prepare of another recipe (or version); starting over" in caplog.text
    fresh = prepare(other, tmp_path / "fresh", **RESUMABLE)
    assert prepared_bytes(out) == prepared_bytes(fresh) and read_meta(out)["resumed_after_docs"] == 0


def test_disk_full_after_a_checkpoint_keeps_the_work_and_the_rerun_resumes(
    tmp_path,
    corpus,
    tokenizer_dir,  # noqa: F811
):
    cfg = _cfg(corpus, tokenizer_dir)
    clean = prepare(cfg, tmp_path / "clean", **RESUMABLE)
    match = r"disk full .*kept in .*out\.tmp: free space and rerun to resume"
    interrupt_prepare(cfg, tmp_path / "out", 13, FULL, expect=UserError, match=match)
    assert not (tmp_path / "out").exists()
    out = prepare(cfg, tmp_path / "out", **RESUMABLE)
    assert prepared_bytes(out) == prepared_bytes(clean) and read_meta(out)["resumed_after_docs"] > 0


@pytest.mark.parametrize(
    "records,match",
    [
        ([], "no non-empty document"),
        ([{"text": " "}, {"text": "\n\t"}], "no non-empty document"),
    ],
)
def test_empty_corpus_is_refused(tmp_path, tokenizer_dir, records, match):  # noqa: F811
    src = write_jsonl(tmp_path / "c.jsonl", records)
    with pytest.raises(UserError, match=match):
        prepare(_cfg(src, tokenizer_dir), tmp_path / "out", workers=1, progress=False)
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.tmp").exists()


def test_bad_files_skipped_with_counts_or_refused(tmp_path, tokenizer_dir):  # noqa: F811
    folder = tmp_path / "in"
    write_jsonl(folder / "a.jsonl", corpus_records(20))
    (folder / "b.jsonl").write_bytes(b'{"text": "ok"}\n{"text": "\xff\xfe"}\n')
    (folder / "c.parquet").write_bytes(b"garbage")
    with pytest.raises(UserError, match="b.jsonl:2 is not UTF-8"):
        prepare(_cfg(folder, tokenizer_dir), tmp_path / "refused", workers=1, progress=False)
    assert not (tmp_path / "refused").exists()
    out = prepare(_cfg(folder, tokenizer_dir, on_error="skip"), tmp_path / "out", workers=1, progress=False)
    src = read_meta(out)["sources"][0]
    assert (src["docs"], src["bad_records"], src["bad_files"]) == (21, 1, 1)


def test_meta_is_plain_json_with_counts(tmp_path, corpus, tokenizer_dir):  # noqa: F811
    out = prepare(_cfg(corpus, tokenizer_dir), tmp_path / "out", workers=1, progress=False)
    meta = json.loads((out / "meta.json").read_text())
    tokens = sum(len(d) for d in _docs(out)) + sum(len(d) for d in _docs(out, "val"))
    assert meta["splits"]["train"]["tokens"] + meta["splits"]["val"]["tokens"] == tokens
    assert meta["format_version"] == prep.FORMAT_VERSION and meta["spec"]["mask_id"] == 3


@pytest.mark.assets
def test_real_wiki_leads(tmp_path, tokenizer_dir):  # noqa: F811
    from encoderlab.data.sources import describe

    try:
        describe(SourceConfig(location="wiki-leads"))
    except UserError as exc:
        pytest.skip(str(exc))
    cfg = PrepareConfig(
        sources=(SourceConfig(location="wiki-leads"),),
        tokenizer=str(tokenizer_dir),
        decontaminate=("auto",),
        max_docs=2000,
    )
    out = prepare(cfg, tmp_path / "wiki", workers=2, progress=False)
    meta = read_meta(out)
    removed = meta["decontamination"]["removed_by_id"] + meta["decontamination"]["removed_by_ngram"]
    kept = meta["splits"]["train"]["docs"] + meta["splits"]["val"]["docs"]
    assert kept + removed + meta["empty_after_tokenization"] == 2000
    assert (
        meta["splits"]["val"]["docs"] == val_mask(0, kept, 0.01).sum()
        and meta["sources"][0]["files"][0]["complete"] is False
    )
    tok = load_tokenizer(tokenizer_dir)
    first = _docs(out)[0]
    assert first[0] == 1 and first[-1] == 2 and len(tok.decode(first[1:-1])) > 20


def test_cli_prepare_and_one_line_errors(tmp_path, corpus, tokenizer_dir, capsys):  # noqa: F811
    from encoderlab.cli import main

    out = tmp_path / "cli"
    main(["data", "prepare", "--source", f"{corpus}#weight=1", "--tokenizer", str(tokenizer_dir),
          "--out", str(out), "--decontaminate", "none", "--workers", "1"])  # fmt: skip
    assert json.loads(capsys.readouterr().out)["splits"] == read_meta(out)["splits"]
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "data",
                "prepare",
                "--source",
                "hf:org/name",
                "--tokenizer",
                str(tokenizer_dir),
                "--out",
                str(out),
            ]
        )
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and "HF_HUB_OFFLINE=1" in err[0]


def test_memory_stays_flat_as_the_corpus_grows(tmp_path, tokenizer_dir):  # noqa: F811
    import tracemalloc

    from corpus_fixtures import random_words

    peaks = []
    for n in (500, 4000):
        src = write_jsonl(tmp_path / f"c{n}.jsonl", [{"text": random_words(i, 60)} for i in range(n)])
        tracemalloc.start()
        prepare(_cfg(src, tokenizer_dir), tmp_path / f"o{n}", workers=1, chunk_docs=100, progress=False)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    # 8x the documents (and ~1.4 MB more text) may not raise the Python-heap peak by more than a few chunks
    assert peaks[1] < peaks[0] * 1.3, peaks


def test_a_second_prepare_into_the_same_folder_is_refused_while_the_first_runs(
    tmp_path,
    corpus,  # noqa: F811
    tokenizer_dir,  # noqa: F811
):
    import socket
    import subprocess
    import sys

    out = tmp_path / "out"
    lock = tmp_path / "out.lock"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        host = socket.gethostname()
        lock.write_text(json.dumps({"pid": holder.pid, "host": host, "since": "t", "what": "data prepare"}))
        with pytest.raises(UserError, match=f"{out} is in use by data prepare \\(pid {holder.pid} on {host}"):
            prepare(_cfg(corpus, tokenizer_dir), out, workers=1, progress=False)
        assert not out.exists() and json.loads(lock.read_text())["pid"] == holder.pid  # nothing touched
    finally:
        holder.kill()
        holder.wait()
    prepare(_cfg(corpus, tokenizer_dir), out, workers=1, progress=False)  # a dead holder's lock is stale
    assert (out / "meta.json").exists() and not lock.exists()


def test_repeated_source_flags_are_all_kept(tmp_path, tokenizer_dir, capsys):  # noqa: F811
    from encoderlab.cli import main

    a = write_jsonl(tmp_path / "a.jsonl", corpus_records(30, prefix="a"))
    b = write_jsonl(tmp_path / "b.jsonl", corpus_records(30, prefix="b"))
    c = write_jsonl(tmp_path / "c.jsonl", corpus_records(30, prefix="c"))
    base = ["data", "prepare", "--tokenizer", str(tokenizer_dir), "--decontaminate", "none", "--workers", "1"]
    main([*base, "--source", str(a), "--source", str(b), str(c), "--out", str(tmp_path / "out")])
    assert [s["location"] for s in read_meta(tmp_path / "out")["sources"]] == [str(a), str(b), str(c)]
    capsys.readouterr()


def test_a_txt_corpus_says_how_it_was_cut_and_holds_out_validation_documents(tmp_path, tokenizer_dir, caplog):  # noqa: F811
    """Issue 18: a .txt became one document (no validation document) without a word. The command's
    stderr is read from a process of its own (under pytest, logging goes to pytest's handlers)."""
    import subprocess
    import sys

    from encoderlab.cli import main

    paragraphs = [f"{sentence(i)}\n{sentence(i + 1)}" for i in range(40)]  # two lines each
    (tmp_path / "book.txt").write_text("\n\n".join(paragraphs) + "\n")
    base = ["data", "prepare", "--tokenizer", str(tokenizer_dir), "--decontaminate", "none", "--workers", "1"]
    argv = [
        *base,
        "--source",
        str(tmp_path / "book.txt"),
        "--val-fraction",
        "0.1",
        "--out",
        str(tmp_path / "p"),
    ]
    done = subprocess.run([sys.executable, "-m", "encoderlab.cli", *argv], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    said = "book.txt: 1 .txt file read as one document per blank-line paragraph (txt_unit=paragraph"
    assert said in done.stderr
    meta = read_meta(tmp_path / "p")
    assert meta["sources"][0]["identity"]["txt_unit"] == "paragraph"
    assert meta["splits"]["train"]["docs"] + meta["splits"]["val"]["docs"] == 40
    assert meta["splits"]["val"]["docs"] >= 1
    caplog.set_level("INFO")
    main([*base, "--source", f"{tmp_path / 'book.txt'}#txt_unit=line", "--out", str(tmp_path / "l")])
    assert "read as one document per line (txt_unit=line" in caplog.text
    meta = read_meta(tmp_path / "l")
    assert meta["splits"]["train"]["docs"] + meta["splits"]["val"]["docs"] == 80


def _repeating_mixture(tmp_path, tok) -> PrepareConfig:
    """200 documents and 20 others (distinct texts), mixed 1:1 until both ran out: the small source is
    read about ten times."""
    big = write_jsonl(tmp_path / "big.jsonl", corpus_records(200))
    small = write_jsonl(
        tmp_path / "small.jsonl", [{"id": f"s{i}", "text": sentence(9000 + i)} for i in range(20)]
    )
    return PrepareConfig(
        sources=(SourceConfig(location=str(big)), SourceConfig(location=str(small))),
        tokenizer=str(tok),
        val_fraction=0.2,
        stop="all_exhausted",
        decontaminate=(),
    )


def test_a_mixture_that_repeats_sources_never_trains_on_a_held_out_document(tmp_path, tokenizer_dir):  # noqa: F811
    # Held out by stream position, each pass of the small source was judged apart: a document held
    # out on one pass was trained on in the others, and the held-out loss scored seen text.
    cfg = _repeating_mixture(tmp_path, tokenizer_dir)
    out = prepare(cfg, tmp_path / "out", **RESUMABLE)
    meta = read_meta(out)
    assert meta["sources"][1]["repeats"] >= 5
    train = {tuple(d.tolist()) for d in _docs(out, "train")}
    val = [tuple(d.tolist()) for d in _docs(out, "val")]
    assert not train & set(val)
    assert len(val) == len(set(val)) == 40 + 4  # round(n f) of each source, each held-out document once
    assert meta["splits"]["val"]["docs"] == 44 and meta["recipe"]["holdout"] == "per-source"
    interrupt_prepare(cfg, tmp_path / "again", 11, KeyboardInterrupt())  # the positions survive a resume
    assert prepared_bytes(prepare(cfg, tmp_path / "again", **RESUMABLE)) == prepared_bytes(out)


def test_sources_that_read_one_file_twice_are_refused_before_anything_is_written(tmp_path, tokenizer_dir):  # noqa: F811
    # Was: the file's documents came twice, were all counted as unique tokens, and most held-out
    # documents were also trained on (their copy from the other source).
    folder = tmp_path / "corpus"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", corpus_records(40))
    write_jsonl(tmp_path / "b.jsonl", corpus_records(40, prefix="b"))
    same = [str(folder / "a.jsonl"), f"{tmp_path}/corpus/../corpus/a.jsonl"]
    for locations in (same, [str(folder), same[0]], [str(tmp_path / "*.jsonl"), str(tmp_path / "b.jsonl")]):
        cfg = PrepareConfig(
            sources=tuple(SourceConfig(location=loc) for loc in locations),
            tokenizer=str(tokenizer_dir),
            decontaminate=(),
        )
        with pytest.raises(
            UserError, match=r"^sources '.*' and '.*' both read .*\.jsonl: its documents would"
        ):
            prepare(cfg, tmp_path / "out", workers=1, progress=False)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["b.jsonl", "corpus"]
    two = (SourceConfig(location=str(folder)), SourceConfig(location=str(tmp_path / "b.jsonl")))
    cfg = PrepareConfig(sources=two, tokenizer=str(tokenizer_dir), decontaminate=())
    out = prepare(cfg, tmp_path / "out", workers=1, progress=False)
    assert read_meta(out)["splits"]["train"]["docs"] > 0  # distinct files mix as before


@pytest.mark.parametrize("records", [[], [{"text": "ok"}, {"text": "fine"}, {"no_text": 1}]])
def test_a_refused_prepare_leaves_the_folders_around_out_as_they_were(tmp_path, tokenizer_dir, records):  # noqa: F811
    """Was: refused after `OUT.lock` and `OUT.tmp` were made beside --out and removed again, which changed
    the mtime of a folder encoderlab did not create; a bad record after the first still does that (the
    work had started), but leaves no parent of --out it made."""
    src = write_jsonl(tmp_path / "c.jsonl", records)
    parent = tmp_path / "data"
    parent.mkdir()
    os.utime(parent, ns=(10**18, 10**18))  # any change in it would set its mtime to now
    with pytest.raises(UserError, match="no non-empty document|has no field 'text'"):
        prepare(_cfg(src, tokenizer_dir), parent / "new" / "out", workers=1, progress=False)
    assert list(parent.iterdir()) == []
    if not records:  # refused before anything was made
        assert parent.stat().st_mtime_ns == 10**18


def test_a_refused_shard_prepare_leaves_no_shards_folder(tmp_path, tokenizer_dir):  # noqa: F811
    """Was: `OUT.shards/` stayed behind holding only its marker when a worker's part was refused."""
    from encoderlab.data.shard import Shard

    src = write_jsonl(tmp_path / "c.jsonl", [{"text": "ok"}, {"text": "fine"}, {"no_text": 1}])
    parent = tmp_path / "data"
    parent.mkdir()
    with pytest.raises(UserError, match="has no field 'text'"):
        prepare(
            _cfg(src, tokenizer_dir), parent / "new" / "out", shard=Shard(1, 2), workers=1, progress=False
        )
    assert list(parent.iterdir()) == []


def test_an_out_that_links_to_an_empty_folder_is_filled_and_the_link_kept(tmp_path, tokenizer_dir):  # noqa: F811
    """`--out data` with `data -> /scratch/data` (an empty folder): the whole corpus was tokenized into
    `data.tmp`, then its rename over the link failed ("cannot use data.tmp: Not a directory") and the work
    was thrown away. The link stands for its folder, as `export --out LINK` does (`atomic.folder_named`)."""
    src = write_jsonl(tmp_path / "c.jsonl", corpus_records(30))
    (tmp_path / "scratch").mkdir()
    (tmp_path / "data").symlink_to(tmp_path / "scratch")
    out = prepare(_cfg(src, tokenizer_dir), tmp_path / "data", workers=1, progress=False)
    assert (tmp_path / "data").is_symlink() and out == (tmp_path / "scratch").resolve()
    assert read_meta(tmp_path / "data")["splits"]["train"]["docs"] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "c.jsonl",
        "data",
        "scratch",
    ]  # no .tmp, no lock left
    again = prepare(_cfg(src, tokenizer_dir), tmp_path / "data", workers=1, progress=False)  # a no-op
    assert again == out
