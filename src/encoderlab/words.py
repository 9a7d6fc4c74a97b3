"""Words that agree with a number, so printed output never reads `1 runs` or `run(s)`.

One helper for every count a command prints: `count(2, "run")` is `2 runs`, `count(1, "pass", "passes")`
`1 pass`, `count_of(1, 3, "seed")` `1 of 3 seeds`; `noun` is the word alone, for a label before a list
(`LR 5e-05`, `LRs 1e-05, 5e-05`). A learning rate is written by `lr_text`: as `:g` writes it where that
is the LR itself, else in full digits, so two LRs alike to `:g`'s 6 digits never read (or name a file) alike.
A share (a mask ratio, a CLM share) is written as a percentage by `percent_text`, in full for the same reason.
It imports nothing, so any module may use it.
"""

from __future__ import annotations


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
