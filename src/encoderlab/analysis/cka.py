"""Layer-wise linear CKA between two models, against a seed-noise baseline (paper 2, section 2.6).

Method. Each model encodes the same N held-out texts (its own tokenizer, at most 512 tokens); the
block outputs are mean-pooled over real tokens, so layer `l` gives an (N, hidden) matrix per
model. Linear CKA(X, Y) = ||Yc^T Xc||_F^2 / (||Xc^T Xc||_F ||Yc^T Yc||_F) on column-centred
features, in float64; divergence d = 1 - CKA. Because d is not zero even between two runs that
differ only in seed, the paper divides by that noise: r_l = d(A_l, B_l) / d(B'_l, B_l), where B'
is B's seed twin. r near 1 means "no more different than seed noise".

Why the feature-space form: it never builds the N x N Gram matrices, costs O(N d^2) and is the
form that agrees with the Gram/HSIC form to rounding error (tested). Why float64: the paper
reports that a single-precision computation underflowed on deep layers; squared Frobenius norms
of pooled states span many orders of magnitude, and float32 loses them (a test builds such a case).

How many texts. With N texts the centred features have rank at most N - 1 and linear CKA is biased
upwards when N is small against the width: for two unrelated Gaussian representations of widths
d1, d2 its expected value is about sqrt(d1 d2 / ((N + d1)(N + d2))), the "chance floor" reported
for every layer. Below `MIN_TEXTS` the floor is so high (0.72 for a 128-wide model) that neither
the divergence nor the ratio means anything, so fewer texts are refused. The paper's N = 500 with
widths 768-1024 sits at a floor near 0.6 for isotropic noise; real hidden states are far from
isotropic, and the seed baseline shares the same bias, which the ratio cancels to first order.

Sampling. Each sampling seed (the paper's 42, 43, 44 by default) draws N texts from
the pool; features are computed once for the union. Per layer the CKA is averaged over seeds (mean
and standard deviation), and the ratio is computed *per seed*, r_l,s = d_s(A, B) / d_s(B', B), then
reported as its mean over seeds with a 95% Student-t interval over them (`eval.stats.summarize`,
the interval evaluation uses for seeds). That mean of per-seed ratios is ours: the paper's saved output
(Rian-T/thesis plots/chapter5/data/cka_mlm_control_heldout.json) divides the divergences of the
seed-averaged CKA, which `divergence / baseline_divergence` gives; on its numbers the two agree to
0.1%. When the pool holds exactly N texts every seed draws the same texts: the seeds then measure
nothing, and no interval is reported (`distinct_draws` = 1).

What the interval covers. The models are fixed, so the spread over sampling seeds is only the choice
of texts (and the seed-noise denominator is one twin pair, not a sample of pretraining seeds: the
interval says nothing about how the ratio varies from seed to seed of the models). And the draws are
not independent: each seed draws N of the pool's P texts, so two draws share about N/P of their texts
(half, for 500 of PubMedQA's 1,000), and their ratios are correlated. With pairwise correlation rho
the spread across k draws estimates only (1 - rho) of one draw's variance, while their mean has
(1 + (k - 1) rho) / k of it, so the plain t-interval is too narrow by sqrt((1 + (k - 1) rho) / (1 - rho))
(2x at rho = 0.5, k = 3). The ratio is a smooth function of the sample's feature moments, so to first
order rho is the share of texts two draws have in common (`CkaReport.overlap`, measured on the
draws), and every interval over seeds is widened by that factor (`_seed_interval`). On simulated
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
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn

from encoderlab.analysis.features import (
    DEFAULT_ENCODING,
    Encoding,
    check_finite,
    check_varies,
    model_dtype,
    pooled_features,
)
from encoderlab.analysis.inputs import MIN_TEXTS, distinct_texts
from encoderlab.config import to_dict
from encoderlab.errors import UserError
from encoderlab.eval.stats import summarize
from encoderlab.train.freeze import format_layers, paper2_groups
from encoderlab.words import count, noun

PAPER2_SEEDS = (42, 43, 44)
"""The paper's sampling seeds (thesis, plots/chapter5/data/cka_mlm_control_heldout.json)."""


