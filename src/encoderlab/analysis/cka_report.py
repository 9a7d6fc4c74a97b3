"""A CKA comparison's report: its rows, the intervals over sampling seeds, and paper 2's low-layer claim.

Design. `cka.py` computes (features, linear CKA, the draws of texts); this module holds what a comparison
reports and how its numbers are read: the per-layer rows (`CkaLayer`), the report (`CkaReport`, whose JSON
carries the claim), the seed interval every ratio gets (`seed_interval`) and the claim itself
(`low_layer_summary`, `low_layer_verdict`). It imports no torch: the study's claims read it, and only `cka.py`
needs the models. Trade-off: `cka.compare` builds rows with `seed_interval` from here, so the interval's
widening is one function shared by the per-layer ratio and the claim, at the cost of a cross-module seam; the
report cannot live apart from the claim, since `CkaReport.to_dict` writes the claim's summary.

What the interval covers. The models are fixed, so the spread over sampling seeds is only the choice
of texts (and the seed-noise denominator is one twin pair, not a sample of pretraining seeds: the
interval says nothing about how the ratio varies from seed to seed of the models). And the draws are
not independent: each seed draws N of the pool's P texts, so two draws share about N/P of their texts
(half, for 500 of PubMedQA's 1,000), and their ratios are correlated. With pairwise correlation rho
the spread across k draws estimates only (1 - rho) of one draw's variance, while their mean has
(1 + (k - 1) rho) / k of it, so the plain t-interval is too narrow by sqrt((1 + (k - 1) rho) / (1 - rho))
(2x at rho = 0.5, k = 3). The ratio is a smooth function of the sample's feature moments, so to first
order rho is the share of texts two draws have in common (`CkaReport.overlap`, measured on the
draws), and every interval over seeds is widened by that factor (`seed_interval`). On simulated
features (a pool of 300, draws of 150, k = 3, 400 pools) the plain interval's variance was 0.28 of
the mean's true variance and its 95% interval covered 85%; widened, 1.12 and 95%.

The claim of the paper (section 2.6: layers 0-7 diverge 5-44x more than seed noise, the others
about 1x) is tested by `low_layer_summary`: per seed, the mean ratio over paper 2's low layers
(`train.freeze.paper2_groups`, the blocks the freeze runs and transplants call low) and over all the
other layers; it holds when the low layers' interval lies above 1 *and* the paired low-minus-other
difference's interval lies above 0. An arithmetic mean of ratios is used (not a geometric one): the
question is whether the low group as a whole exceeds seed noise, and the interval carries the spread.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from encoderlab.analysis.inputs import Encoding
from encoderlab.config import to_dict
from encoderlab.errors import UserError
from encoderlab.eval.stats import summarize
from encoderlab.train.freeze import format_layers, paper2_groups
from encoderlab.words import count, noun


@dataclass
class CkaLayer:
    """One layer's numbers; `baseline_*` and `ratio*` are None without a seed twin."""

    layer: int
    cka: float
    divergence: float
    cka_std: float
    """Sample standard deviation (n - 1) of the CKA over sampling seeds; 0 with one seed."""
    chance_floor: float
    baseline_cka: float | None = None
    baseline_divergence: float | None = None
    ratio: float | None = None
    """Mean over sampling seeds of d_s(A, B) / d_s(B', B) (inf where the twin's divergence is 0)."""
    ratio_ci_low: float | None = None
    """95% t-interval of the ratio over sampling seeds, widened for the texts the draws share (`CkaReport.overlap`;
    None: fewer than 2 distinct draws)."""
    ratio_ci_high: float | None = None
    ratio_per_seed: list[float] | None = None
    """The ratio under each sampling seed, in the order of `CkaReport.sampling_seeds`."""


def low_layer_verdict(holds: bool | None, low_ci, difference_ci) -> str:
    """The study's verdict on the low-layer claim: "holds" when both intervals lie on its side (`holds`),
    "does not hold" when either lies wholly on the other side (the low layers' below 1: they diverge less
    than seed noise; the difference's below 0: less than the other layers), else "undecided" (an interval
    across its bound, or none)."""
    if holds:
        return "holds"
    against = (low_ci is not None and low_ci[1] < 1.0) or (
        difference_ci is not None and difference_ci[1] < 0.0
    )
    return "does not hold" if against else "undecided"


