"""`encoderlab advise` on bad input as a user meets it: a study folder that is no ladder, unfinished or
without seeds, schedules that cannot be compared, a target or `--confidence` out of range. Each is one
line naming the problem and the fix, exit 2, and no `--out` folder."""

from __future__ import annotations

import json

import pytest
from tests.advise.advise_fixtures import write_pretrain_node
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.advise.options import MIN_CLI_BOOTSTRAP
from encoderlab.cli import main
from encoderlab.model.config import SIZES

MLM = ("pfs-mlm", ["ratio=0.4"])
SPLIT = ("pfs-clm-mlm", ["clm_fraction=0.25", "ratio=0.4"])


def _study(path, runs, finished=True, budgets=(1,)):
    """A study folder of pretraining nodes (all of size tiny), each run at every token budget (a multiple of
    its 20 steps' tokens, written into its metrics): runs are (name, (recipe, params), seed, value)."""
    graph = []
    for b, budget in enumerate(budgets):
        for i, (name, (recipe, params), seed, value) in enumerate(runs):
            key, name = f"{b}{i:x}" * 32, f"{name}-x{budget}"
            write_pretrain_node(path, name, key, recipe, params, seed, value - b / 10, marker=finished)
            metrics = (
                path
                / "nodes"
                / "pretrain"
                / f"pretrain_{name.replace('/', '_')}-{key[:12]}"
                / "run/metrics.jsonl"
            )
            lines = metrics.read_text().splitlines()
            rows = [json.loads(line) for line in lines[:-1]]  # the last line is cut short, as a running run's
            metrics.write_text(
                "".join(json.dumps({**r, "tokens": r["tokens"] * budget}) + "\n" for r in rows)
            )
            graph.append({"name": f"pretrain/{name}", "key": key})
    (path / "graph.json").write_text(json.dumps(graph))
    return path


SEEDED = [
    ("mlm40", MLM, 0, 6.1),
    ("mlm40/s1", MLM, 1, 6.2),
    ("clm25", SPLIT, 0, 5.9),
    ("clm25/s1", SPLIT, 1, 5.8),
]


def _refused(capsys, tmp_path, argv) -> str:
    """The one line of a refusal, which exits 2 and changes nothing (`treestate`)."""
    out = tmp_path / "advice"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)  # world_state reads the working folder too
        before = world_state(tmp_path)
        with pytest.raises(SystemExit) as exc:
            main(["advise", *argv, "--out", str(out)])
        assert_unchanged(before)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and not out.exists(), err
    return err[0]


def test_a_study_of_one_scale_is_not_a_ladder(tmp_path, capsys):
    """Every run at one (N, D), as a paper's study: was advised, the one rung's ranking recommended "at the
    target" 500,000,000x its compute."""
    study = _study(tmp_path / "study", SEEDED)
    err = _refused(capsys, tmp_path, [str(study), "--target-flops", "1e19"])
    assert f"{study} is not a ladder: every run is at N=" in err
    assert "add runs of every schedule at other model sizes or token budgets" in err
    # the fix a study's user can take: the study file's syntax, not only the Python `ladder_study` API
    assert err.endswith(
        f": in the study file, a copy of each run with another `params: {{size: ...}}` ({', '.join(SIZES)}) "
        "or `steps: N` and a `group:` of its own (a group's runs share one token budget), then `study run` it "
        "and advise on its folder (docs/advise.md)"
    )


def test_a_ladder_file_of_one_scale_is_not_a_ladder(tmp_path, capsys):
    path = tmp_path / "one.csv"
    rows = [
        f"{share},{mask},1e6,2e7,{seed},{v}"
        for share, mask, v in ((0, 0.4, 3.5), (1, "", 3.4))
        for seed in (0, 1)
    ]
    path.write_text("clm_share,mask_ratio,params,tokens,seed,val/mlm15\n" + "\n".join(rows) + "\n")
    err = _refused(capsys, tmp_path, [str(path), "--target-flops", "1e19"])
    assert err.endswith(f"{path} is not a ladder: every run is at N=1e+06, D=2e+07, one scale, which says "
                        "nothing about a larger one; add runs of every schedule at other model sizes or token "
                        "budgets (rows at other params or tokens, or a ladder study: "
                        "`encoderlab.advise.study.ladder_study`, docs/advise.md)")  # fmt: skip


