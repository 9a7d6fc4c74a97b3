"""Recompute docs/advise.md's 2-D extrapolation audit: how far apart the near-equal minima of a 2-D fit to a
ladder that does not identify `E + A/N^a + B/D^b` extrapolate, in one run's seed sd, at 2.5x and 10x the
ladder's largest size and budget (both at once: 6.25x and 100x its largest compute).

Two ladder shapes (`tests/advise/advise_fixtures.ladder_2d`: 3 sizes x 3 budgets, 2 seeds each, relative
noise 0.3% around a level of 3.0): "falls and rises" (a parabola in log N*D, which the form cannot follow)
from generator seeds 0 onwards, and "flat" from seeds 100 onwards, the draws tests/advise/test_stats_audit.py
names. For each draw the advisor's batched fit (`advise.fit.fit_curves`) and scipy's `least_squares` from
each start of a grid (the tests' reference, `advise_fixtures.scipy_minima`, the same objective) are fitted,
and read at the two points; the reference optimum is the lowest of scipy's minima. Per shape it reports

* `excess`: how far the advisor's objective ends above that optimum (relative), and in how many draws by
  more than 0.1%;
* `fit_gap_sd`: |advisor - optimum| at each point, in seed sd (`LEVEL * NOISE`);
* `near_spread_sd`: the widest spread, at each point, of scipy's minima within 0.1% of the optimum's
  objective (the near-equal minima no loss value can choose between).

It writes every draw's values, minima (objective, parameters, predictions) and the advisor's fit as JSON,
and the per-draw gaps as a PNG beside it:

    PYTHONPATH=. python scripts/advise_extrapolation_audit.py [--out OUT.json] [--draws N] [--flat M] [--quick]

30 falls-and-rises draws and 30 flat ones unless given (the old audit's 30); `--quick` fits 2 of each (tests/advise/
test_extrapolation_audit.py). About 3 CPU minutes on one core for the default draws (36 scipy fits a draw).
It is a script, not a module of `encoderlab.advise`, because its reference fit is the tests' scipy one, as
scripts/advise_fit_uniqueness.py's is. Until 2026-12-06 docs/advise.md quoted "up to 3.8 seed sd at 2.5x, 10.4
at 10x, over 30 draws" from an audit no script kept, which this replaces (CHANGELOG says what it found).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from tests.advise.advise_fixtures import (  # noqa: E402
    GRID,
    LEVEL,
    NOISE,
    ladder_2d,
    scipy_2d_problem,
    scipy_minima,
)

from encoderlab.advise.fit import CHINCHILLA, DELTA, fit_curves  # noqa: E402
from encoderlab.atomic import savefig_atomic, write_json_atomic  # noqa: E402

FAR = (2.5, 10.0)
"""Where the curves are read: these multiples of the largest size and of the largest budget, together."""

NEAR = 1e-3
"""Minima whose objectives are within this share of the optimum's count as near-equal (docs/advise.md's 0.1%)."""

FIRST = {"falls and rises": 0, "flat": 100}
"""Each shape's first generator seed, as tests/advise/test_stats_audit.py numbers its draws."""


def predict(params: np.ndarray) -> list[float]:
    """A 2-D curve's values at `FAR` (the inputs are in units of the largest rung, so no rescaling)."""
    far = np.log(np.array([[m, m] for m in FAR]))[None]
    return np.exp(CHINCHILLA.log_predict(np.asarray(params)[None], far))[0].tolist()


def audit_draw(shape: str, draw: int) -> dict:
    """One draw: its values, the advisor's fit, scipy's minima, and the gaps (module docstring)."""
    y = ladder_2d(shape, draw)
    ours = fit_curves(CHINCHILLA, GRID, y[None], scale=np.array([1.0, 1.0]))
    minima = [
        {"objective": obj, "params": p.tolist(), "at": predict(p)}
        for obj, p in scipy_minima(*scipy_2d_problem(y), DELTA)
    ]
    best = int(np.argmin([m["objective"] for m in minima]))
    optimum = minima[best]
    near = np.array([m["at"] for m in minima if m["objective"] <= optimum["objective"] * (1 + NEAR)])
    fit = {
        "objective": float(ours.objective[0]),
        "params": ours.params[0].tolist(),
        "at": predict(ours.params[0]),
    }
    sd = LEVEL * NOISE
    return {
        "draw": draw,
        "values": y.tolist(),
        "fit": fit,
        "minima": minima,
        "optimum": best,
        "excess": fit["objective"] / optimum["objective"] - 1,
        "fit_gap_sd": (np.abs(np.subtract(fit["at"], optimum["at"])) / sd).tolist(),
        "near_minima": len(near),
        "near_spread_sd": ((near.max(0) - near.min(0)) / sd).tolist(),
    }


