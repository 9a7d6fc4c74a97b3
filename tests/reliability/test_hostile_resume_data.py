"""`pretrain --resume` on a data folder that changed since the checkpoint (docs/errors.md, "Pretraining:
run folders, configs and data"): prepared again from other text with the same tokenizer, or with a
tokenizer of another size. A resume is bit-exact only on the rows the run started with, so a changed
folder is refused in one line naming what changed, before anything is written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.eval.conftest import vocabulary_texts
from tests.reliability.hostile_world import TINY_RUN as RUN  # two CLM steps, a checkpoint after each
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.train import checkpoint as ckpt


@pytest.fixture(scope="module")
def w(tmp_path_factory) -> Path:
    """Two corpora of the same words in another order (a and b), and tokenizers of 300 and 400 ids
    trained on a."""
    from encoderlab.cli import main

    root = tmp_path_factory.mktemp("resume_data")
    (root / "run.yaml").write_text(RUN)
    words = " ".join(vocabulary_texts()).split()
    texts = [" ".join(words[i : i + 25]) for i in range(0, len(words), 25)] * 4  # lines that differ
    for name, lines in (("a", texts), ("b", [" ".join(t.split()[::-1]) for t in texts])):
        (root / f"{name}.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in lines))
    for size in (300, 400):
        main(["data", "tokenizer", "--source", str(root / "a.jsonl"), "--vocab-size", str(size),
              "--out", str(root / f"tok_{size}")])  # fmt: skip
    return root


def pretrain(w: Path, out: Path, *extra, capsys) -> tuple[int, str]:
    return cli(["pretrain", "--config", w / "run.yaml", "--out", out, *extra], capsys)


def prepare(w: Path, data: Path, corpus: str, tokenizer: str, *extra: str) -> None:
    """`data` prepared (again, when it exists) from `corpus` with `tokenizer`."""
    from encoderlab.cli import main

    shutil.rmtree(data, ignore_errors=True)
    main(["data", "prepare", "--source", str(w / f"{corpus}.jsonl"), "--tokenizer", str(w / tokenizer),
          "--out", str(data), "--decontaminate", "none", "--workers", "1", *extra])  # fmt: skip


def started(w: Path, tmp_path: Path, capsys) -> tuple[Path, Path]:
    """(data, run): data prepared from corpus a with the 300-id tokenizer, and one step trained on it."""
    data, run = tmp_path / "data", tmp_path / "run"
    prepare(w, data, "a", "tok_300")
    assert pretrain(w, run, "--set", f"data.path={data}", "--until-step", "1", capsys=capsys)[0] == 0
    return data, run


def test_resume_on_data_prepared_again_with_a_tokenizer_of_another_size_names_the_tokenizer(
    w, tmp_path, capsys, monkeypatch
):
    """Was "holds another model (vocab_size: ...); resume with the run's original model settings": the
    model settings had not changed, the data's tokenizer had."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    data, run = started(w, tmp_path, capsys)
    prepare(w, data, "a", "tok_400")
    before = world_state(run, tmp_path)
    code, err = pretrain(w, run, "--resume", "--set", f"data.path={data}", capsys=capsys)
    assert_one_line(
        code,
        err,
        r"step_0000001 was trained with tokenizer \w{12}, but data.path \S+ now gives tokenizer \w{12} "
        r"\(prepared again\?, with 400 ids instead of 300\); resume on the data the run started with, or "
        r"start a new run folder",
    )
    assert_unchanged(before)


def test_a_vocabulary_change_without_the_checkpoints_tokenizer_names_the_data(w, tmp_path, capsys):
    """A checkpoint without its tokenizer file: the vocabulary sizes alone tell the data's tokenizer changed."""
    data, run = started(w, tmp_path, capsys)
    (ckpt.checkpoint_dir(run, 1) / "model" / "tokenizer.json").unlink()
    prepare(w, data, "a", "tok_400")
    code, err = pretrain(w, run, "--resume", "--set", f"data.path={data}", capsys=capsys)
    assert_one_line(
        code,
        err,
        r"step_0000001 was trained on a vocabulary of 300 ids, this run's has 400 \(the data's tokenizer "
        r"changed: data.path prepared again with another tokenizer\?\); resume on the data the run started "
        r"with, or start a new run folder",
    )


