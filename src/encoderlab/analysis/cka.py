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
The centred features are scaled to a largest entry of 1 first (CKA does not see the scale), so no
magnitude overflows or underflows even in float64. A matrix that varies across texts by less than the
rounding of its mean (`ROUNDING`, per column) is constant, and its CKA undefined: the trade-off is that a
real variation below 1e-11 of a column's magnitude is read as none (texts of other content differ far
more in a float32 or coarser model). A layer constant only in exact arithmetic, whose float32 rounding differs
per text, is found by a float64 recheck of the suspect layers (`collapsed`; a tolerance of the model's
precision alone would drop real half-precision features), and its CKA is undefined too.

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

What the report says and how its intervals and paper 2's low-layer claim are read is `cka_report.py`'s
part (its docstring gives why the intervals are widened for the texts the draws share); this module
computes: features, linear CKA, the draws of texts, and the rows built from them.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from encoderlab.analysis.cka_report import CkaLayer, CkaReport, seed_interval
from encoderlab.analysis.collapsed import COLLAPSED, collapsed_layers
from encoderlab.analysis.features import (
    DEFAULT_ENCODING,
    check_finite,
    check_varies,
    cut_texts,
    model_dtype,
    pooled_features,
)
from encoderlab.analysis.inputs import MIN_TEXTS, Encoding, distinct_texts
from encoderlab.errors import UserError
from encoderlab.train.freeze import format_layers
from encoderlab.words import count, noun

PAPER2_SEEDS = (42, 43, 44)
"""The paper's sampling seeds (thesis, plots/chapter5/data/cka_mlm_control_heldout.json)."""


ROUNDING = COLLAPSED  # one tolerance of float64 rounding for both checks
"""Spread across rows, relative to a column's own magnitude, below which the column is read as constant
(`linear_cka`). The mean pooling of a token-constant layer leaves about 3e-17 per token of rounding in
float64 (2e-13 at 8,192 tokens), and a mean of 0.1 is not 0.1 exactly: such a layer's centred features
were rounding noise, and CKA of them a number (0.15, a ratio of 3.4x seed noise) where it is undefined.
A column reads as constant only where every text's pooled value agrees with the others to 11 digits,
which texts of other content never do in a float32 (or coarser) model."""


def _centred(x: torch.Tensor) -> torch.Tensor | None:
    """Column-centred `x` scaled to a largest entry of 1 (CKA is invariant to isotropic scaling; the
    products below neither overflow nor underflow in float64 whatever the magnitude), or None when
    every column is constant up to the rounding of its mean (`ROUNDING`)."""
    if x.numel() == 0:
        return None
    centred = x - x.mean(0, keepdim=True)
    spread = centred.abs().amax(0)
    if bool((spread <= ROUNDING * x.abs().amax(0)).all()):
        return None
    return centred / spread.max()


def linear_cka(x: torch.Tensor | np.ndarray, y: torch.Tensor | np.ndarray) -> float:
    """Linear CKA between (n, d1) and (n, d2) feature matrices, computed in float64.

    Returns NaN when either matrix is constant across rows (CKA is undefined there), rounding of the
    mean included (`ROUNDING`).
    """
    x = torch.as_tensor(x).to(torch.float64)
    y = torch.as_tensor(y).to(torch.float64)
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
        raise ValueError(
            f"CKA needs two (n, d) matrices with the same n, got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    x, y = _centred(x), _centred(y)
    if x is None or y is None:
        return math.nan
    cross = torch.linalg.matrix_norm(y.T @ x) ** 2
    norm = torch.linalg.matrix_norm(x.T @ x) * torch.linalg.matrix_norm(y.T @ y)
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
            f"only {pool_size} {noun(pool_size, 'text')} {noun(pool_size, 'is', 'are')} available but {n} were asked for; "
            f"{fix} give more --texts"
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
        row.ratio, bounds = seed_interval(row.ratio_per_seed, distinct, overlap)
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


def _collapsed(
    models: dict[str, tuple[nn.Module, object]],
    feats: dict[str, list[torch.Tensor]],
    pool: Sequence[str],
    encoding: Encoding,
    labels: dict[str, str] | None,
) -> dict[str, set[int]]:
    """Per model, its layers constant across the texts in exact arithmetic (`collapsed.collapsed_layers`:
    their features vary only by the model's rounding, which depends on a text's length), each named in one
    `encoderlab: note:` line: CKA of them is undefined, where a number of the rounding was reported."""
    found: dict[str, set[int]] = {}
    for name, (model, tok) in models.items():

        def exact(m: nn.Module, tok=tok, name=name) -> list[torch.Tensor]:
            return pooled_features(m, tok, pool, encoding, desc=f"CKA {name} float64 recheck")

        found[name] = set(collapsed_layers(model, feats[name], exact))
        if found[name]:
            named = f"model {name}" + (f" ({labels[name]})" if labels and name in labels else "")
            print(
                f"encoderlab: note: {named} is constant across the texts in {noun(len(found[name]), 'layer')} "
                f"{format_layers(sorted(found[name]))} (in float64; in {model_dtype(model)} they vary only by "
                "rounding, which depends on a text's length), so their CKA is undefined",
                file=sys.stderr,
            )
    return found


def _note_cut_texts(a: tuple, b: tuple, pool: Sequence[str], max_length: int) -> None:
    """One `encoderlab: note:` line on stderr when A and B have different tokenizers and `max_length` cut
    any text of `pool`: each model then reads its own first `max_length` tokens, which end at another point
    of the text (`features` module docstring), so the two compare different spans of it. A shared tokenizer
    cuts every text at one point, and nothing is said."""
    from encoderlab.data.tokenizer import tokenizer_hash

    if tokenizer_hash(a[1]) == tokenizer_hash(b[1]):
        return
    cut = {name: cut_texts(tok, pool, max_length) for name, (_, tok) in (("A", a), ("B", b))}
    either = cut["A"] | cut["B"]
    if not either:
        return
    print(
        f"encoderlab: note: A and B have different tokenizers and --max-length {max_length} cut "
        f"{len(either)} of the {count(len(pool), 'text')} drawn (A's tokenizer {len(cut['A'])}, B's "
        f"{len(cut['B'])}), each at another point, so for those the models read different spans; give shorter "
        "texts, or a larger --max-length where the models allow it",
        file=sys.stderr,
    )


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
    _note_cut_texts(a, b, pool, encoding.max_length)
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
    collapsed = _collapsed(models, feats, pool, encoding, labels)
    ab[:, sorted(collapsed["A"] | collapsed["B"])] = math.nan
    if base is not None:
        base[:, sorted(collapsed["B'"] | collapsed["B"])] = math.nan
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
