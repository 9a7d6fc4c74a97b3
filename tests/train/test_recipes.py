"""Recipes follow the papers' protocols; the CLI reports bad input in one line."""

from __future__ import annotations

import json
import math

import pytest
import torch

from encoderlab.cli import main
from encoderlab.errors import UserError
from encoderlab.objectives import CLM, MLM
from encoderlab.train import RECIPES, build_recipe
from encoderlab.train.distributed import World
from encoderlab.train.freeze import parse_layers
from encoderlab.train.recipes import recipe_params
from encoderlab.train.schedule import Schedule


@pytest.mark.parametrize("name", [n for n in RECIPES if n != "cpt-mlm"])
def test_every_recipe_builds_a_valid_config(name):
    cfg = build_recipe(name)
    assert cfg.steps > 0 and cfg.plan()


def test_cpt_needs_a_source_and_takes_the_load_mode():
    with pytest.raises(UserError, match="--param init="):
        build_recipe("cpt-mlm")
    cfg = build_recipe("cpt-mlm", ["init=runs/x", "load=full"])
    assert cfg.model.init == "runs/x" and cfg.model.load == "full"
    with pytest.raises(UserError, match="load"):
        build_recipe("cpt-mlm", ["init=runs/x", "load=everything"])


def test_pfs_clm_mlm_is_one_wsd_schedule_across_both_phases():
    cfg = build_recipe("pfs-clm-mlm", ["clm_fraction=0.25", "steps=42000"])
    clm, mlm = cfg.plan()
    assert isinstance(clm.phase.objective, CLM) and clm.steps == 10_500
    assert isinstance(mlm.phase.objective, MLM) and mlm.phase.objective.mask_ratio == 0.4
    assert cfg.layout.tokens_per_step == 2_359_296 and cfg.optim.betas == (0.9, 0.95)
    curve = [p.phase.schedule.factor(s, p.steps) for p in (clm, mlm) for s in range(p.steps)]
    single = Schedule(kind="wsd", warmup=2000, decay=2000)
    assert curve == pytest.approx([single.factor(s, 42_000) for s in range(42_000)])
    assert not mlm.phase.reset_optimizer


def test_pfs_endpoints_are_single_phase_runs():
    assert [type(p.phase.objective) for p in build_recipe("pfs-mlm", ["ratio=0.2"]).plan()] == [MLM]
    assert [type(p.phase.objective) for p in build_recipe("pfs-clm").plan()] == [CLM]
    with pytest.raises(UserError, match="shorter than the warmup"):
        build_recipe("pfs-clm-mlm", ["clm_fraction=0.01"])


def test_a_clm_phase_shorter_than_the_warmup_names_a_fix_the_recipe_takes():
    """smoke-clm-mlm takes no `warmup` (and `--set` applies after the recipe), yet the refusal said only
    "shorten warmup": its fix is a parameter the recipe does take."""
    with pytest.raises(UserError) as refused:
        build_recipe("smoke-clm-mlm", ["clm_fraction=0.05"])
    assert "raise clm_fraction or steps" in str(refused.value)
    assert set(recipe_params("smoke-clm-mlm")) >= {"clm_fraction", "steps"}


@pytest.mark.parametrize("name,first", [("detour", CLM), ("detour-baseline", MLM)])
def test_detour_and_its_baseline_match_paper2(name, first):
    cfg = build_recipe(name)
    p1, p2 = cfg.plan()
    assert isinstance(p1.phase.objective, first)
    modernbert = dict(replacement="80-10-10", selection="bernoulli")  # both arms, both MLM phases
    if first is MLM:
        assert p1.phase.objective == MLM(mask_ratio=0.30, **modernbert)
    assert p2.phase.objective == MLM(mask_ratio=0.15, **modernbert)
    assert p2.phase.tokens == 1_000_000_000 and p1.phase.tokens == 10_000_000_000
    assert p1.steps == math.ceil(1e10 / (384 * 8192)) and p2.steps == math.ceil(1e9 / (384 * 8192))
    assert p2.phase.schedule == Schedule(kind="1-sqrt", end_fraction=0.1)
    assert p1.phase.schedule.warmup == math.ceil(1e8 / (384 * 8192))
    assert not p2.phase.reset_optimizer
    assert cfg.optim.betas == (0.9, 0.98) and cfg.optim.eps == 1e-6 and cfg.optim.weight_decay == 1e-5
    assert cfg.optim.kind == "decoupled_adamw" and not cfg.optim.decay_norms_and_biases
    assert (cfg.seed, cfg.data.seed) == (17, 42)


