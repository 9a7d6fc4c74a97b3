"""`bench data` end to end on a small corpus: every pipeline runs and tokenizes the same tokens."""

from __future__ import annotations

import pytest
from tests.data.corpus_fixtures import (  # noqa: F401 (fixtures)
    corpus_records,
    tokenizer_dir,
    wordpiece_with_call_settings,
    write_jsonl,
)

from encoderlab.atomic import print_json
from encoderlab.bench.data import FLOOR, KINDS, DataBench, bench_data, is_data_result
from encoderlab.errors import UserError


@pytest.mark.slow
def test_every_pipeline_runs_isolated_and_counts_the_same_tokens(tmp_path, tokenizer_dir):  # noqa: F811
    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(60))
    result = bench_data(
        DataBench(source=str(corpus), tokenizer=str(tokenizer_dir), workers=1, scale=2, work=tmp_path / "w")
    )
    runs = result["runs"]
    assert set(runs) == {f"{kind}_{label}" for kind in (*KINDS, FLOOR) for label in ("1x", "2x")}
    assert {runs[f"{kind}_2x"]["tokens"] for kind in (*KINDS, FLOOR)} == {2 * runs["encoderlab_1x"]["tokens"]}
    assert result["corpus_2x"]["docs"] == 2 * result["corpus_1x"]["docs"] == 120
    ratio = result["speedup_vs_datasets"]["datasets_2x_tokens_per_s"]
    direct = runs["encoderlab_2x"]["tokens_per_s"] / runs["datasets_2x"]["tokens_per_s"]
    assert ratio == pytest.approx(direct, abs=0.006)  # rounded to 2 decimals
    print_json(result, tmp_path / "result.json")  # as --out writes it: a rerun's --out may replace it
    assert is_data_result(tmp_path / "result.json")


def test_a_work_folder_holding_files_is_refused(tmp_path, tokenizer_dir):  # noqa: F811
    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(5))
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="non-empty folder that encoderlab did not create"):
        bench_data(DataBench(source=str(corpus), tokenizer=str(tokenizer_dir), work=tmp_path / "w"))
    assert [p.name for p in (tmp_path / "w").iterdir()] == ["keep.txt"]


def test_a_work_folder_of_an_earlier_bench_is_refused_untouched(tmp_path, tokenizer_dir):  # noqa: F811
    """Its prepared outputs would make the rerun's `prepare` a no-op that measures nothing."""
    from encoderlab.outdir import create_output

    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(5))
    create_output(tmp_path / "w", "bench data")
    (tmp_path / "w" / "corpus_1x.jsonl").write_text("{}")
    with pytest.raises(UserError, match="holds an earlier `bench data` run's files"):
        bench_data(DataBench(source=str(corpus), tokenizer=str(tokenizer_dir), work=tmp_path / "w"))
    assert (tmp_path / "w" / "corpus_1x.jsonl").read_text() == "{}"


def test_a_second_bench_on_one_work_folder_at_once_is_refused_naming_the_first(
    tmp_path,
    tokenizer_dir,  # noqa: F811
    monkeypatch,
):
    """Started while the first had made its --work but not yet written a file there: both went on, writing
    the same corpus copies and outputs (and a failure of one emptied the folder under the other)."""
    from encoderlab.bench import data as bench

    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(5))
    b = DataBench(source=str(corpus), tokenizer=str(tokenizer_dir), workers=1, scale=1, work=tmp_path / "w")
    copies, second = [], []

    def first_copy(source, work, repeat):
        copies.append(work)
        if len(copies) > 1:
            raise AssertionError("the second run went on into the folder the first one is writing")
        try:  # the first run, before its first file: a second one starts now
            bench_data(b)
        except UserError as exc:
            second.append(str(exc))
        raise KeyboardInterrupt  # then the first one stops (Ctrl-C)

    monkeypatch.setattr(bench, "_corpus_jsonl", first_copy)
    with pytest.raises(KeyboardInterrupt):
        bench_data(b)
    assert len(second) == 1 and "is in use by bench data" in second[0], second
    assert not (tmp_path / "w").exists()  # the first one's folder undone, lock and all


