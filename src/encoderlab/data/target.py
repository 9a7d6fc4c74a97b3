"""The folder a prepare or a merge writes: may it be written, and does it already hold the data?

`data prepare` and `data merge` both write a prepared folder OUT through `OUT.tmp/`, renamed to OUT
once complete (`data/prepare.py`, `data/merge.py`); a `--shard I/N` worker writes its part
`OUT.shards/I-of-N` the same way. `check_target` is the one check of such a folder, run before
anything is written and again under the folder's lock (another process may have finished it
meanwhile). Design:
- **Refused, touching nothing** (`outdir.check_output`): a file, a foreign non-empty folder, an
  uncreatable parent, a source inside it; the same for `OUT.tmp`, which is ours only while it holds a
  checkpoint (`data/resume.py`): a finished dataset there (one prepared with `--out OUT.tmp`) is not a
  leftover, and since prepare and merge delete their leftovers it is refused rather than lost.
- **The same recipe is a no-op**, when the files its sources hold now are those it read
  (`data/freshness.py`: a change is refused, never prepared over, as a run may have trained on the
  folder); a folder holding another recipe, or files but no meta.json, is refused with the fix.
- **Folders from before outdir's ownership marker** are recognised by their meta.json's `format`
  (`_ours`), so they stay ours.
Trade-off: one function answers both "may I write?" and "is it done?", because the no-op needs the
same reading of meta.json that the refusal of another recipe does; `merging` only changes the fix
(a merge's --out also names where its parts are, so "another --out" is no fix).
"""

from __future__ import annotations

from pathlib import Path

from encoderlab import jsonlines
from encoderlab.atomic import check_renamable
from encoderlab.data import freshness
from encoderlab.data.packed import FORMAT, read_meta
from encoderlab.data.resume import PROGRESS
from encoderlab.data.shard import Shard, shard_dir
from encoderlab.errors import UserError
from encoderlab.outdir import MARKER, check_output

KIND = "data prepare"
"""The outdir kind of prepared folders (and of their parts)."""


def _ours(path: Path) -> bool:
    """A prepared folder written before outdir's marker existed (the legacy test of check_output)."""
    try:
        return jsonlines.loads((path / "meta.json").read_text()).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def check_target(out: Path, recipe: dict | None, sources=(), *, merging: bool = False) -> bool:
    """Refuse `out` (and `OUT.tmp`) as a prepare's output unless it is safe; True if `out` already
    holds this exact recipe, read from the files its sources hold now (nothing to do; sources changed
    since are refused, `data/freshness.py`). Touches nothing. `merging`: for `data merge`, whose --out
    also names where its parts are (so "another --out" is no fix: `merge_elsewhere`)."""
    elsewhere = freshness.merge_elsewhere(out) if merging else None
    check_output(out, KIND, sources=sources, legacy=_ours, elsewhere=elsewhere)
    tmp = out.with_name(out.name + ".tmp")  # ours when it holds a checkpoint
    check_output(tmp, KIND, sources=sources, legacy=lambda p: (p / PROGRESS).is_file(), elsewhere=elsewhere)
    if (tmp / "meta.json").is_file() and not (tmp / PROGRESS).is_file():
        # prepare and merge both write OUT.tmp and delete a leftover of theirs; a finished dataset
        # there (one prepared with --out OUT.tmp) is not a leftover and must survive
        raise UserError(
            f"{tmp} holds a finished prepared dataset, not the leftover of an interrupted prepare; nothing "
            f"was changed: rename it (encoderlab writes {out} there first), or rename it to {out} if it is"
        )
    meta = freshness.as_asked(read_meta(out), recipe) if (out / "meta.json").is_file() else None
    if meta is not None and (meta.get("recipe") == recipe or freshness.pins_held(meta, recipe or {})):
        freshness.refuse_changed(out, meta, other_out=not merging)
        return True
    fix = f"nothing was changed: {freshness.redo_fix(out, other_out=not merging)} and run the command again"
    if meta is not None:
        differs = freshness.recipe_differences(meta, recipe or {})
        raise UserError(f"{out} already holds data prepared differently ({differs}); {fix}")
    if out.is_dir() and any(p.name != MARKER for p in out.iterdir()):
        raise UserError(f"{out} holds files but no meta.json; {fix}")
    check_renamable(out)  # OUT.tmp is renamed onto it at the end; a finished one above needs no rename
    return False


def target_folder(out: Path, shard: Shard | None, sources: list[Path]) -> Path:
    """The folder a prepare into `out` writes: `out`, or worker `shard`'s part `OUT.shards/I-of-N`, whose
    parts folder is checked as an output of its own (`outdir.check_output`), as is an `out` that links to
    nothing (the merge would refuse it)."""
    if shard is None:
        return out
    if out.is_symlink() and not out.exists():
        # a link to a folder not made yet stands for nothing (`atomic.folder_named`): the parts went beside
        # the link, not onto the storage it names, and `data merge` then refused the link; refused now
        check_output(out, KIND, sources=sources)
    target = shard_dir(out, shard)
    check_output(target.parent, KIND + " shards", sources=sources)
    return target
