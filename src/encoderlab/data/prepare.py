"""Tokenize a corpus once, on all cores, into flat token files that training memory-maps.

The folder layout is `data/packed.py`'s. Design. The main process streams documents from the
sources (`mix_documents`), cuts the stream into chunks and hands them to worker processes
(`data/encode.py`: decontamination, tokenization, bos/eos wrapping), whose results come back in
input order, so the bytes are identical for any number of workers. Tokens and offsets are appended
to files as they arrive.

Validation split (`data/holdout.py`): round(n f) of the n documents for val_fraction f, spread
evenly through the stream by position (after decontamination), with no hashing; per source for a
mixture that restarts its sources, so no document is both held out and trained on.

Counts for studies: meta.json records per split the tokens of distinct documents (`unique_tokens`:
a source restarted by an `all_exhausted` mixture adds tokens, not unique ones), the same per source,
and `max_token_id`, so a trainer can refuse ids beyond a model's vocabulary without reading the file.

Several machines (`shard`, `data/shard.py`): worker I of N tokenizes only its slice of the source's
files into `OUT.shards/I-of-N/`, a folder of this same format whose documents all sit in the train
split (which documents are held out depends on their position in the whole corpus, so the split is
drawn by `data merge`, `data/merge.py`, which then writes exactly what one worker would have).

Safety: the output folder follows `encoderlab/outdir.py` (`data/target.py`, shared with `data merge`):
checked before anything is written (a file, a foreign non-empty folder, an uncreatable parent, a
source inside it are refused), then everything is written into `OUT.tmp/` and renamed to `OUT` only
when complete, so a half-written folder never looks prepared. A folder holding a different recipe, or one read from sources that
changed since, is refused; the same recipe on the same files again is a no-op. `OUT.lock` keeps a second prepare out while one runs. Lock and OUT.tmp sit beside OUT, so
everything checkable is checked before they are made (each source's first document included): a refusal
then leaves the folder holding OUT as it was, and one mid-corpus removes the parents of OUT it made
(and an OUT.shards/ holding only its marker).

Resume: every `checkpoint_every` chunks the token and offset files are flushed to disk and
`OUT.tmp/progress.json` records their sizes, the counters and a hash chain over the documents read
so far. A prepare that was interrupted (Ctrl-C, SIGKILL, a full disk, a bad record) leaves `OUT.tmp`
behind; rerunning the same recipe truncates the files to the recorded sizes, reads the sources up to
the checkpoint without tokenizing them, checks that they hash the same, and continues. The output is
byte-identical to an uninterrupted run. If the recipe or the documents before the checkpoint
changed, the partial output is discarded and the prepare starts over (with a warning); the same files
reached by another path are the same, and so is a hub source now pinned to the commit it was
being read at (`data/resume.py`). Re-reading the prefix (a pass over the raw
text) costs a small fraction of tokenizing it. Progress goes to `OUT.tmp/metrics.jsonl`, one line per checkpoint, cut back
with it on resume (`data/prepmetrics.py`).

Documents are tokenized whole, whatever truncation or padding the tokenizer's file keeps from its
last call (`encode._encoder`); folders from before that are refused on read (`packed.read_meta`).

The tokenizer is loaded and hashed once a process while no file under its folder moved
(`tokenizer.held_tokenizer`, shared with a study's check of a `--prepared` folder): a study prepares each of
its datasets in the same process, and a paper's 128k vocabulary took about a second a load and hash.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import shutil
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from encoderlab import outdir
from encoderlab.atomic import folder_named, json_text, replace_folder
from encoderlab.config import to_dict
from encoderlab.data import encode, freshness
from encoderlab.data.decontaminate import (
    Contamination,
    TextSet,
    build_contamination,
    check_ngram,
    resolve_eval_sets,
)
from encoderlab.data.encode import Tally, default_workers  # noqa: F401 (re-exported for bench)
from encoderlab.data.fastbpe import tiktoken_bpe
from encoderlab.data.holdout import holds_out_everything, repeats_documents, split_per_source
from encoderlab.data.mixing import (
    Stop,
    check_disjoint,
    check_first_documents,
    check_seed,
    check_stop,
    mix_documents,
)
from encoderlab.data.packed import (  # noqa: F401 (re-exported: the format's API)
    FORMAT,
    FORMAT_VERSION,
    SPLITS,
    SplitWriter,
    call_settings,
    choose_dtype,
    read_meta,
    split_dir,
    val_mask,
)
from encoderlab.data.prepmetrics import PrepareLog
from encoderlab.data.resume import PROGRESS, Chain, read_progress, write_progress
from encoderlab.data.shard import Shard
from encoderlab.data.sources import SourceConfig, SourceStats, local_paths, recorded_on_error
from encoderlab.data.target import KIND, check_target, target_folder
from encoderlab.errors import NO_ROOM, DiskFull, UserError, no_room
from encoderlab.locks import folder_lock
from encoderlab.outdir import MARKER, create_output, missing_folders, remove_folders

if TYPE_CHECKING:
    from encoderlab.data.tokenizer import HeldTokenizer

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class PrepareConfig:
    """What to tokenize and how; everything here decides the bytes written (the recipe)."""

    sources: tuple[SourceConfig, ...]
    """Corpora to read, mixed by their weights."""
    tokenizer: str
    """Tokenizer folder, model folder, prepared folder, asset name or hub id."""
    val_fraction: float = 0.01
    """Share of documents held out for validation."""
    seed: int = 0
    """Seed of the source mixture."""
    stop: Stop = "first_exhausted"
    """When a mixture of several sources ends (see encoderlab.data.sources)."""
    decontaminate: tuple[str, ...] = ("auto",)
    """Evaluation sets whose texts are removed: ("auto",) = every fetched default set, () = none."""
    ngram: int = 13
    """Word n-gram length of the overlap test."""
    on_error: Literal["raise", "skip", "refuse"] = "raise"
    """Unreadable / corrupt / non-UTF-8 input: refuse, or skip and count (`refuse`: as `raise`, for a caller
    without `--on-error`, whose line must not offer it)."""
    dtype: Literal["auto", "uint16", "uint32"] = "auto"
    """Token dtype; auto picks uint16 when the vocab fits."""
    max_docs: int | None = None
    """Read at most this many documents (for samples and benchmarks), like `head -n`: those decontamination
    removes and those held out for validation count toward it, bad records skipped do not (docs/data.md)."""
    text_sets: tuple[TextSet, ...] = ()
    """Evaluation sets a higher layer read as texts (a study's own task files' test splits), removed as
    `decontaminate`'s are, after them; the recipe holds their versions, not their names or texts."""

    def __post_init__(self):
        if not 0 <= self.val_fraction < 1:
            raise UserError(
                f"--val-fraction must be in [0, 1) (the share of documents held out), got {self.val_fraction}; "
                "e.g. 0.01"
            )
        if self.max_docs is not None and self.max_docs < 1:
            raise UserError(f"--max-docs must be >= 1, got {self.max_docs}; leave it out to read everything")
        if self.max_docs is not None and self.max_docs > sys.maxsize:  # an islice ValueError traceback
            raise UserError(
                f"--max-docs must be at most {sys.maxsize}, got {self.max_docs}; leave it out to read everything"
            )
        check_seed(self.seed)
        check_stop(self.stop)
        check_ngram(self.ngram, off=self.decontaminate in ((), ("none",)) and not self.text_sets)