def _decoder_style_tokenizer(folder, corpus: list[dict], post: str):
    """A byte-level BPE as decoders ship them: GPT-2's and SmolLM2's one `<|endoftext|>` as bos and eos and
    no special tokens added when encoding (`post="none"`), or Llama 3's bos and eos with only the bos
    added (`post="bos"`)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    bos, eos = ("<|endoftext|>",) * 2 if post == "none" else ("<|begin_of_text|>", "<|end_of_text|>")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=sorted({bos, eos}),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator([r["text"] for r in corpus], trainer)
    if post == "bos":
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", special_tokens=[(bos, tok.token_to_id(bos))]
        )
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos).save_pretrained(str(folder))
    return folder


@pytest.mark.parametrize("post", ["none", "bos"], ids=["gpt2-style", "llama3-style"])
def test_every_pipeline_counts_prepares_tokens_with_a_decoders_tokenizer(tmp_path, monkeypatch, post):
    """`datasets.map` took the tokenizer's own special tokens and the floor added 2 per document, where
    `prepare` wraps each in bos and eos (one separator when they are one token): with a decoder's tokenizer
    the three counts differed and `bench data` ended in a RuntimeError after all its measurements."""
    from encoderlab.bench.measure import measure_datasets, measure_encoderlab, measure_floor

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))  # the measurement sets it; restored after
    records = corpus_records(40)
    corpus = str(write_jsonl(tmp_path / "corpus.jsonl", records))
    tok = str(_decoder_style_tokenizer(tmp_path / "tok", records, post))
    ours = measure_encoderlab(corpus, tok, 1, str(tmp_path / "prepared"))["tokens"]
    assert measure_datasets(corpus, tok, str(tmp_path / "datasets"), None)["tokens"] == ours
    assert measure_floor(corpus, tok)["tokens"] == ours


def test_the_floor_tokenizes_whole_documents_whatever_the_tokenizer_file_keeps(
    tmp_path,
    wordpiece_with_call_settings,  # noqa: F811
):
    """The floor's raw tokenizer applied the truncation and padding a tokenizer.json keeps (as
    `data prepare` did): its count was the cut, padded one."""
    from encoderlab.bench.measure import measure_encoderlab, measure_floor

    corpus = str(write_jsonl(tmp_path / "corpus.jsonl", corpus_records(40)))
    tok = str(wordpiece_with_call_settings)
    ours = measure_encoderlab(corpus, tok, 1, str(tmp_path / "prepared"))["tokens"]
    assert measure_floor(corpus, tok)["tokens"] == ours


@pytest.mark.parametrize(
    "content,message",
    [
        (b"", r"--source .*empty\.txt has no non-empty document; check --source$"),
        (
            "café\n".encode("latin-1"),
            r"latin1\.txt:1 is not UTF-8 \(byte 3\); save it as UTF-8, e.g. `iconv -f latin1 -t utf-8 latin1\.txt > utf8-latin1\.txt`$",
        ),
    ],
    ids=["empty", "latin1"],
)
def test_a_refused_source_leaves_no_work_folder_and_names_no_flag_bench_lacks(
    tmp_path,
    monkeypatch,
    tokenizer_dir,  # noqa: F811
    content,
    message,
):
    """Was: the temporary work folder (or a new --work) stayed behind after every refusal and Ctrl-C, an
    empty source was blamed on the folder's copy of it, and a bad file's fix offered `--on-error skip`,
    which `bench data` does not take."""
    import tempfile

    corpus = tmp_path / ("empty.txt" if not content else "latin1.txt")
    corpus.write_bytes(content)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    for work in (None, tmp_path / "new" / "work"):
        with pytest.raises(UserError, match=message):
            bench_data(DataBench(source=str(corpus), tokenizer=str(tokenizer_dir), work=work))
        assert list(scratch.iterdir()) == [] and not (tmp_path / "new").exists()
    (tmp_path / "mine").mkdir()  # an empty --work of the user's: emptied again, marker included
    with pytest.raises(UserError, match=message):
        bench_data(DataBench(source=str(corpus), tokenizer=str(tokenizer_dir), work=tmp_path / "mine"))
    assert list((tmp_path / "mine").iterdir()) == []


def test_the_source_takes_prepares_syntax_that_its_fixes_suggest(tmp_path, tokenizer_dir):  # noqa: F811
    """A JSON lines file with its text under another field: the one line suggests `--source
    'FILE#text_field=body'`, which `bench data` read as a file name that does not exist."""
    from encoderlab.bench.data import _corpus_jsonl
    from encoderlab.data.sources import parse_source

    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": str(i), "body": f"text {i}"} for i in range(3)])
    with pytest.raises(UserError, match=r"--source '.*c\.jsonl#text_field=body' \(or fix the record\)$"):
        bench_data(DataBench(source=str(corpus), tokenizer=str(tokenizer_dir), work=tmp_path / "w"))
    assert not (tmp_path / "w").exists()
    (tmp_path / "w2").mkdir()
    _, docs, _ = _corpus_jsonl(parse_source(f"{corpus}#text_field=body"), tmp_path / "w2", 2)
    assert docs == 6


def test_out_replaces_only_an_earlier_result_never_another_json_file(tmp_path, capsys):
    """Any JSON object was taken for an earlier result and replaced (a model's config.json)."""
    from encoderlab.cli import main

    config = tmp_path / "config.json"
    config.write_text('{"a": 1}')
    with pytest.raises(SystemExit) as exc:
        main(["bench", "data", "--source", str(tmp_path / "texts.txt"), "--out", str(config)])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    assert err[0].endswith(
        "config.json exists and is not a `bench data` result; nothing was changed: choose another --out"
    )
    assert config.read_text() == '{"a": 1}' and sorted(tmp_path.iterdir()) == [config]


@pytest.mark.parametrize("trained", [True, False])
def test_a_finished_run_empties_its_temporary_folder_but_the_tokenizer_it_trained(
    tmp_path,
    monkeypatch,
    tokenizer_dir,  # noqa: F811
    trained,
):
    """Was: every run without --work left its corpus copies, prepared outputs and datasets cache in
    /tmp (hundreds of MB at --scale 10). The measurements are stubbed: this is about the folder."""
    import tempfile

    from encoderlab.bench import data

    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(60))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))

    def measured(corpora, tokenizer, workers, root, repeats):
        (root / "prepared").mkdir()
        (root / "prepared" / "tokens.bin").write_bytes(b"\0" * 64)
        return {}

    monkeypatch.setattr(data, "_measure_all", measured)
    monkeypatch.setattr(data, "_comparisons", lambda runs, scale: {})
    tok = None if trained else str(tokenizer_dir)
    result = bench_data(DataBench(source=str(corpus), tokenizer=tok, vocab_size=300, scale=2))
    if trained:
        (folder,) = scratch.iterdir()
        assert result["work"] == str(folder) and [p.name for p in folder.iterdir()] == ["tokenizer"]
        assert result["tokenizer"].startswith(str(folder / "tokenizer"))
    else:
        assert result["work"] is None and list(scratch.iterdir()) == []
    kept = tmp_path / "kept"
    result = bench_data(DataBench(source=str(corpus), tokenizer=str(tokenizer_dir), scale=2, work=kept))
    assert result["work"] == str(kept) and (kept / "prepared" / "tokens.bin").exists()  # --work keeps all


