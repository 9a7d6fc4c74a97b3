"""Which documents the validation split holds out: by position, and the same on every pass.

The rule: the document at position i is held out when floor((i + 1) f + 1/2) > floor(i f + 1/2) for
val_fraction f, so n documents give exactly round(n f) held-out ones, spread evenly, with no hashing.
`data prepare` applies it to positions in the document stream (after decontamination), `data merge`
to positions in the whole sharded corpus.

A mixture with `stop="all_exhausted"` restarts its small sources, so a document comes once per pass,
at stream positions the rule judges independently: with f = 1%, almost every held-out document of a
source read twice was trained on in its other pass, and the held-out losses scored text the model
had seen. For such mixtures the rule is applied per source instead: the j-th document of a source's
pass (counting the documents that decontamination keeps, the same on every pass) is held out when
the rule holds out position j, so a document is held out on every pass or on none. Held-out
documents go to the val split on their first pass only (it holds each document once) and are left
out of later passes; every other document is trained on in every pass. Each source then gives
round(n_s f) held-out documents. Streams that cannot repeat a document (one source, or
`first_exhausted`) keep the stream-position rule, and their bytes do not change.

Trade-off: the per-source rule needs each source's position within its current pass, carried from
chunk to chunk (and in the resume checkpoint), one Python step per document in the main process;
that only happens for mixtures that repeat.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from encoderlab.errors import UserError
from encoderlab.words import count


def held_out_at(positions: np.ndarray, fraction: float) -> np.ndarray:
    """Whether the documents at `positions` are held out (the rule of the module docstring)."""
    i = np.asarray(positions, dtype=np.float64)
    return np.floor((i + 1) * fraction + 0.5) > np.floor(i * fraction + 0.5)


def held_out_count(n: int, fraction: float) -> int:
    """How many of the documents at positions 0..n-1 the rule holds out (round(n f), without an array)."""
    return int(np.floor(n * fraction + 0.5))


def holds_out_everything(val_fraction: float, docs: int, shards: Path | None = None) -> UserError:
    """The refusal of a --val-fraction that held out all `docs` documents: `data prepare`'s, or, with
    `shards` (the OUT.shards folder of a sharded prepare), `data merge`'s, which draws the split with the
    fraction its parts were prepared with and takes none itself: its fix is to prepare the parts again
    (a part prepared with another fraction is refused as prepared differently, hence the deletion)."""
    if shards is None:
        return UserError(
            f"--val-fraction {val_fraction} held out every one of the {docs} documents, leaving no train "
            "split; prepare with a smaller --val-fraction (e.g. 0.01) or more text"
        )
    return UserError(
        f"the parts in {shards} were prepared with --val-fraction {val_fraction}, which holds out every one of "
        f"their {docs} documents, leaving no train split; delete {shards} and prepare the parts again with a "
        "smaller --val-fraction (e.g. 0.01) or more text, then run data merge again"
    )


def no_validation_note(meta: dict, study: str | None = None) -> str | None:
    """The `encoderlab: note:` line of a prepared folder (its meta.json, `meta`) whose val split holds no
    document though its --val-fraction asked for some (round(n f) is 0: one document, or fewer than 1/(2f)),
    None otherwise. A note, not a refusal: a run on it trains, saying "no validation loss"
    (`train/validation.py`), and a corpus too small to hold one out may be meant (a smoke test); but the
    folder was written without a word, and the user learnt it from the run. A part of a sharded prepare
    holds no val split by design (`data merge` draws it), and --val-fraction 0 asked for none.
    `study`: the study and dataset of a study's prepare node (`study S, dataset D`), which `data prepare`'s
    fix does not fit: its fraction is the default, no setting of a study, so its fix is more documents, as
    many as hold one out (`docs_holding_one_out`)."""
    fraction = meta.get("recipe", {}).get("val_fraction", 0)
    if not fraction or "shard" in meta or meta["splits"]["val"]["docs"]:
        return None
    docs = meta["splits"]["train"]["docs"]
    of = "the corpus's only document" if docs == 1 else f"the {count(docs, 'document')}"
    if study is not None:
        need = docs_holding_one_out(fraction)
        return (
            f"encoderlab: note: {study}: its val fraction {fraction} held out none of {of}, so the val split is "
            f"empty and the runs on it report no validation loss; give the dataset {need} documents or more "
            "(more text, or a higher max_docs)"
        )
    if docs < 2:
        fix = "prepare more than one document (a .txt file is one document per blank-line paragraph)"
    else:
        fix = f"prepare it again with --val-fraction {1 / docs:.3g} or more (one in {docs}), or more text"
    return (
        f"encoderlab: note: --val-fraction {fraction} held out none of {of}, so the val split is empty and "
        f"a run on this folder reports no validation loss; {fix}"
    )


def docs_holding_one_out(fraction: float) -> int:
    """The fewest documents of which the rule holds one out at `fraction` > 0 (`held_out_count`): about
    1/(2f), counted up past the float rounding of 0.5/f."""
    n = max(1, math.ceil(0.5 / fraction) - 1)
    while held_out_count(n, fraction) < 1:
        n += 1
    return n


def repeats_documents(stop: str, n_sources: int) -> bool:
    """True for a mixture that restarts exhausted sources, so one document can come several times."""
    return stop == "all_exhausted" and n_sources > 1


def pass_positions(sources: np.ndarray, repeats: np.ndarray, at: list[list[int]]) -> np.ndarray:
    """Each document's position within its source's pass; `at[s]` = [pass, next position] of source s,
    advanced in place (a new pass of a source starts again at 0)."""
    out = np.empty(len(sources), dtype=np.int64)
    for k, (s, r) in enumerate(zip(sources.tolist(), repeats.tolist())):
        at.extend([0, 0] for _ in range(s + 1 - len(at)))
        if at[s][0] != r:
            at[s] = [r, 0]
        out[k] = at[s][1]
        at[s][1] += 1
    return out


def split_per_source(
    sources: np.ndarray, repeats: np.ndarray, fraction: float, at: list[list[int]]
) -> tuple[np.ndarray, np.ndarray]:
    """(to val, to train) for documents of a mixture that repeats them (module docstring)."""
    held = held_out_at(pass_positions(sources, repeats, at), fraction)
    return held & (repeats == 0), ~held