def test_the_masking_mode_is_recorded_in_the_resolved_config(tmp_path):
    from encoderlab.config import save_yaml

    save_yaml(build_recipe("detour-baseline"), tmp_path / "config.yaml")
    text = (tmp_path / "config.yaml").read_text()
    assert text.count("selection: bernoulli") == 2 and text.count("replacement: 80-10-10") == 2
    save_yaml(build_recipe("pfs-mlm"), tmp_path / "p1.yaml")
    text = (tmp_path / "p1.yaml").read_text()
    assert "selection: bernoulli" in text and "replacement: mask" in text


@pytest.mark.parametrize("name", ["pfs-mlm", "pfs-clm-mlm", "cpt-mlm"])
def test_paper1_recipes_train_as_optimus_does(name):
    """Paper 1's appendix and Optimus' defaults (optimus/trainer/configuration/train.py, pretrain.py, data.py):
    torch AdamW over every parameter, (0.9, 0.95), eps 1e-5, wd 0.1, clip 1.0, peak 5e-4, WSD from 0 and
    down to 0, bf16, 2,359,296 tokens per step, MLM-40 drawn per position with every pick masked."""
    cfg = build_recipe(name, ["init=runs/x"] if name == "cpt-mlm" else [])
    o = cfg.optim
    assert (o.kind, o.lr, o.betas, o.eps, o.weight_decay, o.clip) == (
        "adamw",
        5e-4,
        (0.9, 0.95),
        1e-5,
        0.1,
        1.0,
    )
    assert o.decay_norms_and_biases and cfg.precision == "bf16"
    assert cfg.layout.tokens_per_step == 2_359_296
    mlm = [p.phase for p in cfg.plan() if isinstance(p.phase.objective, MLM)][-1]
    assert mlm.objective == MLM(mask_ratio=0.4, selection="bernoulli", replacement="mask")
    assert mlm.schedule.kind == "wsd" and mlm.schedule.end_fraction == 0.0 and mlm.schedule.decay > 0
    if name != "cpt-mlm":
        first = cfg.plan()[0].phase.schedule
        assert first.warmup == 2000 and mlm.schedule.decay == 2000 and cfg.steps == 42_000


def test_detour_and_baseline_share_data_and_compute():
    a, b = build_recipe("detour"), build_recipe("detour-baseline")
    assert a.data == b.data and a.layout == b.layout and a.steps == b.steps


def test_freeze_runs_of_the_paper():
    low, mid, low_decay = (build_recipe(f"detour-freeze-{n}") for n in ("low", "mid", "low-decay"))
    assert [p.freeze for p in low.phases] == ["paper2-low", ""]
    assert [p.freeze for p in mid.phases] == ["paper2-mid", ""]
    assert [p.freeze for p in low_decay.phases] == ["", "paper2-low"]  # frozen during the decay only
    assert all(cfg.steps == build_recipe("detour").steps for cfg in (low, mid, low_decay))
    assert [p.freeze for p in build_recipe("detour-baseline").phases] == ["", ""]
    assert "freeze_decay" not in recipe_params("detour-freeze-low-decay")


def test_freeze_low_during_the_decay_keeps_those_blocks_bit_identical(tmp_path):
    """The recipe on `tiny` (4 blocks, low group {0}): block 0 trains in the CLM phase, then stays
    bit-identical through the decay although the decoupled AdamW moments and decay are carried."""
    import dataclasses

    from safetensors.torch import load_file

    from encoderlab.train import pretrain

    params = ["size=tiny", "data=synthetic", "seq_len=64", "global_batch=8", "micro_batch_size=4"]
    cfg = build_recipe(
        "detour-freeze-low-decay", [*params, "tokens=2048", "decay_fraction=0.5", "warmup_tokens=512"]
    )
    cfg = dataclasses.replace(cfg, precision="fp32", out=str(tmp_path / "run"), device="cpu", progress=False)
    assert cfg.optim.kind == "decoupled_adamw" and [p.steps for p in cfg.plan()] == [4, 2]
    pretrain(cfg)
    before = load_file(str(tmp_path / "run/checkpoints/step_0000004/model/model.safetensors"))
    after = load_file(str(tmp_path / "run/final/model.safetensors"))
    block = {i: [k for k in before if k.startswith(f"layers.{i}.")] for i in (0, 1)}
    assert block[0] and all(torch.equal(before[k], after[k]) for k in block[0])
    assert any(not torch.equal(before[k], after[k]) for k in block[1])


