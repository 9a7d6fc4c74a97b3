"""`data merge`: the parts of a sharded prepare, concatenated into one prepared folder.

`data prepare --shard I/N --out OUT` leaves worker I's documents in `OUT.shards/I-of-N/` (all in
its train split, `data/prepare.py`). `merge(OUT)` checks that all N parts are there, complete, of
one recipe and read from the files their source holds now (`data/freshness.py`), then streams them
in shard order into `OUT`, drawing the validation split over the global document index exactly as
a one-worker prepare does, so `OUT` holds the same bytes (tokens.bin, doc_offsets.npy, val/...) as
`data prepare` without `--shard` (tested). Its meta.json has the one-worker recipe (a hub pin spelled
differently by the parts, which read one commit, as that commit: `_merged_recipe`), the summed counts,
the source's identity, and each part's own record under `parts`.

Cost: one sequential copy of the tokens (memory bounded: documents are copied in blocks of at most
BLOCK_TOKENS tokens). Trade-off: a copy instead of a reader over N files, so the reader, the resume
logic and every tool keep one format; the parts can be deleted after the merge (`--delete-parts`).
A merge that is interrupted leaves `OUT.tmp` and starts that copy over when run again.
"""

from __future__ import annotations

import logging
import re
import shutil
import time
from pathlib import Path

import numpy as np

from encoderlab.atomic import folder_named, json_text, replace_folder
from encoderlab.data.freshness import as_read, held_commit, held_revisions, identity_as_read, source_change
from encoderlab.data.holdout import held_out_count, holds_out_everything
from encoderlab.data.mirrorpin import read_unpinned
from encoderlab.data.packed import SPLITS, SplitWriter, is_count, open_split, read_meta, split_dir, val_mask
from encoderlab.data.prepmetrics import first_removed, first_skipped
from encoderlab.data.shard import merged_folder
from encoderlab.data.target import KIND, check_target
from encoderlab.errors import NO_ROOM, DiskFull, UserError, no_room
from encoderlab.locks import folder_lock
from encoderlab.outdir import MARKER, check_named, create_output
from encoderlab.paths import typed

log = logging.getLogger(__name__)

BLOCK_TOKENS = 1 << 26
_PART = re.compile(r"(\d{5})-of-(\d{5})")
_SUMMED = ("docs", "empty", "bad_records", "bad_files", "repeats")


def _parts(out: Path) -> list[Path]:
    """The complete parts of a sharded prepare into `out`, in shard order; one line if any is missing."""
    check_named(out)  # `--out .` was a ValueError traceback, `--out ..` looked for `...shards`
    folder = out.with_name(out.name + ".shards")
    run = f"run `encoderlab data prepare --shard I/N --out {typed(out)}` for every I"
    if not folder.is_dir():
        _refuse_a_part_as_out(out)
        # a file there was said not to exist
        state = "is not a folder" if folder.exists() or folder.is_symlink() else "does not exist"
        raise UserError(f"no parts to merge: {folder} {state}; {run}")
    found = {p.name: p for p in folder.iterdir() if _PART.fullmatch(p.name) and p.is_dir()}
    counts = {int(_PART.fullmatch(n)[2]) for n in found}
    if len(counts) != 1:
        what = f"parts of {len(counts)} different shard counts ({sorted(counts)})" if counts else "no part"
        raise UserError(f"{folder} holds {what}; keep the parts of one --shard I/N run, then merge")
    (n,) = counts
    missing = [i for i in range(n) if f"{i:05d}-of-{n:05d}" not in found]
    if missing:
        running = [i for i in missing if (folder / f"{i:05d}-of-{n:05d}.tmp").exists()]
        state = f" ({len(running)} of them started but not finished)" if running else ""
        raise UserError(
            f"{folder} lacks {len(missing)} of {n} parts{state}, first --shard {missing[0]}/{n}; {run}, then merge"
        )
    return [found[f"{i:05d}-of-{n:05d}"] for i in range(n)]


