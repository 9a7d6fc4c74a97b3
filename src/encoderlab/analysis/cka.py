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

Sampling. With several sampling seeds (the paper used 42, 43, 44) each seed draws N texts from the
pool; features are computed once for the union and the CKA is averaged over seeds (mean and
standard deviation reported per layer).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn

from encoderlab.analysis.features import DEFAULT_ENCODING, Encoding, pooled_features
from encoderlab.errors import UserError

MIN_TEXTS = 50
"""Fewest texts a CKA comparison accepts (see the module docstring for why)."""


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
    """One layer's numbers; `baseline_*` and `ratio` are None without a seed twin."""

    layer: int
    cka: float
    divergence: float
    cka_std: float
    chance_floor: float
    baseline_cka: float | None = None
    baseline_divergence: float | None = None
    ratio: float | None = None


@dataclass
class CkaReport:
    """The per-layer comparison of A with B (and of B's seed twin with B)."""

    layers: list[CkaLayer]
    n_texts: int
    sampling_seeds: list[int]
    encoding: Encoding
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def mean_divergence(self) -> float:
        return float(np.mean([row.divergence for row in self.layers]))

    def to_dict(self) -> dict:
        return {
            "labels": self.labels,
            "n_texts": self.n_texts,
            "sampling_seeds": self.sampling_seeds,
            "encoding": asdict(self.encoding),
            "mean_divergence": self.mean_divergence,
            "layers": [asdict(row) for row in self.layers],
        }


def sample_indices(pool_size: int, n: int, seeds: Sequence[int]) -> list[np.ndarray]:
    """For each seed, n distinct indices into the pool (the whole pool, in order, when n equals it)."""
    if n < MIN_TEXTS:
        raise UserError(
            f"CKA on {n} texts is too few: the minimum is {MIN_TEXTS} (below it the chance level of linear CKA "
            "is too high to read); use more texts (the paper uses 500)"
        )
    if pool_size < n:
        raise UserError(
            f"only {pool_size} texts are available but {n} were asked for; lower n or give more texts"
        )
    if pool_size == n:
        return [np.arange(n) for _ in seeds]
    return [np.sort(np.random.default_rng(seed).choice(pool_size, size=n, replace=False)) for seed in seeds]


def compare(
    a: tuple[nn.Module, object],
    b: tuple[nn.Module, object],
    texts: Sequence[str],
    *,
    baseline: tuple[nn.Module, object] | None = None,
    n: int = 500,
    seeds: Sequence[int] = (42,),
    encoding: Encoding = DEFAULT_ENCODING,
    labels: dict[str, str] | None = None,
) -> CkaReport:
    """Layer-wise CKA of model A against reference B, and of B's seed twin against B.

    `a`, `b` and `baseline` are (model, tokenizer) pairs; `texts` is the pool the N texts are
    drawn from, once per sampling seed.
    """
    models = {"A": a, "B": b, **({"B'": baseline} if baseline else {})}
    depths = {name: len(model.layers) for name, (model, _) in models.items()}
    if len(set(depths.values())) > 1:
        shown = ", ".join(f"{k} {v}" for k, v in depths.items())
        raise UserError(
            f"the models have different depths ({shown} layers); layer-wise CKA pairs layers one to one, "
            "so compare models of the same depth"
        )
    draws = sample_indices(len(texts), n, seeds)
    union = np.unique(np.concatenate(draws))
    pool = [texts[i] for i in union]
    position = {int(i): k for k, i in enumerate(union)}
    rows_per_seed = [torch.tensor([position[int(i)] for i in draw]) for draw in draws]

    feats = {
        name: pooled_features(model, tok, pool, encoding, desc=f"CKA {name}")
        for name, (model, tok) in models.items()
    }
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
    base = per_seed("B'", "B").mean(0) if baseline else None
    layers = []
    for layer in range(ab.shape[1]):
        row = CkaLayer(
            layer=layer,
            cka=float(ab[:, layer].mean()),
            divergence=float(1 - ab[:, layer].mean()),
            cka_std=float(ab[:, layer].std()),
            chance_floor=chance_floor(n, feats["A"][layer].shape[1], feats["B"][layer].shape[1]),
        )
        if base is not None:
            row.baseline_cka = float(base[layer])
            row.baseline_divergence = float(1 - base[layer])
            row.ratio = row.divergence / row.baseline_divergence if row.baseline_divergence > 0 else math.inf
        layers.append(row)
    return CkaReport(
        layers=layers, n_texts=n, sampling_seeds=list(seeds), encoding=encoding, labels=labels or {}
    )
