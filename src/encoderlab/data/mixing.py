"""Several corpora as one document stream: `mix_documents` interleaves sources by weight.

Mixing follows `datasets.interleave_datasets`: each next document comes from source i with
probability w_i / sum(w), drawn by a generator seeded with the seed and the number of sources, so the
same configs always give the same stream. With `stop="first_exhausted"` (default) the stream ends when
any source runs out, so the proportions hold exactly and the rest of the larger sources is unused;
with `stop="all_exhausted"` exhausted sources restart until every source has been read once, so small
sources are repeated (the repeat count is recorded). One source is streamed as it is, and only then
can a `Shard` read a slice of its files: a mixture is drawn document by document, which no split by
files reproduces.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import numpy as np

from encoderlab.data.filekinds import SUPPORTED, file_kind
from encoderlab.data.shard import Shard
from encoderlab.data.sources import (
    Document,
    SourceConfig,
    SourceStats,
    describe,
    iter_documents,
    unread_files,
)
from encoderlab.data.stoprule import Stop, check_stop
from encoderlab.errors import UserError
from encoderlab.words import count

log = logging.getLogger(__name__)


def mix_documents(
    sources: list[SourceConfig] | tuple[SourceConfig, ...],
    seed: int = 0,
    stop: Stop = "first_exhausted",
    on_error: Literal["raise", "skip", "refuse"] = "raise",
    stats: list[SourceStats] | None = None,
    shard: Shard | None = None,
) -> Iterator[Document]:
    """Interleave sources by weight, deterministically for a given seed (see module docstring).

    `stats`, if given, receives one `SourceStats` per source, filled as the stream is read.
    `shard` reads one slice of a single source's files (a mixture is drawn document by document,
    which no split by files reproduces).
    """
    if not sources:
        raise UserError("no source given; pass at least one --source")
    check_stop(stop)
    if shard is not None and len(sources) > 1:
        raise UserError(
            f"--shard splits one source by its files, but {len(sources)} sources are mixed; "
            "prepare with one --source, or without --shard"
        )
    all_stats = [SourceStats(s.location) for s in sources]
    if stats is not None:
        stats.extend(all_stats)
    announce_sources(sources)  # fail on a bad location before the first document is read
    if len(sources) == 1:
        yield from iter_documents(sources[0], all_stats[0], on_error, shard)
        return
    iters = [iter_documents(s, st, on_error) for s, st in zip(sources, all_stats)]
    try:
        yield from _interleave(sources, iters, all_stats, seed, stop, on_error)
    finally:  # close half-read sources so their files are closed and their hashes recorded
        for it in iters:
            it.close()


def _say_unread(sources, all_stats, ended: int, finished: list[bool]) -> None:
    """Name what a mixture that stopped on its first exhausted source left unread. Before, two sources
    of 1,000 and 10 documents at equal weights gave 31 documents, and nothing said the other 979
    were never read. Its first fix is one a study's corpus list can take too: a corpus split into files,
    listed one by one, is read whole as one folder or glob entry. The last names both commands that take
    `--stop` (it named `data prepare` alone, and `data tokenizer` had no `--stop`) and a study dataset's
    `stop:` field, as a study's prepare node gives this warning too and takes no flag."""
    unread = [
        f"{s.location} ({st.docs:,} read)" for s, st, done in zip(sources, all_stats, finished) if not done
    ]
    if unread:
        log.warning(
            "the mixture stopped when %s ran out (first_exhausted keeps the weights' proportions), before the "
            "end of %s; to read every source whole, give the files as one source (a folder or a glob reads "
            "each of its files whole), weight each by its size (#weight=), or pass `--stop all_exhausted` to "
            "`data prepare` or `data tokenizer` (a study's dataset: `stop: all_exhausted`), which repeats the "
            "sources that run out",
            sources[ended].location, ", ".join(unread),
        )  # fmt: skip


def check_seed(seed: int) -> None:
    """Refuse a negative mixture seed before anything is written: numpy's generator takes none, and
    said so in a traceback only once a second source made a mixture to draw."""
    if seed < 0:
        raise UserError(f"--seed must be >= 0 (the seed of the source mixture), got {seed}")


def announce_sources(sources, checked: list[dict] | None = None) -> None:
    """Check every source's location (one line if it is bad) and that no two read one file
    (`check_disjoint`), then log how .txt files are cut: after the checks, so that no info line comes
    before a refusal's (`data tokenizer` said how a second source's .txt files are cut, then refused the
    first). `checked`: the sources' descriptions `check_disjoint` returned, when the caller says this line
    later than it checked them (`data tokenizer`: once the trained tokenizer passed its checks)."""
    for s, desc in zip(sources, checked if checked is not None else check_disjoint(sources)):
        _announce(s, desc)


def check_disjoint(sources, fix: str = "name each file in one --source only") -> list[dict]:
    """Refuse sources that read one file twice (a source given twice, a file and its folder, two
    configs of a hub repo that share files). Was: its documents came twice, were counted twice as
    unique tokens, and one copy could be held out while the other was trained on. `fix` ends the line:
    what to change where the sources were named (a flag, a study file's corpus). Returns each source's
    `describe` (a bad location is refused there first)."""
    owner: dict[str, int] = {}
    descs = [describe(s) for s in sources]
    for i, (s, desc) in enumerate(zip(sources, descs)):
        for key, shown in _file_keys(desc):
            j = owner.setdefault(key, i)
            if j != i:
                raise UserError(
                    f"sources '{sources[j].location}' and '{s.location}' both read {shown}: its documents would "
                    "be trained on twice, counted twice as unique tokens, and could be both held out and "
                    f"trained on; {fix}"
                )
    return descs


