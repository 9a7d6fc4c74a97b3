"""Reference computations the statistics tests compare encoderlab against (statsmodels, called so that
its cost is the computation's own)."""

from __future__ import annotations


def statsmodels_holm(p: list[float]) -> list[float]:
    """`multipletests(p, method="holm")`'s adjusted p-values. Its holm branch calls `gc.collect()`, which
    walks every object the test session holds (0.4 s a call under pytest, for a few floats): the heap is
    frozen for the call (`gc.freeze` moves it out of the collector's sight), so the collection is of the
    call's own garbage. The numbers are statsmodels' own either way."""
    import gc

    from statsmodels.stats.multitest import multipletests

    gc.freeze()
    try:
        return list(multipletests(p, method="holm")[1])
    finally:
        gc.unfreeze()