def _recipe(cfg: PrepareConfig, held: HeldTokenizer, against: list[str], dtype: np.dtype) -> dict:
    recipe = to_dict(cfg)
    if held.settings:
        recipe["documents"] = "whole"  # an interrupted prepare of the old code, which cut them, starts over
    del recipe["tokenizer"]  # the same tokenizer reached by another path is the same recipe
    recipe["on_error"] = recorded_on_error(cfg.on_error)
    for source in recipe["sources"]:  # a whole, unpinned split's: the one from before `hf_files` existed
        for key in [k for k in ("hf_files", "hf_revision") if source.get(k) is None]:
            source.pop(key, None)
    recipe.update(tokenizer_hash=held.digest, decontaminate=against, dtype=dtype.name)
    # a text set's version (its texts' digest) stands for it, not its name, which says where it was read (a
    # study's `task-test:PATH`): a task file moved mid-prepare resumes it (the name made another recipe and
    # started over); meta.json's `decontamination.against` still names it; none: the recipe is what it was
    del recipe["text_sets"]
    if cfg.text_sets:
        recipe["text_sets"] = [t.version for t in cfg.text_sets]
    if repeats_documents(cfg.stop, len(cfg.sources)):  # folders drawn by the old, leaky rule differ
        recipe["holdout"] = "per-source"
    return recipe


