"""Every command that writes a folder or a result file refuses one inside a run's `final/` or `checkpoints/`.

The run's next `--resume` replaces `final/` and deletes from `checkpoints/` whatever is no complete
checkpoint (and pruning deletes a checkpoint whole): what was written there was lost without a word. One
check (`outdir.check_outside_run_parts`, part of `check_output` and `check_output_file`) serves all of
them; each case here goes through `main`, so a command that stops checking its output fails.
"""

from __future__ import annotations

import shutil

import pytest
from model_fixtures import make_model
from tests.data.corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from tests.reliability.hostile_world import TINY_RUN
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.cli import main
from encoderlab.data.prepare import PrepareConfig, prepare
from encoderlab.data.shard import Shard
from encoderlab.data.sources import SourceConfig
from encoderlab.model.io import save_model_folder
from encoderlab.outdir import create_output

COMMANDS = {
    "eval": lambda ckpt, texts, out: ["eval", ckpt, "--out", out],
    "cka": lambda ckpt, texts, out: ["analyze", "cka", ckpt, ckpt, "--texts", texts, "--out", out],
    "probe": lambda ckpt, texts, out: ["analyze", "probe", ckpt, "--tasks", texts, "--out", out],
    "transplant": lambda ckpt, texts, out: [
        "analyze",
        "transplant",
        ckpt,
        ckpt,
        "--layers",
        "0",
        "--out",
        out,
    ],
}


@pytest.mark.parametrize("inside", ["final", "checkpoints/step_0000009"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_eval_and_analyze_refuse_an_out_inside_a_runs_final_or_checkpoints(tmp_path, capsys, command, inside):
    run = create_output(tmp_path / "run", "pretrain")
    ckpt = run / "checkpoints" / "step_0000001"
    save_model_folder(make_model(mask_id=3), ckpt / "model")
    texts = tmp_path / "texts.jsonl"
    texts.write_text('{"text": "a b c"}\n')
    argv = COMMANDS[command](str(ckpt), str(texts), str(run / inside))
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    assert f"lies inside {run / inside.split('/')[0]}" in err[0] and "pretrain replaces on --resume" in err[0]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_0000001"]
    assert not (run / "final").exists()


def test_curves_refuses_an_out_inside_a_runs_final(tmp_path, capsys):
    run = create_output(tmp_path / "run", "pretrain")
    (tmp_path / "e").mkdir()
    (tmp_path / "c.yaml").write_text("sources:\n  - {results: e, model: M, step: 100}\n")
    with pytest.raises(SystemExit) as exc:
        main(["analyze", "curves", str(tmp_path / "c.yaml"), "--out", str(run / "final")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and "pretrain replaces on --resume" in err[0], err
    assert not (run / "final").exists()


PREPARE = ["--decontaminate", "none", "--workers", "1"]
# command -> (argv from the inputs folder w, the tokenizer and the output; the output, under the run)
WRITERS = {
    "advise": (
        lambda w, tok, out: ["advise", w / "ladder.csv", "--target-flops", "1e19", "--out", out],
        "final",
    ),
    "data tokenizer": (
        lambda w, tok, out: ["data", "tokenizer", "--source", w / "c.jsonl", "--out", out],
        "final",
    ),
    "data prepare": (
        lambda w, tok, out: [
            "data",
            "prepare",
            "--source",
            w / "c.jsonl",
            "--tokenizer",
            tok,
            *PREPARE,
            "--out",
            out,
        ],
        "checkpoints/data",
    ),
    "data prepare --shard": (
        lambda w, tok, out: (
            ["data", "prepare", "--source", w / "c.jsonl", "--tokenizer", tok, *PREPARE]
            + ["--shard", "0/2", "--out", out]
        ),
        "final/data",
    ),
    "data merge": (lambda w, tok, out: ["data", "merge", "--out", out], "final/merged"),
    "pretrain": (
        lambda w, tok, out: ["pretrain", "--config", w / "tiny.yaml", "--out", out],
        "checkpoints/r",
    ),
    "study run": (lambda w, tok, out: ["study", "run", "paper1-pfs", "--out", out], "final/study"),
    "bench train": (lambda w, tok, out: ["bench", "train", "--out", out], "final/bench.json"),
    "bench data": (
        lambda w, tok, out: ["bench", "data", "--source", w / "c.jsonl", "--out", out],
        "final/b.json",
    ),
    "bench data --work": (
        lambda w, tok, out: ["bench", "data", "--source", w / "c.jsonl", "--work", out],
        "checkpoints/work",
    ),
}


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_every_writer_refuses_an_output_inside_a_runs_final_or_checkpoints(
    tmp_path,
    capsys,
    tokenizer_dir,  # noqa: F811 (the fixture)
    command,
    monkeypatch,
):
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    w = tmp_path / "inputs"
    write_jsonl(w / "c.jsonl", corpus_records(20))
    (w / "tiny.yaml").write_text(TINY_RUN)
    (w / "ladder.csv").write_text("size,tokens,flops,seed,metric\n")  # never read: --out is refused first
    run = create_output(tmp_path / "run", "pretrain")
    (run / "checkpoints").mkdir()
    argv, inside = WRITERS[command]
    out = run / inside
    if command == "data merge":  # its parts, prepared elsewhere and moved beside --out (OUT.shards)
        cfg = PrepareConfig(
            sources=(SourceConfig(location=str(w / "c.jsonl")),),
            tokenizer=str(tokenizer_dir),
            decontaminate=(),
        )
        for i in (0, 1):
            prepare(cfg, tmp_path / "merged", shard=Shard(i, 2), workers=1, progress=False)
        (run / "final").mkdir()
        shutil.move(tmp_path / "merged.shards", out.with_name("merged.shards"))
    before = world_state(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv(w, tokenizer_dir, out)])
    err = capsys.readouterr().err.strip().splitlines()
    part = run / inside.split("/")[0]
    assert exc.value.code == 2 and len(err) == 1, err
    assert (
        f"is or lies inside {part}, a folder of the run {run} that pretrain replaces on --resume" in err[0]
    ), err
    assert_unchanged(before)
