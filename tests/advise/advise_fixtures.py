"""Helpers several advise test modules share: a ladder CSV and the CLI's one-line refusal, study nodes written
by hand, a ladder of made-up values, and scipy's fit of the same objective as the reference advise's fit is
checked against.

A helper that one test module wrote and others imported lives here under a public name
(tests/test_import_layers.py refuses a test module importing another test module's underscore name)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from scipy.optimize import least_squares

from encoderlab.advise.calibration import made_up
from encoderlab.advise.fit import EXP_RANGE, TIE, objective
from encoderlab.advise.ladder import KNOWN_METRICS
from encoderlab.cli import main
from encoderlab.config import save_yaml
from encoderlab.train.recipes import build_recipe

GRID = np.stack([np.repeat(a.ravel(), 2) for a in np.meshgrid([0.25, 0.5, 1.0], [0.25, 0.5, 1.0])], -1)
"""(18, 2) inputs (N, D) of a 2-D fit: a 3x3 grid of sizes and token counts in relative units, two seeds each
(tests/advise/test_fit.py and test_stats_audit.py fit it)."""


def write_ladder_csv(syn, path):
    """A synthetic suite's ladder as the CSV `encoderlab advise` reads: schedule, size, tokens, seed, value."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["clm_share", "mask_ratio", "params", "tokens", "seed", "val/mlm15"])
        for o in syn.ladder.observations:
            writer.writerow(
                [o.schedule.clm_share, o.schedule.mask_ratio or "", o.params, o.tokens, o.seed, o.value]
            )
    return path


def one_line_refusal(capsys, argv) -> str:
    """The one line `encoderlab ARGV` is refused with (exit code 2)."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1, err
    return err[0]


def write_node(study, kind, name, key, config, deps=(), result=None, marker=True):
    """A node folder of a study, its `node.json` marker written where `marker` (a finished node)."""
    folder = study / "nodes" / kind / f"{name.replace('/', '_')}-{key[:12]}"
    folder.mkdir(parents=True)
    record = {
        "name": name,
        "kind": kind,
        "key": key,
        "config": config,
        "deps": list(deps),
        "result": result or {},
    }
    if marker:
        (folder / "node.json").write_text(json.dumps(record))
    return folder


def write_pretrain_node(study, name, key, recipe, params, seed, value, *, flops=True, marker=True, steps=20):
    """A finished tiny pretraining node of `steps` steps whose last held-out `val/mlm15` is `value`; its tokens
    trained."""
    cfg = build_recipe(recipe, [*params, "size=tiny", f"steps={steps}", "warmup=2", "decay=2"])
    folder = write_node(study, "pretrain", f"pretrain/{name}", key, {"declared": {}}, marker=marker)
    run = folder / "run"
    run.mkdir()
    save_yaml(cfg.__class__(**{**cfg.__dict__, "seed": seed}), run / "config.yaml")
    tokens = cfg.layout.tokens_per_step
    lines = [
        {"step": s, "loss": 9.0, "tokens": s * tokens, **({"flops": 1e9} if flops else {})}
        for s in range(1, steps + 1)
    ]
    lines[-1]["val/mlm15"] = value
    lines[9]["val/mlm15"] = value + 1.0  # an earlier evaluation: the last one is read
    torn = '{"step": ' + str(steps + 1) + ', "lo'  # a torn last line, as a killed run leaves
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines) + torn)
    return steps * tokens


def lse_terms(p, lx):
    """Residual pieces of log(E + sum_j A_j x_j^-a_j) for p = (e, log A_1, a_1, ...): the log terms and their softmax."""
    # filled in place, not stacked from a list (scipy evaluates it hundreds of times a fit): the same arithmetic
    terms = np.empty((len(lx), 1 + lx.shape[1]))
    terms[:, 0] = p[0]
    terms[:, 1:] = p[1::2] - p[2::2] * lx
    top = np.logaddexp.reduce(terms, axis=-1)
    return top, np.exp(terms - top[:, None])


def scipy_loss(z: np.ndarray) -> np.ndarray:
    """The fit's loss as scipy's `least_squares` takes a callable one: rho(z) and its first two derivatives
    at z = (r / f_scale)^2, the cost being f_scale^2 / 2 * rho. With f_scale = delta that cost is
    Huber_delta(r) + TIE * r^2 / 2, written here from scipy's own Huber rho (z, or 2 sqrt(z) - 1 past 1)."""
    # scipy calls this once a residual evaluation (hundreds of times a fit): rows written in place, not stacked
    root = np.sqrt(np.maximum(z, 1.0))  # only read where z > 1
    inside = z <= 1
    out = np.empty((3, *z.shape))
    np.add(np.where(inside, z, 2 * root - 1), TIE * z, out=out[0])
    np.add(np.where(inside, 1.0, 1 / root), TIE, out=out[1])
    out[2] = np.where(inside, 0.0, -0.5 / root**3)
    return out


