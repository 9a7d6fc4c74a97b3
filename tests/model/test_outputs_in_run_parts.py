"""eval and every analyze command refuse an --out inside a run's `final/` or `checkpoints/`, as export does.

The run's next `--resume` replaces `final/` and deletes from `checkpoints/` whatever is no complete
checkpoint: results written there were lost without a word. One check (`runlayout.check_outside_run_parts`)
serves all of them; each case here goes through `main`, so a command that stops calling it fails.
"""

from __future__ import annotations

import pytest
from model_fixtures import make_model

from encoderlab.cli import main
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