def _contamination(cfg: PrepareConfig, against: list[str]) -> Contamination:
    """What to remove: the named sets (resolved) and the text sets; nothing read when there are none."""
    if against or cfg.text_sets:
        return build_contamination(against, cfg.ngram, cfg.text_sets)
    return Contamination(ngram=cfg.ngram)


def _check_shard(cfg: PrepareConfig, shard: Shard | None) -> None:
    if shard is not None and (len(cfg.sources) != 1 or cfg.max_docs is not None):
        raise UserError(
            "--shard splits one --source by its files and reads all of it; prepare with one --source and "
            "without --max-docs, or without --shard"
        )


def _check_counts(workers: int, checkpoint_every: int, chunk_docs: int) -> None:
    """Was: -1 workers ran serially and a checkpoint interval below 1 became 1, silently."""
    if workers < 0:
        raise UserError(f"--workers must be >= 0 (0: all cores), got {workers}")
    if checkpoint_every < 1 or chunk_docs < 1:
        raise UserError(
            f"--checkpoint-every must be >= 1 (chunks between resume points), got {checkpoint_every}"
        )


def prepare(
    cfg: PrepareConfig,
    out: Path,
    *,
    shard: Shard | None = None,
    workers: int = 0,
    chunk_docs: int = 256,
    checkpoint_every: int = 16,
    progress: bool = True,
) -> Path:
    """Tokenize `cfg.sources` into the prepared folder `out` (see module docstring); returns the
    folder written: `out`, or with `shard` this worker's part `OUT.shards/I-of-N` (`data merge`
    then writes `out`).

    `checkpoint_every` chunks of `chunk_docs` documents, the progress is put on disk so that an
    interrupted prepare resumes from there."""
    from encoderlab.data.tokenizer import held_tokenizer, spec_fields  # lazily: transformers

    out = folder_named(out)  # a link to a folder: OUT.tmp beside that folder, renamed onto it
    _check_counts(workers, checkpoint_every, chunk_docs)
    _check_shard(cfg, shard)
    sources = local_paths(cfg.sources)  # also: a bad location (but a hub sha's: `fixed_on_hub`) fails here
    held = held_tokenizer(cfg.tokenizer)  # loaded and hashed once a process while its files stay as they are
    spec = spec_fields(held.tok)
    dtype = choose_dtype(spec["vocab_size"], cfg.dtype)
    against, not_fetched = resolve_eval_sets(cfg.decontaminate)
    recipe = _recipe(cfg, held, against, dtype)
    if shard is not None:
        recipe["shard"] = [shard.index, shard.count]
    target = target_folder(out, shard, sources)
    if check_target(target, recipe, sources):
        log.info(
            "%s already holds this recipe%s; nothing to do",
            target,
            freshness.held_revisions(read_meta(target)),
        )
        return target
    check_disjoint(cfg.sources)  # after the no-op: a rerun of a hub sha asks no hub
    if shard is None:  # a part may be empty: `data merge` judges the whole corpus
        check_first_documents(cfg.sources, cfg.on_error)
    job = _Job(
        cfg=cfg,
        tok=held.tok,
        spec=spec,
        dtype=dtype,
        recipe=recipe,
        contam=_contamination(cfg, against),
        workers=workers or default_workers(),
        chunk_docs=chunk_docs,
        checkpoint_every=checkpoint_every,
        progress=progress,
        shard=shard,
    )
    made = missing_folders(target.parent)  # removed again, if still empty, when the prepare is refused
    try:
        _prepare_locked(job, target, sources, not_fetched)
    except UserError:
        remove_folders(made)
        raise
    return target