def linear_cka(x: torch.Tensor | np.ndarray, y: torch.Tensor | np.ndarray) -> float:
    """Linear CKA between (n, d1) and (n, d2) feature matrices, computed in float64.

    Returns NaN when either matrix is constant across rows (CKA is undefined there).
    """
    x = torch.as_tensor(x).to(torch.float64)
    y = torch.as_tensor(y).to(torch.float64)
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ValueError(
            f"CKA needs two (n, d) matrices with the same n, got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    x = x - x.mean(0, keepdim=True)
    y = y - y.mean(0, keepdim=True)
    cross = torch.linalg.matrix_norm(y.T @ x) ** 2
    norm = torch.linalg.matrix_norm(x.T @ x) * torch.linalg.matrix_norm(y.T @ y)
    if norm == 0:
        return math.nan
    # Rounding can put the ratio a few ulps above 1 for identical inputs.
    return float(min(cross / norm, 1.0))


def chance_floor(n: int, d1: int, d2: int) -> float:
    """Expected linear CKA of two independent isotropic Gaussian representations (n rows)."""
    return math.sqrt(d1 * d2 / ((n + d1) * (n + d2)))


def layerwise_cka(feats_a: Sequence[torch.Tensor], feats_b: Sequence[torch.Tensor]) -> list[float]:
    """CKA of layer l of A with layer l of B, for every layer."""
    if len(feats_a) != len(feats_b):
        raise ValueError(
            f"layer-wise CKA pairs layers one to one, got {len(feats_a)} and {len(feats_b)} layers"
        )
    return [linear_cka(a, b) for a, b in zip(feats_a, feats_b)]


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

        def times(ratio: float, what: str = "") -> str:  # an infinite ratio read "infx seed noise"
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


def _seed_interval(
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
    (low_mean, low_ci), (other_mean, other_ci) = (_seed_interval(v, draws, shared) for v in (low_s, other_s))
    with np.errstate(
        invalid="ignore"
    ):  # inf - inf (a zero seed-noise divergence) is undefined: NaN, said below
        diff_mean, diff_ci = _seed_interval(low_s - other_s, draws, shared)
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


def sample_indices(pool_size: int, n: int, seeds: Sequence[int]) -> list[np.ndarray]:
    """For each seed, n distinct indices into the pool (the whole pool, in order, when n equals it);
    too few texts, a pool smaller than n and a repeated seed are refused."""
    if n < MIN_TEXTS:
        raise UserError(
            f"CKA on {n} texts is too few: the minimum is {MIN_TEXTS} (below it the chance level of linear CKA "
            "is too high to read); raise --n (the paper uses 500)"
        )
    repeated = sorted({s for s in seeds if list(seeds).count(s) > 1})
    if repeated:  # each copy was counted as another seed: the same draw again, a narrower interval
        distinct = list(dict.fromkeys(seeds))
        distinct += [s for s in range(max(seeds) + 1, max(seeds) + len(seeds)) if s not in distinct]
        raise UserError(
            f"sampling seeds {', '.join(map(str, seeds))} repeat {noun(len(repeated), 'seed')} "
            f"{', '.join(map(str, repeated))}: a repeated seed draws the same texts again and narrows the "
            f"interval over seeds falsely; give each seed once, e.g. --seeds {' '.join(map(str, distinct[: len(seeds)]))}"
        )
    if pool_size < n:  # "lower --n" alone was the fix below the minimum too, where no --n passes
        fix = (
            f"lower --n (to {MIN_TEXTS} at least) or"
            if pool_size >= MIN_TEXTS
            else f"CKA takes at least {MIN_TEXTS};"
        )
        raise UserError(
            f"only {pool_size} texts are available but {n} were asked for; {fix} give more --texts"
        )
    if pool_size == n:
        return [np.arange(n) for _ in seeds]
    return [np.sort(np.random.default_rng(seed).choice(pool_size, size=n, replace=False)) for seed in seeds]


def _check_depths(models: dict[str, tuple[nn.Module, object]]) -> None:
    depths = {name: len(model.layers) for name, (model, _) in models.items()}
    if len(set(depths.values())) > 1:
        shown = ", ".join(f"{k} {v}" for k, v in depths.items())
        raise UserError(
            f"the models have different depths ({shown} layers); layer-wise CKA pairs layers one to one, "
            "so compare models of the same depth"
        )


def draw_overlap(draws: Sequence[np.ndarray]) -> float:
    """Mean over pairs of draws of the share of texts they have in common (0 with one draw)."""
    pairs = [(x, y) for i, x in enumerate(draws) for y in draws[i + 1 :]]
    return float(np.mean([len(np.intersect1d(x, y)) / len(x) for x, y in pairs])) if pairs else 0.0


def _draw(
    texts: Sequence[str], n: int, seeds: Sequence[int]
) -> tuple[list[str], list[torch.Tensor], int, float]:
    """(the texts any seed drew, each seed's rows into them, how many different draws there are, their
    `draw_overlap`), so each text is encoded once however many seeds draw it."""
    draws = sample_indices(len(texts), n, seeds)
    union = np.unique(np.concatenate(draws))
    position = {int(i): k for k, i in enumerate(union)}
    rows_per_seed = [torch.tensor([position[int(i)] for i in draw]) for draw in draws]
    distinct = len({tuple(d.tolist()) for d in draws})
    return [texts[i] for i in union], rows_per_seed, distinct, draw_overlap(draws)


def _dtypes(models: dict[str, nn.Module]) -> str:
    """The models' precision: one name when they share it, else each model's ("A float16, B float32")."""
    names = {name: model_dtype(model) for name, model in models.items()}
    if len(set(names.values())) == 1:
        return next(iter(names.values()))
    return ", ".join(f"{name} {dtype}" for name, dtype in names.items())


def _ratio(ab: float, base: float) -> float:
    """(1 - CKA(A, B)) / (1 - CKA(B', B)): infinite when the twin matches B exactly, undefined (NaN) when
    either CKA is (a layer constant across texts), never infinite for an undefined baseline."""
    if math.isnan(ab) or math.isnan(base):
        return math.nan
    return (1 - ab) / (1 - base) if base < 1 else math.inf


def _layer(
    layer: int, ab: np.ndarray, base: np.ndarray | None, floor: float, distinct: int, overlap: float = 0.0
) -> CkaLayer:
    """One layer's row from the per-seed CKA of A with B (`ab`) and of B' with B (`base`), (seeds, layers);
    `distinct` and `overlap` of the draws (`_draw`)."""
    row = CkaLayer(
        layer=layer,
        cka=float(ab[:, layer].mean()),
        divergence=float(1 - ab[:, layer].mean()),
        cka_std=float(ab[:, layer].std(ddof=1)) if len(ab) > 1 else 0.0,
        chance_floor=floor,
    )
    if base is not None:
        row.baseline_cka = float(base[:, layer].mean())
        row.baseline_divergence = 1 - row.baseline_cka
        row.ratio_per_seed = [_ratio(float(x), float(y)) for x, y in zip(ab[:, layer], base[:, layer])]
        row.ratio, bounds = _seed_interval(row.ratio_per_seed, distinct, overlap)
        row.ratio_ci_low, row.ratio_ci_high = bounds or (None, None)
    return row


def _checked_features(
    models: dict[str, tuple[nn.Module, object]],
    pool: Sequence[str],
    encoding: Encoding,
    labels: dict[str, str] | None,
) -> dict[str, list[np.ndarray]]:
    """Each model's pooled features per layer over `pool`, refused (naming the model as the user gave
    it) where one is not finite or does not vary over the texts: CKA of either is undefined."""
    feats = {
        name: pooled_features(model, tok, pool, encoding, desc=f"CKA {name}")
        for name, (model, tok) in models.items()
    }
    for name, layers in feats.items():
        named = f"model {name}" + (f" ({labels[name]})" if labels and name in labels else "")
        check_finite(layers, named)
        check_varies(
            layers,
            named,
            f"{len(pool)} texts",
            "CKA is undefined",
            "give texts in the model's language and script (--texts)",
        )
    return feats


def compare(
    a: tuple[nn.Module, object],
    b: tuple[nn.Module, object],
    texts: Sequence[str],
    *,
    baseline: tuple[nn.Module, object] | None = None,
    n: int = 500,
    seeds: Sequence[int] = PAPER2_SEEDS,
    encoding: Encoding = DEFAULT_ENCODING,
    labels: dict[str, str] | None = None,
) -> CkaReport:
    """Layer-wise CKA of model A against reference B, and of B's seed twin against B.

    `a`, `b` and `baseline` are (model, tokenizer) pairs; `texts` is the pool the N texts are
    drawn from, once per sampling seed; a repeated text is one text of it (`inputs.distinct_texts`, a warning).
    """
    models = {"A": a, "B": b, **({"B'": baseline} if baseline else {})}
    _check_depths(models)
    pool, rows_per_seed, distinct, overlap = _draw(distinct_texts(texts), n, seeds)
    feats = _checked_features(models, pool, encoding, labels)
    widths = [f.shape[1] for f in feats["A"] + feats["B"]]
    if n <= max(widths):
        warnings.warn(
            f"CKA on {n} texts with hidden size up to {max(widths)}: fewer texts than dimensions inflate CKA; "
            "read the divergence against the seed baseline and the chance floor",
            stacklevel=2,
        )

    def per_seed(x: str, y: str) -> np.ndarray:  # (seeds, layers)
        return np.array(
            [layerwise_cka([f[r] for f in feats[x]], [f[r] for f in feats[y]]) for r in rows_per_seed]
        )

    ab = per_seed("A", "B")
    base = per_seed("B'", "B") if baseline else None
    floors = [chance_floor(n, fa.shape[1], fb.shape[1]) for fa, fb in zip(feats["A"], feats["B"])]
    return CkaReport(
        layers=[_layer(layer, ab, base, floors[layer], distinct, overlap) for layer in range(ab.shape[1])],
        n_texts=n,
        sampling_seeds=list(seeds),
        encoding=encoding,
        labels=labels or {},
        distinct_draws=distinct,
        overlap=overlap,
        dtype=_dtypes({name: model for name, (model, _) in models.items()}),
    )
