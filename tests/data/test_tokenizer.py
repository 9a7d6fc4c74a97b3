"""Tokenizers: byte-level round trip, explicit special tokens, stable hashes, clear refusals."""

from __future__ import annotations

import pytest
from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from hypothesis import given, settings
from hypothesis import strategies as st

from encoderlab.data.batch import TokenSpec
from encoderlab.data.sources import SourceConfig
from encoderlab.data.tokenizer import (
    MAX_WORD_CHARS,
    load_tokenizer,
    require_tokens,
    token_spec,
    tokenizer_hash,
    train_tokenizer,
)
from encoderlab.data.tokenizer_training import SPECIAL_ROLES, bounded
from encoderlab.errors import UserError

TRICKY = [
    "  leading and trailing  ",
    "tabs\tand\nnew\r\nlines",
    "café naïve ÅNGSTRÖM",
    "漢字かなカナ 한국어 العربية",
    "emoji 🙂👍🏽 and ZWJ 👩‍👩‍👧",
    "\x00 control \x07 chars",
    "literal <s> and </s> and <mask> text",
]


@pytest.fixture(scope="module")
def bpe(tokenizer_dir):  # noqa: F811
    return load_tokenizer(tokenizer_dir)


@pytest.mark.parametrize("text", TRICKY)
def test_byte_level_round_trip(bpe, text):
    ids = bpe.backend_tokenizer.encode(text, add_special_tokens=False).ids
    assert bpe.decode(ids) == text


