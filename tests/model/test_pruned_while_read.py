"""A checkpoint that the running pretrain deletes (prunes) while a command reads it is one line.

The run keeps its last `checkpoint.keep_last` checkpoints: one read by `export`, `eval` or an
`analyze` command as it goes gave a FileNotFoundError traceback (config.json gone between its check
and its read), or a line sending the user to restore the weights, or saying the model has no
tokenizer. Each reads the model inside `runlayout.pruned_while_read`, which says what happened and
names the run's newest checkpoint. The prune is simulated at the read of each kind of file, through
`main`, so a command that stops reading inside the wrapper fails here.
"""

from __future__ import annotations

import pathlib
import shutil

import pytest
from model_fixtures import make_model, save_tiny_tokenizer
from tests.eval.conftest import sc_examples
from tests.eval.fixtures import write_jsonl, write_task_file

import encoderlab.data.tokenizer
import encoderlab.model.io
from encoderlab.analysis.inputs import MIN_TEXTS
from encoderlab.cli import main
from encoderlab.model.io import save_model_folder
from encoderlab.outdir import create_output


def _eval(tmp_path, pruned, newest, out):
    data = {"train": write_jsonl(tmp_path / "train.jsonl", sc_examples(12, 0))}
    data["test"] = write_jsonl(tmp_path / "test.jsonl", sc_examples(12, 1))
    task = write_task_file(tmp_path, "task.yaml", name="senti", family="sc", data=data)
    return ["eval", pruned, "--task-file", task, "--lrs", "1e-4", "--seeds", "0", "--out", out]


def _cka(tmp_path, pruned, newest, out):
    texts = tmp_path / "texts.jsonl"
    texts.write_text("".join(f'{{"text": "w{i} w{i + 1} w{i + 2}"}}\n' for i in range(MIN_TEXTS + 10)))
    return ["analyze", "cka", pruned, newest, "--texts", texts, "--n", MIN_TEXTS, "--out", out]


COMMANDS = {
    "export": lambda tmp_path, pruned, newest, out: ["export", pruned, "--out", out],
    "eval": _eval,
    "analyze cka": _cka,
    "analyze transplant": lambda tmp_path, pruned, newest, out: [
        "analyze",
        "transplant",
        pruned,
        newest,
        "--layers",
        "0",
        "--out",
        out,
    ],
}


@pytest.mark.parametrize("reading", ["config", "weights", "tokenizer"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_checkpoint_pruned_while_it_is_read_is_one_line_naming_the_newest(
    tmp_path, capsys, monkeypatch, command, reading
):
    run = create_output(tmp_path / "run", "pretrain")
    for step in (1, 2):
        ckpt = run / "checkpoints" / f"step_{step:07d}"
        save_model_folder(make_model(mask_id=3), ckpt / "model", save_tiny_tokenizer(tmp_path / "tok"))
        (ckpt / "state.json").write_text("{}")
    pruned, newest = run / "checkpoints" / "step_0000001", run / "checkpoints" / "step_0000002"
    owner, name = {
        "config": (pathlib.Path, "read_text"),
        "weights": (encoderlab.model.io, "load_file"),
        "tokenizer": (encoderlab.data.tokenizer, "load_tokenizer"),
    }[reading]
    original = getattr(owner, name)

    def deleted_first(path, *args, **kwargs):
        if str(path).startswith(str(pruned)):  # the trainer's prune, as a file of the checkpoint is read
            shutil.rmtree(pruned, ignore_errors=True)
        return original(path, *args, **kwargs)

    argv = COMMANDS[command](tmp_path, pruned, newest, tmp_path / "out")
    monkeypatch.setattr(owner, name, deleted_first)
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    assert f"checkpoint {pruned} was deleted while it was read" in err[0]
    assert f"rerun with its newest checkpoint, {newest}" in err[0]
    assert not (tmp_path / "out").exists()