def test_resume_on_data_prepared_again_from_other_text_is_refused(w, tmp_path, capsys, monkeypatch):
    """Same tokenizer, other rows: the resume trained on them without a word, and was not bit-exact."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    data, run = started(w, tmp_path, capsys)
    prepare(w, data, "b", "tok_300")
    before = world_state(run, tmp_path)
    code, err = pretrain(w, run, "--resume", "--set", f"data.path={data}", capsys=capsys)
    assert_one_line(
        code,
        err,
        r"step_0000001 was trained on prepared data \w{12}, but data.path \S+ now holds data \w{12} \(prepared "
        r"again\?\); resume on the data the run started with, start a new run folder, or pass --force to "
        r"train on the new data \(not bit-exact\)",
    )
    assert_unchanged(before)


def test_resume_on_the_same_data_prepared_again_continues(w, tmp_path, capsys):
    """The same text and tokenizer prepared again (new files, new times) hold the same rows: no refusal."""
    data, run = started(w, tmp_path, capsys)
    prepare(w, data, "a", "tok_300")
    code, err = pretrain(w, run, "--resume", "--set", f"data.path={data}", capsys=capsys)
    assert code == 0 and "data fingerprint" not in err and "other data" not in err
    assert ckpt.complete_checkpoints(run) == [1, 2]


def test_forced_resume_on_other_data_trains_on_with_a_note(w, tmp_path, capsys):
    data, run = started(w, tmp_path, capsys)
    prepare(w, data, "b", "tok_300")
    code, err = pretrain(w, run, "--resume", "--force", "--set", f"data.path={data}", capsys=capsys)
    assert code == 0 and "note: --resume --force:" in err and "not bit-exact" in err
    state = ckpt.read_state(ckpt.checkpoint_dir(run, 2))
    assert state["data"] != ckpt.read_state(ckpt.checkpoint_dir(run, 1))["data"]  # the new data's, from here


def test_a_checkpoint_from_before_the_data_record_resumes_with_a_note(w, tmp_path, capsys):
    data, run = started(w, tmp_path, capsys)
    path = ckpt.checkpoint_dir(run, 1) / "state.json"
    state = json.loads(path.read_text())
    del state["data"]
    path.write_text(json.dumps(state))
    code, err = pretrain(w, run, "--resume", "--set", f"data.path={data}", capsys=capsys)
    assert code == 0 and "records no data fingerprint" in err
    assert ckpt.complete_checkpoints(run) == [1, 2]


def test_a_synthetic_run_records_no_data_and_resumes(w, tmp_path, capsys):
    run = tmp_path / "run"
    assert pretrain(w, run, "--until-step", "1", capsys=capsys)[0] == 0
    assert ckpt.read_state(ckpt.checkpoint_dir(run, 1))["data"] is None
    code, err = pretrain(w, run, "--resume", capsys=capsys)
    assert code == 0 and "data fingerprint" not in err and "other data" not in err


def test_the_data_identity_tells_a_shuffled_corpus_from_the_original(w, tmp_path):
    """The same documents in another order: the same counts, other rows; what was read tells them apart."""
    from encoderlab.data.packed import identity, read_meta

    lines = (w / "a.jsonl").read_text().splitlines(keepends=True)
    metas = []
    for order in (lines, lines[::-1], lines):
        (w / "c.jsonl").write_text("".join(order))  # one path, so only what it holds differs
        prepare(w, tmp_path / "data", "c", "tok_300", "--val-fraction", "0")  # again each time: new files
        metas.append(read_meta(tmp_path / "data"))
    assert metas[0]["splits"] == metas[1]["splits"]
    assert identity(metas[0]) != identity(metas[1])
    assert identity(metas[0]) == identity(metas[2])


def test_resume_on_the_same_data_at_another_path_continues_and_other_data_there_is_refused(
    w, tmp_path, capsys
):
    """A data folder moved to another disk (or a relative `data.path` read from another folder, given
    again another way) was refused as a changed config until --force, which lets any change by; a path
    that holds the data the checkpoint trained on is no change, and one that holds other data still is."""
    data, run = started(w, tmp_path, capsys)
    shutil.copytree(data, tmp_path / "moved")
    prepare(w, tmp_path / "other", "b", "tok_300")
    code, err = pretrain(w, run, "--resume", "--set", f"data.path={tmp_path / 'other'}", capsys=capsys)
    assert_one_line(code, err, r"refusing to resume \S+ with a changed config \(data.path: ")
    shutil.rmtree(data)
    code, err = pretrain(w, run, "--resume", "--set", f"data.path={tmp_path / 'moved'}", capsys=capsys)
    assert code == 0, err
    assert ckpt.complete_checkpoints(run) == [1, 2]