def test_two_ladder_files_of_one_scale_are_told_the_rows_fix(tmp_path, capsys):
    """Two ladder files at one scale: the line names "the ladder", and the fix is rows, as for one file; it
    told them to copy runs in a study file they do not have (the fix was chosen by whether "the ladder" is a file)."""
    paths = []
    for name, share, mask, v in (("mlm.csv", 0, 0.4, 3.5), ("clm.csv", 1, "", 3.4)):
        paths.append(tmp_path / name)
        rows = [f"{share},{mask},1e6,2e7,{seed},{v}" for seed in (0, 1)]
        paths[-1].write_text("clm_share,mask_ratio,params,tokens,seed,val/mlm15\n" + "\n".join(rows) + "\n")
    err = _refused(capsys, tmp_path, [*map(str, paths), "--target-flops", "1e19"])
    assert "error: the ladder is not a ladder: every run is at N=1e+06" in err, err
    assert err.endswith("(rows at other params or tokens, or a ladder study: "
                        "`encoderlab.advise.study.ladder_study`, docs/advise.md)")  # fmt: skip


def test_an_unfinished_study_and_one_without_seeds_are_refused(tmp_path, capsys):
    running = _study(tmp_path / "running", SEEDED, finished=False)
    err = _refused(capsys, tmp_path, [str(running), "--target-flops", "1e19"])
    assert "holds no finished pretraining run from scratch; run or finish the study first" in err
    one_seed = _study(tmp_path / "one_seed", [SEEDED[0], SEEDED[2]], budgets=(1, 2, 4))
    err = _refused(capsys, tmp_path, [str(one_seed), "--target-flops", "1e19"])
    assert "has two pretraining seeds" in err and "give --seed-noise SD" in err


def test_schedules_sharing_no_rung_with_too_few_to_fit_are_refused(tmp_path, capsys):
    path = tmp_path / "apart.csv"
    rows = [f"0,0.4,{n},{20 * n},{s},{3.0 + s / 100}" for n in (1e6, 2e6) for s in (0, 1)]
    rows += [f"1,,{n},{20 * n},{s},{2.9 + s / 100}" for n in (4e6, 8e6) for s in (0, 1)]
    path.write_text("clm_share,mask_ratio,params,tokens,seed,val/mlm15\n" + "\n".join(rows) + "\n")
    err = _refused(capsys, tmp_path, [str(path), "--target-flops", "1e19", "--bootstrap", "50"])
    assert "share no (N, D) rung" in err and "run every schedule at the same sizes and token budgets" in err


def test_rungs_written_apart_are_refused(tmp_path, capsys):
    """Second seeds that logged their own token counts, 0.01% apart: every rung was two of one seed each, and the
    ladder was told to "train a second seed" it had (schedules logged apart shared no rung, never recommended)."""
    path = tmp_path / "apart.csv"
    rows = [
        f"{share},{mask},{n},{20 * n * (1 + s / 1e4):.8g},{s},{3.0 - k / 10 + s / 100}"
        for share, mask in ((0, 0.4), (1, ""))
        for k, n in enumerate((1e6, 2e6, 4e6))
        for s in (0, 1)
    ]
    path.write_text("clm_share,mask_ratio,params,tokens,seed,val/mlm15\n" + "\n".join(rows) + "\n")
    err = _refused(capsys, tmp_path, [str(path), "--target-flops", "1e16"])
    assert err.endswith(
        f"{path}:2 is at N=1e+06, D=2e+07 and {path}:3 at N=1e+06, D=2.0002e+07, within 1% of it: two rungs, so "
        "their seeds are not pooled nor their schedules compared; give the runs of one size and budget the same "
        "params and tokens (the budget, not each run's own count)"
    ), err