def scipy_best(lx, ly, starts, lower, upper, delta):
    """The lowest log-Huber objective scipy's least_squares reaches from a grid of starts (OLMo's recipe)."""
    return scipy_fit(lx, ly, starts, lower, upper, delta)[0]


def scipy_fit(lx, ly, starts, lower, upper, delta):
    """(objective, parameters) of the best of scipy's least_squares fits from a grid of starts."""
    return min(scipy_minima(lx, ly, starts, lower, upper, delta), key=lambda m: m[0])


def scipy_minima(lx, ly, starts, lower, upper, delta) -> list[tuple[float, np.ndarray]]:
    """(objective, parameters) of scipy's least_squares fit from each start, in the starts' order: the local
    minima the grid reaches (scripts/advise_extrapolation_audit.py reads how far the near-equal ones extrapolate
    apart)."""

    # (p, lse_terms at p): scipy asks for the Jacobian at the point it just evaluated
    last: list = [None, None]

    def terms(p):
        if last[0] is None or not np.array_equal(last[0], p):
            last[:] = [p.copy(), lse_terms(p, lx)]
        return last[1]

    def residuals(p):
        return terms(p)[0] - ly

    def jacobian(p):
        soft = terms(p)[1]
        cols = [soft[:, 0]]
        for j in range(lx.shape[1]):
            cols += [soft[:, 1 + j], -soft[:, 1 + j] * lx[:, j]]
        return np.stack(cols, -1)

    out = []
    for p0 in starts:
        fit = least_squares(
            residuals,
            p0,
            jac=jacobian,
            loss=scipy_loss,
            f_scale=delta,
            bounds=(lower, upper),
            xtol=1e-12,
            ftol=1e-12,
            gtol=1e-12,
        )
        out.append((float(objective(fit.fun, np.ones_like(fit.fun), delta)), fit.x))
    return out


def scipy_2d_problem(y: np.ndarray) -> tuple:
    """(log inputs, log values, starts, lower, upper) of scipy's 2-D fit to `y` at `GRID`: a grid of starts
    (4 floors x 3 x 3 exponents, OLMo's recipe) within the batched fit's bounds (the floor below the smallest
    value, exponents in `EXP_RANGE`)."""
    lx, ly = np.log(GRID), np.log(y)
    grid = (EXP_RANGE[0], 0.5, EXP_RANGE[1])
    starts = [
        [np.log(e * y.min()), np.log(y.mean() * (1 - e)), a, np.log(y.mean() * (1 - e)), b]
        for e in (0.3, 0.6, 0.9, 0.99)
        for a in grid
        for b in grid
    ]
    lower = [-60, -60, EXP_RANGE[0], -60, EXP_RANGE[0]]
    upper = [ly.min(), 60, EXP_RANGE[1], 60, EXP_RANGE[1]]
    return lx, ly, starts, lower, upper


LEVEL, NOISE = 3.0, 0.003
"""The 2-D audit ladders' level and relative seed noise: one run's seed sd is about LEVEL * NOISE."""


def ladder_2d(shape: str, draw: int) -> np.ndarray:
    """Values at `GRID` of a 2-D ladder the form `E + A/N^a + B/D^b` does not identify, noise `NOISE` (relative)
    from generator seed `draw`: "flat" (`LEVEL` everywhere) or "falls and rises" (a parabola in log N*D, lowest
    inside the grid, which the form cannot follow)."""
    x = GRID[:, 0] * GRID[:, 1]
    level = {"flat": np.full(len(x), LEVEL), "falls and rises": LEVEL + 0.05 * (np.log(x) + 1.4) ** 2}[shape]
    return level * np.exp(np.random.default_rng(draw).normal(0.0, NOISE, len(GRID)))


LOSS = KNOWN_METRICS["val/mlm15"]


made_up_ladder = made_up
"""values: schedule -> per rung a tuple of seed values (`calibration.made_up`, one builder of them)."""
