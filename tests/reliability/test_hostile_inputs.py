"""The hostile-input catalogue (issue 8, item 3; listed in docs/errors.md): every case goes through
`encoderlab.cli.main([...])` as a user's command line would, and must exit non-zero with exactly
one `encoderlab: error:` line on stderr, no traceback, and leave what was written before intact."""

from __future__ import annotations

import errno
import json
import os
import re
import tempfile
from pathlib import Path

import pytest
from tests.eval.conftest import make_tokenizer, vocabulary_texts
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.hostile_world import TINY_RUN, build_world
from tests.reliability.input_cases import CASES
from tests.reliability.treestate import assert_unchanged, tree_state, world_state

from encoderlab.cli import main
from encoderlab.train import checkpoint as ckpt

__all__ = ["CASES", "TINY_RUN", "assert_one_line", "assert_refused_unchanged", "cli"]


def cli(argv: list, capsys) -> tuple[int, str]:
    """Run the CLI in process: (exit code, stderr)."""
    capsys.readouterr()
    try:
        main([str(a) for a in argv])
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


def assert_one_line(code: int, err: str, pattern: str, exit_code: int = 2) -> None:
    # notes a run printed before it failed (e.g. "training on synthetic tokens") are not errors
    lines = [line for line in err.strip().splitlines() if not line.startswith("encoderlab: note: ")]
    assert code == exit_code, err
    assert len(lines) == 1 and lines[0].startswith("encoderlab: error: "), err
    assert "Traceback" not in err
    assert __import__("re").search(pattern, lines[0]), lines[0]


