"""Words that agree with a number, so printed output never reads `1 runs` or `run(s)`.

One helper for every count a command prints: `count(2, "run")` is `2 runs`, `count(1, "pass", "passes")`
`1 pass`, `count_of(1, 3, "seed")` `1 of 3 seeds`; `noun` is the word alone, for a label before a list
(`LR 5e-05`, `LRs 1e-05, 5e-05`). A learning rate is written by `lr_text`: as `:g` writes it where that
is the LR itself, else in full digits, so two LRs alike to `:g`'s 6 digits never read (or name a file) alike.
A share (a mask ratio, a CLM share) is written as a percentage by `percent_text`, in full for the same reason.
A score with its 95% interval is written by `estimate_text`, to the digits the interval allows (`decimals`).
It imports no encoderlab module (the standard library only), so any module may use it.
"""

from __future__ import annotations

import math


def noun(n: float, singular: str, plural: str | None = None) -> str:
    """`singular` for exactly one, else `plural` (default: `singular` + "s")."""
    return singular if n == 1 else plural or singular + "s"


def count(n: float, singular: str, plural: str | None = None) -> str:
    """`n` and its noun, e.g. `1 fine-tuning seed`, `5 fine-tuning seeds`, `1,024 runs`, `1.5 passes`."""
    number = f"{n:,}" if isinstance(n, int) else f"{n:g}"
    return f"{number} {noun(n, singular, plural)}"


def count_of(k: int, n: int, singular: str, plural: str | None = None) -> str:
    """`k` out of `n`, the noun agreeing with `n`: `1 of 1 seed`, `2 of 5 fine-tuning seeds` (never `1/1 seeds`)."""
    return f"{k:,} of {count(n, singular, plural)}"


def lr_text(lr: float) -> str:
    """`lr` as `:g` writes it (`1e-05`, `0.0001`) where that is the LR itself, else in full (`1.0000001e-05`):
    `--lrs 1e-5 1.0000001e-5` read as one LR twice in eval's summary, and wrote one predictions file
    (`eval.predictions.predictions_path`). Every usual grid's LRs keep their short form."""
    shown = f"{lr:g}"
    return shown if float(shown) == lr else repr(float(lr))


def lr_grid(lrs, seeds, name_seeds: bool = True) -> str:
    """A fine-tuning LR x seed grid in words: `LR 0.0001 x seeds 0, 1` (`eval`'s summary.md, the model
    card), or with `name_seeds=False` the seeds counted, `LRs 1e-05, 5e-05 x 1 seed` (the study's
    departures from its paper)."""
    lrs_text = f"{noun(len(lrs), 'LR')} {', '.join(map(lr_text, lrs))}"
    seed_text = (
        f"{noun(len(seeds), 'seed')} {', '.join(map(str, seeds))}"
        if name_seeds
        else count(len(seeds), "seed")
    )
    return f"{lrs_text} x {seed_text}"


def percent_text(share: float) -> str:
    """`share` as a percentage, in as many digits as it has: 0.4 is `40`, 0.125 `12.5`, 0.154 `15.4`.

    Two different shares never read alike: `round(share * 100)` wrote 0.15 and 0.154 both as `15` (an MLM
    objective's tag `mlm15`, the name of its phase and of a ladder run), and 0.125 as `12`. The float's
    shortest repr times 100 in decimal is exact, so no float noise shows (0.29 is `29`, not `28.999...`)."""
    from decimal import Decimal

    return format((Decimal(repr(float(share))) * 100).normalize(), "f")


def share_hint(value: float, of: str, example: float) -> str:
    """The clause a share refusal ends with when `value` reads as a percentage written for a share (above
    1): "; it is a share of the {of}, e.g. 0.3 for 30%" (`example` 0.3); else nothing."""
    return f"; it is a share of the {of}, e.g. {example} for {percent_text(example)}%" if value > 1 else ""


MAX_DECIMALS = 4
"""The most decimals a score is printed with, however narrow its interval: seeds that all but agree give a
width of float noise (1e-13), whose digits are no measurement."""


def decimals(half_width: float | None) -> int:
    """The decimal places that print a score whose 95% interval has this `half_width`: the half-width to two
    significant digits and the score to the same place, as the GUM advises (JCGM 100:2008, 7.2.6: an
    uncertainty "to at most two significant digits"; the estimate rounded to match): `71.2 ± 9.8`, not
    `71.23 ± 9.80`, whose last digit a fine-tuning seed moves by far more than 0.01; `69.86 ± 0.34`. Two
    places without an interval (one seed, a zero or non-finite width), as before; never more than
    `MAX_DECIMALS`, never fewer than 0 (`71 ± 12`)."""
    if half_width is None or not math.isfinite(half_width) or half_width <= 0:
        return 2
    places = 1 - math.floor(math.log10(half_width))
    if round(half_width, places) >= 10.0 ** (2 - places):  # 9.96 rounds to 10.0: three digits, one place less
        places -= 1
    return min(max(places, 0), MAX_DECIMALS)


def number_text(x: float | None, places: int = 2, sign: bool = False) -> str:
    """`x` at `places` decimals (`+` before a positive one where `sign`); "n/a" for None or NaN. One that
    rounds to zero is `0.0`, unsigned: `-0.0` told a direction its digits do not have."""
    if x is None or math.isnan(x):
        return "n/a"
    if round(x, places) == 0:
        return f"{0:.{places}f}"
    return f"{x:+.{places}f}" if sign else f"{x:.{places}f}"


def estimate_text(mean: float | None, half_width: float | None, sign: bool = False) -> str:
    """A score as every report prints it: `mean ± half_width` at the `decimals` the interval allows, or
    the mean alone at two places without one. One implementation: the study's results table, its claims
    and its notes, `eval`'s summary.md and lines and the model card printed every score at two places,
    `71.23 ± 9.80` as `69.86 ± 0.34`."""
    places = decimals(half_width)
    text = number_text(mean, places, sign)
    return text if half_width is None else f"{text} ± {number_text(half_width, places)}"
