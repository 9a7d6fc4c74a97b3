"""`encoderlab pretrain`'s command line (issue 18, item 3): repeated flags append and a repeated key
is refused, a run too long for the machine asks for --yes, synthetic data is said out loud."""

from __future__ import annotations

import contextlib
import io
import shutil

import pytest
from tests.reliability.test_hostile_inputs import assert_one_line, cli

RECIPE = ["pretrain", "--recipe", "smoke-mlm", "--set", "progress=false"]
SMOKE = [*RECIPE, "--set", "layout.seq_len=16", "--set", "layout.micro_batch_size=2"]
"""The smoke recipe on rows of 16 tokens, 2 per micro-batch (its 12 steps in about a third of the CPU
time): these tests check what the command says and writes (resumes, notes, folders, refusals), which no
row size changes; grad_accum (2) and world_size (1) are the recipe's, as the world-size test reads them.
A test whose check depends on the row size (a prepared text's passes, a val split shorter than a row)
uses the recipe's own layout (RECIPE)."""


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One finished 12-step SMOKE run on synthetic tokens and what its command wrote on stderr (as `capsys`
    reads it: what went to `sys.stderr`). The tests that read a finished run share it (a full run is most of
    such a test's time); a test that resumes it resumes a copy (`_copy`)."""
    from encoderlab.cli import main

    run, err = tmp_path_factory.mktemp("finished") / "r", io.StringIO()
    with contextlib.redirect_stderr(err):
        main([*SMOKE, "--param", "steps=12", "--out", str(run)])
    return run, err.getvalue()


def _copy(run, to):
    shutil.copytree(run, to)  # copy2: the files' mtimes come along, as a test of "nothing changed" reads them
    return to


@pytest.mark.parametrize(
    "argv,flag,key",
    [
        (["--param", "steps=12", "--param", "steps=13"], "--param", "steps"),
        (["--param", "steps=12", "steps=13"], "--param", "steps"),
        (["--set", "seed=1", "--set", "seed=2"], "--set", "seed"),
    ],
)
def test_a_key_given_twice_is_refused(tmp_path, capsys, argv, flag, key):
    code, err = cli([*SMOKE, *argv, "--out", tmp_path / "o"], capsys)
    assert_one_line(code, err, rf"{flag} {key}= is given twice \('{key}=\w+' and '{key}=\w+'\); give it once")
    assert not (tmp_path / "o").exists()


def test_repeated_flags_keep_every_value(capsys):
    from encoderlab.cli import main

    capsys.readouterr()
    main([*SMOKE, "--param", "steps=12", "--param", "data=synthetic", "--set", "seed=3", "--set", "optim.lr=0.002",
          "--dry-run"])  # fmt: skip
    printed = capsys.readouterr().out
    assert "total_steps: 12" in printed and "\nseed: 3" in printed and "lr: 0.002" in printed


TOO_LONG = r"this run trains a \d+M-parameter model for 12 steps .*: about .* years .*pass --yes to start it"
"""The refusal of a run `too_long` gives."""


def too_long(tmp_path) -> list:
    """SMOKE for 12 steps at a peak of 1e-10 TFLOP/s: SMOKE's rows hold an eighth of the recipe's tokens, so its
    FLOPs need that low a peak to take years."""
    return [*SMOKE, "--param", "steps=12", "--set", "peak_tflops=1e-10", "--out", tmp_path / "o"]


def test_a_run_too_long_for_this_machine_asks_for_yes(tmp_path, capsys):
    argv = too_long(tmp_path)
    code, err = cli(argv, capsys)
    assert_one_line(code, err, TOO_LONG)
    assert "of 1e-10 TFLOP/s)" in err  # the peak it assumed, not "0.00 TFLOP/s" (a loaded CPU's read that)
    assert not (tmp_path / "o").exists()
    code, err = cli([*argv, "--yes"], capsys)
    assert code == 0, err


def test_a_paper_recipe_on_cpu_names_its_size_steps_and_time(tmp_path, capsys):
    argv = ["pretrain", "--recipe", "pfs-mlm", "--param", "data=synthetic", "micro_batch_size=1"]
    code, err = cli([*argv, "--set", "device=cpu", "--out", tmp_path / "o"], capsys)
    assert_one_line(
        code, err, r"trains a \d+M-parameter model for 42,000 steps \(99.09B tokens\): about [\d.,]+ years"
    )
    assert not (tmp_path / "o").exists()


def test_synthetic_tokens_are_said_on_stderr(finished):
    _, err = finished
    assert err.strip().splitlines() == [
        "encoderlab: note: training on synthetic tokens (random documents, no text); "
        "pass --param data=PREPARED_FOLDER to train on prepared text"
    ]


def test_a_run_longer_than_its_prepared_text_says_it_repeats_it(tmp_path, capsys):
    """A run reading more tokens than its data's unique tokens repeated the text with no word on screen
    (a log line at INFO when the second epoch began, which pretrain does not show)."""
    import json

    from tests.eval.conftest import make_tokenizer, vocabulary_texts

    from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
    from encoderlab.data.sources import SourceConfig

    text = vocabulary_texts()[0]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"text": f"{text} {i}"}) + "\n" for i in range(120)))
    make_tokenizer([text]).save_pretrained(tmp_path / "tok")
    cfg = PrepareConfig(
        sources=(SourceConfig(location=str(tmp_path / "c.jsonl")),),
        tokenizer=str(tmp_path / "tok"),
        decontaminate=(),
    )
    data = prepare(cfg, tmp_path / "data", workers=1, progress=False)
    unique = read_meta(data)["unique_tokens"]["train"]
    per_step = 8 * 64  # smoke-mlm: 8 rows of 64 tokens
    once, twice = unique // per_step, 2 * unique // per_step + 1
    assert once >= 12  # the smoke recipe's warmup and decay fit
    for steps in (once, twice):
        argv = [*RECIPE, "--param", f"steps={steps}", f"data={data}", "--until-step", "1"]
        code, err = cli([*argv, "--out", tmp_path / f"o{steps}"], capsys)
        assert code == 0, err
        notes = [line for line in err.splitlines() if "passes" in line]
        if steps == once:
            assert notes == []
        else:
            passes = steps * per_step / unique
            assert notes == [
                f"encoderlab: note: this run reads {steps * per_step:,} tokens of {data}, whose train split holds "
                f"{unique:,} unique tokens: {passes:.2f} passes, so it trains on the same text more than once; "
                "prepare more text to train on unique tokens only"
            ]