def _advised(out, *argv) -> None:
    """`encoderlab advise ARGV --out OUT` runs to its advice, with the CLI's fewest bootstrap replicates unless
    ARGV gives some: what these tests check (the ladder is read and advised, not refused) is decided before the
    bootstrap, and each replicate refits every schedule (400, the default, took most of a test's time)."""
    argv = [*map(str, argv)]
    fewest = [] if "--bootstrap" in argv else ["--bootstrap", str(MIN_CLI_BOOTSTRAP)]
    main(["advise", *argv, *fewest, "--out", str(out)])
    assert (out / "advice.json").exists()


def _scores(path, clm_scale=1.0, mlm_scale=1.0):
    """A ladder file of `finetune:sst2` scores in percent, 2 schedules x 3 sizes x 2 seeds, each schedule's
    scores multiplied by its scale (0.01: given as fractions)."""
    rows = [
        f"{share},{mask},{n},{20 * n},{s},{(60 + 5 * k + s / 10) * scale:.6g}"
        for share, mask, scale in ((0, 0.4, mlm_scale), (1, "", clm_scale))
        for k, n in enumerate((1e6, 2e6, 4e6))
        for s in (0, 1)
    ]
    path.write_text("clm_share,mask_ratio,params,tokens,seed,finetune:sst2\n" + "\n".join(rows) + "\n")
    return path


FRACTIONS_BESIDE_PERCENT = (
    "{path}:{a}) but of {high} at least 10{where} ({b:g} at {path}:{c}): fractions beside percent; give every score "
    "in one unit: percent (ceiling 100), or fractions with --ceiling 1 (or --percent if they truly are percent)"
)


@pytest.mark.parametrize(
    ("clm_scale", "mlm_scale", "zero", "said"),
    [
        (
            0.01,
            1.0,
            0,
            "of CLM is at most 1 at every run (0.701 at "
            + FRACTIONS_BESIDE_PERCENT.format(path="{path}", a=13, high="MLM-40", where="", b=60, c=2),
        ),
        (
            1.0,
            0.01,
            1,
            "of MLM-40 is at most 1 at every run (0.701 at "
            + FRACTIONS_BESIDE_PERCENT.format(
                path="{path}", a=7, high="CLM", where=" where not 0", b=65, c=10
            ),
        ),
    ],
    ids=["fractions-beside-percent", "beside-percent-at-zero-at-its-smallest-size"],
)
def test_scores_as_fractions_beside_percent_are_refused(tmp_path, capsys, clm_scale, mlm_scale, zero, said):
    """CLM's scores as fractions (0.6 for 60%) beside MLM's in percent, at the ceiling of 100: was advised, CLM's
    distance to 100 flat at ~99.3 at every rung, so it was ranked last at every scale without a word. Likewise
    MLM in fractions beside CLM in percent but at 0 at its smallest size: a zero is in no unit, so CLM is still
    percent (it was not, at 0 at one run, and the fractions were advised, ranked last at every scale)."""
    path = _zero_below(_scores(tmp_path / "mixed.csv", clm_scale, mlm_scale), zero, 1.0)
    err = _refused(capsys, tmp_path, [str(path), "--metric", "finetune:sst2", "--target-flops", "1e16"])
    assert err.endswith("finetune:sst2 " + said.format(path=path)), err