def _refuse_a_part_as_out(out: Path) -> None:
    """`--out OUT.shards/I-of-N`, a part given for the folder to merge into, was told to prepare every part
    into that part (`--shard I/N --out OUT.shards/I-of-N`); it names the merge's own --out."""
    try:
        shard = read_meta(out).get("shard") if (out / "meta.json").is_file() else None
    except UserError:  # not prepared data: the missing parts are the line to say
        return
    if isinstance(shard, dict) and (merged := merged_folder(out)) is not None:
        raise UserError(
            f"--out {out} is part {shard.get('index')}/{shard.get('count')} of a sharded prepare into {merged}, "
            f"not the folder to merge into; run `encoderlab data merge --out {typed(merged)}`"
        )


def _part_problem(meta: dict) -> str | None:
    """What in a part's meta.json the merge could not sum (beyond what every reader checks), or None."""
    sources, decontam = meta.get("sources"), meta.get("decontamination")
    if not isinstance(meta.get("recipe"), dict):
        return "recipe is not a mapping"
    if not (isinstance(sources, list) and len(sources) == 1 and isinstance(sources[0], dict)):
        return "sources is not a list of its one source"
    if not all(is_count(sources[0].get(k)) for k in _SUMMED) or not isinstance(sources[0].get("files"), list):
        return f"sources[0] lacks a count of {', '.join(_SUMMED)} or its files"
    if not (
        isinstance(decontam, dict)
        and all(is_count(decontam.get(k)) for k in ("removed_by_id", "removed_by_ngram"))
    ):
        return "decontamination lacks its counts"
    for key in ("max_token_id", "empty_after_tokenization", "workers"):
        if not isinstance(meta.get(key), int) or isinstance(meta.get(key), bool):
            return f"{key} is {meta.get(key)!r}, not a whole number"
    return None


def _check_parts(parts: list[Path], metas: list[dict]) -> dict:
    """The recipe every part shares (without its shard), which is the one-worker recipe (for parts that spelled
    a hub pin differently, that pin as the commit they all read: `_merged_recipe`)."""
    recipes = []
    for i, (part, meta) in enumerate(zip(parts, metas)):
        if problem := _part_problem(meta):  # edited or cut by hand: was a KeyError or TypeError traceback
            raise UserError(
                f"{part / 'meta.json'} is corrupt ({problem}); delete {part} and prepare it again with "
                f"--shard {i}/{len(parts)}"
            )
        recipe = dict(meta["recipe"])
        if recipe.pop("shard", None) != [i, len(parts)]:
            raise UserError(
                f"{part} was not written as shard {i}/{len(parts)}; prepare it again with that --shard"
            )
        recipes.append(recipe)
    for part, recipe, meta in zip(parts[1:], recipes[1:], metas[1:]):
        if not _same_recipe((metas[0], recipes[0]), (meta, recipe)):
            _refuse_unrecorded_mirror(parts, metas)
            differs = sorted(k for k in recipe if recipe[k] != recipes[0].get(k))
            raise UserError(
                f"{part} was prepared differently from {parts[0]} ({', '.join(differs)} differ); prepare every part "
                "with the same arguments"
            )
    _refuse_other_data(parts, metas)
    _refuse_other_commits(parts, metas)
    for i, (part, meta) in enumerate(zip(parts, metas)):  # a leftover part of files changed since
        if (change := source_change(meta)) is not None:
            raise UserError(
                f"{part} was prepared from sources that changed since ({change}); delete it and prepare it "
                f"again with --shard {i}/{len(parts)}, then merge"
            )
    return _merged_recipe(metas, recipes)


def _same_recipe(first: tuple[dict, dict], other: tuple[dict, dict]) -> bool:
    """Whether two parts' (meta, recipe without shard) are of one recipe: equal, or differing only in how a
    hub source was pinned (unpinned, a branch, a tag, a commit sha) where both read it at the same commit
    (`freshness.as_read`: the same files, as a rerun pinned to that commit finds: `pins_held`)."""
    return first[1] == other[1] or as_read(*first) == as_read(*other)