@dataclass(frozen=True, kw_only=True)
class _Job:
    """A prepare with everything resolved: what writing it needs besides the folder."""

    cfg: PrepareConfig
    tok: object
    spec: dict
    dtype: np.dtype
    recipe: dict
    contam: Contamination
    workers: int
    chunk_docs: int
    checkpoint_every: int
    progress: bool
    shard: Shard | None = None

    @property
    def val_fraction(self) -> float:
        """A part holds every document in train: `data merge` draws the split over the whole corpus."""
        return 0.0 if self.shard is not None else self.cfg.val_fraction


def _tokenizer_meta(job: _Job) -> dict:
    """meta.json's `tokenizer`: as given, its hash, and for a hub id the commit read (asked after the load,
    from the cache or mirror it read: `hubmodels.hub_read`), so a rerun can pin it (`OWNER/NAME@SHA`)."""
    from encoderlab.data.hubmodels import hub_read

    read = hub_read(job.cfg.tokenizer)
    commit = {"commit": read["commit"]} if read else {}
    return {"source": job.cfg.tokenizer, "hash": job.recipe["tokenizer_hash"], **commit}


class _PrefixChanged(Exception):
    """The documents before an interrupted prepare's checkpoint are not the ones read now."""


def _fresh(tmp: Path) -> None:
    """An empty, marked OUT.tmp (a leftover without a checkpoint of this recipe is not data)."""
    shutil.rmtree(tmp, ignore_errors=True)
    create_output(tmp, KIND)


def _prepare_locked(job: _Job, out: Path, sources: list[Path], not_fetched: list[str]) -> None:
    """`_tokenize` under the lock `OUT.lock`: two prepares into one folder would delete each other's
    OUT.tmp, so the second is refused."""
    shards = outdir.output_folder(out.parent, KIND + " shards") if job.shard is not None else nullcontext()
    with shards:  # undone when this worker is refused while OUT.shards holds only its marker
        out.parent.mkdir(parents=True, exist_ok=True)
        with folder_lock(out.with_name(out.name + ".lock"), "data prepare", use=out):
            if check_target(out, job.recipe, sources):  # finished by another process meanwhile
                return
            if not_fetched:
                log.warning(
                    "decontamination skips evaluation sets that are not fetched: %s", ", ".join(not_fetched)
                )
            _tokenize(job, out, not_fetched)