def test_scores_all_as_fractions_at_a_ceiling_of_100_are_refused(tmp_path, capsys):
    """Every score a fraction while `finetune:TASK` takes the ceiling 100: was advised on curves flat at ~99.3
    away from the ceiling, P(best) from noise. With --ceiling 1 the same file is advised."""
    path = _scores(tmp_path / "fractions.csv", clm_scale=0.01, mlm_scale=0.01)
    argv = [str(path), "--metric", "finetune:sst2", "--target-flops", "1e16", "--bootstrap", "50"]
    err = _refused(capsys, tmp_path, argv)
    assert err.endswith(
        f"every run's finetune:sst2 is at most 1 (e.g. 0.701 at {path}:7), as scores given as fractions are, "
        "but its ceiling is 100 (percent); give --ceiling 1 for fractions, or --percent if they truly are "
        "percent under 1 (a hard task: its schedules may differ by little more than their seeds)"
    ), err
    main(["advise", *argv, "--ceiling", "1", "--out", str(tmp_path / "a")])
    assert (tmp_path / "a" / "advice.json").exists()


@pytest.mark.parametrize("mlm_scale", [1.0, 0.0])
def test_a_schedule_scoring_zero_at_every_run_beside_percent_is_advised(tmp_path, mlm_scale):
    """MCC 0 at every run of one schedule (a classifier of the majority class: CoLA at small scales) beside
    scores of 10 or more: 0 is 0 in percent and as a fraction, so it says nothing of a unit, and the ladder was
    refused as fractions beside percent, a fix no score of it needs; at 0 everywhere it was told to give its
    scores as fractions (now advised, flat curves and a warning)."""
    path = _scores(tmp_path / "zero.csv", clm_scale=0.0, mlm_scale=mlm_scale)
    _advised(tmp_path / "a", path, "--metric", "finetune:sst2", "--target-flops", "1e16")


def test_fractions_beside_a_schedule_at_zero_are_still_refused(tmp_path, capsys):
    """Every run at most 1, one schedule's all 0: still scores given as fractions at a ceiling of 100."""
    path = _scores(tmp_path / "fractions.csv", clm_scale=0.0, mlm_scale=0.01)
    err = _refused(capsys, tmp_path, [str(path), "--metric", "finetune:sst2", "--target-flops", "1e16"])
    assert "error: every run's finetune:sst2 is at most 1 (e.g. 0.701 at " in err, err


def test_scores_said_to_be_percent_are_advised_however_low(tmp_path, capsys):
    """A hard task at 0.3% at every run: refused as fractions, with no way to say it is percent (until
    2026-12-07). `--percent` says so, and the ladder is advised, also beside a schedule at 10 or more; with no
    word it is still refused. `--percent` with another ceiling, or on a loss, is refused in one line."""
    path = _scores(tmp_path / "hard.csv", clm_scale=0.005, mlm_scale=0.005)
    argv = [str(path), "--metric", "finetune:sst2", "--target-flops", "1e16", "--bootstrap", "50"]
    assert "error: every run's finetune:sst2 is at most 1" in _refused(capsys, tmp_path, argv)
    _advised(tmp_path / "a", *argv, "--percent")
    mixed = _scores(tmp_path / "mixed.csv", clm_scale=0.005)
    _advised(tmp_path / "b", mixed, *argv[1:], "--percent")
    custom = tmp_path / "custom.csv"
    custom.write_text(path.read_text().replace("finetune:sst2", "acc"))
    _advised(tmp_path / "c", custom, *argv[3:], "--metric", "acc", "--better", "higher", "--percent")


def test_percent_with_another_ceiling_is_refused(tmp_path, capsys):
    path = _scores(tmp_path / "hard.csv", clm_scale=0.005, mlm_scale=0.005)
    argv = [str(path), "--metric", "finetune:sst2", "--target-flops", "1e16", "--percent", "--ceiling", "1"]
    assert _refused(capsys, tmp_path, argv).endswith(
        "--percent says finetune:sst2 is in percent, whose ceiling is 100, but its ceiling is 1; drop --ceiling "
        "(or --percent, for a score out of 1)"
    )


def test_percent_on_a_loss_is_refused(tmp_path, capsys):
    path = _scores(tmp_path / "hard.csv")
    path.write_text(path.read_text().replace("finetune:sst2", "val/mlm15"))
    argv = [str(path), "--target-flops", "1e16", "--percent"]
    assert _refused(capsys, tmp_path, argv).endswith(
        "--percent is the unit of a score, but val/mlm15 is lower-is-better (a loss); drop --percent"
    )