def _refuse_unrecorded_mirror(parts: list[Path], metas: list[dict]) -> None:
    """One line for parts that differ only as read unpinned from a mirror and pinned to a commit, where an
    unpinned part records no commit (prepared before `mirror_commit` was kept) and its mirror, whose
    download records would verify it (`freshness.held_commit`), is not on this machine: said instead of
    "prepared differently", whose fix (the same arguments) is not what is wrong."""
    pinned = next(((p, c) for p, m in zip(parts, metas) if (c := held_commit(m["sources"][0]))), None)
    for i, (part, meta) in enumerate(zip(parts, metas)):
        source = meta["sources"][0]
        ident = source.get("identity")
        if pinned is None or not read_unpinned(ident) or "mirror_commit" in source:
            continue
        if not Path(ident["mirror"]).is_dir():
            raise UserError(
                f"{part} read hf:{ident.get('hub_id')} unpinned from the mirror {ident['mirror']}, which is not "
                f"on this machine, and records no commit it read (an earlier encoderlab prepared it), so it "
                f"cannot be told to hold commit {pinned[1]}, as {pinned[0]} does; run `encoderlab data merge` "
                f"where {ident['mirror']} is, or delete {part} and prepare it again with --shard {i}/{len(parts)}"
            )


def _merged_recipe(metas: list[dict], recipes: list[dict]) -> dict:
    """The merged folder's recipe: the parts' own when they all share it (a one-worker prepare's); when
    they spelled a hub pin differently (`_same_recipe`), each such source pinned to the commit every part
    read (`freshness.as_read`), the one thing they agree on, so neither which part spelled it how nor
    the order of the spellings moves the folder's identity (`packed.identity`) or its study keys (a part
    read unpinned from a mirror: the commit its download records verified when it was read, which its
    source's identity then names too, `_merged_meta`, as a one-worker prepare pinned to it records). The token
    order is the shard order (part I is always slice I of the files), so no part's own record decides it."""
    if all(recipe == recipes[0] for recipe in recipes):
        return recipes[0]
    return as_read(metas[0], recipes[0])


def _refuse_other_data(parts: list[Path], metas: list[dict]) -> None:
    """Refuse parts that read their source as different data: hub data (which `source_change` does not
    list again) at another revision or with other data files (the default branch moved, a mirror
    changed, between the workers' starts), so each part's `--shard` slice was of another file list and
    the merge would hold documents twice or not at all, under the first part's identity. A part read
    unpinned from a mirror and one pinned to the commit the mirror's download records verify read the same
    data (`freshness.identity_as_read`)."""
    source = metas[0]["sources"][0]
    first = source.get("identity")
    for part, meta in zip(parts[1:], metas[1:]):
        ident = meta["sources"][0].get("identity")
        # as read only where they differ as recorded: a mirror's records are read per file
        if ident != first and identity_as_read(meta["sources"][0]) != identity_as_read(source):
            raise UserError(
                f"{part} read its source as {_read_as(ident)}, {parts[0]} as {_read_as(first)} (the data "
                "changed between the parts); delete the parts of the old data and prepare them again with "
                "their --shard, then merge"
            )


def _refuse_other_commits(parts: list[Path], metas: list[dict]) -> None:
    """Refuse parts read unpinned from a mirror, of one identity as recorded (`local`, the same files), at
    different commits: each the one it recorded (`mirror_commit`), or for a part from before the record the
    one its mirror's records verify now (`freshness.held_commit`). The mirror was downloaded again between
    the workers, so each `--shard` slice may hold another commit's documents (was merged, recording no one
    commit, or for a part from before, none: the mirror's records read later named a commit not all read)."""
    held = [
        (part, meta["sources"][0], commit)
        for part, meta in zip(parts, metas)
        if read_unpinned(meta["sources"][0].get("identity")) and (commit := held_commit(meta["sources"][0]))
    ]
    for part, source, commit in held[1:]:
        if commit != held[0][2]:
            ident = source["identity"]
            raise UserError(
                f"{part} read hf:{ident.get('hub_id')} from the mirror {ident.get('mirror')} "
                f"{_at(source, commit)}, {held[0][0]} {_at(held[0][1], held[0][2])} (the mirror was downloaded "
                "again between the parts); delete the parts not of the commit to keep and prepare them again "
                "with their --shard, then merge"
            )