def test_paper2_groups_are_the_papers_on_22_layers_and_proportional_elsewhere():
    def groups(n):
        return [parse_layers(f"paper2-{g}", n) for g in ("low", "mid", "late")]

    r = lambda a, b: tuple(range(a, b))  # noqa: E731
    assert groups(22) == [r(0, 8), r(8, 15), r(15, 22)]  # the paper's (thesis ch. 5)
    assert groups(28) == [r(0, 10), r(10, 19), r(19, 28)]  # ModernBERT-large: ours
    assert groups(12) == [r(0, 4), r(4, 8), r(8, 12)]
    assert groups(4) == [(0,), (1, 2), (3,)] and groups(3) == [(0,), (1,), (2,)]
    for n in range(3, 60):  # every depth: three non-empty contiguous groups covering every layer
        flat = [i for g in groups(n) for i in g]
        assert flat == list(range(n)) and all(groups(n))
    with pytest.raises(UserError, match="need at least 3 layers"):
        parse_layers("paper2-low", 2)
    assert parse_layers("0-2,5", 6) == (0, 1, 2, 5)
    for bad in ("0-9", "a-b", "3-1"):
        with pytest.raises(UserError, match="freeze spec"):
            parse_layers(bad, 6)


@pytest.mark.parametrize("spec", ["\u0661", "0-\u0663", "\uff11"])  # Arabic-Indic 1, 0-3; fullwidth 1
def test_a_layer_spec_takes_ascii_digits_only(spec):
    """`\\d` matched any Unicode digit: '\u0661' froze layer 1 while the config said '\u0661'."""
    with pytest.raises(UserError, match="is not valid; write e.g. 0-7"):
        parse_layers(spec, 6)


def _err(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1
    return err[0]


def test_cli_errors_are_one_line_listing_valid_names(capsys, tmp_path):
    assert "valid: cpt-mlm, detour" in _err(capsys, ["pretrain", "--recipe", "nope", "--out", str(tmp_path)])
    assert "valid: betas, clip" in _err(capsys, ["pretrain", "--recipe", "smoke-mlm", "--set", "optim.lrr=1"])
    assert "valid: data, steps" in _err(capsys, ["pretrain", "--recipe", "smoke-mlm", "--param", "x=1"])
    assert "not total_steps=7" in _err(
        capsys, ["pretrain", "--recipe", "smoke-mlm", "--set", "total_steps=7"]
    )
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("phases: [\n")
    assert "not valid YAML" in _err(capsys, ["pretrain", "--config", str(bad_yaml), "--out", str(tmp_path)])


def test_cli_runs_a_smoke_recipe_end_to_end_and_reloads_its_config(capsys, tmp_path):
    out = tmp_path / "run"
    main(
        [
            "pretrain",
            "--recipe",
            "smoke-clm-mlm",
            "--param",
            "steps=16",
            "--set",
            "progress=false",
            "layout.seq_len=32",
            "checkpoint.every=0",
            "--out",
            str(out),
        ]
    )
    assert f"final model: {out / 'final'}" in capsys.readouterr().out
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["objective"] for r in rows] == ["clm"] * 4 + ["mlm40"] * 12
    assert rows[3]["loss"] < rows[0]["loss"] - 0.2  # CLM learns within 4 steps (from ln 512 = 6.24)
    # the saved config is a valid --config, and resuming a finished run changes nothing
    main(["pretrain", "--config", str(out / "config.yaml"), "--resume"])
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 16


@pytest.mark.parametrize("rank,printed", [("0", True), ("1", False)])
def test_pretrain_command_prints_the_run_summary_on_rank_0_only(capsys, tmp_path, monkeypatch, rank, printed):
    import encoderlab.train.cli as train_cli

    monkeypatch.setenv("RANK", rank)  # as torchrun sets them for each process
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(
        train_cli, "join_world", World
    )  # the ranks' agreement is not under test: one process's
    monkeypatch.setattr(train_cli, "pretrain", lambda cfg, **kw: tmp_path)
    train_cli.pretrain_command(recipe="smoke-mlm", out=str(tmp_path))
    assert ("run folder:" in capsys.readouterr().out) is printed