def _tokenize(job: _Job, out: Path, not_fetched: list[str]) -> None:
    """Tokenize into OUT.tmp, resuming its checkpoint if any, and rename it to `out` (the caller
    holds the folder's lock)."""
    tmp = out.with_name(out.name + ".tmp")
    chain = Chain.here(job.cfg.sources)
    resume = read_progress(tmp, job.recipe, job.dtype)
    if resume is None:
        _fresh(tmp)
    done = False
    try:
        try:
            meta = _write(job, tmp, resume, chain)
        except _PrefixChanged:
            log.warning("the sources changed since the interrupted prepare in %s; starting over", tmp)
            _fresh(tmp)
            meta = _write(job, tmp, None, chain)
        meta.update(recipe=job.recipe, tokenizer=_tokenizer_meta(job))
        meta["decontamination"].update(not_fetched=not_fetched)
        (tmp / "meta.json").write_text(json_text(meta, indent=2))
        (tmp / PROGRESS).unlink(missing_ok=True)
        if out.exists():  # empty but for outdir's marker (check_target)
            (out / MARKER).unlink(missing_ok=True)
        replace_folder(tmp, out)  # POSIX rename: replaces an empty folder, fails on anything more
        done = True
    except Exception as exc:
        room = no_room(exc)
        if room is None:
            raise
        said, fix = NO_ROOM[room.errno]
        kept = (
            f"the work up to the last checkpoint is kept in {tmp}: {fix} and rerun to resume (or delete it)"
            if (tmp / PROGRESS).exists()
            else f"the partial output was removed, {fix} and rerun"
        )
        raise DiskFull(f"{said} while preparing {out} ({room.filename or 'output'}); {kept}") from None
    finally:
        if not done and not (tmp / PROGRESS).exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _link(chain: bytes, digest: bytes) -> bytes:
    """Extend the hash chain over chunks read so far by one chunk's digest."""
    return hashlib.sha256(chain + digest).digest()


def wrap_ids(spec: dict) -> tuple[int | None, int | None]:
    """(bos, eos) wrapped around each document; GPT-style tokenizers (bos == eos) get one separator."""
    bos, eos = spec["bos_id"], spec["eos_id"]
    return (None if bos is not None and bos == eos else bos), eos


def _take(
    result: encode.ChunkResult, writers: dict[str, SplitWriter], tally: Tally, kept: int, job: _Job
) -> int:
    """Append a tokenized chunk to the train and val files (the split drawn by position, `data/holdout.py`)
    and count it; returns the documents kept so far."""
    tally.remember(result, job.contam)
    if repeats_documents(job.cfg.stop, len(job.cfg.sources)):
        to_val, to_train = split_per_source(result.sources, result.repeats, job.val_fraction, tally.passes)
    else:
        to_val = val_mask(kept, len(result.lengths), job.val_fraction)
        to_train = ~to_val
    for split, sel in (("train", to_train), ("val", to_val)):
        writers[split].append(result.tokens[np.repeat(sel, result.lengths)], result.lengths[sel])
        tally.add(split, result, sel)
    tally.see(result.tokens)
    return kept + len(result.lengths)


def _refuse_empty(tmp: Path, cfg: PrepareConfig, tally: Tally, kept: int) -> None:
    from encoderlab.data.mixing import empty_corpus

    (tmp / PROGRESS).unlink(missing_ok=True)  # a refused corpus leaves nothing behind
    if kept:  # was written, with an empty train split that pretrain then refused as too short
        raise holds_out_everything(cfg.val_fraction, kept)
    removed = tally.removed
    why = " after decontamination removed every document" if removed["id"] + removed["ngram"] else ""
    raise empty_corpus(cfg.sources, why)


