"""When a tagger's predictions show it learned (almost) nothing: one tag for nearly every word it read.

The rule lives here, apart from the token-classification family, so that the study report's sentences
about degenerate runs state the same thresholds the check uses (`TAGGER_RULE`) without importing the
fine-tuning code. A word cut off by truncation is not read (the family marks it `unread` and predicts
"O" there), so it counts neither for nor against the rule: a model must not be called degenerate, or
let off, for words it never saw.
"""

from __future__ import annotations

from collections import Counter

NEAR_CONSTANT_SHARE = 0.99
"""A tagger that gives one tag to at least this share of the words it read has learned (almost) nothing;
a word or two of another tag must not hide that (a demo MLM model said 'nn' for 99.5% of brown-pos words,
where the gold has 'nn' for 14%), so it is flagged as well as the strictly constant case."""
NEAR_CONSTANT_GOLD = 0.9
"""... unless the gold itself has that tag for at least this share (an NER test split that is nearly all
'O' is answered well by a nearly-all-'O' tagger)."""
TAGGER_RULE = (
    f"one tag for at least {NEAR_CONSTANT_SHARE:.0%} of the words it read, a tag the gold gives to under "
    f"{NEAR_CONSTANT_GOLD:.0%} of them"
)
"""The rule in words, for reports."""


def near_constant_tags(predictions: list[dict]) -> str | None:
    """Why a tagger's predictions (dicts of `gold`, `pred` and `unread` word indices) are degenerate, or
    None when they are not (or there are fewer than two sentences, too few to say)."""
    read = [
        {k: t for k, t in enumerate(p["pred"]) if k not in skip}
        for p in predictions
        for skip in [set(p.get("unread", ()))]  # a list lookup was quadratic in a long sentence
    ]
    tags = Counter(t for r in read for t in r.values())
    if len(predictions) < 2 or not tags:
        return None
    lost = sum(len(p.get("unread", ())) for p in predictions)
    if len(tags) == 1:
        words = f"every word it read ({lost:,} lost to truncation)" if lost else "every word"
        return f"predicts tag '{next(iter(tags))}' for {words} of all {len(predictions)} sentences"
    tag, count = tags.most_common(1)[0]
    words = sum(tags.values())
    gold = sum(p["gold"][k] == tag for p, r in zip(predictions, read) if "gold" in p for k in r) / words
    if count / words >= NEAR_CONSTANT_SHARE and gold < NEAR_CONSTANT_GOLD:
        return (
            f"predicts tag '{tag}' for {100 * count / words:.1f}% of {words:,} words "
            f"(the gold has it for {100 * gold:.1f}%)"
        )
    return None
