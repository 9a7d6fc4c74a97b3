"""Pearson and Spearman correlation of predicted and gold numbers (in percent, x100), the scores GLUE
reports for STS-B and Hugging Face's `run_glue.py` computes for a regression task.

scipy's `pearsonr`/`spearmanr` return NaN (with a warning) when either side is constant; a model
that predicts one number for every example shows no relation to the gold, so it scores 0 here,
and a NaN never reaches a mean over seeds. Nor does one from a fine-tuning run that diverged (NaN
or infinite predictions, e.g. at too high an LR): such a model predicts nothing, so it scores 0 too
(`Regression.constant` flags it). Before, its NaN score made the LR choice depend on the order of the
grid and stopped a study's report (Holm's correction refuses a NaN p-value).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def correlations(gold: Sequence[float], pred: Sequence[float]) -> dict[str, float]:
    """{"pearson", "spearman"} in percent, and the mean squared error `mse` (in the target's units)."""
    if len(gold) != len(pred) or len(gold) < 2:
        raise ValueError(f"need equally long lists of at least 2 numbers, got {len(gold)} and {len(pred)}")
    from scipy import stats  # imported when a score is taken, not by every command that reads the eval spec

    g, p = np.asarray(gold, dtype=np.float64), np.asarray(pred, dtype=np.float64)
    constant = not np.isfinite(p).all() or np.ptp(g) == 0 or np.ptp(p) == 0
    return {
        "pearson": 0.0 if constant else 100.0 * float(stats.pearsonr(g, p).statistic),
        "spearman": 0.0 if constant else 100.0 * float(stats.spearmanr(g, p).statistic),
        "mse": float(np.mean((g - p) ** 2)),  # NaN or inf for a diverged model: nothing averages it
    }
