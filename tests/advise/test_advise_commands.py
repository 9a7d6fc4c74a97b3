"""`encoderlab advise` end to end on a ladder file: table, advice.json, figure; bad input is one line."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest
from tests.advise.advise_fixtures import one_line_refusal, write_ladder_csv

from encoderlab.advise.reach import times
from encoderlab.advise.synthetic import synthetic_ladder
from encoderlab.cli import main


@pytest.fixture(scope="module")
def ladder_csv(tmp_path_factory):
    syn = synthetic_ladder(np.random.default_rng(3), crossover=3.0)
    return write_ladder_csv(syn, tmp_path_factory.mktemp("ladder") / "ladder.csv"), syn


def test_advise_prints_the_table_and_saves_advice_and_figure(ladder_csv, tmp_path, capsys):
    path, syn = ladder_csv
    out = tmp_path / "advice"
    argv = [
        "advise",
        str(path),
        "--target-size",
        str(syn.target_params),
        "--target-tokens",
        str(syn.target_tokens),
    ]
    main([*argv, "--out", str(out), "--bootstrap", "100"])
    printed = capsys.readouterr().out
    assert "recommendation at the target: MLM-40 (method: extrapolation; forecast at " in printed
    assert "P(best)" in printed and "CLM leads below C =" in printed and "backtest:" in printed
    advice = json.loads((out / "advice.json").read_text())
    assert advice["recommendation"] == "MLM-40" and advice["n_boot"] == 100 and advice["notes"] == []
    assert {p["schedule"] for p in advice["predictions"]} == {"MLM-40", "CLM"}
    truth = {s.name: v for s, v in syn.true_values().items()}
    for p in advice["predictions"]:
        assert abs(p["value"] - truth[p["schedule"]]) < 0.05
    assert (out / "advise.png").stat().st_size > 10_000
    curves = list(csv.DictReader((out / "curves.csv").open()))
    assert {r["schedule"] for r in curves} == {"MLM-40", "CLM"} and len(curves) == 240
    assert len(json.loads((out / "runs.json").read_text())) == len(syn.ladder.observations)
    main([*argv, "--out", str(out), "--bootstrap", "100"])  # its own folder: rewritten
    assert json.loads((out / "advice.json").read_text()) == advice


def test_seed_noise_reaches_the_bootstrap_of_a_one_seed_ladder(tmp_path, capsys):
    syn = synthetic_ladder(np.random.default_rng(8), seeds=(1, 1), crossover=0.1)
    path = write_ladder_csv(syn, tmp_path / "one_seed.csv")
    argv = ["advise", str(path), "--target-flops", str(syn.target_flops), "--bootstrap", "100"]
    assert "two pretraining seeds" in one_line_refusal(capsys, [*argv, "--out", str(tmp_path / "refused")])
    main([*argv, "--seed-noise", "0.005", "--out", str(tmp_path / "advice")])
    advice = json.loads((tmp_path / "advice" / "advice.json").read_text())
    assert advice["seed_noise"] == 0.005 and advice["recommendation"] == "MLM-40"


def test_advise_does_not_import_torch_for_a_ladder_file(ladder_csv, tmp_path):
    path, _ = ladder_csv
    code = (
        "import sys; from encoderlab.cli import main; "
        f"main(['advise', {str(path)!r}, '--target-flops', '1e19', '--out', {str(tmp_path / 'a')!r}, '--bootstrap', '50']); "
        "assert 'torch' not in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "extra,message",
    [
        ([], "give the target as --target-flops C, or as --target-size N with --target-tokens D"),
        (["--target-flops", "1e19", "--target-size", "1e8"], "give the target as"),
        (["--target-size", "1e8"], "give the target as"),
        (["--target-flops", "-5"], "--target-flops must be a positive number"),
        (["--target-flops", "1e19", "--bootstrap", "10"], "--bootstrap 10 is too few"),
        (["--target-flops", "1e19", "--bootstrap", "10000000000"], "use 10000 or fewer"),  # a MemoryError
        (["--target-flops", "1e19", "--confidence", "1.5"], "--confidence must be in (0.5, 1)"),
        (["--target-flops", "1e19", "--seed-noise", "inf"], "--seed-noise must be a finite positive"),
        (["--target-flops", "1e19", "--seed-noise", "0"], "--seed-noise must be a finite positive"),
        (
            ["--target-flops", "1e19", "--metric", "score"],
            "is score better lower or higher? say so with --better",
        ),
        (["--target-flops", "1e19", "--metric", "loss"], "training losses of CLM and MLM are different"),
        (  # a typo of the default metric: was asked only for its direction
            ["--target-flops", "1e19", "--metric", "val/mlm_15"],
            "--metric val/mlm_15: did you mean val/mlm15? otherwise, is val/mlm_15 better lower or higher?",
        ),
        (["--target-flops", "1e19", "--metric", "acc", "--better", "higher"], "give its ceiling"),
    ],
)
def test_bad_options_are_one_line_and_create_nothing(ladder_csv, tmp_path, capsys, extra, message):
    path, _ = ladder_csv
    out = tmp_path / "advice"
    err = one_line_refusal(capsys, ["advise", str(path), "--out", str(out), *extra])
    assert message in err and not out.exists()


@pytest.mark.parametrize("metric", ["val/clm", "val/mlm"])
def test_a_loss_training_logs_is_not_called_a_typo_of_val_mlm15(ladder_csv, tmp_path, capsys, metric):
    """val/clm and val/mlm are held-out losses every run logs, near val/mlm15 by spelling alone: the line asked
    "did you mean val/mlm15?" of a metric that was meant; it asks only for the direction."""
    path, _ = ladder_csv
    out = tmp_path / "advice"
    argv = ["advise", str(path), "--out", str(out), "--target-flops", "1e19", "--metric", metric]
    err = one_line_refusal(capsys, argv)
    assert f"is {metric} better lower or higher?" in err and "did you mean" not in err, err


def test_bad_inputs_are_one_line_and_create_nothing(ladder_csv, tmp_path, capsys):
    path, _ = ladder_csv
    out = tmp_path / "advice"
    target = ["--target-flops", "1e19", "--out", str(out)]
    plain = tmp_path / "plain"
    plain.mkdir()
    assert "not a study (no graph.json)" in one_line_refusal(capsys, ["advise", str(plain), *target])
    assert "missing column acc" in one_line_refusal(
        capsys, ["advise", str(path), *target, "--metric", "acc", "--better", "lower"]
    )
    one = tmp_path / "one.csv"
    one.write_text(
        "clm_share,mask_ratio,params,tokens,seed,val/mlm15\n0,0.4,1e6,2e7,0,3.5\n0,0.4,2e6,4e7,0,3.1\n"
    )
    assert "one schedule (MLM-40)" in one_line_refusal(capsys, ["advise", str(one), *target])
    assert not out.exists()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    err = one_line_refusal(capsys, ["advise", str(path), "--target-flops", "1e19", "--out", str(foreign)])
    assert "encoderlab did not create" in err and [p.name for p in foreign.iterdir()] == ["keep.txt"]
    err = one_line_refusal(capsys, ["advise", str(path), "--target-flops", "1e19", "--out", str(path.parent)])
    assert "lies inside the source" in err


def test_a_far_target_is_warned_about_above_the_recommendation(ladder_csv, tmp_path, capsys):
    path, syn = ladder_csv
    far = syn.largest_rung * 1e6
    main(
        ["advise", str(path), "--target-flops", str(far), "--bootstrap", "50", "--out", str(tmp_path / "far")]
    )
    lines = capsys.readouterr().out.splitlines()
    # said "at C = ... FLOPs (C = ... FLOPs)"
    assert lines[0].startswith(f"val/mlm15 (lower is better) at C = {far:.3g} FLOPs; 50 bootstrap replicates")
    at = next(i for i, line in enumerate(lines) if line.startswith("recommendation at the target"))
    assert lines[at - 1].startswith(
        "warning: the target is 1,000,000x the compute of the ladder's largest rung"
    )
    advice = json.loads((tmp_path / "far" / "advice.json").read_text())
    assert advice["warnings"] == [lines[at - 1][9:]]
    # the recommendation line itself says how far it is carried (it read as firm at 1,000,000x as at 2.5x)
    assert lines[at].endswith(
        "(method: extrapolation; forecast at 1,000,000x the ladder's largest compute; no run measured there)"
    )
    assert advice["past_ladder"] == {"compute": pytest.approx(1e6), "params": None, "tokens": None}


def test_the_recommendation_says_how_far_past_the_ladder_in_compute_n_and_d(ladder_csv, tmp_path, capsys):
    path, syn = ladder_csv
    target = ["--target-size", str(syn.target_params), "--target-tokens", str(syn.target_tokens)]
    main(["advise", str(path), *target, "--bootstrap", "50", "--out", str(tmp_path / "nd")])
    (line,) = [
        x for x in capsys.readouterr().out.splitlines() if x.startswith("recommendation at the target")
    ]
    advice = json.loads((tmp_path / "nd" / "advice.json").read_text())
    past, runs = advice["past_ladder"], syn.ladder.observations
    expected = {
        "compute": advice["target_compute"] / max(o.compute for o in runs),
        "params": syn.target_params / max(o.params for o in runs),
        "tokens": syn.target_tokens / max(o.tokens for o in runs),
    }
    assert past == pytest.approx(expected)
    assert line.endswith(
        f"forecast at {times(expected['compute'])} the ladder's largest compute, {times(expected['params'])} its "
        f"largest N and {times(expected['tokens'])} its largest D; no run measured there)"
    )


def _with_measured_flops(path, measured):
    """The ladder file at `path` with every run's measured FLOPs (a seed's a few percent above another's, a
    CLM run's above an MLM run's), written to `measured`; and its rows."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        clm = float(r["clm_share"])
        r["flops"] = 6 * float(r["params"]) * float(r["tokens"]) * (1.2 + 0.1 * clm + 0.03 * int(r["seed"]))
    with open(measured, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return measured, rows


def test_a_target_given_as_n_and_d_says_its_compute_is_6nd_scaled_by_the_measured_flops(
    ladder_csv, tmp_path, capsys
):
    """The C printed of a target given as (N, D) is 6ND times the ladder's measured FLOPs per 6ND (each
    schedule's median over its runs, then their median), and was printed bare: a user checking 6ND found it
    off by that ratio. Where no run logged FLOPs it is 6ND itself, and says so."""
    path, syn = ladder_csv
    n, d = syn.target_params, syn.target_tokens
    target = ["--target-size", str(n), "--target-tokens", str(d), "--bootstrap", "50"]
    measured, rows = _with_measured_flops(path, tmp_path / "measured.csv")
    main(["advise", str(measured), *target, "--out", str(tmp_path / "m")])
    first = capsys.readouterr().out.splitlines()[0]
    per_schedule = [
        np.median(
            [
                float(r["flops"]) / (6 * float(r["params"]) * float(r["tokens"]))
                for r in rows
                if r["clm_share"] == s
            ]
        )
        for s in dict.fromkeys(r["clm_share"] for r in rows)
    ]
    ratio = float(np.median(per_schedule))
    advice = json.loads((tmp_path / "m" / "advice.json").read_text())
    assert advice["flops_per_6nd"] == pytest.approx(ratio, rel=1e-12)
    assert advice["target_compute"] == pytest.approx(6 * n * d * ratio, rel=1e-12)
    assert (
        f"(C = {6 * n * d * ratio:.3g} FLOPs: 6ND x {ratio:.3g}, the ladder's measured FLOPs per 6ND); "
        in first
    )
    main(["advise", str(path), *target, "--out", str(tmp_path / "p")])
    assert f"(C = 6ND = {6 * n * d:.3g} FLOPs); " in capsys.readouterr().out.splitlines()[0]
    main(["advise", str(path), "--target-flops", "1e20", "--bootstrap", "50", "--out", str(tmp_path / "c")])
    assert (
        capsys.readouterr().out.splitlines()[0].startswith("val/mlm15 (lower is better) at C = 1e+20 FLOPs; ")
    )


def test_how_far_past_the_ladder_is_over_its_largest_runs_compute_not_a_rungs_seed_mean(
    ladder_csv, tmp_path, capsys
):
    """Seeds of one rung that logged other FLOPs: the line said how far the target lies past the largest rung's
    seed mean (31,476x) while it names, as docs/advise.md does, the ladder's largest compute (31,474x)."""
    path, syn = ladder_csv
    measured, rows = _with_measured_flops(path, tmp_path / "measured.csv")
    far = syn.target_flops * 100
    main(
        [
            "advise",
            str(measured),
            "--target-flops",
            str(far),
            "--bootstrap",
            "50",
            "--out",
            str(tmp_path / "a"),
        ]
    )
    (line,) = [
        x for x in capsys.readouterr().out.splitlines() if x.startswith("recommendation at the target")
    ]
    expected = far / max(float(r["flops"]) for r in rows)
    assert json.loads((tmp_path / "a" / "advice.json").read_text())["past_ladder"][
        "compute"
    ] == pytest.approx(expected, rel=1e-12)
    assert f"at {times(expected)} the ladder's largest compute" in line


def test_a_reused_out_holds_the_results_of_one_mode_only(ladder_csv, tmp_path, capsys):
    """`--hold-out-largest` into a folder of advice at a target kept advice.json, advise.png, curves.* and
    runs.* of that other run beside its holdout.json, and advice into a hold-out folder kept holdout.json."""
    path, syn = ladder_csv
    out = tmp_path / "advice"
    target = ["--target-size", str(syn.target_params), "--target-tokens", str(syn.target_tokens)]
    advice_files = {"advice.json", "advise.png", "curves.csv", "curves.json", "runs.csv", "runs.json"}
    main(["advise", str(path), *target, "--out", str(out), "--bootstrap", "50"])
    assert {p.name for p in out.iterdir() if p.name != ".encoderlab.json"} == advice_files
    main(["advise", str(path), "--hold-out-largest", "--out", str(out), "--bootstrap", "50"])
    assert {p.name for p in out.iterdir() if p.name != ".encoderlab.json"} == {"holdout.json"}
    main(["advise", str(path), *target, "--out", str(out), "--bootstrap", "50"])
    assert {p.name for p in out.iterdir() if p.name != ".encoderlab.json"} == advice_files
    capsys.readouterr()


@pytest.mark.parametrize(
    "extra,message",
    [
        (
            ["--better", "higher", "--ceiling", "100"],  # fitted 100 - loss: a loss read as a score
            "--better higher: val/mlm15 is lower-is-better; drop --better",
        ),
        (
            ["--ceiling", "2"],  # ignored without a word
            "--ceiling is the best possible value of a higher-is-better score, but val/mlm15 is lower-is-better, "
            "whose curves fit its floor themselves; drop --ceiling",
        ),
    ],
    ids=["better-against-a-loss", "ceiling-of-a-loss"],
)
def test_a_direction_or_ceiling_the_metric_cannot_take_is_refused(
    ladder_csv, tmp_path, capsys, extra, message
):
    path, _ = ladder_csv
    out = tmp_path / "advice"
    err = one_line_refusal(capsys, ["advise", str(path), "--target-flops", "1e19", *extra, "--out", str(out)])
    assert err.endswith(message) and not out.exists(), err


def test_a_fine_tuning_scores_ceiling_is_the_one_given():
    """`--ceiling 1` (scores as fractions) was dropped for a finetune:TASK metric, which took 100."""
    from encoderlab.advise.commands import resolve_metric

    assert resolve_metric("finetune:tweets", None, 1.0).ceiling == 1.0
    assert resolve_metric("finetune:tweets", "higher", None).ceiling == 100.0


def test_a_target_below_the_ladder_is_refused_and_creates_nothing(ladder_csv, tmp_path, capsys):
    """Below the smallest rung the curves rise steeply where no run was trained: a target 1/1000 of its
    compute was advised with a warning only, yet at P(best) 1.00 on predicted losses of 9.6 and 26 nats."""
    path, syn = ladder_csv
    lo = min(o.compute for o in syn.ladder.observations)
    out = tmp_path / "advice"
    err = one_line_refusal(
        capsys, ["advise", str(path), "--target-flops", f"{lo / 1000:.6g}", "--out", str(out)]
    )
    assert err.endswith(
        f"the target's compute (C = {lo / 1000:.3g}) is below the ladder's smallest rung (C = {lo:.3g}), "
        "where no run speaks for the curves; give a target at or above it, or add smaller rungs"
    )
    assert not out.exists()


def test_a_size_target_below_every_run_is_refused_and_creates_nothing(ladder_csv, tmp_path, capsys):
    """A target (N, D) at a size 100x below the ladder's smallest, at a compute inside it: advised beside a
    warning only, while a compute target below the ladder was refused."""
    path, syn = ladder_csv
    n = min(o.params for o in syn.ladder.observations)
    c = min(o.compute for o in syn.ladder.observations)
    out = tmp_path / "advice"
    size, tokens = f"{n / 100:.6g}", f"{2 * c / (6 * n / 100):.6g}"  # twice the smallest rung's compute
    argv = ["advise", str(path), "--target-size", size, "--target-tokens", tokens, "--out", str(out)]
    err = one_line_refusal(capsys, argv)
    assert err.endswith(
        f"the target's size N ({n / 100:.3g}) is below the smallest the ladder's runs were trained at ({n:.3g}), "
        "where no run speaks for the curves; give a target at or above it, or add smaller runs"
    ), err
    assert not out.exists()


def test_the_interval_default_is_one_constant(capsys):
    """`decide.INTERVAL` is the default of the command, of `advise` and of the crossover line, and the help shows
    it (each spelled 0.8 before, free to drift apart)."""
    import inspect

    from encoderlab.advise.commands import advise_command
    from encoderlab.advise.decide import INTERVAL, advise
    from encoderlab.advise.report import _crossover_line

    for f in (advise_command, advise, _crossover_line):
        assert inspect.signature(f).parameters["interval"].default is INTERVAL, f
    with pytest.raises(SystemExit):
        main(["advise", "--help"])
    help_text = " ".join(capsys.readouterr().out.replace("│", " ").split())  # the box tyro draws around it
    assert f"Width of the prediction and crossover intervals. (default: {INTERVAL})" in help_text


def test_a_ratio_far_past_the_ladder_is_not_printed_to_every_digit():
    """A target 5.3e21x the ladder's largest compute printed "5,333,333,333,333,332,983,808x": float noise
    shown as 22 significant digits in the recommendation and the warning."""
    assert times(16 / 3 * 1e21) == "5.3e+21x"
    assert (times(53_333.3), times(1e6), times(6.25), times(0.5)) == ("53,333x", "1,000,000x", "6.2x", "0.5x")


def test_a_ratio_near_one_is_printed_with_the_digits_that_tell_it_from_one():
    # a target 4% past the ladder's largest run read "the target is at 1x the ladder's largest compute; no run
    # measured there" (found by the advise hunt, 2026-12-07)
    assert (times(1.04), times(0.996), times(1.00003), times(1.0)) == ("1.04x", "0.996x", "1.00003x", "1x")


@pytest.mark.parametrize("delta", ["1e300", "1e-300", "inf"])
def test_a_huber_delta_that_would_fit_least_squares_is_refused_and_creates_nothing(
    delta, ladder_csv, tmp_path, capsys
):
    """1e300 and 1e-300 were taken, as inf was, and fitted least squares under the Huber loss's name (1e300 with
    a numpy overflow warning on stderr): `fit.DELTA_RANGE`."""
    path, _ = ladder_csv
    out = tmp_path / "a"
    err = one_line_refusal(
        capsys, ["advise", str(path), "--huber-delta", delta, "--target-flops", "1e19", "--out", str(out)]
    )
    assert err.endswith(
        "--huber-delta must be a threshold on log residuals from 1e-05 to 1 (Chinchilla's and OLMo's 0.001), "
        f"got {float(delta):g}"
    )
    assert not out.exists()