def test_percent_on_a_metric_of_unknown_direction_is_asked_its_direction_alone(tmp_path, capsys):
    """--percent gives the unit (ceiling 100), not the direction: the line asked for --better and for --ceiling
    "for a score", which --percent had given, and said nothing of what --percent implies."""
    path = _scores(tmp_path / "acc.csv")
    path.write_text(path.read_text().replace("finetune:sst2", "accuracy"))
    argv = [str(path), "--metric", "accuracy", "--target-flops", "1e16", "--percent"]
    assert _refused(capsys, tmp_path, argv).endswith(
        "is accuracy better lower or higher? say so with --better: --percent gives its unit, not its direction, "
        "and encoderlab knows the direction of val/mlm15 and finetune:TASK only; give --better higher for a "
        "score in percent (its ceiling, 100, is then taken), or --better lower without --percent for a "
        "lower-is-better metric (an error rate, a loss)"
    )
    without = _refused(capsys, tmp_path, argv[:-1])
    assert without.endswith("--ceiling C, or --percent for a score in percent (ceiling 100)"), without


def _zero_below(path, size, scale):
    """`path`'s CLM scores (its last 6 rows) at 0 below the `size`-th size, the rest times `scale`."""
    head, *rows = path.read_text().splitlines()
    for i in range(6, 12):
        cells = rows[i].split(",")
        cells[-1] = "0" if (i - 6) // 2 < size else f"{float(cells[-1]) * scale:.6g}"
        rows[i] = ",".join(cells)
    path.write_text("\n".join([head, *rows]) + "\n")
    return path


def _tokens_divided(path, rows_at, by):
    """`path` with the tokens of its data rows `rows_at` (0: the first after the header) divided by `by`."""
    head, *rows = path.read_text().splitlines()
    for i in rows_at:
        cells = rows[i].split(",")
        cells[3] = f"{float(cells[3]) / by:g}"
        rows[i] = ",".join(cells)
    path.write_text("\n".join([head, *rows]) + "\n")
    return path


def test_a_schedule_at_zero_then_under_1_beside_percent_is_advised(tmp_path):
    """MCC 0, 0, then 0.7 (CoLA near chance, in percent) beside scores of 60 or more: zeros are in no unit, and
    a schedule at 0 and under 1 is percent near chance, not fractions (0%, 0%, then 70%); it was refused as
    fractions beside percent."""
    path = _zero_below(_scores(tmp_path / "chance.csv"), 2, 0.01)
    _advised(tmp_path / "a", path, "--metric", "finetune:sst2", "--target-flops", "1e16")


def test_tokens_of_one_schedule_in_billions_are_refused(tmp_path, capsys):
    """CLM's D written in billions (0.02 for 2e7) beside MLM's counts, at the sizes both ran: was advised, its
    tokens per parameter 1e9 times too few, with nothing but warnings of extrapolation."""
    path = _tokens_divided(_scores(tmp_path / "units.csv"), range(6, 12), 1e9)
    err = _refused(capsys, tmp_path, [str(path), "--metric", "finetune:sst2", "--target-flops", "1e16"])
    assert err.endswith(
        f"{path}:2 (MLM-40) is at N=1e+06, D=2e+07 and {path}:8 (CLM) at N=1e+06, D=0.02: 1e+09 times apart at "
        "one size, tokens in two units (thousands, millions or billions beside a count); give every run's tokens "
        "as a count of tokens"
    ), err


