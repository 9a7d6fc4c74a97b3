"""Recompute the calibration figures of docs/advise.md, "What it cannot say" (`encoderlab.advise.calibration`):
coverage of the 80% intervals by the seed noise's degrees of freedom and by noise model, and the trend
check on healthy ladders. Prints them and writes the numbers behind them as JSON (each figure with every
draw's row: which intervals covered the truth, whether it said insufficient evidence; each schedule's trend
margin in standard errors):

    python scripts/advise_calibration.py [OUT.json] [DRAWS TIES]

From fixed generator seeds (the suite's 2026 and 2027; 200 draws and 100 near ties unless given), so
the same arguments print the same figures. About 6 minutes on one core.
"""

import json
import sys

from encoderlab.advise.calibration import by_noise_df, by_noise_model, trend_check

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "advise_calibration.json"
    draws, ties = map(int, sys.argv[2:4]) if len(sys.argv) > 3 else (200, 100)
    result = {"draws": draws, "ties": ties, "trend": trend_check(80)}
    t = result["trend"]
    print(
        f"trend check: {t['flagged']} of {t['ladders']} ladders' {t['schedules']} schedules flagged; the least "
        f"steep {t['least_margin_sd']:.0f} standard errors below zero",
        flush=True,
    )
    result["by_noise_df"] = by_noise_df((1, 2, 3, 4), draws, ties)
    for k, row in result["by_noise_df"].items():
        print(
            f"{k} degree(s) of freedom: coverage {row['coverage']:.1%} of {row['intervals']} intervals",
            flush=True,
        )
    result["by_noise_model"] = by_noise_model(draws, ties)
    for name, row in result["by_noise_model"].items():
        print(
            f"noise {name}: coverage {row['coverage']:.1%} of {row['intervals']} intervals; insufficient evidence "
            f"in {row['insufficient_near_ties']:.0%} of {row['near_ties']} near ties",
            flush=True,
        )
    with open(out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {out}")