@pytest.fixture(scope="module")
def backend(bpe):
    """The Rust tokenizer as prepare configures it: special-token text is plain text."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(bpe.backend_tokenizer.to_str())
    tok.encode_special_tokens = True
    return tok


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=80))
def test_byte_level_round_trip_any_string(backend, text):
    assert (
        backend.decode(backend.encode(text, add_special_tokens=False).ids, skip_special_tokens=False) == text
    )


def test_special_tokens_are_explicit(bpe):
    spec = token_spec(bpe)
    assert spec == TokenSpec(
        vocab_size=512, pad_id=0, bos_id=1, eos_id=2, mask_id=3, unk_id=4, special_ids=(0, 1, 2, 3, 4)
    )
    assert bpe.convert_ids_to_tokens([0, 1, 2, 3, 4]) == ["<pad>", "<s>", "</s>", "<mask>", "<unk>"]
    assert bpe("word")["input_ids"][0] == 1 and bpe("word")["input_ids"][-1] == 2


def test_hash_is_stable_and_discriminates(tmp_path, bpe, tokenizer_dir):  # noqa: F811
    bpe.save_pretrained(tmp_path / "copy")
    assert tokenizer_hash(load_tokenizer(tmp_path / "copy")) == tokenizer_hash(bpe)
    src = write_jsonl(tmp_path / "c.jsonl", corpus_records(60))
    other = train_tokenizer(SourceConfig(location=str(src)), 300, tmp_path / "other", progress=False)
    assert tokenizer_hash(other) != tokenizer_hash(bpe)


def test_wordpiece_and_bert_style_roles(tmp_path, caplog):
    src = write_jsonl(tmp_path / "c.jsonl", corpus_records(60))
    wp = train_tokenizer(
        SourceConfig(location=str(src)), 200, tmp_path / "wp", kind="wordpiece", progress=False
    )
    assert "WordPiece training is not reproducible" in caplog.text  # tokenizers#1794: said, not hidden
    assert token_spec(wp).mask_id == 3 and wp.tokenize("the school")[0] == "the"
    from transformers import PreTrainedTokenizerFast

    bert_like = PreTrainedTokenizerFast(
        tokenizer_object=wp.backend_tokenizer, cls_token="<s>", sep_token="</s>", unk_token="<unk>"
    )
    spec = token_spec(bert_like)
    assert (spec.bos_id, spec.eos_id, spec.mask_id) == (1, 2, None)
    with pytest.raises(UserError, match="no mask token, which MLM needs"):
        require_tokens(spec, ["mask"], "MLM")


def test_wordpiece_below_its_alphabet_is_refused_naming_the_size_that_works(tmp_path):
    """WordPiece keeps its whole alphabet whatever size is asked: 3 ids gave a tokenizer of dozens."""
    import re

    src = write_jsonl(tmp_path / "c.jsonl", corpus_records(60))
    with pytest.raises(UserError, match=r"^vocabulary size 3 is below the (\d+) ids .*wordpiece") as refused:
        train_tokenizer(SourceConfig(location=str(src)), 3, tmp_path / "wp", kind="wordpiece", progress=False)
    assert not (tmp_path / "wp").exists()
    needed = int(re.search(r"use --vocab-size (\d+) or more", str(refused.value)).group(1))
    assert needed > len(SPECIAL_ROLES)
    wp = train_tokenizer(
        SourceConfig(location=str(src)), needed, tmp_path / "wp", kind="wordpiece", progress=False
    )
    assert len(wp) == needed  # the size named is one that works, exactly


def test_a_corpus_too_small_for_the_size_asked_says_so(tmp_path, caplog):
    """Before, 32,768 ids asked of a corpus that holds a few hundred merges gave the few hundred in
    silence; the size is only printed, and a model built for the size asked wastes the rest."""
    src = write_jsonl(tmp_path / "c.jsonl", [{"text": "hello there, hello again"}])
    caplog.set_level("WARNING")
    tok = train_tokenizer(SourceConfig(location=str(src)), 2000, tmp_path / "bpe", progress=False)
    assert len(tok) < 2000
    assert (
        f"the tokenizer has {len(tok)} ids, fewer than the 2000 asked: its corpus (1 document) holds no "
        "more merges; train on more text to get 2000"
    ) in caplog.text
    caplog.clear()
    exact = train_tokenizer(SourceConfig(location=str(src)), len(tok), tmp_path / "exact", progress=False)
    assert len(exact) == len(tok) and "fewer than" not in caplog.text


def test_bad_training_input(tmp_path):
    src = write_jsonl(tmp_path / "c.jsonl", [{"text": "  "}])
    with pytest.raises(UserError, match="no non-empty document"):
        train_tokenizer(SourceConfig(location=str(src)), 300, tmp_path / "t", progress=False)
    assert not (tmp_path / "t").exists()
    with pytest.raises(UserError, match="vocabulary size 100 is below the 261 ids a byte-level BPE needs"):
        train_tokenizer(SourceConfig(location=str(src)), 100, tmp_path / "t", progress=False)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="non-empty folder that encoderlab did not create"):
        train_tokenizer(SourceConfig(location=str(src)), 300, tmp_path / "full", progress=False)
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"


def test_load_refusals(tmp_path, monkeypatch):
    (tmp_path / "nothing").mkdir()
    with pytest.raises(UserError, match="holds no tokenizer files"):
        load_tokenizer(tmp_path / "nothing")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="hub is offline"):
        load_tokenizer("EuroBERT/EuroBERT-210m")


def test_offline_hub_id_is_read_from_the_local_hub_cache(tmp_path, monkeypatch, bpe):
    """ "set HF_HUB_OFFLINE=1 to use the local hub cache" (the unreachable-hub line's fix) is true: a
    hub id whose snapshot the cache holds (the layout huggingface_hub writes) loads offline."""
    from huggingface_hub import constants

    commit = "0" * 40
    repo = tmp_path / "hub" / "models--someone--cached"
    bpe.save_pretrained(repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert tokenizer_hash(load_tokenizer("someone/cached")) == tokenizer_hash(bpe)
    with pytest.raises(UserError, match="hub is offline"):
        load_tokenizer("someone/uncached")


def test_hash_is_unchanged_by_encoding_with_truncation_and_padding(tokenizer_dir):  # noqa: F811
    tok = load_tokenizer(tokenizer_dir)
    before = tokenizer_hash(tok)
    tok(["a b c", "d"], truncation=True, max_length=4, padding=True)
    assert tokenizer_hash(tok) == before


def test_bpe_training_gives_the_same_tokenizer_in_every_process(tmp_path):
    """Hash-map order differs between processes: the same corpus must still give the same BPE.
    One tokenizer is trained here and one in a second Python process: two parents with their own
    string-hash seeds, each training in its own spawned child (two processes each, as before, for
    one interpreter start fewer than two subprocesses)."""
    import subprocess
    import sys

    src = write_jsonl(tmp_path / "c.jsonl", corpus_records(80))
    code = (
        "import sys; from pathlib import Path; from encoderlab.data.sources import SourceConfig; "
        "from encoderlab.data.tokenizer import train_tokenizer; "
        "train_tokenizer(SourceConfig(location=sys.argv[1]), 300, Path(sys.argv[2]), progress=False)"
    )
    train_tokenizer(SourceConfig(location=str(src)), 300, tmp_path / "a", progress=False)
    subprocess.run([sys.executable, "-c", code, str(src), str(tmp_path / "b")], check=True)
    assert (tmp_path / "a" / "tokenizer.json").read_bytes() == (
        tmp_path / "b" / "tokenizer.json"
    ).read_bytes()


@given(st.text(alphabet=st.sampled_from("ab \n\t"), max_size=400), st.integers(2, 20))
@settings(max_examples=150, deadline=None)
def test_bounded_pieces_join_back_and_hold_no_long_run(text, cap):
    import re

    pieces = list(bounded(text, cap))
    assert "".join(pieces) == text
    assert not any(re.search(rf"\S{{{cap + 1}}}|\s{{{cap + 1}}}", p) for p in pieces)


def test_prose_reaches_the_trainer_unchanged_and_a_long_word_in_pieces(tmp_path, monkeypatch):
    from encoderlab.data import tokenizer_training as tt

    prose = " ".join(r["text"] for r in corpus_records(5))
    assert list(bounded(prose)) == [prose]
    seen: list[str] = []
    real = tt._texts
    monkeypatch.setattr(tt, "_texts", lambda *a: (seen.append(t) or t for t in real(*a)))
    monkeypatch.setattr(tt, "_train_in_child", lambda job: _in_process(job, tt))
    blob = "x" * 1000 + " tail"
    src = write_jsonl(tmp_path / "c.jsonl", [{"text": blob}, {"text": prose}])
    train_tokenizer(SourceConfig(location=str(src)), 300, tmp_path / "t", progress=False)
    assert seen == ["x" * MAX_WORD_CHARS] * 3 + ["x" * (1000 - 3 * MAX_WORD_CHARS) + " tail", prose]


def _in_process(job, tt):
    """The child's work, run here so that the test can watch what the trainer is fed."""
    tok, trainer = tt._build(job["kind"], job["specials"], job["vocab_size"], job["lowercase"], False)
    counter, stats = [0], []
    texts = tt._texts(job, counter, stats)
    tok.train_from_iterator(texts, trainer=trainer)
    return (tok.to_str(), [s.to_dict() for s in stats]), counter[0]


def _cli(*args: str, **kw):
    import subprocess
    import sys

    return subprocess.Popen(
        [sys.executable, "-m", "encoderlab.cli", "data", "tokenizer", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def test_a_megabyte_line_without_spaces_trains(tmp_path):
    """Without the cap the trainer ran for minutes on this line (issue 20); the timeout is a hang
    guard, not a speed test (`encoderlab bench` measures speed)."""
    import random

    rng = random.Random(0)
    (tmp_path / "line.txt").write_text("".join(rng.choice("abcdefghij") for _ in range(1_000_000)))
    proc = _cli("--source", str(tmp_path / "line.txt"), "--vocab-size", "300", "--out", str(tmp_path / "t"))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert load_tokenizer(tmp_path / "t").backend_tokenizer.get_vocab_size() == 300
    # stdout is the result line alone (`out=$(encoderlab data tokenizer ...)`): the trainer's progress
    # output went there as three blank lines
    assert out.splitlines() == [out.strip()] and out.startswith(f"{tmp_path / 't'}\t"), repr(out)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_ctrl_c_and_sigterm_stop_training_with_the_usual_line(tmp_path, sig):
    """The training process blocks on a pipe no one writes (as a trainer busy in Rust would not
    return); the signal must end the command at once, stop that process, and write nothing."""
    import errno
    import os
    import signal
    import time
    from pathlib import Path

    fifo = tmp_path / "stuck.txt"
    os.mkfifo(fifo)
    # A shell's background job (`pytest ... &`) starts with SIGINT ignored, and Python keeps an ignored
    # SIGINT ignored in its children (as nohup'd commands should): give this child a catchable one.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = _cli("--source", str(fifo), "--vocab-size", "300", "--out", str(tmp_path / "t"))
    finally:
        signal.signal(signal.SIGINT, before)
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    deadline = time.monotonic() + 120
    while not children.read_text().strip():  # the training process has started ...
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    time.sleep(1)  # ... and the command waits for it (a signal during an import's exec() would make
    # CPython exit by SIGINT even when the KeyboardInterrupt is handled: not what this tests)
    proc.send_signal(getattr(signal, sig))
    out, err = proc.communicate(timeout=120)  # ends at once idle; a loaded CI machine may be slow
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "encoderlab: interrupted; completed work is kept (rerun to resume)"
    assert "Traceback" not in err and not (tmp_path / "t").exists() and not (tmp_path / "t.tmp").exists()
    with pytest.raises(OSError) as gone:  # no reader left on the pipe: the training process is gone
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert gone.value.errno == errno.ENXIO


def test_a_refusal_off_a_terminal_is_one_line_and_a_huge_size_is_refused_at_once(tmp_path, capfd):
    """Off a terminal the trainer's progress was three blank lines on stderr before a refusal's line (no
    source given was found in the training process); a vocabulary of 1e11 aborted that process (a Rust
    allocation failure, then an EOFError traceback)."""
    src = write_jsonl(tmp_path / "c.jsonl", [{"text": "  "}])
    with pytest.raises(UserError, match="no non-empty document"):
        train_tokenizer(SourceConfig(location=str(src)), 300, tmp_path / "t")  # progress on, as the CLI
    assert "\n\n" not in "\n" + capfd.readouterr().err
    with pytest.raises(UserError, match="^no source given; pass at least one --source$"):
        train_tokenizer([], 300, tmp_path / "t")
    src = write_jsonl(tmp_path / "w.jsonl", [{"text": "some words to merge"}])
    with pytest.raises(UserError, match="vocabulary size 100000000000 is beyond the 16,777,216 ids"):
        train_tokenizer(SourceConfig(location=str(src)), 10**11, tmp_path / "t", progress=False)
    assert not (tmp_path / "t").exists()


def test_a_rerun_with_the_same_arguments_is_done_and_with_others_refused(
    tmp_path, capsys, caplog, monkeypatch
):
    """`data tokenizer` run again with the same arguments onto its own output was refused ("already holds a
    tokenizer; choose another --out or delete it"), naming a folder that held what was asked; it has
    nothing to do, as `data prepare` and `data merge` reruns have. Other arguments, or sources edited
    since, are still refused: the folder holds another tokenizer than the one asked."""
    from tests.reliability.test_hostile_inputs import assert_one_line, cli
    from tests.reliability.treestate import assert_unchanged, tree_state, world_state

    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "c.jsonl", corpus_records(40))
    out = tmp_path / "t"
    argv = ["data", "tokenizer", "--source", tmp_path / "c.jsonl", "--out", out, "--vocab-size", "300"]
    assert cli(argv, capsys)[0] == 0
    before, kept = world_state(tmp_path), tree_state(out)
    with caplog.at_level("INFO"):
        code, err = cli(argv, capsys)
    assert code == 0, err
    assert_unchanged(before)
    assert "already holds the tokenizer these arguments train, on these sources; nothing to do" in caplog.text
    refused = rf"{out} already holds a tokenizer; choose another --out or delete it$"
    for other in (
        ["--vocab-size", "301"],
        ["--vocab-size", "300", "--seed", "1"],
        ["--vocab-size", "300", "--lowercase"],
    ):
        code, err = cli([*argv[:-2], *other], capsys)
        assert_one_line(code, err, refused)
    write_jsonl(tmp_path / "c.jsonl", corpus_records(41))
    code, err = cli(argv, capsys)
    assert_one_line(code, err, rf"{out} already holds a tokenizer trained on sources that changed since")
    assert tree_state(out) == kept


def test_a_tokenizer_finished_by_another_command_meanwhile_keeps_its_ownership_marker(tmp_path, monkeypatch):
    """Two `data tokenizer` on one --out at once: the one finishing second deleted the first one's
    `.encoderlab.json` (taking the folder for its own empty one) before its rename was refused, so the
    finished tokenizer was no longer recognised as encoderlab's."""
    import shutil

    from encoderlab.data import tokenizer_training as tt

    src = write_jsonl(tmp_path / "c.jsonl", corpus_records(40))
    train_tokenizer(SourceConfig(location=str(src)), 300, tmp_path / "first", progress=False)
    out = tmp_path / "t"

    def other_finishes_meanwhile(job):
        shutil.copytree(tmp_path / "first", out)  # the other command's finished tokenizer
        return _in_process(job, tt)

    monkeypatch.setattr(tt, "_train_in_child", other_finishes_meanwhile)
    with pytest.raises(UserError, match="was filled by another command while this one ran"):
        train_tokenizer(SourceConfig(location=str(src)), 300, out, progress=False)
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in (tmp_path / "first").iterdir())


def test_a_training_process_gone_without_a_word_is_said_as_gone_not_as_a_pipe_error(tmp_path, monkeypatch):
    """A child that ends without sending (killed for memory, or its interpreter failed to start) closes
    the pipe, which `poll` reports as readable: the parent's `recv` raised a bare EOFError traceback, and
    the line meant for this case, with the child's exit code, was never said."""
    import os

    from encoderlab.data import tokenizer_training as tt

    # os.abort takes no arguments: the spawned child fails on (conn, job) and exits 1 without sending
    monkeypatch.setattr(tt, "_child", os.abort)
    src = write_jsonl(tmp_path / "c.jsonl", corpus_records(5))
    with pytest.raises(RuntimeError, match=r"^the tokenizer training process died \(exit code 1\)$"):
        train_tokenizer(SourceConfig(location=str(src)), 300, tmp_path / "t", progress=False)
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("kind", ["bpe", "wordpiece"])
def test_an_empty_corpus_is_refused_before_any_info_line(tmp_path, caplog, kind):
    """`data tokenizer --source empty.txt` said how the .txt file is cut (and, for WordPiece, that it is not
    reproducible), then refused: lines without the `encoderlab:` prefix before the refusal's. They are
    said once the trained tokenizer passed its checks."""
    (tmp_path / "empty.txt").write_text("\n\n")
    caplog.set_level("INFO")
    with pytest.raises(UserError, match="no non-empty document; check --source$"):
        train_tokenizer(SourceConfig(location=str(tmp_path / "empty.txt")), 300, tmp_path / "t", kind)
    assert caplog.records == []
    assert not (tmp_path / "t").exists()
    (tmp_path / "some.txt").write_text("some text\n")
    train_tokenizer(SourceConfig(location=str(tmp_path / "some.txt")), 300, tmp_path / "t", kind)
    assert "1 .txt file read as one document per blank-line paragraph" in caplog.text  # still said


def test_a_bad_second_source_is_refused_before_the_first_ones_txt_line(tmp_path, caplog):
    (tmp_path / "a.txt").write_text("some text\n")
    caplog.set_level("INFO")
    sources = [SourceConfig(location=str(tmp_path / "a.txt")), SourceConfig(location=str(tmp_path / "nope"))]
    with pytest.raises(UserError, match="nope"):
        train_tokenizer(sources, 300, tmp_path / "t")
    assert caplog.records == []


def test_the_advice_of_a_mixture_stopped_early_is_a_flag_data_tokenizer_takes(tmp_path, capfd):
    """Two sources of 300 and 20 documents: `data tokenizer` warned that the mixture stopped when the small one
    ran out, advising `data prepare --stop all_exhausted`, a flag `data tokenizer` lacked, so it was trained on
    the shortened mixture. The advice is now a flag it takes, applied as `data prepare` applies it (read whole,
    recorded in its sources.json recipe, no warning)."""
    import re

    from encoderlab.cli import main
    from encoderlab.data.tokenizer_training import trained_from

    a = write_jsonl(tmp_path / "a.jsonl", corpus_records(300))
    b = write_jsonl(tmp_path / "b.jsonl", corpus_records(20, prefix="b"))
    argv = ["data", "tokenizer", "--source", str(a), str(b), "--vocab-size", "300"]
    main([*argv, "--out", str(tmp_path / "t1")])  # in process: the training process's stderr is capfd's
    err = capfd.readouterr().err
    assert "the mixture stopped when" in err, err
    advice = re.search(r"(--stop \w+)`", err)  # the flag the warning advises, run as it says
    assert advice is not None and "`data tokenizer`" in err, err
    main([*argv, *advice[1].split(), "--out", str(tmp_path / "t2")])  # exits (SystemExit) on a refusal
    err = capfd.readouterr().err
    assert "the mixture stopped" not in err
    record = trained_from(tmp_path / "t2")
    assert record["recipe"]["stop"] == advice[1].split()[1]
    assert [s["docs"] for s in record["sources"]] == [300, 20]  # each source read whole
    assert trained_from(tmp_path / "t1")["sources"][0]["docs"] < 300  # the default still stops early
