"""The hostile-input catalogue, data cases (issue 20; rows in docs/errors.md): each goes through
`encoderlab.cli.main([...])` as a user's command line would, must exit 2 with exactly one
`encoderlab: error:` line, no traceback, and leave every file that existed before unchanged. Each
case failed on the code before this file (a traceback, an IndexError later, a wrong fix, or
nothing at all)."""

from __future__ import annotations

import json
import re
import shutil
import sys

import numpy as np
import pytest
from tests.eval.conftest import make_tokenizer, vocabulary_texts
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.cli import main
from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
from encoderlab.data.shard import Shard
from encoderlab.data.sources import SourceConfig


@pytest.fixture(scope="module")
def dworld(tmp_path_factory):
    """A corpus, its tokenizer, a prepared folder and broken copies of it, and foreign folders."""
    root = tmp_path_factory.mktemp("hostile-data")
    texts = vocabulary_texts()
    (root / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"id": str(i), "text": " ".join(texts[i : i + 4])}) + "\n" for i in range(len(texts))
        )
    )
    make_tokenizer(texts).save_pretrained(root / "tok")
    cfg = PrepareConfig(
        sources=(SourceConfig(location=str(root / "corpus.jsonl")),),
        tokenizer=str(root / "tok"),
        decontaminate=(),
    )
    good = prepare(cfg, root / "data", workers=1, progress=False)
    meta = read_meta(good)
    vocab, dtype = meta["spec"]["vocab_size"], np.dtype(meta["dtype"])

    shutil.copytree(good, root / "garbage_offsets")
    (root / "garbage_offsets" / "doc_offsets.npy").write_bytes(b"\x93NUMPY garbage" * 9)
    shutil.copytree(good, root / "decreasing_offsets")
    offsets = np.load(good / "doc_offsets.npy")
    offsets[2], offsets[3] = offsets[3], offsets[2]
    np.save(root / "decreasing_offsets" / "doc_offsets.npy", offsets)
    shutil.copytree(good, root / "ids_beyond_vocab")
    tokens = np.fromfile(good / "tokens.bin", dtype=dtype)
    np.full_like(tokens, vocab + 5).tofile(root / "ids_beyond_vocab" / "tokens.bin")
    shutil.copytree(good, root / "patched_ids")  # 100 bad ids at the end, where a short run never reads
    tokens[-100:] = vocab + 7
    tokens.tofile(root / "patched_ids" / "tokens.bin")
    shutil.copytree(good, root / "swapped_tokens")  # the same size, every id valid, other rows
    np.fromfile(good / "tokens.bin", dtype=dtype)[::-1].tofile(root / "swapped_tokens" / "tokens.bin")

    for name, edit in (("meta_counts_text", {"tokens": "many"}), ("meta_counts_cut", None)):
        shutil.copytree(good, root / name)  # meta.json still JSON, edited or cut by hand: was a traceback
        split = None if edit is None else {**meta["splits"]["train"], **edit}
        (root / name / "meta.json").write_text(json.dumps({**meta, "splits": {"train": split}}))
    shutil.copytree(good, root / "no_tokenizer")
    shutil.rmtree(root / "no_tokenizer" / "tokenizer")
    shutil.copytree(good, root / "mine.tmp")  # a user's own dataset that prepare --out mine would write over

    (root / "foreign").mkdir()
    (root / "foreign" / "meta.json").write_text('{"experiment": "mine"}')
    (root / "foreign" / "notes.txt").write_text("keep me")
    (root / "config_only").mkdir()
    (root / "config_only" / "tokenizer_config.json").write_text('{"tokenizer_class": "BertTokenizer"}')
    (root / "a_file").write_text("not a folder")
    (root / "corpus_dir").mkdir()  # a source folder, whose walk would read an --out inside it
    shutil.copy(root / "corpus.jsonl", root / "corpus_dir" / "corpus.jsonl")
    (root / "theirs.shards").mkdir()  # someone's folder where `prepare --shard I/N --out theirs` writes parts
    (root / "theirs.shards" / "notes.txt").write_text("keep me")
    prepare(cfg, root / "merged", shard=Shard(0, 1), workers=1, progress=False)
    (root / "merged").mkdir()  # the parts are ours, the folder they would be merged into is not
    (root / "merged" / "notes.txt").write_text("keep me")
    deep = {"text": "a document"}
    (root / "deep.jsonl").write_text(
        json.dumps(deep) + "\n" + '{"text": "x", "m": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    )
    return root


PREP = "data prepare --source {w}/corpus.jsonl --tokenizer {w}/tok --decontaminate none --workers 1"

# (id, argv with {w}, pattern of the one line); what the old code did is in docs/errors.md
DATA_CASES = [
    ("garbage-doc-offsets", "data inspect {w}/garbage_offsets", r"doc_offsets.npy is not a valid .npy offsets file; the folder is corrupt: prepare"),
    ("decreasing-doc-offsets", "data inspect {w}/decreasing_offsets", r"doc_offsets.npy decreases at document 2; .*prepare"),
    ("ids-beyond-vocab", "data inspect {w}/ids_beyond_vocab", r"tokens.bin holds token id \d+ at position 0, beyond the tokenizer's \d+ ids"),
    ("patched-ids-never-read", "data inspect {w}/patched_ids", r"tokens.bin holds token id \d+ at position \d+, beyond .*changed after prepare"),
    ("swapped-tokens-valid-ids", "data inspect {w}/swapped_tokens", r"swapped_tokens/tokens.bin now holds other bytes, not those meta.json records \(a file replaced or copied in part after it was written\); the folder is corrupt, prepare .*swapped_tokens again$"),
    ("meta-counts-not-numbers", "data inspect {w}/meta_counts_text", r"meta_counts_text/meta.json is corrupt \(splits.train has no token and document counts\); delete .*meta_counts_text and prepare it again$"),
    ("meta-split-without-counts", "data inspect {w}/meta_counts_cut", r"meta_counts_cut/meta.json is corrupt \(splits.train has no token and document counts\); delete"),
    ("prepared-without-tokenizer", "data inspect {w}/no_tokenizer", r"prepared data .*no_tokenizer has no tokenizer/ folder \(data prepare writes the tokenizer it used there\); copy that tokenizer's folder to .*no_tokenizer/tokenizer$"),
    ("inspect-seq-len-0", "data inspect {w}/data --seq-len 0", r"--seq-len must be >= 1"),
    ("inspect-rows-negative", "data inspect {w}/data --rows -1", r"--rows must be >= 1, got -1"),
    ("inspect-seq-len-past-the-split", "data inspect {w}/data --seq-len 100000", r"the train split of .*data has \d+ tokens, fewer than one row of --seq-len 100000; prepare more text or lower --seq-len$"),
    ("inspect-val-split-empty", "data inspect {w}/data --split val", r"the val split of .*data has 0 tokens, fewer than one row of --seq-len 64; prepare it again with a larger --val-fraction$"),
    ("inspect-rows-past-the-split", "data inspect {w}/data --rows 1000", r"--rows 1000: the train split of .*data holds \d+ rows of --seq-len 64 \([\d,]+ tokens\); pass --rows \d+ or fewer$"),
    ("val-fraction-above-1", PREP + " --out {w}/o --val-fraction 1.5", r"--val-fraction must be in \[0, 1\) .*got 1.5"),
    ("prepare-into-foreign-meta", PREP + " --out {w}/foreign", r"--out .*foreign is a non-empty folder that encoderlab did not create"),
    ("prepare-into-source-folder", PREP.replace("{w}/corpus.jsonl", "{w}/corpus_dir") + " --out {w}/corpus_dir/p", r"--out .*corpus_dir/p is, contains or lies inside the source .*corpus_dir; writing there would destroy"),
    ("prepare-out-is-a-file", PREP + " --out {w}/a_file", r"--out .*a_file is a file, not a folder"),
    ("decontaminate-missing", "data prepare --source {w}/corpus.jsonl --tokenizer {w}/tok --out {w}/o --decontaminate missing", r"'missing' is not an existing file.*; fix --decontaminate$"),
    ("decontaminate-task-test-set", "data prepare --source {w}/corpus.jsonl --tokenizer {w}/tok --out {w}/o --decontaminate task-test:{w}/tasks/mine.yaml", r"--decontaminate task-test:\S+/tasks/mine.yaml: a task file's test split is a set only a study reads \(data prepare reads no task file\); prepare the corpus in a study naming \S+/tasks/mine.yaml in eval.task_files, or pass --decontaminate a JSONL file of its test texts \(a \{\"text\": \.\.\.\} record each\)$"),
    ("ngram-with-decontaminate-none", PREP + " --out {w}/o --ngram 1000000000", r"--ngram 1000000000: the decontamination n-gram length must be at most 1000 words .*; leave --ngram out \(decontamination is off, so it is unused\)$"),
    ("decontaminate-none-and-a-set", PREP + " --out {w}/o --decontaminate boolq", r"'auto' and 'none' stand alone"),
    ("tokenizer-config-only", "data prepare --source {w}/corpus.jsonl --tokenizer {w}/config_only --out {w}/o", r"has tokenizer_config.json but no tokenizer.json"),
    ("merge-without-parts", "data merge --out {w}/nothing", r"no parts to merge: .*nothing.shards does not exist"),
    ("prepare-beside-a-finished-out-tmp", PREP + " --out {w}/mine", r"mine.tmp holds a finished prepared dataset, not the leftover .*nothing was changed: rename it"),
    ("prepare-shard-into-foreign", PREP + " --shard 0/2 --out {w}/theirs", r"--out .*theirs.shards is a non-empty folder that encoderlab did not create; nothing in it was changed"),
    ("merge-into-foreign", "data merge --out {w}/merged", r"--out .*merged is a non-empty folder that encoderlab did not create; nothing in it was changed"),
    ("prepare-one-file-twice", PREP.replace("{w}/corpus.jsonl", "{w}/corpus_dir") + " --source {w}/corpus_dir/corpus.jsonl --out {w}/o", r"sources .*corpus_dir' and .*corpus_dir/corpus.jsonl' both read .*corpus.jsonl: its documents would be trained on twice"),
]  # fmt: skip


@pytest.mark.parametrize("case,argv,pattern", DATA_CASES, ids=[c[0] for c in DATA_CASES])
def test_hostile_data_input_is_one_line(dworld, capsys, monkeypatch, case, argv, pattern):
    monkeypatch.chdir(dworld)  # the working folder is part of what a refusal may not change
    before = world_state(dworld)
    code, err = cli(argv.format(w=dworld).split(), capsys)
    assert_one_line(code, err, pattern)
    assert_printed_as_documented(case, err, dworld)
    assert_unchanged(before)


def test_encoderlab_home_that_is_a_file_is_one_line(dworld, capsys, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HOME", str(dworld / "a_file"))
    code, err = cli(["assets", "fetch", "wiki-leads"], capsys)
    assert_one_line(
        code, err, r"ENCODERLAB_HOME=.*a_file is a file, not a folder; point ENCODERLAB_HOME at a folder"
    )


@pytest.mark.parametrize("command", ["assets list", "assets fetch wiki-leads", "eval M --tasks boolq"])
def test_an_empty_encoderlab_home_is_one_line_not_the_working_folder(
    dworld, capsys, monkeypatch, tmp_path, command
):
    """Path("") is ".": `assets list` made ./assets, and a fetch downloaded into the working folder."""
    monkeypatch.setenv("ENCODERLAB_HOME", "")
    monkeypatch.chdir(tmp_path)
    code, err = cli(command.replace("M", str(dworld / "model")).split(), capsys)
    assert_one_line(
        code, err, r"^encoderlab: error: ENCODERLAB_HOME is set but empty; point it at a folder, or unset it"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("target", ["nowhere/home", "loop"])
def test_an_encoderlab_home_that_is_a_broken_symlink_is_one_line(capsys, monkeypatch, tmp_path, target):
    """A symlink to nothing or a symlink loop (ENCODERLAB_HOME, or its assets folder): a FileExistsError
    traceback in every command that reads an asset."""
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "home").symlink_to(tmp_path / target)
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    code, err = cli(["assets", "list"], capsys)
    assert_one_line(
        code,
        err,
        r"ENCODERLAB_HOME=.*home cannot be made a folder \(a symlink to nothing or a symlink loop\)",
    )
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "assets").symlink_to(tmp_path / target)
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "real"))
    code, err = cli(["assets", "list"], capsys)
    assert_one_line(
        code, err, r"real/assets cannot be made a folder \(a symlink to nothing or a symlink loop\)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "loop", "real"]


@pytest.mark.parametrize(
    "command", ["assets fetch wiki-leads", "assets list", "data tokenizer --source wiki-leads --out T"]
)
def test_a_file_where_encoderlab_home_keeps_its_assets_is_one_line(
    dworld, capsys, monkeypatch, tmp_path, command
):
    """ENCODERLAB_HOME/assets (or downloads) a file: a FileExistsError traceback in every asset command."""
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "assets").write_text("not a folder")
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    code, err = cli(command.replace("T", str(tmp_path / "t")).split(), capsys)
    assert_one_line(
        code,
        err,
        r"home/assets is a file, not a folder, in ENCODERLAB_HOME where encoderlab keeps its assets; move",
    )
    assert_printed_as_documented("encoderlab-assets-is-a-file", err, tmp_path)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["assets", "home"]


