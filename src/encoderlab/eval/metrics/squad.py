"""The official SQuAD v1.1 and v2.0 scores, ported line by line.

`evaluate.load("squad")` fetches its script from the hub and transformers 5 dropped
`squad_metrics`, so the definitions live here:
  * answers are normalised (lowercase, punctuation removed, the articles a/an/the removed,
    whitespace collapsed) before comparison;
  * exact match and token-bag F1 take the maximum over the gold answers of a question;
  * v1.1: an empty prediction has F1 0 (the v1.1 script has no special case);
  * v2.0: a question is answerable when it has any gold answer (`bool(answers)`, the script's
    `make_qid_to_has_ans`), even one such as "the" that normalises to ""; for scoring, gold
    answers that normalise to "" are dropped and a question left with none has "" as its only
    gold answer; F1 between two empty token lists is 1, with one empty it is 0;
    with no-answer probabilities, a prediction whose probability exceeds the threshold counts as
    "no answer"; scores are split into HasAns/NoAns and the best threshold is searched as in the
    official `find_best_thresh`.
"""

from __future__ import annotations

import collections
import re
import string
from collections.abc import Mapping, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def normalize_answer(s: str) -> str:
    """Lowercase, drop punctuation and articles, collapse whitespace (official order)."""
    s = "".join(ch for ch in s.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def exact_match(gold: str, pred: str) -> float:
    return float(normalize_answer(gold) == normalize_answer(pred))


def token_f1(gold: str, pred: str, *, v2: bool) -> float:
    """Token-bag F1 of one gold and one predicted answer."""
    gold_toks, pred_toks = normalize_answer(gold).split(), normalize_answer(pred).split()
    if v2 and (not gold_toks or not pred_toks):
        return float(gold_toks == pred_toks)
    same = sum((collections.Counter(gold_toks) & collections.Counter(pred_toks)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_toks), same / len(gold_toks)
    return 2 * precision * recall / (precision + recall)


def squad_v1(gold: Mapping[str, Sequence[str]], pred: Mapping[str, str]) -> dict[str, float]:
    """SQuAD v1.1 exact match and F1 (percent); `gold` maps question id to its answer texts."""
    _check_ids(gold, pred)
    em = [max(exact_match(a, pred[q]) for a in answers) for q, answers in gold.items()]
    f1 = [max(token_f1(a, pred[q], v2=False) for a in answers) for q, answers in gold.items()]
    return {"exact_match": 100.0 * sum(em) / len(em), "f1": 100.0 * sum(f1) / len(f1)}


def squad_v2(
    gold: Mapping[str, Sequence[str]],
    pred: Mapping[str, str],
    na_probs: Mapping[str, float] | None = None,
    na_prob_thresh: float = 1.0,
) -> dict[str, float]:
    """SQuAD v2.0 scores (percent): exact, f1, HasAns_/NoAns_ splits and best thresholds.

    `gold` maps a question id to its answer texts (empty for unanswerable); an empty predicted
    string means "no answer".
    """
    _check_ids(gold, pred)
    na_probs = na_probs if na_probs is not None else {q: 0.0 for q in gold}
    has_ans = {q: bool(answers) for q, answers in gold.items()}
    exact_raw, f1_raw = {}, {}
    for q, answers in gold.items():
        golds = [a for a in answers if normalize_answer(a)] or [""]
        exact_raw[q] = max(exact_match(a, pred[q]) for a in golds)
        f1_raw[q] = max(token_f1(a, pred[q], v2=True) for a in golds)
    exact = _apply_threshold(exact_raw, na_probs, has_ans, na_prob_thresh)
    f1 = _apply_threshold(f1_raw, na_probs, has_ans, na_prob_thresh)
    out = {"exact": _mean(exact.values()), "f1": _mean(f1.values()), "total": float(len(gold))}
    for name, keep in (("HasAns", True), ("NoAns", False)):
        ids = [q for q in gold if has_ans[q] is keep]
        if ids:
            out[f"{name}_exact"] = _mean(exact[q] for q in ids)
            out[f"{name}_f1"] = _mean(f1[q] for q in ids)
            out[f"{name}_total"] = float(len(ids))
    for name, raw in (("exact", exact_raw), ("f1", f1_raw)):
        best, thresh = _best_threshold(pred, raw, na_probs, has_ans)
        out[f"best_{name}"], out[f"best_{name}_thresh"] = best, thresh
    return out


def _apply_threshold(scores, na_probs, has_ans, thresh) -> dict[str, float]:
    return {q: float(not has_ans[q]) if na_probs[q] > thresh else s for q, s in scores.items()}


def _best_threshold(pred, scores, na_probs, has_ans) -> tuple[float, float]:
    """Official `find_best_thresh`: sweep questions by rising no-answer probability."""
    cur = best = sum(not h for h in has_ans.values())
    best_thresh = 0.0
    for q in sorted(na_probs, key=lambda k: na_probs[k]):
        if q not in scores:
            continue
        cur += scores[q] if has_ans[q] else (-1 if pred[q] else 0)
        if cur > best:
            best, best_thresh = cur, na_probs[q]
    return 100.0 * best / len(scores), best_thresh


def _mean(values) -> float:
    values = list(values)
    return 100.0 * sum(values) / len(values)


def _check_ids(gold: Mapping, pred: Mapping) -> None:
    if not gold:
        raise ValueError("no questions to score")
    missing = [q for q in gold if q not in pred]
    if missing:
        raise ValueError(f"{len(missing)} questions have no prediction (first: {missing[0]})")