def test_tokens_in_billions_at_sizes_the_other_schedule_never_ran_are_refused(tmp_path, capsys):
    """MLM at 1e6, 4e6 and 1.6e7 parameters, CLM at 2e6, 8e6 and 3.2e7 with D in billions: no size in common,
    so the units were never compared (the check looked at one size only) and the ladder was advised."""
    path = tmp_path / "apart.csv"
    rows = [
        f"{share},{mask},{n:g},{20 * n / unit:g},{s},{60 + 5 * k + s / 10:g}"
        for share, mask, sizes, unit in ((0, 0.4, (1e6, 4e6, 1.6e7), 1), (1, "", (2e6, 8e6, 3.2e7), 1e9))
        for k, n in enumerate(sizes)
        for s in (0, 1)
    ]
    path.write_text("clm_share,mask_ratio,params,tokens,seed,finetune:sst2\n" + "\n".join(rows) + "\n")
    err = _refused(capsys, tmp_path, [str(path), "--metric", "finetune:sst2", "--target-flops", "1e16"])
    assert err.endswith(
        f"{path}:2 (MLM-40) is at N=1e+06, D=2e+07 (20 tokens per parameter) and {path}:8 (CLM) at N=2e+06, "
        "D=0.04 (2e-08): 1e+09 times apart in tokens per parameter, where their schedules come nearest, tokens "
        "in two units (thousands, millions or billions beside a count); give every run's tokens as a count of "
        "tokens"
    ), err


def test_a_seed_whose_tokens_are_in_thousands_is_refused(tmp_path, capsys):
    """CLM's seed 1 logged by another script, its D in thousands (2e4 for 2e7): schedules were compared with each
    other only, so this one was advised, its two seeds 1e3 times apart per parameter at every size."""
    path = _tokens_divided(_scores(tmp_path / "seeds.csv"), (7, 9, 11), 1e3)  # CLM's seed 1, lines 9, 11, 13
    err = _refused(capsys, tmp_path, [str(path), "--metric", "finetune:sst2", "--target-flops", "1e16"])
    assert err.endswith(
        f"{path}:8 (CLM) is at N=1e+06, D=2e+07 and {path}:9 (CLM) at N=1e+06, D=20000: 1e+03 times apart at one "
        "size, with no run of CLM between, tokens in two units (thousands, millions or billions beside a count); "
        "give every run's tokens as a count of tokens"
    ), err


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--target-flops", "0"], "--target-flops must be a positive number, got 0.0"),
        (["--target-flops", "nan"], "--target-flops must be a positive number, got nan"),
        (
            ["--target-flops", "abc"],
            "bad value for --target-flops: 'abc' is not a number; see: encoderlab advise",
        ),
        (["--target-size", "0", "--target-tokens", "1e9"], "--target-size must be a positive number"),
        (["--target-size", "1e8", "--target-tokens", "-1"], "--target-tokens must be a positive number"),
        (["--target-flops", "1e19", "--confidence", "0"], "--confidence must be in (0.5, 1), got 0.0"),
        (["--target-flops", "1e19", "--confidence", "1"], "--confidence must be in (0.5, 1), got 1.0"),
        (["--target-flops", "1e19", "--confidence", "nan"], "--confidence must be in (0.5, 1), got nan"),
        (["--target-flops", "1e19", "--confidence", "x"], "bad value for --confidence"),
    ],
)
def test_a_bad_target_or_confidence_is_refused(tmp_path, capsys, extra, message):
    study = _study(tmp_path / "study", SEEDED)
    assert message in _refused(capsys, tmp_path, [str(study), *extra])