def _write(job: _Job, tmp: Path, resume: dict | None, here: Chain) -> dict:
    from tqdm import tqdm

    cfg, dtype = job.cfg, job.dtype
    job.tok.save_pretrained(str(tmp / "tokenizer"))
    bos, eos = wrap_ids(job.spec)
    ids = here.continuing(resume)  # a checkpoint from before names documents as read
    resume = resume or {}
    at = resume.get("splits", {})
    writers = {s: SplitWriter(split_dir(tmp, s), dtype, at=tuple(at[s]) if s in at else None) for s in SPLITS}
    stats: list[SourceStats] = []
    tally = Tally(**resume["tally"]) if "tally" in resume else Tally.empty(len(cfg.sources))
    kept = resumed_after = resume.get("kept", 0)
    n_chunks = resume.get("chunks", 0)
    start = time.perf_counter()
    tokenizer_json = tmp / "tokenizer" / "tokenizer.json"
    fast, why_not = tiktoken_bpe(tokenizer_json.read_text(encoding="utf-8"))
    log.info("tokenizing with %s", "tiktoken (same ids)" if fast else f"tokenizers ({why_not} for tiktoken)")
    initargs = (str(tokenizer_json), fast, bos, eos, dtype.name, job.contam.for_workers(), ids.names)
    docs = mix_documents(
        cfg.sources, seed=cfg.seed, stop=cfg.stop, on_error=cfg.on_error, stats=stats, shard=job.shard
    )
    chunks = encode.chunks(docs, job.chunk_docs, cfg.max_docs)
    bar = tqdm(desc="prepare", unit="doc", disable=not job.progress, smoothing=0.1)
    metrics = PrepareLog(tmp, resumed_at=resume.get("chunks"), against=job.contam.against)
    try:
        chain = b""
        for chunk in itertools.islice(chunks, n_chunks):  # re-read what the checkpoint holds
            chain = _link(chain, encode.chunk_digest(chunk, ids.names))
            bar.update(len(chunk))
        if chain.hex() != resume.get("chain", ""):
            raise _PrefixChanged
        for result in encode.ordered_results(chunks, job.workers, initargs):
            kept = _take(result, writers, tally, kept, job)
            chain, n_chunks = _link(chain, result.digest), n_chunks + 1
            if n_chunks % job.checkpoint_every == 0:  # the line first: a resume cuts it back (prepmetrics)
                metrics.line(n_chunks, kept, tally, stats)
                write_progress(tmp, job.recipe, writers, n_chunks, kept, tally, chain, ids, stats)
            bar.update(len(result.lengths) + sum(result.counts.values()))
        if n_chunks % job.checkpoint_every or not n_chunks:  # the chunks after the last checkpoint
            metrics.line(n_chunks, kept, tally, stats)
    except BaseException:
        for w in writers.values():
            w.close()
        raise
    finally:
        bar.close()
        metrics.close()
        docs.close()
    # no train document: an empty corpus, or a --val-fraction that held out every document
    if job.shard is None and not writers["train"].n_docs:
        _refuse_empty(tmp, cfg, tally, kept)
    splits = {s: w.finish() for s, w in writers.items()}
    files = {s: w.files() for s, w in writers.items()}
    meta = _meta(job, splits, stats, tally, bos, eos, resumed_after, time.perf_counter() - start, fast)
    return {**meta, "split_files": files}


def _meta(job: _Job, splits, stats, tally: Tally, bos, eos, resumed_after, elapsed, fast) -> dict:
    sources = []
    for i, s in enumerate(stats):
        tokens = {split: tally.tokens[split][i] for split in SPLITS}
        unique = {split: tally.unique[split][i] for split in SPLITS}
        sources.append({**s.to_dict(), "tokens": tokens, "unique_tokens": unique})
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "dtype": job.dtype.name,
        "spec": job.spec,
        "wrap": {"bos": bos, "eos": eos},
        "splits": splits,
        "unique_tokens": {split: sum(tally.unique[split]) for split in SPLITS},
        "max_token_id": tally.max_token_id,
        "sources": sources,
        "decontamination": {
            **job.contam.summary(),
            "removed_by_id": tally.removed["id"],
            "removed_by_ngram": tally.removed["ngram"],
            "first_removed": tally.named(
                job.contam.against
            ),  # outside the identity (`packed.identity`): no key moves
        },
        "empty_after_tokenization": tally.removed["empty"],
        "resumed_after_docs": resumed_after,
        "seconds": round(elapsed, 3),
        "workers": job.workers,
        "encoder": "tiktoken" if fast else "tokenizers",
        "documents": "whole",  # tokenized without the tokenizer's call settings (packed.read_meta)
        "txt_reading": freshness.TXT_READING,  # how .txt files were cut into lines: an older folder is checked by it
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if job.shard is not None:
        meta["shard"] = {"index": job.shard.index, "count": job.shard.count}
    return meta