def test_pretrain_on_ids_beyond_the_vocabulary_is_one_line_not_an_index_error(dworld, capsys, tmp_path):
    argv = f"pretrain --recipe smoke-mlm --param data={dworld / 'patched_ids'} --out {tmp_path / 'o'}".split()
    code, err = cli(argv, capsys)
    assert_one_line(code, err, r"tokens.bin holds token id \d+ at position \d+, beyond the tokenizer's")


def test_hub_data_without_the_datasets_package_is_one_line(dworld, capsys, monkeypatch, tmp_path):
    """`datasets` is the `hub` extra, not a base dependency: without it an `hf:` source was a
    ModuleNotFoundError traceback (the paper suite already said which package to install)."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    (tmp_path / "mirror" / "someone" / "corpus").mkdir(parents=True)
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "mirror"))
    monkeypatch.setitem(sys.modules, "datasets", None)  # what `import datasets` meets when it is absent
    before = world_state(dworld, tmp_path)
    argv = (
        f"data prepare --source hf:someone/corpus --tokenizer {dworld / 'tok'} --out {dworld / 'o'}".split()
    )
    code, err = cli(argv, capsys)
    assert_one_line(code, err, r"reading a hub dataset needs the `datasets` package, which is not installed")
    assert_printed_as_documented("hub-without-datasets", err, dworld)
    code, err = cli(f"bench data --source {dworld / 'corpus.jsonl'} --work {dworld / 'w'}".split(), capsys)
    assert_printed_as_documented("hub-without-datasets", err, dworld)  # its baseline is `datasets.map`
    assert code == 2
    assert_unchanged(before)


CACHE_FIX = "; check the path, or the network, or set HF_HUB_OFFLINE=1 to use the local hub cache"
HUB_UNREACHABLE = {  # case -> (argv with {w}, what the line names, what follows the reason in brackets)
    "hub-unreachable-tokenizer": (
        "data prepare --source {w}/texts.txt --tokenizer someone/tok --out {w}/o",
        "tokenizer 'someone/tok'",
        ", and there is no folder {w}/someone/tok" + CACHE_FIX,
    ),
    "hub-unreachable-model": (
        "export someone/enc --out {w}/o",
        "model 'someone/enc'",
        ", and there is no folder {w}/someone/enc" + CACHE_FIX,
    ),
    "hub-unreachable-dataset": (
        "data prepare --source hf:someone/corpus --tokenizer {w}/tok --out {w}/o",
        "hub dataset 'someone/corpus'",
        "; check the network, or mirror the dataset and set ENCODERLAB_HUB_DATA",
    ),
}


@pytest.mark.parametrize("case", sorted(HUB_UNREACHABLE))
def test_an_unreachable_hub_is_one_line_at_once(tmp_path, case, monkeypatch):
    """A hub id with HF_HUB_OFFLINE unset and no hub to reach (HF_ENDPOINT on a closed port, a fresh
    HF_HOME): huggingface_hub printed its retry notices for ~50 s before our line; now only the line."""
    import os
    import subprocess
    import sys

    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    argv, named, tail = HUB_UNREACHABLE[case]
    w = tmp_path / "w"
    w.mkdir()
    (w / "texts.txt").write_text("".join(f"text {i} about the red code\n" for i in range(20)))
    make_tokenizer(vocabulary_texts()).save_pretrained(w / "tok")
    offline = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
    env = {k: v for k, v in os.environ.items() if k not in offline}
    env.update(
        HF_ENDPOINT="http://127.0.0.1:9", HF_HOME=str(tmp_path / "hf"), ENCODERLAB_HOME=str(tmp_path / "el")
    )
    before = world_state(w, tmp_path)
    cmd = [sys.executable, "-m", "encoderlab.cli", *argv.format(w=w).split()]
    run = subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=120, cwd=w
    )  # ids are paths too
    assert run.returncode == 2 and len(run.stderr.splitlines()) == 1, run.stderr
    start = f"encoderlab: error: cannot download {named} from the Hugging Face hub ("
    assert run.stderr.startswith(start) and run.stderr.rstrip().endswith(tail.format(w=w)), run.stderr
    assert_printed_as_documented(case, run.stderr, w)
    assert_unchanged(before)
    assert sorted(p.name for p in w.iterdir()) == ["texts.txt", "tok"]


def test_inspect_shows_a_meta_json_without_its_informational_counts(dworld, capsys):
    """Counts only printed (decontamination, skipped records, seconds) were read by key: a meta.json
    edited by hand without them was a KeyError traceback in the command one uses to look at it."""
    folder = dworld / "meta_without_counts"
    shutil.copytree(dworld / "data", folder)
    meta = json.loads((folder / "meta.json").read_text())
    for key in ("decontamination", "seconds"):
        del meta[key]
    (folder / "meta.json").write_text(json.dumps({**meta, "sources": [{}]}))
    capsys.readouterr()
    main(["data", "inspect", str(folder), "--rows", "1", "--seq-len", "8"])
    out = capsys.readouterr().out
    summary = json.loads(out[: out.index("--- row 0")])
    assert summary["splits"] == meta["splits"] and summary["seconds"] is None
    assert summary["skipped"] == {"empty": None, "bad_records": None, "bad_files": None}


def test_inspect_reads_its_rows_a_chunk_at_a_time(dworld, capsys, monkeypatch):
    """`--rows N` read one batch of N rows: millions of rows held them all in memory at once. Read a
    chunk at a time, they are the same rows in the same order."""
    from encoderlab.data import commands

    argv = ["data", "inspect", str(dworld / "data"), "--rows", "20", "--seq-len", "8"]
    main(argv)
    whole = capsys.readouterr().out
    monkeypatch.setattr(commands, "INSPECT_CHUNK", 3)
    main(argv)
    assert capsys.readouterr().out == whole and whole.count("--- row") == 20


def test_a_jsonl_line_nested_thousands_deep_is_one_line_and_writes_nothing(dworld, capsys):
    """`json.loads` of `[[[...` 100,000 deep raised RecursionError, a traceback; the line is a bad
    line like any other (the progress bar has started, so the error is the last line)."""
    argv = PREP.replace("{w}/corpus.jsonl", "{w}/deep.jsonl") + " --out {w}/deep_out"
    code, err = cli(argv.format(w=dworld).split(), capsys)
    assert code == 2 and "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert re.search(
        r"^encoderlab: error: .*deep.jsonl:2 is not valid JSON \(nested thousands deep\); fix or remove it, or "
        r"pass --on-error skip",
        last,
    ), last
    assert not (dworld / "deep_out").exists() and not (dworld / "deep_out.tmp").exists()


@pytest.mark.parametrize("command", ["assets list", "study plan paper1-pfs", "eval M --tasks boolq --out E"])
def test_a_command_that_only_reads_assets_makes_no_encoderlab_home(
    dworld, capsys, monkeypatch, tmp_path, command
):
    """`assets list`, `study plan` and an `eval` refused for an unfetched asset made $ENCODERLAB_HOME/assets:
    a refused command left a folder behind, and a read changed the disk."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    argv = command.replace("M", str(dworld / "model")).replace("E", str(tmp_path / "e")).split()
    code, err = cli(argv, capsys)
    if command.startswith("eval"):  # refused where it looks for the asset, not before
        assert_one_line(code, err, r"assets not fetched: boolq; run: encoderlab assets fetch boolq$")
    assert list(tmp_path.iterdir()) == []