def test_measured_flops_on_some_runs_only_are_refused(tmp_path, capsys):
    """Measured FLOPs and 6ND are two scales of compute: mixed, they were advised as one, silently (a ladder
    whose MLM runs logged 1.5 x 6ND had its crossover moved from 4.8e18 to 1.3e19 FLOPs). Likewise a ladder
    file given beside a study folder, whose runs log their FLOPs, or a study run that logged none."""
    path = tmp_path / "mixed.csv"
    rows = [
        f"{share},{mask},{n},{20 * n},{seed},{v + seed / 100},{1.5 * 6 * n * 20 * n if share == 0 else ''}"
        for share, mask, v in ((0, 0.4, 3.5), (1, "", 3.4))
        for n in (1e6, 2e6, 4e6)
        for seed in (0, 1)
    ]
    path.write_text("clm_share,mask_ratio,params,tokens,seed,val/mlm15,flops\n" + "\n".join(rows) + "\n")
    err = _refused(capsys, tmp_path, [str(path), "--target-flops", "1e19", "--bootstrap", "50"])
    assert err.endswith(f"{path}:2 gives its measured FLOPs but {path}:8 does not (6ND would stand in for it), "
                        "and the two are not one scale of compute; give measured flops for every run or for "
                        "none")  # fmt: skip
    study = _study(tmp_path / "study", SEEDED, budgets=(1, 2))
    plain = tmp_path / "plain.csv"
    plain.write_text("\n".join(line.rsplit(",", 1)[0] for line in path.read_text().splitlines()) + "\n")
    err = _refused(capsys, tmp_path, [str(study), str(plain), "--target-flops", "1e19", "--bootstrap", "50"])
    assert f"{study}:pretrain/" in err and f"but {plain}:2 does not" in err


def _rescored(study, old: str, new: str):
    """The study with every run's config.yaml line `old` made `new` (what its validation scored on)."""
    for config in study.glob("nodes/pretrain/*/run/config.yaml"):
        text = config.read_text()
        assert old in text, config
        config.write_text(text.replace(old, new))
    return study


def test_studies_scored_on_other_held_out_rows_are_refused(tmp_path, capsys):
    """Two study folders whose runs scored val/mlm15 on other rows (here validation.rows; likewise another
    prepared corpus or tokenizer, or seq_len) were advised as one ladder, their losses compared as if alike."""
    small = _rescored(_study(tmp_path / "small", SEEDED, budgets=(1, 2)), "path: ''", "path: synthetic")
    large = _rescored(_study(tmp_path / "large", SEEDED, budgets=(4, 8)), "path: ''", "path: synthetic")
    argv = [str(small), str(large), "--target-flops", "1e19", "--bootstrap", "50"]
    main(["advise", *argv, "--out", str(tmp_path / "alike")])  # the same rows: one ladder
    _rescored(large, "rows: 64", "rows: 32")
    err = _refused(capsys, tmp_path, argv)
    assert err.endswith(
        f"{large}:pretrain/clm25-x4 scored val/mlm15 on other held-out rows than {small}:pretrain/clm25-x1 "
        "(validation.rows 32, not 64), so their values are not one yardstick; advise runs on the same prepared "
        "data, seq_len and validation.rows together"
    ), err


def _finetuned(study, lrs=(1e-4, 5e-4), seeds=(0, 1), signature="sig"):
    """The study with every pretraining run fine-tuned on tweets at each LR and seed of the grid (finished
    eval nodes whose records score 100 - 5 x the run's val/mlm15, so a larger run scores higher)."""
    from tests.advise.advise_fixtures import write_node

    from encoderlab.config import to_dict
    from encoderlab.eval.summary import EvalRecord

    graph = json.loads((study / "graph.json").read_text())
    for g in [g for g in graph if g["name"].startswith("pretrain/")]:
        (folder,) = study.glob(f"nodes/pretrain/*-{g['key'][:12]}")
        records = [json.loads(line) for line in (folder / "run/metrics.jsonl").read_text().splitlines()]
        score = 100 - 5 * [r["val/mlm15"] for r in records if "val/mlm15" in r][-1]
        for lr in lrs:
            for seed in seeds:
                config = {
                    "model": g["name"],
                    "step": None,
                    "task": "tweets",
                    "lr": lr,
                    "seed": seed,
                    "max_steps": None,
                }
                record = EvalRecord(model="fp", task="tweets", family="sc", task_signature=signature,
                                    metric="accuracy", lr=lr, seed=seed, val={"accuracy": score},
                                    test={"test": {"accuracy": score}}, val_score=score, test_score=score)  # fmt: skip
                key, name = (
                    f"{g['key'][:32]}{lr:g}{seed}".ljust(64, "e"),
                    f"eval/{g['name']}/tweets/lr{lr:g}/s{seed}",
                )
                write_node(study, "eval", name, key, config, (g["name"],), to_dict(record))
                graph.append({"name": name, "kind": "eval", "key": key, "config": config})
    (study / "graph.json").write_text(json.dumps(graph))
    return study