@dataclass(frozen=True, kw_only=True)
class LowLayerSummary:
    """Paper 2's CKA claim on one comparison: do the low layers diverge beyond seed noise, and
    more than the other layers? Ratios are d(A, B) / d(B', B); intervals are 95% t over seeds."""

    low_layers: tuple[int, ...]
    """Paper 2's low group for this depth (0-7 of 22; `train.freeze.paper2_groups`)."""
    other_layers: tuple[int, ...]
    """Every other layer."""
    low_ratio: float
    """Mean over seeds of the per-seed mean ratio over the low layers."""
    low_ci: tuple[float, float] | None
    """Its interval over seeds (None: fewer than 2 distinct draws, or an infinite ratio)."""
    other_ratio: float
    """The same over the other layers."""
    other_ci: tuple[float, float] | None
    difference: float
    """Mean over seeds of (low mean ratio - other mean ratio), paired by seed."""
    difference_ci: tuple[float, float] | None
    n_seeds: int
    distinct_draws: int
    overlap: float = 0.0
    """`CkaReport.overlap`: the intervals are widened for the texts the draws share."""
    above_noise: bool | None
    """The low layers' interval lies above 1 (None without an interval)."""
    above_others: bool | None
    """The difference's interval lies above 0 (None without an interval)."""

    @property
    def holds(self) -> bool | None:
        """Both parts of the claim (None when either cannot be decided for want of an interval)."""
        if self.above_noise is None or self.above_others is None:
            return None
        return self.above_noise and self.above_others

    def sentence(self) -> str:
        def ci(bounds):
            return f" (95% CI over text samples [{bounds[0]:.2f}, {bounds[1]:.2f}])" if bounds else ""

        def layers(group) -> str:  # "layer 0" on a tiny model, whose low group is one layer
            return f"{noun(len(group), 'layer')} {format_layers(group)}"

        # an infinite ratio read "infx seed noise", an undefined one "nanx"
        def times(ratio: float, what: str = "") -> str:
            if math.isnan(ratio):  # a layer of constant features (the end of the sentence says so)
                return f"an undefined multiple{' of' + what if what else ''}"
            return (
                f"{ratio:.2f}x{what}"
                if not math.isinf(ratio)
                else "where the twins agree exactly (seed noise 0)"
            )

        difference = (
            f"{self.difference:+.2f}{ci(self.difference_ci)}"
            if math.isfinite(self.difference)
            else "undefined"
        )
        text = (
            f"{layers(self.low_layers)} {noun(len(self.low_layers), 'diverges', 'diverge')} "
            f"{times(self.low_ratio, ' seed noise')}{ci(self.low_ci)} vs {times(self.other_ratio)}"
            f"{ci(self.other_ci)} in {layers(self.other_layers)}; difference {difference}, "
            f"{count(self.n_seeds, 'sampling seed')}"
        )
        if self.holds is None:
            return text + (
                "; no interval: one sampling seed gives none (give several, e.g. --seeds 42 43 44)"
                if self.n_seeds < 2  # was blamed on the pool, which may hold far more than n texts
                else "; no interval: every seed drew the same texts (the pool holds only n)"
                if self.distinct_draws < 2
                else "; no interval: a layer's CKA is undefined (its features are constant across texts)"
                if math.isnan(self.low_ratio) or math.isnan(self.other_ratio)
                else "; no interval: a seed-noise divergence is 0"
            )
        verdict = {True: "above", False: "not above"}
        shared = (
            f"widened for the {self.overlap:.0%} of texts two samples share"
            if self.overlap
            else "disjoint samples"
        )
        return (
            text + f"; low layers {verdict[self.above_noise]} seed noise and "
            f"{verdict[self.above_others]} the other layers; the intervals cover which texts were drawn "
            f"({shared}) for these fixed models, not pretraining-seed variation (the seed noise is one twin pair)"
        )

    def to_dict(self) -> dict:
        return {**to_dict(self), "holds": self.holds, "sentence": self.sentence()}


