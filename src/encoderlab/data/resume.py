"""The checkpoint an interrupted `data prepare` leaves in `OUT.tmp/progress.json`, and whether a rerun continues it.

progress.json records the recipe, the counters, the sizes of the token files and a hash chain over the
documents read so far (`encode.chunk_digest`). A rerun continues it when it asks the same recipe and
re-reads the same documents up to the checkpoint (`data/prepare.py`).

The same files reached by another path (`--source a/c.jsonl` in the parent, interrupted, then
`--source c.jsonl` in a/) are the same, as for a finished folder (`freshness.as_asked`): progress.json
records each source's resolved absolute path (`resolved`), and its chain names a local file's documents
by the file's resolved path (`chain_version` 2: `Chain.names`), where their ids hold the path as written
(`sources.iter_documents`, `filereaders`). A checkpoint from before (no `chain_version`) is continued as
it was written (ids as read), so its source named another way is another recipe: it starts over.

A hub source read unpinned (or pinned to a branch or tag) and rerun pinned to the full sha of the commit it
was being read at reads the same documents, as for a finished folder (`freshness.pins_held`): progress.json
records each source's identity (`sources`, as meta.json does: for hub data the commit it was read at; for
a mirror read unpinned, `local`, the commit its download records verify now), so such a rerun continues
(its chain still checks the documents re-read). Another commit, or a checkpoint from before `sources` was
recorded, starts over.

A mirror read unpinned and downloaded again at another commit before the rerun needs no record of the
commit the checkpoint was read at: the rerun re-reads its documents from the mirror as it is now and checks
them against the chain, so it continues only when the new commit yields the same ones, and the whole part
then is what a prepare of the new commit writes (its `mirror_commit`, verified when the rerun reads the
mirror); otherwise it starts over (tests/data/test_prepare_resume_mirror_moved.py).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from encoderlab import jsonlines
from encoderlab.atomic import write_json_atomic
from encoderlab.data import freshness
from encoderlab.data.packed import split_dir
from encoderlab.data.sources import SourceConfig, expand, resolve_files

log = logging.getLogger(__name__)

PROGRESS = "progress.json"
CHAIN_VERSION = 2
"""The hash chain naming local files' documents by their resolved paths."""


@dataclass(frozen=True)
class Chain:
    """How a prepare's hash chain names documents: per source, its files as written mapped to their resolved
    paths (None for a hub or asset source, whose ids hold no path); `names` None: ids as read (a checkpoint
    from before `chain_version`)."""

    resolved: tuple[str, ...]
    """Per source, its location made absolute ("" for a hub or asset source), as meta.json's `resolved`."""
    names: tuple[dict[str, str] | None, ...] | None

    @classmethod
    def here(cls, sources: tuple[SourceConfig, ...]) -> Chain:
        """The chain of a prepare of `sources` from this working folder (their files are listed again)."""
        resolved, names = [], []
        for cfg in sources:
            location = expand(cfg).location
            files = None if location.startswith("hf:") else resolve_files(location)
            resolved.append("" if files is None else os.path.realpath(location))
            names.append(None if files is None else {str(p): os.path.realpath(p) for p in files})
        return cls(tuple(resolved), tuple(names))

    def continuing(self, progress: dict | None) -> Chain:
        """The chain to continue `progress` with: this one, or ids as read for a checkpoint from before."""
        if progress is None or progress.get("chain_version") == CHAIN_VERSION:
            return self
        return Chain(self.resolved, None)

    def record(self) -> dict:
        """What progress.json records of this chain (nothing for ids as read: a checkpoint as before)."""
        return {} if self.names is None else {"chain_version": CHAIN_VERSION, "resolved": list(self.resolved)}


def read_progress(tmp: Path, recipe: dict, dtype: np.dtype) -> dict | None:
    """The checkpoint an interrupted prepare of this `recipe` left in `tmp`, if its files hold it; the same
    files reached by other paths than it records are this recipe when it records their resolved paths."""
    try:
        progress = jsonlines.loads((tmp / PROGRESS).read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    if "tally" not in progress or not _same_recipe(progress, recipe):  # was dropped without a word
        log.warning("%s holds an interrupted prepare of another recipe (or version); starting over", tmp)
        return None
    for split, (n_tokens, n_docs) in progress["splits"].items():
        folder = split_dir(tmp, split)
        try:
            sizes = ((folder / "tokens.bin").stat().st_size, (folder / "doc_offsets.raw").stat().st_size)
        except OSError:
            return None
        if sizes[0] < n_tokens * dtype.itemsize or sizes[1] < (n_docs + 1) * 8:
            return None
    return progress


def _same_recipe(progress: dict, recipe: dict) -> bool:
    """Whether a checkpoint continues as `recipe`: its own, the same files by another path (`same_files`),
    or hub sources now pinned to the commit it was reading (`freshness.pins_held` on the identities it
    records: `read_sources`)."""
    old = progress.get("recipe")
    if old == recipe:
        return True
    if isinstance(old, dict) and freshness.pins_held(
        {"recipe": old, "sources": progress.get("sources")}, recipe
    ):
        return True
    then = progress.get("resolved")
    return (
        progress.get("chain_version") == CHAIN_VERSION
        and isinstance(old, dict)
        and isinstance(then, list)
        and freshness.same_files(old, recipe, then)
    )


def read_sources(stats: list) -> dict:
    """What progress.json records of the sources read so far: each one's identity (`SourceStats`; for hub
    data the commit it was read at), so a rerun pinned to that commit continues (`_same_recipe`)."""
    return {"sources": [{"identity": s.identity} for s in stats]}


def write_progress(
    tmp: Path,
    recipe: dict,
    writers: dict,
    n_chunks: int,
    kept: int,
    tally,
    chain: bytes,
    ids: Chain,
    stats: list,
) -> None:
    """The checkpoint `read_progress` continues: flush the `SplitWriter`s and record their sizes, the counters
    (`encode.Tally`), the hash chain and the sources' identities (`read_sources`), written atomically."""
    splits = {s: w.sync() for s, w in writers.items()}
    state = {"recipe": recipe, "chunks": n_chunks, "kept": kept, "tally": tally.__dict__, **ids.record()}
    state.update(read_sources(stats))
    write_json_atomic(tmp / PROGRESS, {**state, "splits": splits, "chain": chain.hex()})