def _at(source: dict, commit: str) -> str:
    """A part's commit in `_refuse_other_commits`' words: recorded when read, or (a part from before the
    record) what the mirror's download records name now."""
    now = (
        "" if "mirror_commit" in source else " (it records none: what the mirror's download records name now)"
    )
    return f"at commit {commit}{now}"


def _read_as(ident) -> str:
    if not isinstance(ident, dict) or ident.get("kind") != "hf":
        return f"{ident}"
    return f"revision {ident.get('revision')} with {len(ident.get('files') or [])} data files"


def merge(out: Path, *, delete_parts: bool = False) -> Path:
    """Merge the parts of a sharded prepare into `out` (see the module docstring); returns `out`."""
    out = folder_named(out)  # a link to a folder: OUT.tmp beside that folder, renamed onto it
    check_named(out)
    # a rerun after --delete-parts: was "no parts to merge"
    if (held := _merged_without_parts(out)) is not None:
        log.info("%s already holds the merge of %d parts, deleted since; nothing to do", out, held)
        return out
    parts = _parts(out)
    metas = [read_meta(p) for p in parts]
    recipe = _check_parts(parts, metas)
    # parts hold every document in train; the split drawn here must leave one there (was merged with an
    # empty train split, which pretrain then refused as too short), checked before anything is written
    docs = sum(meta["splits"]["train"]["docs"] for meta in metas)
    if docs and held_out_count(docs, recipe["val_fraction"]) >= docs:
        raise holds_out_everything(recipe["val_fraction"], docs, parts[0].parent)
    if not check_target(out, recipe, sources=[parts[0].parent], merging=True):
        out.parent.mkdir(parents=True, exist_ok=True)
        with folder_lock(out.with_name(out.name + ".lock"), "data merge", use=out, other_out=False):
            if not check_target(out, recipe, sources=[parts[0].parent], merging=True):
                _merge_locked(out, parts, metas, recipe)
    else:
        log.info(
            "%s already holds the merge of these parts%s; nothing to do", out, held_revisions(read_meta(out))
        )
    if delete_parts:
        _delete_parts(parts)
    return out


def _merged_without_parts(out: Path) -> int | None:
    """How many parts `out` was merged from, where `OUT.shards` is gone (`--delete-parts`): a rerun of the
    merge is then done, as it is beside the parts; None otherwise (no merged folder, or its parts are there)."""
    folder = out.with_name(out.name + ".shards")
    if folder.exists() or folder.is_symlink() or not (out / "meta.json").is_file():
        return None
    try:
        parts = read_meta(out).get("parts")
    except UserError:  # not a merged folder: the missing parts are the line to say
        return None
    return len(parts) if isinstance(parts, list) and parts else None


def _delete_parts(parts: list[Path]) -> None:
    """The merged parts, and their folder once nothing else is in it (a file someone put there is kept:
    the whole folder went, with it)."""
    folder = parts[0].parent
    for part in parts:
        shutil.rmtree(part)
    others = sorted(p.name for p in folder.iterdir() if p.name != MARKER)
    if others:
        log.info("deleted the parts in %s; kept it for what else it holds: %s", folder, ", ".join(others))
        return
    (folder / MARKER).unlink(missing_ok=True)
    folder.rmdir()
    log.info("deleted the parts in %s", folder)