@pytest.mark.parametrize("damage", ["missing", "not_a_tokenizer"])
def test_a_tokenizer_that_cannot_load_is_refused_before_any_work(tmp_path, monkeypatch, damage):
    """Was: the first measuring subprocess failed to load it, after the corpora were copied, and its
    one-line refusal came back as a RuntimeError traceback holding the child's traceback."""
    import tempfile

    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": str(i), "text": f"text {i}"} for i in range(3)])
    tok = tmp_path / "tok"
    if damage == "not_a_tokenizer":
        tok.mkdir()
        (tok / "tokenizer.json").write_text("{ damaged")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    for work in (None, tmp_path / "w"):
        with pytest.raises(UserError, match="tokenizer '.*tok'"):
            bench_data(DataBench(source=str(corpus), tokenizer=str(tok), workers=1, scale=1, work=work))
        assert list(scratch.iterdir()) == [] and not (tmp_path / "w").exists()


def _file_size_limit_in_children(monkeypatch, limit: int = 64) -> None:
    """Every measuring process started from now on runs under a real file size limit (RLIMIT_FSIZE, `ulimit
    -f`; Python ignores SIGXFSZ, so a write past it fails with EFBIG): the parent's corpus copies still fit."""
    import resource
    import subprocess
    from types import SimpleNamespace

    from encoderlab.bench import data

    def limited(cmd, **kwargs):
        return subprocess.run(
            cmd, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)), **kwargs
        )

    monkeypatch.setattr(data, "subprocess", SimpleNamespace(run=limited))