def _file_keys(desc: dict) -> Iterator[tuple[str, str]]:
    """(what identifies it, how to show it) for each file a described source reads."""
    if desc["kind"] == "hf":
        ds = desc["dataset"]
        for k in desc["span"]:
            yield f"hf:{ds.hub_id}/{ds.repo_path(k)}", f"hf:{ds.hub_id}/{ds.repo_path(k)}"
    else:
        for path in desc["files"]:
            yield str(Path(path).resolve()), str(path)


def _announce(cfg: SourceConfig, desc: dict) -> None:
    """Say how a source with .txt files is cut into documents (the unit changes what a model sees),
    and which files of a folder or glob it does not read (a .csv beside the .jsonl was left out unsaid)."""
    if desc["kind"] == "files" and (skipped := unread_files(cfg.location)):
        kinds = sorted({q.suffix or q.name for q in skipped})
        log.info(
            "%s: %s not read, of kinds encoderlab does not read as text (%s; e.g. %s); it reads %s",
            cfg.location, count(len(skipped), "file"), ", ".join(kinds), skipped[0], SUPPORTED,
        )  # fmt: skip
    if (said := txt_unit_text(cfg, desc)) is not None:
        log.info("%s: %s", cfg.location, said)


def txt_unit_text(cfg: SourceConfig, desc: dict) -> str | None:
    """How a described source's .txt files are cut into documents, in words (None: it reads none): the
    `data` commands' announcement and `study plan`'s dataset line, one wording."""
    n_txt = sum(file_kind(Path(p)) == "txt" for p in desc["files"])
    if not n_txt or desc["kind"] == "hf":
        return None
    unit = {"paragraph": "blank-line paragraph", "line": "line", "file": "file"}[cfg.txt_unit]
    return (
        f"{count(n_txt, '.txt file')} read as one document per {unit} (txt_unit={cfg.txt_unit}; "
        "'#txt_unit=paragraph|line|file' to change)"
    )


class EmptySource(UserError):
    """A corpus, or one source of it, that yields no non-empty document. The line's fix names `--source`;
    `problem` (the line before its fix) and `locations` (the empty source's, or every source's where the
    whole corpus is empty) let a caller that names sources otherwise say it its way (a study: its corpus
    entries, `study/nodes.empty_in_entry`)."""

    def __init__(self, line: str, problem: str, locations: tuple):
        super().__init__(line)
        self.problem, self.locations = problem, tuple(locations)


def empty_corpus(sources, why: str = "") -> EmptySource:
    """The refusal of a corpus (all of `sources`) that yields no non-empty document (`why`: what left
    none, when something did)."""
    locations = tuple(s.location for s in sources)
    problem = f"the corpus {', '.join(locations)} has no non-empty document{why}"
    return EmptySource(f"{problem}; check --source", problem, locations)


def empty_source(sources, i: int, stats: SourceStats | None = None) -> EmptySource:
    """The refusal of source `i`, which yields no non-empty document (`stats`: what reading it skipped)."""
    why = _skipped(stats) if stats is not None else ""
    if len(sources) == 1:
        return empty_corpus(sources, why)
    problem = f"source '{sources[i].location}' has no non-empty document{why}"
    return EmptySource(f"{problem}; remove it", problem, (sources[i].location,))


def _skipped(stats: SourceStats) -> str:
    """What `--on-error skip` skipped of a source that gave nothing: its records were not empty but bad
    (a text field of ints, a file it cannot read), which "no non-empty document" alone did not say."""
    parts = [count(stats.bad_records, "bad record")] if stats.bad_records else []
    parts += [count(stats.bad_files, "bad file")] if stats.bad_files else []
    if not parts:
        return ""
    return f" (--on-error skip skipped {' and '.join(parts)}: rerun without it to see the first)"


def check_first_documents(
    sources, on_error: Literal["raise", "skip", "refuse"] = "raise", whole: bool = False
) -> None:
    """Read each source's first document, so that an empty source or a bad first record is refused before
    a command makes anything (`data prepare` makes its lock and OUT.tmp beside --out: refused after that,
    it changed a folder encoderlab did not create). Trade-off: each source is opened twice (a hub source
    connects twice), for a check that is otherwise only possible once the writing has begun. `whole`: every
    document is read (streamed, nothing kept), so a bad record anywhere is refused too: a study's checks,
    whose prepare node met a bad line past the first only after the study folder was made; the price is
    one more pass over the local files before the prepare node's own."""
    for i, source in enumerate(sources):
        stats = SourceStats(source.location)
        docs = iter_documents(source, stats, on_error)
        try:
            if next(docs, None) is None:
                raise empty_source(sources, i, stats)
            for _ in docs if whole else ():
                pass
        finally:
            docs.close()


def _interleave(sources, iters, all_stats, seed, stop, on_error):
    weights = np.array([s.weight for s in sources], dtype=np.float64)
    cdf = np.cumsum(weights / weights.sum())
    rng = np.random.default_rng([seed, len(sources)])
    finished = [False] * len(sources)
    while True:
        # Draw in blocks: one generator call per 4096 documents keeps the draw off the profile.
        for u in rng.random(4096):
            i = min(int(np.searchsorted(cdf, u, side="right")), len(sources) - 1)
            doc = next(iters[i], None)
            if doc is None:
                if all_stats[i].docs == 0:
                    raise empty_source(sources, i, all_stats[i])
                finished[i] = True
                if stop == "first_exhausted" or all(finished):
                    _say_unread(sources, all_stats, i, finished)
                    return
                all_stats[i].repeats += 1
                # A repeat pass counts into throwaway stats: docs and file hashes describe one pass.
                iters[i] = iter_documents(sources[i], SourceStats(sources[i].location), on_error)
                doc = next(iters[i])
            yield doc._replace(source=i, repeat=all_stats[i].repeats)