@pytest.mark.parametrize("name", ["smoke-mlm", "smoke-clm-mlm", "pfs-mlm"])
def test_too_few_steps_name_the_parameter_and_its_range(capsys, name):
    line = _err(capsys, ["pretrain", "--recipe", name, "--param", "steps=-1", "--dry-run"])
    assert "steps must be at least warmup + decay" in line and "got -1" in line


@pytest.mark.parametrize("name", [n for n in RECIPES if n != "cpt-mlm"] + ["cpt-mlm"])
def test_each_recipes_scaling_rule_gives_its_own_defaults_at_its_default_length(name):
    """The fractions a recipe scales by are its own warmup and decay over its own length."""
    from encoderlab.train.recipe_scaling import SCALING
    from encoderlab.train.recipes import recipe_defaults

    rule, defaults = SCALING[name], recipe_defaults(name)
    if rule.length == "steps":
        got = rule.params(defaults["steps"], tokens_per_step=1)
        assert got == {k: defaults[k] for k in got}
    else:
        tokens = defaults["tokens"]
        got = rule.params(tokens, tokens_per_step=1)
        assert got == {k: defaults[k] for k in got}


def test_the_recipes_listing_gives_each_a_whole_sentence_in_one_column(capsys):
    """`encoderlab recipes` printed the first docstring line, which for `detour` stopped mid-sentence
    ("...optimizer kept);"), and `detour-freeze-low-decay` pushed its text out of the column."""
    main(["recipes"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 * len(RECIPES)
    starts = set()
    for name, line, params in zip(RECIPES, lines[::2], lines[1::2], strict=True):
        assert line.startswith(name + " ") and line.rstrip().endswith((".", ")")), line
        starts.add(len(line) - len(line[len(name) :].lstrip()))
        assert params.lstrip().startswith("params: ") and len(params) - len(params.lstrip()) in starts
    assert len(starts) == 1, "every description starts in one column"


@pytest.mark.parametrize("name", ["smoke-detour", "detour"])
def test_tokens_too_few_for_the_detours_warmup_name_a_fix_the_recipe_takes(name):
    """`--param tokens=100` of smoke-detour said "warmup 4 + decay 0 exceed the phase's 1 steps; shorten them
    or lengthen the phase": smoke-detour has no warmup parameter to shorten. The line names the tokens that
    fit the warmup, and lowering warmup_tokens only where the recipe takes it; those tokens then build."""
    import re

    from encoderlab.train.recipes import make_recipe, recipe_defaults

    with pytest.raises(UserError) as exc:
        make_recipe(name, {"tokens": 100})
    message = str(exc.value)
    assert "shorten" not in message
    least = int(re.search(r"raise tokens to at least (\d+) \(", message).group(1))
    takes_warmup = "warmup_tokens" in recipe_defaults(name)
    assert message.endswith(", or lower warmup_tokens") == takes_warmup
    cfg = make_recipe(name, {"tokens": least})  # builds, its warmup filling the first phase
    assert cfg.plan()[0].steps == cfg.phases[0].schedule.warmup
    with pytest.raises(UserError, match="raise tokens to at least"):  # a step fewer is still refused
        make_recipe(name, {"tokens": least - cfg.layout.tokens_per_step})


def test_a_run_of_more_rows_than_int64_counts_names_its_steps():
    """`--param steps=10**24` said "data.step_offset must be below -9999...; set it to the base run's step
    count": no offset can be negative, and steps were the fix."""
    cfg = build_recipe("smoke-mlm")
    rows = cfg.layout.global_batch_size
    steps = 2**63 // rows + 1
    with pytest.raises(
        UserError,
        match=rf"^recipe smoke-mlm with --param steps={steps}: a run of {steps} steps of {rows} rows has more "
        "rows than int64 counts; ",
    ):
        build_recipe("smoke-mlm", [f"steps={steps}"])
    assert build_recipe("smoke-mlm", [f"steps={(2**63 - 1) // rows}"]).steps == (2**63 - 1) // rows
