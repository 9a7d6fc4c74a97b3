"""The claims' 95% intervals cover the objectives' true difference about 95% of the time on simulated nested
designs with known truth, at every level a claim is tested at; pooling the fine-tuning seeds of every
checkpoint as replicates of the objective would not.

Each study draws, per pretraining seed, an effect both runs share (their common data order), each
checkpoint's own pretraining effect and the fine-tuning noise of each fine-tuning seed; the truth is the
difference of the objectives' means (against a one-checkpoint reference: the replicated objective's mean minus
that checkpoint's own true score, as the claim's sentence says). The coverage each design gave on these
seeds (measured 2026-12-06): paired 95.1%, paired with unbalanced fine-tuning seeds 94.8%, unpaired 95.4%, a
reference at 3 fine-tuning seeds 95.0%, a reference at one (the borrowed variance) 93.8%, and the pooled
pseudo-replicated test on the paired data 67%. Fixed seeds, so the test is deterministic; the bounds (92% to
98%) leave about 3 binomial sd at 800 draws.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from encoderlab.study.nested import compare_runs

DELTA = 0.5
"""The true difference of the objectives (a's mean minus b's)."""
DRAWS = 800


def _runs(rng, seeds_a, seeds_b, pre: float, fine: float, shared: float, fts=lambda k: range(3)):
    """Two runs' scores (pretraining seed -> fine-tuning seed -> score): a at mean DELTA, b at 0."""
    data_order = {k: rng.normal(0, shared) for k in {*seeds_a, *seeds_b}}
    out = []
    for mean, seeds in ((DELTA, seeds_a), (0.0, seeds_b)):
        run = {}
        for k in seeds:
            checkpoint = mean + data_order[k] + rng.normal(0, pre)
            run[k] = {f: checkpoint + rng.normal(0, fine) for f in fts(k)}
        out.append(run)
    return out


def _paired(rng):
    return (*_runs(rng, range(3), range(3), pre=2.0, fine=0.5, shared=1.0), DELTA)


def _unbalanced(rng):  # checkpoints of a fine-tuned at 1, 2 or 3 seeds
    return (*_runs(rng, range(4), range(4), 1.0, 1.0, 0.5, fts=lambda k: range(1 + k % 3)), DELTA)


def _unpaired(rng):
    return (*_runs(rng, [0, 1], [2, 3, 4], pre=1.0, fine=1.0, shared=0.0), DELTA)


def _reference(fine_tuning_seeds: int):
    def design(rng):
        a, _ = _runs(rng, range(3), [], pre=1.0, fine=1.0, shared=0.0)
        own = rng.normal(0, 1.0)  # the reference checkpoint's true score: its objective's mean is 0
        b = {0: {f: own + rng.normal(0, 1.0) for f in range(fine_tuning_seeds)}}
        return a, b, DELTA - own

    return design


@pytest.mark.parametrize(
    ("design", "level"),
    [
        (_paired, "pretraining"),
        (_unbalanced, "pretraining"),
        (_unpaired, "unpaired"),
        (_reference(3), "reference"),
        (_reference(1), "reference"),
    ],
    ids=["paired", "paired-unbalanced", "unpaired", "reference", "reference-one-score"],
)
def test_a_claims_interval_covers_the_objectives_true_difference(design, level):
    rng = np.random.default_rng(7)
    covered = 0
    for _ in range(DRAWS):
        a, b, truth = design(rng)
        nested = compare_runs(a, b)
        assert nested.level == level
        covered += nested.diff.ci_low <= truth <= nested.diff.ci_high
    assert 0.92 <= covered / DRAWS <= 0.98


def test_pooling_fine_tuning_seeds_as_replicates_would_not_cover():
    """The same paired designs tested over every fine-tuning score (pseudo-replication, scipy's paired t over
    the K x F pairs): large pretraining noise, small fine-tuning noise, and its interval covers far below 95%,
    so the coverage above can tell the two-stage test from it."""
    rng = np.random.default_rng(7)
    covered = 0
    for _ in range(DRAWS):
        a, b, truth = _paired(rng)
        va = [a[k][f] for k in sorted(a) for f in sorted(a[k])]
        vb = [b[k][f] for k in sorted(b) for f in sorted(b[k])]
        ci = stats.ttest_rel(va, vb).confidence_interval()
        covered += ci.low <= truth <= ci.high
    assert covered / DRAWS < 0.8