def test_until_step_prints_the_model_folder_it_wrote(tmp_path, capsys):
    """`--until-step` printed RUN/final, which a stopped run has not written; now the step's model."""
    from encoderlab.cli import main
    from encoderlab.model.hub import load_pretrained

    argv = [*SMOKE, "--param", "steps=12", "--set", "checkpoint.every=0", "--out", str(tmp_path / "run")]
    capsys.readouterr()
    main([*argv, "--until-step", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert "stopped after step 2 of 12 (continue with --resume)" in lines
    model = next(line.removeprefix("model: ") for line in lines if line.startswith("model: "))
    assert load_pretrained(model).model is not None and not (tmp_path / "run" / "final").exists()
    main([*argv, "--resume"])
    lines = capsys.readouterr().out.splitlines()
    final = next(line.removeprefix("final model: ") for line in lines if line.startswith("final model: "))
    assert final == str(tmp_path / "run" / "final") and load_pretrained(final).model is not None


def test_every_metrics_field_is_documented(finished):
    """docs/training.md lists `metrics.jsonl`'s fields; `flops` (the counted FLOPs that studies and
    `advise` read as a run's compute) was logged but not listed."""
    import json
    import re
    from pathlib import Path

    run, _ = finished
    logged = {k for line in (run / "metrics.jsonl").open() for k in json.loads(line)}
    doc = (Path(__file__).parents[2] / "docs" / "training.md").read_text()
    fields = doc[doc.index("`metrics.jsonl` fields:") :].split("\n\n")[0]
    assert logged - set(re.findall(r"`([^`]+)`", fields)) == set()


def test_an_until_step_past_the_end_trains_to_the_end_and_says_so(tmp_path, capsys):
    """`--until-step 100` on a 12-step run finished without a word, as if it had stopped where asked."""
    from encoderlab.cli import main

    main([*SMOKE, "--param", "steps=12", "--until-step", "100", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert "encoderlab: note: --until-step 100 is past the run's last step 12; it trains to the end" in err
    assert (tmp_path / "r" / "final").is_dir()


def test_a_runs_own_config_resumes_that_run_from_any_folder(tmp_path, monkeypatch, capsys):
    """`--config RUN/config.yaml --resume` (docs/training.md's "continue after a crash") read the saved
    relative `out` against the current folder: from any other folder it found nothing to resume there
    and started a new run, leaving the interrupted one unfinished."""
    from encoderlab.cli import main

    (tmp_path / "here").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    main(
        [*SMOKE, "--param", "steps=12", "--set", "checkpoint.every=0", "--out", "runs/a", "--until-step", "2"]
    )
    monkeypatch.chdir(tmp_path / "elsewhere")
    capsys.readouterr()
    main(["pretrain", "--config", "../here/runs/a/config.yaml", "--resume"])
    assert "holds no run to resume" not in capsys.readouterr().err
    assert list((tmp_path / "elsewhere").iterdir()) == []
    assert (tmp_path / "here" / "runs" / "a" / "final").is_dir()


@pytest.mark.parametrize("load", ["weights", "full"])
def test_a_run_without_its_final_model_is_refused_as_a_start_model(tmp_path, capsys, load):
    """`model.init=RUN` of a run stopped before its end (crashed, `--until-step`, still training) took its
    latest checkpoint without a word, so the new run began from a part-trained base, where `eval` and
    `export` of the same folder refuse it; now the same line, before anything is written."""
    from encoderlab.cli import main

    base, out = tmp_path / "base", tmp_path / "cpt"
    main(
        [
            *SMOKE,
            "--param",
            "steps=12",
            "--set",
            "checkpoint.every=0",
            "--out",
            str(base),
            "--until-step",
            "2",
        ]
    )
    code, err = cli([*SMOKE, "--param", "steps=12", "--set", f"model.init={base}", f"model.load={load}",
                     "--out", out], capsys)  # fmt: skip
    assert_one_line(
        code, err, rf"run {base} has no final model yet; pass one of its checkpoints, e.g. the latest, "
        rf"{base}/checkpoints/step_0000002"
    )  # fmt: skip
    assert not out.exists()


def test_dry_run_refuses_an_unknown_model_size_as_the_run_does(capsys):
    """`--dry-run` printed `size: huge` as a resolved config; the run refused it only once it built the
    model, so a config checked with --dry-run then failed where it was submitted."""
    code, err = cli([*SMOKE, "--set", "model.size=huge", "--dry-run"], capsys)
    assert_one_line(
        code, err, r"unknown model size 'huge'; valid: 1b, 210m, 610m, micro, mini, nano, small, tiny"
    )


@pytest.mark.parametrize(
    "spec,message",
    [
        ("abc", r"phase 0-mlm40: freeze spec 'abc' is not valid; write e\.g\. 0-7, 3, 0-3,9 or one of paper2-low, "
                r"paper2-mid, paper2-late"),
        ("0-9", r"phase 0-mlm40: freeze spec '0-9': layer 4 is out of range: the model has 4 layers \(0-3\)"),
    ],
)  # fmt: skip
def test_dry_run_refuses_a_freeze_spec_the_run_refuses(capsys, spec, message):
    """`--dry-run` printed `freeze: abc` (or layers `tiny` lacks) as a valid config; the run refused it only
    once it had built the model."""
    code, err = cli([*SMOKE, "--set", f"phases.0.freeze={spec}", "--dry-run"], capsys)
    assert_one_line(code, err, message)


def test_dry_run_checks_the_run_folder_as_the_run_does(tmp_path, capsys, monkeypatch):
    """`--dry-run` printed a config for an `--out` the run then refused: a file, a folder already holding a
    run (without --resume), a --resume whose saved config differs; it checked the config alone. It touches
    nothing either way, and a dry run of a valid resume or a new folder still prints the config."""
    from tests.reliability.treestate import assert_unchanged, world_state

    from encoderlab.cli import main

    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    run, afile = tmp_path / "r", tmp_path / "afile"
    main([*SMOKE, "--param", "steps=12", "--param", "data=synthetic", "--out", str(run), "--until-step", "6"])
    afile.write_text("notes")
    before = world_state(tmp_path)
    refused = [
        (["--out", afile], rf"--out {afile} is a file, not a folder; choose another --out"),
        (["--out", run], rf"{run} already holds a run; pass --resume to continue it or choose another --out"),
        (["--out", run, "--resume", "--set", "optim.lr=0.002"],
         rf"refusing to resume {run} with a changed config \(optim.lr: .* -> 0.002\); rerun with the original "
         r"settings or pass --force"),
    ]  # fmt: skip
    dry = [*SMOKE, "--param", "steps=12", "--param", "data=synthetic", "--dry-run"]
    for extra, message in refused:
        assert_one_line(*cli([*dry, *extra], capsys), message)
    for extra in (["--out", run, "--resume"], ["--out", tmp_path / "new"]):
        code, err = cli([*dry, *extra], capsys)
        assert code == 0, err
    assert_unchanged(before)


def test_resuming_a_finished_run_changes_nothing_and_says_so(tmp_path, capsys, monkeypatch, finished):
    """`--resume` of a run whose steps were all trained and whose final/ was written rewrote final/ (the
    same weights) and env.json (a new time); now it writes nothing, says the run is finished, exits 0."""
    from tests.reliability.treestate import assert_unchanged, world_state

    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    run = _copy(finished[0], tmp_path / "r")
    before = world_state(run, tmp_path)
    times = {p: p.stat().st_mtime_ns for p in run.rglob("*")}
    code, err = cli([*SMOKE, "--param", "steps=12", "--out", run, "--resume"], capsys)
    assert code == 0, err
    assert f"encoderlab: note: --resume: {run} is finished (step 12 of 12); nothing was changed" in err
    assert_unchanged(before)
    assert {p: p.stat().st_mtime_ns for p in run.rglob("*")} == times


def test_an_until_step_behind_a_finished_run_is_refused_without_saying_the_resume_succeeded(
    tmp_path, capsys, finished
):
    """`--resume --until-step N` of a finished run past step N printed "is finished (step 12 of 12); nothing
    was changed", a note of a resume that succeeded, then refused the --until-step: the refusal comes alone."""
    run = _copy(finished[0], tmp_path / "r")  # `data=synthetic` below: the recipe's default, the same config
    argv = [*SMOKE, "--param", "steps=12", "--param", "data=synthetic", "--out", run, "--resume"]
    code, err = cli([*argv, "--until-step", "6"], capsys)
    assert_one_line(code, err, rf"--until-step 6 is not after step 12, where {run} already is")
    assert "is finished" not in err


def test_a_resume_takes_checkpoint_and_validation_changes_and_names_them(tmp_path, capsys):
    """`checkpoint.every`, `checkpoint.keep_last` and `validation.*` change no training result (validation
    draws from its own generators in eval mode), yet a resume changing them was refused until --force,
    which lets any change by. They are taken now, and the resume's note names them."""
    from encoderlab.cli import main

    run = tmp_path / "r"
    main(
        [*SMOKE, "--param", "steps=12", "--set", "checkpoint.every=0", "--out", str(run), "--until-step", "2"]
    )
    changed = ["checkpoint.every=3", "checkpoint.keep_last=5", "validation.every=4", "validation.rows=8"]
    code, err = cli([*SMOKE, "--param", "steps=12", *[a for c in changed for a in ("--set", c)],
                     "--out", run, "--resume"], capsys)  # fmt: skip
    assert code == 0, err
    note = next(line for line in err.splitlines() if "taking changes" in line)
    assert note.startswith("encoderlab: note: --resume: taking changes that change no training result: ")
    for c in changed:
        assert c.partition("=")[0] + ":" in note
    assert (run / "final").is_dir()
    code, err = cli([*SMOKE, "--param", "steps=12", "--set", "seed=7", "--out", run, "--resume"], capsys)
    assert code == 2 and "changed config (seed: " in err  # a change of what is trained is still refused


def test_a_forced_resume_names_the_changes_it_trains_on_with(tmp_path, capsys):
    """`--resume --force` overwrote config.yaml with the changed config and said nothing: a mistyped `--set`
    went through unseen, and nothing told which settings the rest of the run trains with. A note names
    every forced change; the changes that train nothing differently keep their own note."""
    from encoderlab.cli import main

    run = tmp_path / "r"
    main([*SMOKE, "--param", "steps=12", "--out", str(run), "--until-step", "2"])
    code, err = cli([*SMOKE, "--param", "steps=12", "--set", "seed=7", "--set", "optim.lr=0.002",
                     "--set", "validation.rows=8", "--out", run, "--resume", "--force"], capsys)  # fmt: skip
    assert code == 0, err
    note = next(line for line in err.splitlines() if "--force" in line)
    assert note.startswith("encoderlab: note: --resume --force: training on with a changed config (")
    assert "seed: 0 -> 7" in note and "optim.lr: " in note and "validation." not in note
    assert "taking changes that change no training result: validation.rows: " in err
    assert "seed: 7" in (run / "config.yaml").read_text()


@pytest.mark.parametrize("where", ["config", "run"])
def test_a_relative_data_path_beside_the_config_or_in_the_run_folder_is_named_there(
    tmp_path, capsys, monkeypatch, where
):
    """A relative `data.path` is read from the working directory; run from another folder it said "is not a
    folder; run `encoderlab data prepare` first", of prepared data that lay beside the config file (or in
    the run folder). It now says where it is and how to write it, before anything is written."""
    from encoderlab.cli import main

    (tmp_path / "exp").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "exp")
    main([*SMOKE, "--set", "data.path=prepared", "--out", "run", "--dry-run"])
    (tmp_path / "exp" / "run.yaml").write_text(capsys.readouterr().out)
    (tmp_path / "exp" / ("prepared" if where == "config" else "run/prepared")).mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "elsewhere")
    out = "../exp/run" if where == "run" else "o"
    code, err = cli(["pretrain", "--config", "../exp/run.yaml", "--out", out], capsys)
    folder, fix = (
        ("../exp", "../exp/prepared") if where == "config" else ("../exp/run", "../exp/run/prepared")
    )
    name = "the config file's folder" if where == "config" else "the run folder"
    assert_one_line(
        code, err, rf"data.path prepared is not in the working directory, which it is read from, but in {name} "
        rf"\({folder}\); write {fix} or an absolute path$"
    )  # fmt: skip
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_an_until_step_below_one_is_the_only_line_though_the_data_has_a_note(tmp_path, capsys):
    """`--until-step 0` was checked by the trainer, after the data was read: on prepared data whose val
    split is shorter than a row the "no validation loss" note came first, and the refusal was not the one
    line it must be."""
    from tests.eval.conftest import make_tokenizer, vocabulary_texts

    from encoderlab.data.prepare import PrepareConfig, prepare
    from encoderlab.data.sources import SourceConfig

    (tmp_path / "c.txt").write_text("".join(f"text {i} about the red code\n" for i in range(60)))
    make_tokenizer(vocabulary_texts()).save_pretrained(tmp_path / "tok")
    source = SourceConfig(location=str(tmp_path / "c.txt"), txt_unit="line")  # val: 1 line, below a row
    cfg = PrepareConfig(sources=(source,), tokenizer=str(tmp_path / "tok"), decontaminate=())
    data = prepare(cfg, tmp_path / "data", workers=1, progress=False)
    argv = [*RECIPE, "--param", f"data={data}", "--until-step", "0", "--out", tmp_path / "o"]
    code, err = cli(argv, capsys)
    assert_one_line(
        code, err, r"--until-step must be >= 1 \(the step to stop after, with a checkpoint\), got 0$"
    )
    assert len(err.strip().splitlines()) == 1, err  # assert_one_line lets notes before the line pass
    assert not (tmp_path / "o").exists()


def test_a_resume_at_another_world_size_names_the_grad_accum_that_keeps_the_batch(
    tmp_path, capsys, monkeypatch
):
    """A run moved to more (or fewer) processes must set layout.world_size (a layout for another number of
    processes is refused); a grad_accum left as it was changes the global batch, and the refusal said
    only "rerun with the original settings" (what the new allocation cannot) "or pass --force" (which
    trains on with another global batch). It names the grad_accum that keeps the batch, which the resume
    then takes, or says that no whole one does. It touches nothing."""
    from tests.reliability.errors_doc import assert_printed_as_documented
    from tests.reliability.treestate import assert_unchanged, world_state

    from encoderlab.cli import main
    from encoderlab.train.runfolder import saved_config

    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    run = tmp_path / "run"
    main([*SMOKE, "--param", "steps=12", "--out", str(run), "--until-step", "2"])
    layout = saved_config(run)["layout"]
    batch = layout["world_size"] * layout["grad_accum"]
    before = world_state(tmp_path)
    resume = [*SMOKE, "--param", "steps=12", "--out", run, "--resume"]
    kept = rf"the run's global batch of {batch} micro-batches \(layout.world_size x layout.grad_accum\)"
    code, err = cli([*resume, "--set", "layout.world_size=2"], capsys)
    assert_one_line(code, err, rf"\(layout.world_size: 1 -> 2\); set layout.grad_accum={batch // 2} to keep "
                    rf"{kept} on 2 processes, or rerun with the original settings or pass --force$")  # fmt: skip
    assert_printed_as_documented("resume-at-another-world-size", err, tmp_path)
    code, err = cli([*resume, "--set", f"layout.world_size={batch + 1}"], capsys)
    assert_one_line(code, err, rf"; {kept} does not split over {batch + 1} processes; resume on a number of "
                    rf"processes that divides {batch}, or rerun")  # fmt: skip
    fixed = ["--set", "layout.world_size=2", "--set", f"layout.grad_accum={batch // 2}", "--dry-run"]
    code, err = cli([*resume, *fixed], capsys)  # the fix it names passes the resume's check
    assert code == 0, err
    assert_unchanged(before)


@pytest.mark.parametrize("start", ["scratch", "init"])
def test_resuming_a_finished_run_says_so_before_building_its_model(tmp_path, capsys, monkeypatch, start):
    """The finished note follows from the latest checkpoint's state.json and final/ alone, yet the resume built
    the whole run first (data, the model, the checkpoint's weights and optimizer state) and then said
    "nothing was changed". Counted: no model is built, from scratch (`build_model`) or from a checkpoint of
    an `init` run (`resumed_model`)."""
    import dataclasses

    import torch
    from tests.train.helpers import tiny_run

    import encoderlab.train.step as step
    from encoderlab.model import Encoder, ModelConfig
    from encoderlab.model.io import save_model_folder
    from encoderlab.train import pretrain
    from encoderlab.train.config import ModelSpec

    cfg = tiny_run(tmp_path / "run")
    if start == "init":
        save_model_folder(Encoder(ModelConfig.from_size("tiny", vocab_size=128)), tmp_path / "init")
        cfg = dataclasses.replace(cfg, model=ModelSpec(init=str(tmp_path / "init")))
    pretrain(cfg)
    built: list[str] = []
    for name in ("build_model", "resumed_model"):
        real = getattr(step, name)
        monkeypatch.setattr(
            step, name, lambda *a, real=real, name=name, **k: built.append(name) or real(*a, **k)
        )
    capsys.readouterr()
    torch.manual_seed(0)
    pretrain(cfg, resume=True)
    steps = cfg.plan()[-1].end
    assert f"{cfg.out} is finished (step {steps} of {steps}); nothing was changed" in capsys.readouterr().err
    assert built == []