def summarise(rows: list[dict]) -> dict:
    """A shape's figures over its draws: the largest gaps at each point, and the draws above 0.1%."""
    excess = [r["excess"] for r in rows]
    return {
        "draws": len(rows),
        "above_near": int(sum(e > NEAR for e in excess)),
        "max_excess": float(max(excess)),
        "max_fit_gap_sd": np.max([r["fit_gap_sd"] for r in rows], 0).tolist(),
        "max_near_spread_sd": np.max([r["near_spread_sd"] for r in rows], 0).tolist(),
    }


def plot(result: dict, path: Path) -> None:
    """Per draw, each gap in seed sd at each point: one panel per point, one colour per shape."""
    fig, axes = plt.subplots(1, len(FAR), figsize=(5 * len(FAR), 3.6), sharey=True)
    for k, (ax, m) in enumerate(zip(axes, FAR)):
        for shape, colour in zip(result["shapes"], ("tab:red", "tab:blue")):
            rows = result["shapes"][shape]["rows"]
            draws = [r["draw"] - FIRST[shape] for r in rows]
            ax.plot(draws, [r["fit_gap_sd"][k] for r in rows], "o", color=colour, ms=4, label=f"{shape}: fit")
            near = [r["near_spread_sd"][k] for r in rows]
            ax.plot(draws, near, "x", color=colour, ms=5, label=f"{shape}: near-equal minima")
        ax.set(title=f"{m:g}x the largest size and budget", xlabel="draw (from the shape's first seed)")
    axes[0].set_ylabel("gap, in one run's seed sd")
    axes[0].legend(fontsize=7)
    savefig_atomic(fig, path, dpi=90, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)


def run(draws: dict[str, int]) -> dict:
    """Every shape's rows and summary, from the shapes' fixed first seeds."""
    shapes = {}
    for shape, n in draws.items():
        rows = [audit_draw(shape, FIRST[shape] + i) for i in range(n)]
        shapes[shape] = {"first_seed": FIRST[shape], **summarise(rows), "rows": rows}
    return {"far": list(FAR), "near": NEAR, "seed_sd": LEVEL * NOISE, "shapes": shapes}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("advise_extrapolation_audit.json"))
    parser.add_argument("--draws", type=int, default=30, help="falls-and-rises draws (seeds 0 onwards)")
    parser.add_argument("--flat", type=int, default=30, help="flat draws (seeds 100 onwards)")
    parser.add_argument("--quick", action="store_true", help="2 draws of each shape (for a test)")
    args = parser.parse_args(argv)
    draws = (
        {"falls and rises": 2, "flat": 2}
        if args.quick
        else {"falls and rises": args.draws, "flat": args.flat}
    )
    if min(draws.values()) < 1 or args.out.suffix != ".json":
        parser.error("--draws and --flat take 1 or more, and --out a .json path (the PNG goes beside it)")
    result = run(draws)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out, result)
    plot(result, args.out.with_suffix(".png"))
    for shape, s in result["shapes"].items():
        gap, spread = s["max_fit_gap_sd"], s["max_near_spread_sd"]
        print(
            f"{shape}, {s['draws']} draws: fit above the optimum by >0.1% in {s['above_near']} (max "
            f"{s['max_excess']:.2%}); fit vs optimum up to {gap[0]:.2f} seed sd at {FAR[0]:g}x, {gap[1]:.2f} at "
            f"{FAR[1]:g}x; near-equal minima up to {spread[0]:.2f} and {spread[1]:.2f} seed sd apart"
        )
    print(f"wrote {args.out} and {args.out.with_suffix('.png')}")
    return result


if __name__ == "__main__":
    main()
