"""A checkpoint that the running pretrain deletes (prunes) while a command reads it is one line.

The run keeps its last `checkpoint.keep_last` checkpoints: one read by `export`, `eval` (`--check`
too), an `analyze` command or a study's CKA node as it goes gave a FileNotFoundError traceback (config.json gone between its check
and its read), or a line sending the user to restore the weights, or saying the model has no
tokenizer. Each reads the model inside `runlayout.pruned_while_read`, which says what happened and
names the run's newest checkpoint. The prune is simulated at the read of each kind of file, through
`main` (the CKA node through `run_cka`), so a command that stops reading inside the wrapper fails here.
`eval --check` reads no weights, so its case of them is none.
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


def _probe(tmp_path, pruned, newest, out):
    task = tmp_path / "labels.jsonl"
    task.write_text(
        "".join(f'{{"text": "w{i} w{i + 1}", "meta": {{"label": "{i % 2}"}}}}\n' for i in range(40))
    )
    return ["analyze", "probe", pruned, "--tasks", task, "--out", out]


COMMANDS = {
    "export": lambda tmp_path, pruned, newest, out: ["export", pruned, "--out", out],
    "eval": _eval,
    "eval --check": lambda tmp_path, pruned, newest, out: [*_eval(tmp_path, pruned, newest, out), "--check"],
    "analyze cka": _cka,
    "analyze probe": _probe,
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


READINGS = ["config", "weights", "tokenizer"]


def _pruned_at(tmp_path, monkeypatch, reading):
    """(pruned, newest) checkpoints of a run, the first deleted as a file of `reading`'s kind is read."""
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

    monkeypatch.setattr(owner, name, deleted_first)
    return pruned, newest


def _said(line: str, pruned, newest) -> None:
    assert f"checkpoint {pruned} was deleted while it was read" in line
    assert f"rerun with its newest checkpoint, {newest}" in line


@pytest.mark.parametrize(
    ("command", "reading"),
    [(c, r) for c in sorted(COMMANDS) for r in READINGS if (c, r) != ("eval --check", "weights")],
)
def test_a_checkpoint_pruned_while_it_is_read_is_one_line_naming_the_newest(
    tmp_path, capsys, monkeypatch, command, reading
):
    argv = COMMANDS[command](tmp_path, "PRUNED", "NEWEST", tmp_path / "out")
    pruned, newest = _pruned_at(tmp_path, monkeypatch, reading)
    argv = [pruned if a == "PRUNED" else newest if a == "NEWEST" else a for a in argv]
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    _said(err[0], pruned, newest)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("reading", READINGS)
def test_a_study_cka_nodes_start_model_pruned_while_it_is_read_is_one_line(tmp_path, monkeypatch, reading):
    """A run compared as is (`CkaNode.sources`) may be a checkpoint of a run still pretraining."""
    from encoderlab.analysis import inputs
    from encoderlab.errors import UserError
    from encoderlab.study.graph import Node
    from encoderlab.study.nodeconfig import CkaNode
    from encoderlab.study.nodes import run_cka
    from encoderlab.study.runner import NodeContext
    from encoderlab.study.spec import CkaSpec

    pruned, newest = _pruned_at(tmp_path, monkeypatch, reading)
    monkeypatch.setattr(inputs, "read_texts", lambda _: [f"w{i} w{i + 1}" for i in range(MIN_TEXTS)])
    sources = {"a": str(pruned), "b": str(newest)}
    cfg = CkaNode(analysis=CkaSpec(a="a", b="b", n_texts=MIN_TEXTS), models=("a", "b"), sources=sources)
    node = Node("cka", "cka/a-vs-b", cfg.data(), ())
    ctx = NodeContext(node=node, out_dir=tmp_path / "out", inputs={}, study_dir=tmp_path, spec=None)
    with pytest.raises(UserError) as refused:
        run_cka(ctx)
    _said(str(refused.value), pruned, newest)
    assert not (tmp_path / "out").exists()
