"""nDCG@10 and recall@k through ir-measures (backed by pytrec-eval-terrier).

ir-measures' `nDCG@10` is trec_eval's `ndcg_cut_10`: gain = relevance grade (not 2^rel - 1),
log2 discount, ties in score broken by document id in descending order as trec_eval does.
A query of the qrels with no relevant document (judged only 0) scores 0 and counts in the mean
(pytrec_eval scores every query of the qrels, and BEIR's evaluator averages them all); a judged query
without a ranking is refused below, so nothing is silently averaged away.

A negative grade (TREC's -2 for spam or junk, -1 for a document pooled but not judged; BEIR's qrels
reader takes any whole number) is not relevant, as trec_eval scores it: no gain in nDCG (only a grade
above 0 is one) and not counted in recall (grade 1 and above). It is handed to pytrec_eval as 0, which
scores the same: pytrec-eval-terrier 0.5.11 crashed the process (a segmentation fault, no message) on a
query judged only below -1 beside another query, e.g. {"q": {"a": 0, "b": 1}, "r": {"a": -2}}.
"""

from __future__ import annotations

import ir_measures
from ir_measures import R, nDCG

Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]


def retrieval_scores(qrels: Qrels, run: Run, recall_at: tuple[int, ...] = (10, 100)) -> dict[str, float]:
    """Mean nDCG@10 and recall@k (percent) of `run` (qid -> doc -> score) against `qrels`."""
    missing = [q for q in qrels if q not in run]
    if missing:
        raise ValueError(f"{len(missing)} judged queries have no ranking (first: {missing[0]})")
    measures = [nDCG @ 10, *(R @ k for k in recall_at)]
    graded = {q: {d: max(g, 0) for d, g in ds.items()} for q, ds in qrels.items()}  # module docstring
    agg = ir_measures.calc_aggregate(measures, graded, run)
    out = {"ndcg@10": 100.0 * agg[nDCG @ 10]}
    out.update({f"recall@{k}": 100.0 * agg[R @ k] for k in recall_at})
    return out
