"""`encoderlab advise RUNS... --target-flops C --out DIR`: read, check, fit, decide, print, save.

Every input is checked before the output folder is touched: the target, the options, every file
and study folder, the ladder (two schedules, seeds, positive values), and the fits themselves
(a schedule without two seeds at any rung is refused). Only then is `--out` created.
`--hold-out-largest` replaces the target by the ladder's own largest size (`holdout.py`).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Literal

import tyro

from encoderlab.advise.decide import INTERVAL, Advice, advise
from encoderlab.advise.fit import DELTA
from encoderlab.advise.holdout import HeldOutScore, format_held_out, score_held_out
from encoderlab.advise.ladder import KNOWN_METRICS, Ladder, Metric
from encoderlab.advise.options import MIN_CLI_BOOTSTRAP, check_fit_options
from encoderlab.advise.predict import Target
from encoderlab.advise.readers import read_table
from encoderlab.advise.studyread import FINETUNE, is_study, metric_of, read_study
from encoderlab.errors import UserError, closest

Runs = Annotated[
    tuple[Path, ...], tyro.conf.Positional, tyro.conf.arg(metavar="RUN ...", help_behavior_hint="(required)")
]


ADVICE_FILES = ("advice", "advise", "curves", "runs")
"""Stems of what advice at a target writes (advice.json, advise.png, curves.*, runs.*)."""
HOLDOUT_FILES = ("holdout",)
"""Stems of what `--hold-out-largest` writes (holdout.json). Each mode removes the other's from a reused
--out, so the folder never shows a score beside advice from another run."""


def resolve_metric(name: str, better: str | None, ceiling: float | None, percent: bool = False) -> Metric:
    """The metric with its direction: given, known (`val/mlm15`, `finetune:TASK`), or refused. `--percent`
    (scores in percent, however low) implies the ceiling 100 where none is given."""
    known = metric_of(name)  # refuses training losses, which differ in kind between objectives
    if ceiling is not None and not math.isfinite(ceiling):
        raise UserError(f"--ceiling must be a finite number (the best possible {name}), got {ceiling}")
    if name in KNOWN_METRICS or name.startswith(FINETUNE):
        if better not in (None, known.better):  # was taken: a loss fitted as its distance to a ceiling
            raise UserError(f"--better {better}: {name} is {known.better}-is-better; drop --better")
        better = known.better
    elif better is None:
        # a typo of val/mlm15 (val/mlm_15) was asked only for its direction, as if another metric was meant;
        # a loss training logs (val/clm, val/mlm) is meant, however near its spelling
        from encoderlab.train.validation import VALIDATION_KEYS  # torch: only on this line's way

        near = None if name in VALIDATION_KEYS else closest(name, KNOWN_METRICS)
        raise UserError(
            (f"--metric {name}: did you mean {near}? otherwise, " if near else "")
            + f"is {name} better lower or higher? "
            + _direction_fix(percent)
        )
    if better == "lower" and ceiling is not None:  # was ignored: curves of a loss fit its floor themselves
        raise UserError(
            f"--ceiling is the best possible value of a higher-is-better score, but {name} is lower-is-better, "
            "whose curves fit its floor themselves; drop --ceiling"
        )
    if ceiling is None and name.startswith(FINETUNE):  # a given --ceiling was ignored for a finetune:TASK
        ceiling = known.ceiling
    if ceiling is None and percent and better == "higher":
        ceiling = 100.0
    return Metric(name=name, better=better, ceiling=ceiling, percent=percent)


def _direction_fix(percent: bool) -> str:
    """How to give an unknown metric's direction, which `--percent` does not say: it gives the unit of a score
    (a ceiling of 100), and a lower-is-better metric takes no unit flag. The line asked for `--better` and
    `--ceiling for a score` with `--percent` given too, as if the flag had been missed."""
    known = "encoderlab knows the direction of val/mlm15 and finetune:TASK only"
    if percent:
        return (
            f"say so with --better: --percent gives its unit, not its direction, and {known}; give --better "
            "higher for a score in percent (its ceiling, 100, is then taken), or --better lower without "
            "--percent for a lower-is-better metric (an error rate, a loss)"
        )
    return (
        f"say so with --better lower|higher ({known}), and for a higher-is-better score its best possible "
        "value with --ceiling C, or --percent for a score in percent (ceiling 100)"
    )


def _fit_options(
    n_boot: int, seed: int, confidence: float, interval: float, delta: float, seed_noise: float | None
) -> dict:
    """The checked options of the fits and bootstrap, as keyword arguments of `advise`/`score_held_out`:
    `advise`'s own checks (`options.check_fit_options`, which name the flags here), after the command's floor
    on replicates, before a ladder is read."""
    if n_boot < MIN_CLI_BOOTSTRAP:
        raise UserError(
            f"--bootstrap {n_boot} is too few replicates for an {interval:.0%} interval; "
            f"use {MIN_CLI_BOOTSTRAP} or more"
        )
    return check_fit_options(
        n_boot=n_boot, seed=seed, confidence=confidence, interval=interval, delta=delta, seed_noise=seed_noise,
        caller="cli",
    )  # fmt: skip


def _target(
    hold_out_largest: bool, flops: float | None, size: float | None, tokens: float | None
) -> Target | None:
    """The target to advise at, or None for `--hold-out-largest` (which takes the ladder's largest size)."""
    if not hold_out_largest:
        return Target(flops=flops, params=size, tokens=tokens)
    if any(v is not None for v in (flops, size, tokens)):
        raise UserError("--hold-out-largest scores the advice on the ladder's largest size: drop --target-*")
    return None


def read_ladder(paths: tuple[Path, ...], metric: Metric) -> tuple[Ladder, list[str]]:
    """Observations of every file and study folder, as one ladder, plus notes on what was left out."""
    if not paths:
        raise UserError("give at least one ladder: a .csv/.jsonl file of runs or a study folder")
    from encoderlab.analysis.inputs import check_distinct

    check_distinct("ladder", map(str, paths))  # was "... appears twice (F:2 and F:2)", naming no cause
    observations, notes = [], []
    for path in paths:
        if path.is_dir():
            if not is_study(path):
                raise UserError(
                    f"{path} is a folder but not a study (no graph.json); give a study folder or a file"
                )
            runs, skipped = read_study(path, metric.name)
            observations += runs
            notes += skipped
        else:
            observations += read_table(path, metric.name)
    with left_out(notes):
        return Ladder(metric, tuple(observations)), notes


@contextmanager
def left_out(notes: list[str]):
    """A refusal of the ladder read names the runs left out of it (not finished, diverged, continued): the ladder
    of a study still training was refused as "one schedule ... add runs of another schedule" or "no rung ... has
    two pretraining seeds ... train a second seed" while the study had those runs, unfinished, and no word said so."""
    try:
        yield
    except UserError as exc:
        if not notes:
            raise
        raise UserError(f"{exc}; note: {'; '.join(notes)}") from None


def advise_command(
    runs: Runs,
    *,
    out: Path,
    target_flops: float | None = None,
    target_size: float | None = None,
    target_tokens: float | None = None,
    metric: str = "val/mlm15",
    better: Literal["lower", "higher"] | None = None,
    ceiling: float | None = None,
    percent: bool = False,
    bootstrap: int = 400,
    seed: int = 0,
    confidence: float = 0.9,
    interval: float = INTERVAL,
    huber_delta: float = DELTA,
    seed_noise: float | None = None,
    hold_out_largest: bool = False,
) -> Advice | HeldOutScore:
    """Which objective schedule wins at a target compute, predicted from a ladder of smaller runs.

    Args:
        runs: Ladder files (.csv/.jsonl, one pretraining run per row) and/or study folders.
        out: Folder for advice.json, advise.png and the figure's numbers (curves.*, runs.*).
        target_flops: The target as training compute C (FLOPs).
        target_size: The target model size N (non-embedding parameters), with --target-tokens.
        target_tokens: The target's training tokens D, with --target-size.
        metric: Column or metrics key: val/mlm15 (held-out MLM loss at a 15% mask), finetune:TASK, or any other.
        better: Whether lower or higher values of the metric are better (known for val/mlm15 and finetune:*).
        ceiling: The best possible value of a higher-is-better metric (100 for scores in percent).
        percent: The scores are in percent (ceiling 100), however low: a ladder whose every score is at most 1
            (a hard task at 0.3%), which is otherwise refused as fractions, is advised.
        bootstrap: Bootstrap replicates (seeds resampled within each rung).
        seed: Seed of the bootstrap: the same seed gives the same advice.
        confidence: Share of replicates the leader must win to be recommended (else: insufficient evidence).
        interval: Width of the prediction and crossover intervals.
        huber_delta: Huber threshold on log residuals, 1e-5 to 1 (Chinchilla's and OLMo's 1e-3).
        seed_noise: Seed-to-seed sd of the metric, known from another ladder: draws normal noise of that size
            instead of resampling this ladder's seeds (needed when no rung has two seeds).
        hold_out_largest: Instead of advising at a target, fit without the ladder's largest size and score the
            advice on its rungs: decision accuracy of extrapolation, of the single-rung ranking and of the
            advisor's choice (holdout.json); no --target-* then.
    """
    from encoderlab.outdir import check_output, create_output, drop_stale

    target = _target(hold_out_largest, target_flops, target_size, target_tokens)
    options = _fit_options(bootstrap, seed, confidence, interval, huber_delta, seed_noise)
    resolved = resolve_metric(metric, better, ceiling, percent)
    check_output(out, "advise", sources=runs)
    ladder, notes = read_ladder(runs, resolved)
    if target is None:
        return _hold_out(ladder, notes, out, options)
    with left_out(notes):
        advice = advise(ladder, target, **options)
    create_output(out, "advise")
    drop_stale(out, *HOLDOUT_FILES)  # a reused --out held --hold-out-largest's score of another run
    _save(advice, notes, out)
    return advice


def _hold_out(ladder: Ladder, notes: list[str], out: Path, options: dict) -> HeldOutScore:
    """`--hold-out-largest`: score the advice on the ladder's largest size; holdout.json and the table."""
    from encoderlab.atomic import write_json_atomic
    from encoderlab.outdir import create_output, drop_stale

    with left_out(notes):
        score = score_held_out(ladder, **options)
    create_output(out, "advise")
    drop_stale(out, *ADVICE_FILES)  # a reused --out held the advice at a target of another run
    write_json_atomic(out / "holdout.json", {**score.to_dict(), "notes": notes})
    print(
        "\n".join([*(f"note: {n}" for n in notes), format_held_out(score), f"wrote {out / 'holdout.json'}"])
    )
    return score


def _save(advice: Advice, notes: list[str], out: Path) -> None:
    """advice.json (with the notes on what was left out) and the figure, then the printed advice."""
    from encoderlab.advise.report import format_advice, plot_advice
    from encoderlab.atomic import write_json_atomic

    write_json_atomic(out / "advice.json", {**advice.to_dict(), "notes": notes})
    png = plot_advice(advice, out / "advise")
    print(
        "\n".join(
            [*(f"note: {n}" for n in notes), format_advice(advice), f"wrote {out / 'advice.json'} and {png}"]
        )
    )