def _merge_locked(out: Path, parts: list[Path], metas: list[dict], recipe: dict) -> None:
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)  # a merge has no checkpoint: an interrupted one starts over
    create_output(tmp, KIND)
    start = time.perf_counter()
    try:
        shutil.copytree(parts[0] / "tokenizer", tmp / "tokenizer")
        dtype = np.dtype(metas[0]["dtype"])
        writers = {s: SplitWriter(split_dir(tmp, s), dtype) for s in SPLITS}
        kept = 0
        for part, meta in zip(parts, metas):
            kept = _copy_part(part, meta, writers, kept, recipe["val_fraction"])
        if kept == 0:
            raise UserError(f"the parts of {out} hold no document; check --source")
        splits = {s: w.finish() for s, w in writers.items()}
        meta = _merged_meta(metas, recipe, splits, time.perf_counter() - start)
        meta["split_files"] = {s: w.files() for s, w in writers.items()}
        (tmp / "meta.json").write_text(json_text(meta, indent=2))
        if out.exists():  # empty but for outdir's marker (check_target)
            (out / MARKER).unlink(missing_ok=True)
        replace_folder(tmp, out)  # POSIX rename: replaces an empty folder, fails on anything more
    except Exception as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        room = no_room(exc)
        if room is None:
            raise
        said, fix = NO_ROOM[room.errno]
        raise DiskFull(f"{said} while merging into {out}; {fix} and run `data merge` again") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _copy_part(part: Path, meta: dict, writers: dict, kept: int, val_fraction: float) -> int:
    """Append part's documents, split into train/val by their global index from `kept`; returns
    the new global count."""
    tokens, offsets = open_split(part, "train", meta)
    a, n_docs = 0, len(offsets) - 1
    while a < n_docs:
        # as many documents as fit in BLOCK_TOKENS, at least one
        b = max(a + 1, int(np.searchsorted(offsets, offsets[a] + BLOCK_TOKENS, side="right")) - 1)
        b = min(b, n_docs)
        block = np.asarray(offsets[a : b + 1])
        lengths = np.diff(block)
        toks = np.asarray(tokens[block[0] : block[-1]])
        is_val = val_mask(kept, len(lengths), val_fraction)
        tok_val = np.repeat(is_val, lengths)
        writers["train"].append(toks[~tok_val], lengths[~is_val])
        writers["val"].append(toks[tok_val], lengths[is_val])
        kept += len(lengths)
        a = b
    return kept


def _merged_meta(metas: list[dict], recipe: dict, splits: dict, seconds: float) -> dict:
    first = metas[0]
    tokens = {s: splits[s]["tokens"] for s in SPLITS}
    source = {k: v for k, v in first["sources"][0].items() if k not in ("files", "exhausted")}
    own = {k: v for k, v in first["recipe"].items() if k != "shard"}
    if recipe != own:  # pinned as read (`_merged_recipe`): a mirror's identity as a one-worker pin records it
        source["identity"] = identity_as_read(first["sources"][0])
    source.pop("mirror_commit", None)
    if read_unpinned(source["identity"]) and any("mirror_commit" in m["sources"][0] for m in metas):
        # each part's, verified when read (one from before: now); one commit at most (`_refuse_other_commits`)
        commits = {held_commit(m["sources"][0]) for m in metas}
        source["mirror_commit"] = commits.pop() if len(commits) == 1 else None  # null: one part's is unknown
    for key in _SUMMED:
        source[key] = sum(m["sources"][0][key] for m in metas)
    source["files"] = [f for m in metas for f in m["sources"][0]["files"]]
    # the parts are in file order, so the first part's skip of a reason is the corpus's first one
    source["first_skipped"] = first_skipped([m["sources"][0] for m in metas])
    if all(isinstance(m["sources"][0].get("exhausted"), bool) for m in metas):  # parts from before: unsaid
        source["exhausted"] = all(m["sources"][0]["exhausted"] for m in metas)
    source.update(tokens=tokens, unique_tokens=dict(tokens))  # one source, read once: all unique
    decontam = dict(first["decontamination"])
    for key in ("removed_by_id", "removed_by_ngram"):
        decontam[key] = sum(m["decontamination"][key] for m in metas)
    decontam["first_removed"] = first_removed([m["decontamination"] for m in metas])
    keep = (
        "format",
        "format_version",
        "dtype",
        "spec",
        "wrap",
        "encoder",
        "tokenizer",
        "documents",
        "txt_reading",
    )
    return {
        **{k: first[k] for k in keep if k in first},
        "recipe": recipe,
        "splits": splits,
        "unique_tokens": dict(tokens),
        "max_token_id": max(m["max_token_id"] for m in metas),
        "sources": [source],
        "decontamination": decontam,
        "empty_after_tokenization": sum(m["empty_after_tokenization"] for m in metas),
        "resumed_after_docs": 0,
        "seconds": round(seconds, 3),
        "workers": sum(m["workers"] for m in metas),
        "parts": [
            {k: m.get(k) for k in ("shard", "splits", "seconds", "workers", "resumed_after_docs", "created")}
            for m in metas
        ],
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
