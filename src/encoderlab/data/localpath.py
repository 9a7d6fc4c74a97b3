"""A model or tokenizer name that names nothing, refused offline with its nearest name (`check_source`).

A model or tokenizer argument is a folder, an asset name or a hub id (OWNER/NAME), tried in that order.
A name that can only be a path here (`is_local_only`: absolute, starting with `.` or `~`, or holding a
separator without being OWNER/NAME) and does not exist is a typo in a path: one line names the deepest
folder that exists, what it does not hold and its nearest entry (`runs/mlm holds no 'fina' (final?)`).
A bare NAME that is no folder and no asset is no repo either (the hub's are OWNER/NAME): one line
naming the assets and the nearest name. Neither asks any hub. The model's check
(`model.sources.check_model_source`) and the tokenizer's (`data.tokenizer.tokenizer_folder`) are this one
function; a tokenizer's bare typo (`--tokenizer tokz` beside `toks/`) went to the hub and came back as
a download failure, its path typos as "not of the form OWNER/NAME", without the name meant.

Trade-off: OWNER/NAME is a relative path and a hub id at once. It passes (the caller looks for it here
first, then in the mirror or on the hub, whose refusal names the folder too: `hub.no_folder`), even
where OWNER is a folder here: a working folder holding `someone/tok` must not stop `someone/enc` from
being read from its mirror. A typo there (`runs/my-rnu` beside `runs/my-run`) thus still asks the hub.
Legacy bare hub ids (`bert-base-uncased`) are refused as a model's always were; their OWNER/NAME form
(`google-bert/bert-base-uncased`) is read.
A revision pinned as OWNER/NAME@REV that no hub revision can be (`@`, `@a..b`) is named as such, not as a
missing path.
"""

from __future__ import annotations

import os
from pathlib import Path

from encoderlab.data.hubmodels import bad_revision, is_hub_id
from encoderlab.errors import UserError, closest


def is_local_only(name: str) -> bool:
    """Whether `name` can only be a path here, never an asset name or a hub id: absolute, starting with
    `.` or `~`, or holding a separator without being OWNER/NAME."""
    path = Path(name).expanduser()
    shaped = name.startswith((".", "~")) or path.is_absolute() or "\\" in name or os.sep in name
    return shaped and not is_hub_id(name)


def check_source(name: str, what: str, fix: str, base: Path | None = None) -> None:
    """Refuse `name` (`what`: "model source", "tokenizer") when it is no existing path, asset name or hub
    id, reading nothing (the module docstring); `fix` ends a path's line. `base`: the folder a relative
    name is read from (a study file's), named in the line; else the working folder."""
    from encoderlab.data import assets  # lazy: the asset registry imports the data stack

    path = Path(name).expanduser()
    if path.exists() or path.is_symlink() or name in assets.ASSETS or is_hub_id(name):
        return
    if (revision := bad_revision(name)) is not None:
        raise UserError(
            f"{what} '{name}' pins the revision '{revision}', which no hub revision can be; after the @ put a "
            "commit sha, branch or tag of the repo (e.g. @main, or the 40-hex sha of a commit)"
        )
    if is_local_only(name):
        _refuse_missing_path((base or Path(".")) / path, name, what, fix)
    near = _nearest(name, base or Path("."), list(assets.ASSETS))
    where = f" in {base}" if base is not None else ""
    raise UserError(
        f"{what} '{name}'{near} is not a folder{where}, an asset ({', '.join(sorted(assets.ASSETS))}) or a hub "
        "id (org/name); pass one of these"
    )


def _refuse_missing_path(path: Path, name: str, what: str, fix: str) -> None:
    parent = next(p for p in path.parents if p.is_dir())  # "." or the root at worst
    missing = path.parts[len(parent.parts)]  # the first part that is not there
    raise UserError(
        f"{what} '{name}' does not exist: {parent if parent.parts else Path.cwd()} holds no {missing!r}"
        f"{_nearest(missing, parent)}; {fix}"
    )


def _nearest(name: str, folder: Path, also: list[str] | None = None) -> str:
    """` (NEAR?)`: the entry of `folder` (or of `also`) `name` is likeliest a typo of; "" for none."""
    try:
        entries = [p.name for p in folder.iterdir()]
    except OSError:  # a folder that cannot be listed: no suggestion, the line still says what is wrong
        entries = []
    near = closest(name, [*entries, *(also or [])])
    return f" ({near}?)" if near else ""