def assert_refused_unchanged(root: Path, case: str, argv: str, pattern: str, capsys, monkeypatch) -> str:
    """Run `argv` ({w} = `root`) from `root`, with temporary files under it: one documented line (returned), and
    no file under `root`, the working folder, $ENCODERLAB_HOME or the Hugging Face caches changed (its bytes or its
    mtime), added or made, nor any folder at any depth (a default output folder, an empty leftover `mkdir`, a
    temporary folder not cleaned up): `treestate.world_state`."""
    monkeypatch.chdir(root)
    (root / "tmp").mkdir(exist_ok=True)
    monkeypatch.setattr(tempfile, "tempdir", str(root / "tmp"))
    before = world_state(root)
    code, err = cli(argv.format(w=root).split(), capsys)
    assert_one_line(code, err, pattern)
    assert_printed_as_documented(case, err, root)
    assert_unchanged(before)
    return err


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Files shared by the cases: configs, model folders (good and broken), HF folders, a run, and
    the foreign folders that output commands must not touch (see hostile_world.py)."""
    return build_world(tmp_path_factory.mktemp("hostile"))


@pytest.mark.parametrize("case,argv,pattern", CASES, ids=[c[0] for c in CASES])
def test_hostile_input_is_one_line(world, capsys, monkeypatch, case, argv, pattern):
    monkeypatch.setenv("ENCODERLAB_HOME", str(world / "home"))  # no case may need a fetched asset
    assert_refused_unchanged(world, case, argv, pattern, capsys, monkeypatch)


def test_unusable_output_folder_is_one_line(world, tmp_path, capsys, monkeypatch):
    # Root ignores permission bits, so the read-only file system is injected where folders are made.
    def read_only(self, *a, **k):
        raise OSError(errno.EROFS, "Read-only file system", str(self))

    monkeypatch.setattr(Path, "mkdir", read_only)
    code, err = cli(["pretrain", "--config", world / "tiny.yaml", "--out", tmp_path / "ro"], capsys)
    assert_one_line(code, err, r"cannot create .*ro \(Read-only file system\); choose another --out")


def test_disk_full_mid_run_keeps_the_last_checkpoint_and_resumes(world, tmp_path, capsys, monkeypatch):
    from encoderlab.model import io as model_io

    real, calls = model_io.save_file, {"n": 0}

    def full_disk(tensors, filename, *a, **k):
        calls["n"] += 1
        if calls["n"] == 2:  # the checkpoint of step 2
            raise OSError(errno.ENOSPC, "No space left on device", filename)
        return real(tensors, filename, *a, **k)

    monkeypatch.setattr(model_io, "save_file", full_disk)
    run = tmp_path / "run"
    code, err = cli(["pretrain", "--config", world / "tiny.yaml", "--out", run], capsys)
    assert_one_line(
        code, err, r"disk full while writing .*step_0000002\.tmp.*free space and rerun", exit_code=3
    )
    assert ckpt.complete_checkpoints(run) == [1]
    kept = tree_state(run / "checkpoints" / "step_0000001")
    monkeypatch.setattr(model_io, "save_file", real)
    assert cli(["pretrain", "--config", world / "tiny.yaml", "--out", run, "--resume"], capsys)[0] == 0
    assert (run / "final" / "model.safetensors").is_file()
    assert ckpt.complete_checkpoints(run) == [1, 2]
    assert tree_state(run / "checkpoints" / "step_0000001") == kept  # its bytes and mtimes


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc, where mkdir fails")
def test_out_under_a_parent_that_cannot_be_made_is_one_line(world, capsys):
    """`pretrain --out /proc/x` was a FileNotFoundError traceback (issue 20); /proc takes no folders."""
    code, err = cli(["pretrain", "--config", world / "tiny.yaml", "--out", "/proc/encoderlab-x"], capsys)
    assert_one_line(
        code, err, r"cannot create /proc/encoderlab-x \(No such file or directory\); choose another --out"
    )


def test_pickle_and_remote_code_load_only_when_explicitly_allowed(world):
    from encoderlab.errors import UserError
    from encoderlab.model.hub import load_pretrained

    pre = load_pretrained(str(world / "hf_pickle"), allow_pickle=True)  # via torch.load(weights_only=True)
    assert pre.model.config.vocab_size > 64
    with pytest.raises(UserError, match="auto_map"):
        load_pretrained(str(world / "hf_remote"))


def test_mlm_with_a_tokenizer_without_mask_token(world, tmp_path, capsys):
    from transformers import PreTrainedTokenizerFast

    tok = make_tokenizer(vocabulary_texts())
    no_mask = PreTrainedTokenizerFast(
        tokenizer_object=tok.backend_tokenizer, pad_token="[PAD]", bos_token="[BOS]", eos_token="[EOS]"
    )
    no_mask.save_pretrained(tmp_path / "tok")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(vocabulary_texts()))
    )
    prep = [
        "data",
        "prepare",
        "--source",
        corpus,
        "--tokenizer",
        tmp_path / "tok",
        "--out",
        tmp_path / "data",
    ]
    assert cli([*prep, "--decontaminate", "none", "--workers", "1"], capsys)[0] == 0
    argv = [
        "pretrain",
        "--recipe",
        "smoke-mlm",
        "--param",
        f"data={tmp_path / 'data'}",
        "--out",
        tmp_path / "o",
    ]
    code, err = cli(argv, capsys)
    assert_one_line(code, err, r"mask")
    assert not (tmp_path / "o").exists()  # refused before the run folder is written


def test_symlink_loop_inside_a_source_folder_terminates_and_reads_the_files(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "a.txt").write_text(" ".join(vocabulary_texts()[:3]) + "\n")
    os.symlink("..", corpus / "sub" / "up")  # corpus/sub/up/sub/up/... forever if followed
    os.symlink("self.txt", corpus / "self.txt")
    code, err = cli(
        ["data", "tokenizer", "--source", corpus, "--out", tmp_path / "tok", "--vocab-size", "300"], capsys
    )
    assert code == 0, err
    assert (tmp_path / "tok" / "tokenizer.json").is_file()


def test_empty_hub_mirror_split_is_one_line_after_the_progress_bar(world, capsys, monkeypatch):
    """`datasets` raised a bare StopIteration on an empty JSON file; the split is only read once the
    grid has started, so the line comes after the progress bar (and no eval folder is left)."""
    argv = "eval {w}/model --suite paper --tasks paper-sst2 --lrs 1e-4 --seeds 0 --hub-data {w}/mirror_empty --out {w}/ep"
    monkeypatch.setenv("ENCODERLAB_HOME", str(world / "home"))
    monkeypatch.setenv(
        "ENCODERLAB_HUB_DATA", str(world / "mirror_empty")
    )  # as --hub-data sets it; undone after
    code, err = cli(argv.format(w=world).split(), capsys)
    assert code == 2 and "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert re.search(r"^encoderlab: error: cannot load nyu-mll/glue .*a data file of it is empty", last), last
    assert not (world / "ep").exists()