def test_no_room_in_a_measuring_process_is_one_line_exit_3_and_leaves_the_work_folder_as_it_was(
    tmp_path,
    monkeypatch,
    capsys,
    tokenizer_dir,  # noqa: F811
):
    """Was: a RuntimeError traceback in the parent holding the measuring process's traceback, exit 1."""
    import tempfile

    from encoderlab.cli import main

    corpus = write_jsonl(tmp_path / "c.jsonl", corpus_records(20))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    (tmp_path / "mine").mkdir()  # an empty --work of the user's: emptied again, its lock released
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    _file_size_limit_in_children(monkeypatch)
    argv = ["bench", "data", "--source", str(corpus), "--tokenizer", str(tokenizer_dir), "--workers", "1",
            "--scale", "1"]  # fmt: skip
    for work in (None, tmp_path / "new" / "work", tmp_path / "mine"):
        with pytest.raises(SystemExit) as exc:
            main([*argv, *(["--work", str(work)] if work else [])])
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert exc.value.code == 3 and len(lines) == 1 and "Traceback" not in err, err
        assert lines[0].startswith("encoderlab: error: file too large while measuring encoderlab in "), err
        assert lines[0].endswith("raise the file size limit (`ulimit -f`) or write to a disk that holds larger "
                                 "files (or choose a --work on another disk) and rerun"), err  # fmt: skip
        assert list(scratch.iterdir()) == [] and not (tmp_path / "new").exists()
    assert list((tmp_path / "mine").iterdir()) == []


def test_any_other_failure_of_a_measuring_process_still_shows_its_traceback(tmp_path, tokenizer_dir):  # noqa: F811
    """Only no room is said in one line: a failure nobody foresaw keeps the child's own account."""
    from pathlib import Path

    from encoderlab.bench.data import _run_isolated

    with pytest.raises(RuntimeError, match=r"(?s)benchmark run encoderlab failed:\n.*Traceback.*gone\.jsonl"):
        _run_isolated("encoderlab", tmp_path / "gone.jsonl", Path(tokenizer_dir), 1, tmp_path / "w")


def test_a_measuring_process_reports_no_room_behind_a_library_s_own_error():
    """`prepare` says a full disk as `DiskFull` (`from None`, the `OSError` kept as its context); a Rust
    library as its own exception ("... (os error 28)")."""
    import errno
    import os

    from encoderlab.bench.measure import NO_ROOM_EXIT, _room_in, no_room_reported
    from encoderlab.errors import DiskFull

    try:
        try:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "tokens.bin")
        except OSError:
            raise DiskFull("disk full while preparing") from None
    except DiskFull as said:
        assert _room_in(said).filename == "tokens.bin"
    assert (
        _room_in(Exception(f"I/O error: {os.strerror(errno.EDQUOT)} (os error {errno.EDQUOT})")).errno
        == errno.EDQUOT
    )
    assert _room_in(ValueError("not a full disk")) is None
    report = '{"no_room": {"errno": 28, "filename": null}}'
    assert no_room_reported(NO_ROOM_EXIT, "noise\n" + report).errno == errno.ENOSPC
    assert no_room_reported(1, report) is None and no_room_reported(NO_ROOM_EXIT, "Traceback") is None
