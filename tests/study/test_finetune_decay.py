"""Fine-tuning refuses an LR whose product with its task's `finetune.weight_decay` is past 1, before
anything runs, as pretraining refuses `optim.lr x optim.weight_decay` past 1 (one rule:
`config.decay_flips_weights`; `eval.taskruns.check_decay`).

Each step multiplies the decayed weights by 1 - lr x weight_decay: past 1 their sign flips every step,
and fine-tuning recorded NaN losses (in a study, after every run had pretrained). Here `eval --lrs`
over a task file, and a study's `eval.lrs`, are refused in one line before the model loads or the
study folder is made (the old code got past the check: the test stops it there with a sentinel).
"""

from __future__ import annotations

import pytest
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.study.study_fixtures import MINE, polarity_task_file

from encoderlab.cli import main
from encoderlab.study.files import load_study_file

DECAY = "finetune: {weight_decay: 2000}\n"
EVAL = (
    r"learning rate 0.001 x task polarity's finetune.weight_decay 2000 must be at most 1 \(each step "
    r"multiplies the weights by 1 - lr x weight_decay at the peak LR\); lower --lrs, or the task's "
    r"finetune.weight_decay \(e.g. 0.1\)"
)
STUDY = (
    r"study my-study: learning rate 0.002 x task polarity's finetune.weight_decay 2000 must be at most 1 "
    r"\(each step multiplies the weights by 1 - lr x weight_decay at the peak LR\); lower eval.lrs \(or "
    r"eval.checkpoint_lrs\), or the task's finetune.weight_decay \(e.g. 0.1\)"
)


class Ran(Exception):
    """Raised where the old code went on: loading the model, or running the study's nodes."""


def _stop(*args, **kwargs):
    raise Ran("ran")


def test_eval_refuses_an_lr_past_one_over_a_task_files_weight_decay(tmp_path, capsys, monkeypatch):
    """Was: the model loaded and fine-tuned, every step flipping the weights' sign: NaN losses recorded."""
    monkeypatch.setattr("encoderlab.eval.commands.load_eval_model", _stop)
    polarity_task_file(tmp_path)
    with open(tmp_path / "polarity.yaml", "a") as f:
        f.write(DECAY)
    (tmp_path / "model").mkdir()
    argv = ["eval", tmp_path / "model", "--task-file", tmp_path / "polarity.yaml", "--out", tmp_path / "e"]
    code, err = cli([*argv, "--lrs", "1e-4", "1e-3", "--seeds", "0"], capsys)
    assert_one_line(code, err, EVAL)
    assert not (tmp_path / "e").exists()
    assert_printed_as_documented("eval-lr-times-weight-decay", err, tmp_path)
    with pytest.raises(Ran):  # an LR whose product stays at most 1 goes on
        cli([*argv, "--lrs", "5e-4", "--seeds", "0"], capsys)


def test_a_study_refuses_its_lrs_over_a_task_files_weight_decay_before_anything_runs(
    tmp_path, capsys, monkeypatch
):
    """Was: refused by no check; each eval node fine-tuned to NaN losses after the runs had pretrained."""
    from fake_study import tiny_corpus

    monkeypatch.setattr("encoderlab.study.runner.run_graph", _stop)
    tiny_corpus(tmp_path / "corpus.jsonl", 300)
    polarity_task_file(tmp_path)
    with open(tmp_path / "polarity.yaml", "a") as f:
        f.write(DECAY)
    (tmp_path / "my-study.yaml").write_text(MINE)
    argv = ["study", "run", tmp_path / "my-study.yaml", "--out", tmp_path / "out", "--no-fetch"]
    code, err = cli(argv, capsys)
    assert_one_line(code, err, STUDY)
    assert not (tmp_path / "out").exists()
    assert_printed_as_documented("study-lr-times-weight-decay", err, tmp_path)
    (tmp_path / "my-study.yaml").write_text(MINE.replace("lrs: [0.002]", "lrs: [0.0005]"))
    assert load_study_file(tmp_path / "my-study.yaml").eval.lrs == (0.0005,)
    with pytest.raises(Ran):  # its product 1: allowed, and the study goes on to its nodes
        cli(argv, capsys)


def test_study_plan_refuses_the_lrs_study_run_refuses_in_the_same_line(tmp_path, capsys):
    """Was: `study plan` printed the plan and exited 0 (it checked no fine-tuning LR), and `study run`
    of the same file was refused. Now the plan is refused first, in the run's words, printing nothing."""
    from fake_study import tiny_corpus

    tiny_corpus(tmp_path / "corpus.jsonl", 300)
    polarity_task_file(tmp_path)
    with open(tmp_path / "polarity.yaml", "a") as f:
        f.write(DECAY)
    (tmp_path / "my-study.yaml").write_text(MINE)
    capsys.readouterr()
    with pytest.raises(SystemExit) as refused:
        main(["study", "plan", str(tmp_path / "my-study.yaml")])
    out, err = capsys.readouterr()
    assert out == ""  # refused before the plan's first line
    assert_one_line(refused.value.code, err, STUDY)
    assert_printed_as_documented("study-lr-times-weight-decay", err, tmp_path)
    (tmp_path / "my-study.yaml").write_text(MINE.replace("lrs: [0.002]", "lrs: [0.0005]"))
    main(["study", "plan", str(tmp_path / "my-study.yaml")])  # its product 1: planned
    assert "study my-study at scale custom: 2 pretraining runs" in capsys.readouterr().out
