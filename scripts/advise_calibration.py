"""Recompute the calibration figures of docs/advise.md, "What it cannot say" (`encoderlab.advise.calibration`):
the trend check on healthy ladders, the rise test's level on flat ladders (and its share on ladders falling to a
floor), a rising ladder's prediction against where its trend points, and coverage of the 80% intervals by the
seed noise's degrees of freedom and by noise model. Prints them and writes the numbers behind them as JSON (each
figure with every draw's row: which intervals covered the truth, whether it said insufficient evidence; each
schedule's trend margin in standard errors; each draw's rise statistic):

    python scripts/advise_calibration.py [OUT.json] [DRAWS TIES] [--trend-only] [--quick]

From fixed generator seeds (the suite's 2026 and 2027; 200 draws and 100 near ties unless given), so
the same arguments print the same figures. About 6 minutes on one core; `--trend-only` (the trend figures
alone) about half a minute. `--quick` takes a few draws of each (tests/advise/test_calibration.py), whose
figures are not the documented ones.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from encoderlab.advise.calibration import (
    SIZES,
    by_noise_df,
    by_noise_model,
    flag_shares,
    rising_probe,
    trend_check,
)

FALLING = 2.0 + (np.array(SIZES) / SIZES[0]) ** -0.5
"""Rung means falling to a floor (3.0, 2.63, 2.40, 2.25): with noise sd 0.075 the last step is 2 standard errors."""


def trend_figures(quick: bool) -> dict:
    """The trend check's figures: healthy ladders, the rise test on flat and falling ones, the rising probe."""
    ladders, flat, falling = (4, 100, 50) if quick else (80, 2000, 1000)
    out = {"trend": trend_check(ladders)}
    t = out["trend"]
    print(
        f"trend check: {t['flagged']} of {t['ladders']} ladders' {t['schedules']} schedules flagged; the least "
        f"steep {t['least_margin_sd']:.0f} standard errors below zero",
        flush=True,
    )
    out["rise_flat"] = flag_shares([2.5] * 4, 0.05, flat, seed=1)
    out["rise_falling"] = flag_shares(FALLING.tolist(), 0.075, falling, seed=2)
    rises = sum(row["rise"] for row in out["rise_flat"]["rows"])
    flagged = sum(row["flagged"] for row in out["rise_falling"]["rows"])
    print(
        f"rise test: flags {rises} of {flat} flat ladders ({rises / flat:.2%}); the trend check flags {flagged} "
        f"of {falling} falling to a floor",
        flush=True,
    )
    out["rising"] = r = rising_probe()
    print(
        f"a ladder rising {r['slope_per_decade']:+.3f} per tenfold compute (rung means "
        f"{', '.join(f'{m:.2f}' for m in r['rung_means'])}): predicted {r['predicted']:.2f} "
        f"[{r['interval'][0]:.2f}, {r['interval'][1]:.2f}] at C = {r['target_flops']:.0e}, where its trend points "
        f"to {r['trend_points_to']:.2f}; flagged: {r['flagged']}",
        flush=True,
    )
    return out


def coverage_figures(draws: int, ties: int) -> dict:
    """Coverage of the 80% intervals by degrees of freedom and by noise model."""
    out = {"by_noise_df": by_noise_df((1, 2, 3, 4), draws, ties)}
    for k, row in out["by_noise_df"].items():
        print(
            f"{k} degree(s) of freedom: coverage {row['coverage']:.1%} of {row['intervals']} intervals",
            flush=True,
        )
    out["by_noise_model"] = by_noise_model(draws, ties)
    for name, row in out["by_noise_model"].items():
        print(
            f"noise {name}: coverage {row['coverage']:.1%} of {row['intervals']} intervals; insufficient evidence "
            f"in {row['insufficient_near_ties']:.0%} of {row['near_ties']} near ties",
            flush=True,
        )
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default="advise_calibration.json")
    parser.add_argument("counts", nargs="*", type=int, help="DRAWS TIES (200 100 unless given)")
    parser.add_argument("--trend-only", action="store_true", help="the trend figures alone")
    parser.add_argument("--quick", action="store_true", help="a few draws of each (for a test)")
    args = parser.parse_args(argv)
    if args.counts and (len(args.counts) != 2 or min(args.counts) < 1):
        parser.error("give DRAWS and TIES together, each 1 or more (200 100 unless given)")
    draws, ties = args.counts or ((4, 2) if args.quick else (200, 100))
    result = {"draws": draws, "ties": ties, **trend_figures(args.quick)}
    if not args.trend_only:
        result.update(coverage_figures(draws, ties))
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