def test_fine_tuning_scores_of_other_setups_are_refused(tmp_path, capsys):
    """`finetune:TASK` scores of two study folders fine-tuned over another LR grid (likewise other fine-tuning
    seeds, another version of the task or max_steps) were advised as one ladder, their scores compared as if
    fine-tuned alike: a wider grid can only choose better."""
    small = _finetuned(_study(tmp_path / "small", SEEDED, budgets=(1, 2)))
    large = _finetuned(_study(tmp_path / "large", SEEDED, budgets=(4, 8)), lrs=(1e-4,))
    argv = [
        str(small),
        str(large),
        "--metric",
        "finetune:tweets",
        "--target-flops",
        "1e19",
        "--bootstrap",
        "50",
    ]
    err = _refused(capsys, tmp_path, argv)
    assert err.endswith(
        f"{large}:pretrain/clm25-x4 scored finetune:tweets with another fine-tuning setup than "
        f"{small}:pretrain/clm25-x1 (LR grid 0.0001, not 0.0001, 0.0005), so their values are not one yardstick; "
        "advise on runs fine-tuned alike together (one task version, LR grid, fine-tuning seeds and max_steps): "
        "finish the studies' evaluations, or evaluate them again with one protocol"
    ), err
    other = _finetuned(_study(tmp_path / "other", SEEDED, budgets=(4, 8)), signature="sig2")
    err = _refused(capsys, tmp_path, [str(small), str(other), *argv[2:]])
    assert "(task version sig2, not sig)" in err, err
    alike = _finetuned(_study(tmp_path / "alike", SEEDED, budgets=(4, 8)))
    main(["advise", str(small), str(alike), *argv[2:], "--out", str(tmp_path / "a")])  # one setup: one ladder
    assert (tmp_path / "a" / "advice.json").exists()


def _drop_split(result):
    del result["test"]["test"]


def _null_score(result):
    result["test"]["test"]["accuracy"] = None


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            _drop_split,
            "no test split test, which the other runs of task tweets have and evaluation always writes",
        ),
        (
            _null_score,
            "a score that is not a number, test.test.accuracy is null, which evaluation never writes",
        ),
    ],
)
def test_a_hand_damaged_eval_node_is_refused_naming_its_node_json(
    tmp_path, capsys, monkeypatch, edit, problem
):
    """A finished eval node's node.json with a test split dropped, or a split's score null, was read past the
    checks `encoderlab eval` and the study report run on it: a KeyError or TypeError traceback from `select_lr`.
    It is refused as the report refuses it (one line, the same words), before anything is written."""
    from tests.reliability.treestate import assert_unchanged, world_state

    study = _finetuned(_study(tmp_path / "study", SEEDED, budgets=(1, 2)))
    # seed 1 at the smallest LR: every LR ties on validation, so select_lr reads it (the old traceback)
    name = "eval/pretrain/mlm40-x1/tweets/lr0.0001/s1"
    marker = next(
        p for p in study.glob("nodes/eval/*/node.json") if json.loads(p.read_text())["name"] == name
    )
    raw = json.loads(marker.read_text())
    edit(raw["result"])
    marker.write_text(json.dumps(raw))
    monkeypatch.chdir(tmp_path)
    before = world_state(tmp_path)
    argv = [str(study), "--metric", "finetune:tweets", "--target-flops", "1e19", "--bootstrap", "50"]
    assert _refused(capsys, tmp_path, argv) == (
        f"encoderlab: error: {marker} is damaged ({problem}); delete {marker.parent} and run the study again, which redoes "
        f"{name}"
    )
    assert_unchanged(before)