def seed_interval(
    values: Sequence[float], distinct_draws: int, overlap: float = 0.0
) -> tuple[float, tuple[float, float] | None]:
    """Mean of per-seed values and their t-interval widened for draws sharing a share `overlap` of their
    texts (module docstring); None with < 2 distinct draws, draws sharing every text, or a non-finite value."""
    mean = float(np.mean(values))
    if distinct_draws < 2 or overlap >= 1.0 or not all(math.isfinite(v) for v in values):
        return mean, None
    est = summarize(list(values))
    half = est.half_width * math.sqrt((1 + (len(values) - 1) * overlap) / (1 - overlap))
    return mean, (est.mean - half, est.mean + half)


@dataclass
class CkaReport:
    """The per-layer comparison of A with B (and of B's seed twin with B)."""

    layers: list[CkaLayer]
    n_texts: int
    sampling_seeds: list[int]
    encoding: Encoding
    labels: dict[str, str] = field(default_factory=dict)
    distinct_draws: int = 1
    """How many different text samples the seeds drew (1 when the pool holds exactly n texts)."""
    overlap: float = 0.0
    """Mean over pairs of sampling seeds of the share of their n texts two draws have in common (about n
    over the pool's size; 1 when the pool holds exactly n): the intervals are widened for it."""
    dtype: str | None = None
    """The precision the models ran in (`analyze cka --dtype`; "A float16, B float32" when they differ): the
    features were computed in it, and pooled and compared in float64 (None: a report built by hand)."""

    @property
    def mean_divergence(self) -> float:
        return float(np.mean([row.divergence for row in self.layers]))

    def to_dict(self) -> dict:
        has_twin = all(row.ratio_per_seed is not None for row in self.layers)
        return {
            "labels": self.labels,
            "n_texts": self.n_texts,
            "sampling_seeds": self.sampling_seeds,
            "distinct_draws": self.distinct_draws,
            "overlap": self.overlap,
            "encoding": asdict(self.encoding),
            "dtype": self.dtype,
            "mean_divergence": self.mean_divergence,
            "layers": [asdict(row) for row in self.layers],
            "low_layers": low_layer_summary(self).to_dict() if has_twin and len(self.layers) >= 3 else None,
        }


def too_few_layers(layers: int) -> str:
    """Why a seed-twin comparison of `layers` layers (under 3) has no low-layer summary: one sentence, said
    alike by `analyze cka` and the study report's claim (each printed nothing, or its own words)."""
    return (
        f"the models have {count(layers, 'layer')}, and paper 2's low/mid/late groups need at least 3: there is "
        "no low group to compare with the others."
    )


def low_layer_summary(report: CkaReport) -> LowLayerSummary:
    """Whether paper 2's low layers diverge beyond seed noise and beyond the other layers, with
    95% t-intervals over the sampling seeds (see the module docstring)."""
    if any(row.ratio_per_seed is None for row in report.layers):
        raise UserError("the low-layer CKA claim needs the seed twin of the reference; pass --baseline")
    low = tuple(paper2_groups(len(report.layers))[0])
    other = tuple(i for i in range(len(report.layers)) if i not in low)
    per_seed = np.array([row.ratio_per_seed for row in report.layers], dtype=float)  # (layers, seeds)
    low_s, other_s = per_seed[list(low)].mean(0), per_seed[list(other)].mean(0)
    draws, shared = report.distinct_draws, report.overlap
    (low_mean, low_ci), (other_mean, other_ci) = (seed_interval(v, draws, shared) for v in (low_s, other_s))
    with np.errstate(
        invalid="ignore"
    ):  # inf - inf (a zero seed-noise divergence) is undefined: NaN, said below
        diff_mean, diff_ci = seed_interval(low_s - other_s, draws, shared)
    return LowLayerSummary(
        low_layers=low,
        other_layers=other,
        low_ratio=low_mean,
        low_ci=low_ci,
        other_ratio=other_mean,
        other_ci=other_ci,
        difference=diff_mean,
        difference_ci=diff_ci,
        n_seeds=len(report.sampling_seeds),
        distinct_draws=draws,
        overlap=shared,
        above_noise=None if low_ci is None else low_ci[0] > 1.0,
        above_others=None if diff_ci is None else diff_ci[0] > 0.0,
    )
