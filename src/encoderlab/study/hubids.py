"""A study's start models and tokenizers named OWNER/NAME: hub ids, or relative paths of that shape.

Such a name is a relative path too, looked for in the working folder before the hub (`load_pretrained`).
Which it means depends on where the study came from:

- a study file: its relative paths are made absolute beside it (`files._with_paths`), so an OWNER/NAME
  it still holds is a hub id;
- a built-in study (`catalog.get_study`) or a study folder's record (`data.read_study`): hub ids only
  (`StudySpec.names_hub_ids`), so a working folder holding a path of that name is refused
  (`check_shadowed_hub_ids`): the nodes would load it in the hub model's place, silently;
- a study built in Python: its relative paths are the working folder's, as every other encoderlab call
  reads them, so `run_study` makes the ones found there absolute before the study is keyed or recorded
  (`pin_local_starts`), and its record holds them as the paths they were.

`check_hub_ids` asks a mirror, the local hub cache or the hub for each hub id a node still to run reads;
`study run` then reads a start model's positions from its configs (`study.positions`: from the local hub
cache, or downloaded, never its weights), `study plan` from a mirror or the cache only.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from encoderlab.errors import UserError
from encoderlab.study.spec import StudySpec


def check_hub_ids(spec: StudySpec, fetched: bool = True, unread: frozenset[str] = frozenset()) -> None:
    """Refuse a start model or tokenizer named by a hub id (OWNER/NAME) that is no folder beside the study
    file (where its relative paths are read from: `files._with_paths`) and that no mirror, nor the local
    hub cache, nor the hub (asked once) has (`hubmodels.check_model_repo`), naming that folder, before anything
    runs, for `study plan` too: the node found it when its turn came, after the study folder was made,
    and named the working folder as the one the id was not (its `load_pretrained` looks there).
    `study plan` (`fetched=False`) asks no hub, as for corpora: with no model mirror it leaves them to
    the run (a plan is made on a login node without the hub, of models the run will download).
    The ids in `unread` are not checked: no node still to run reads them (`reads.unread_inputs`), so a
    resumed study whose nodes reading an id all finished needs no hub for it."""
    import os

    from encoderlab.data.hub import HUB_MODELS_ENV
    from encoderlab.data.hubmodels import check_model_repo

    if not fetched and not os.environ.get(HUB_MODELS_ENV):
        return

    ids: dict[str, tuple[str, str]] = {}  # each id once, as the first run or dataset naming it
    for location, where, what in start_ids(spec):
        ids.setdefault(location, (where, what))
    base = spec_folder(spec)
    for location, (where, what) in ids.items():
        if not reads_hub(spec, location):
            continue  # a folder beside the study file (one in the working folder: `check_shadowed_hub_ids`)
        if location in unread:
            continue  # every node reading it finished: its result is kept, the id is not read again
        try:
            check_model_repo(location, what, base)
        except UserError as exc:
            raise UserError(f"study {spec.name}, {where}: {exc}") from None


def uncached_start_notes(spec: StudySpec, unread: frozenset[str] = frozenset()) -> list[str]:
    """`study plan`'s note on each start model and tokenizer read as a hub id (`reads_hub`) that a node still
    to run reads (not in `unread`) and that the local hub cache does not hold, one line per id and kind: the
    plan asks no hub (`check_hub_ids`), so a typo of a folder beside the study file (`models/mine` for
    `models/mines`) passed the plan silently and only `study run` refused it. The line says that the run
    downloads it (or, offline, refuses it) and names a folder beside the study file close to it
    (`errors.closest`). With a model mirror set there is no note: the plan checked the mirror."""
    from encoderlab.data.hub import mirror_root
    from encoderlab.data.hubmodels import cached_snapshot, load_globs
    from encoderlab.words import noun

    if mirror_root("model") is not None:
        return []
    readers: dict[tuple[str, str], list[str]] = {}  # (id, "model" or "tokenizer") -> the runs or datasets
    named = [(d.tokenizer, "tokenizer", d.name) for d in spec.data]
    named += [(r.init, "model", r.name) for r in spec.runs if r.init]  # as `start_ids`, with their names
    for location, what, name in named:
        if location not in unread and reads_hub(spec, location):
            readers.setdefault((location, what), []).append(name)
    notes = []
    for (location, what), names in readers.items():
        if cached_snapshot(location, load_globs(what)) is not None:  # a tokenizer's snapshot has no weights
            continue
        n, listed = len(names), ", ".join(names)
        if what == "model":
            subject = f"{noun(n, 'run')} {listed} {noun(n, 'starts', 'start')} from '{location}'"
        else:
            subject = f"{noun(n, 'dataset')} {listed} {noun(n, 'reads', 'read')} tokenizer '{location}'"
        notes.append(
            f"note: {subject}, taken as a hub id the local hub cache does not hold: `study run` downloads it "
            f"(or, offline, refuses it){_near_folder(spec, location)}"
        )
    return notes


def _near_folder(spec: StudySpec, location: str) -> str:
    """For a note on hub id `location`: the folder beside the study file it is not, and one of a near name
    there (a typo of it); "" for a study not read from a file."""
    from encoderlab.data.hubmodels import split_revision
    from encoderlab.errors import closest

    base = spec_folder(spec)
    if base is None:
        return ""
    repo = split_revision(location)[0]
    near = closest(repo, _folders_beside(base))
    return f"; no folder {base / repo} is beside the study file" + (
        f" (did you mean {base / near}?)" if near else ""
    )


def _folders_beside(base: Path) -> list[str]:
    """The folders OWNER/NAME two levels below `base` (hidden ones left out), as a start model names them."""

    def folders(path: Path) -> list[Path]:
        try:
            return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
        except OSError:  # unreadable: nothing to suggest from it
            return []

    return [f"{a.name}/{b.name}" for a in folders(base) for b in folders(a)]


def check_shadowed_hub_ids(
    spec: StudySpec, study_dir: Path | None, unread: frozenset[str] = frozenset()
) -> None:
    """Refuse a study whose start models and tokenizers are hub ids (`spec.names_hub_ids`: a built-in, or
    a study folder's record) where one (OWNER/NAME) also names a path in the working folder: its nodes'
    `load_pretrained` would load that path in the hub model's place, silently. A study file's relative
    paths are made absolute beside it (`files._Paths._not_from_cwd` refuses one found in the working
    folder instead), and a study built in Python reads its own from the working folder (`pin_local_starts`),
    so a record holds such an id only as a hub id, and a built-in names only hub ids: resuming `study_dir`
    (it holds study.json), the first run read the hub; a built-in's first run would read the path,
    which is ambiguous, so it is refused too. Keys and records are unchanged. An id in `unread` (no node
    still to run reads it: `reads.unread_inputs`) is not refused: no node would load the path.

    A study built in Python before 2026-12-04 (before `pin_local_starts`) recorded its working folder's
    OWNER/NAME folder as it was written, relative, which its record cannot tell from a hub id: the
    refusal of a resume names that case and its fix (its script, run again, names the folder by its
    absolute path: the nodes reading it get new keys and run again). Read as that folder, the record's
    unfinished nodes would keep their keys, but a record of a hub id the working folder now shadows
    would too, silently: the case the refusal is for."""
    if not spec.names_hub_ids:
        return
    record = None if study_dir is None else Path(study_dir) / "study.json"
    resumed = record is not None and record.is_file()
    for location, where, what in _shadowing(spec):
        if location in unread:
            continue  # every node reading it finished: nothing loads the path in its place
        named = f"in {record}" if resumed else "(a built-in study names no relative paths)"
        fix = "resume the study" if resumed else "run the study"
        legacy = (
            f"; if a study built in Python before 2026-12-04 wrote {study_dir}, '{location}' was that folder: "
            "run its script again instead, which names the folder by its absolute path (the nodes reading it "
            "run again)"
        )
        raise UserError(
            f"study {spec.name}, {where}: {what} '{location}' is a hub id {named}, but the working folder "
            f"holds {Path.cwd() / location}, which the study's nodes would load in its place; {fix} from "
            f"another working folder (or move that one away){legacy if resumed else ''}"
        )


def pin_local_starts(spec: StudySpec) -> StudySpec:
    """A study built in Python (neither read from a file nor `names_hub_ids`) with each start model and
    tokenizer OWNER/NAME that names a path in the working folder made that path, absolute: what its
    nodes load (`load_pretrained` reads the working folder first) and what its record then says, so a
    resume of its folder reads it as the path, not as a hub id the working folder shadows. Any other
    spec is returned as it is."""
    if spec.folder is not None or spec.names_hub_ids:
        return spec
    local = {location for location, _, _ in _shadowing(spec)}
    if not local:
        return spec

    def pinned(location: str) -> str:
        return str((Path.cwd() / location).resolve()) if location in local else location

    return dataclasses.replace(
        spec,
        data=tuple(dataclasses.replace(d, tokenizer=pinned(d.tokenizer)) for d in spec.data),
        runs=tuple(dataclasses.replace(r, init=pinned(r.init)) if r.init else r for r in spec.runs),
    )


def _shadowing(spec: StudySpec) -> list[tuple[str, str, str]]:
    """The `start_ids` of `spec` that are hub ids and also name a path in the working folder."""
    from encoderlab.data.hubmodels import is_hub_id

    names = {r.name for r in spec.runs} | {d.name for d in spec.data}
    return [
        (location, where, what)
        for location, where, what in start_ids(spec)
        if location not in names and is_hub_id(location) and Path(location).exists()
    ]


def start_ids(spec: StudySpec) -> list[tuple[str, str, str]]:
    """(location, "dataset D" or "run R", "tokenizer" or "model") of each tokenizer and start model."""
    return [
        *((d.tokenizer, f"dataset {d.name}", "tokenizer") for d in spec.data),
        *((r.init, f"run {r.name}", "model") for r in spec.runs if r.init),
    ]


def reads_hub(spec: StudySpec, location: str) -> bool:
    """True when `location` (a tokenizer or start model of `spec`) is read from the hub: a hub id that is
    no asset, run or dataset of the study and, unless `spec.names_hub_ids`, no path where its paths are
    read (`spec_folder`, else the working folder).

    A built-in or a study folder's record (`names_hub_ids`) is taken at its word, as `check_shadowed_hub_ids`
    takes it: which OWNER/NAME was a folder was decided when the study ran (`pin_local_starts` recorded
    a Python-built study's as absolute paths), not by the working folder a report is later written from.
    Asking that folder, the report (which reads the record) left out a hub tokenizer or start model whose
    commit no finished node recorded when written from a folder holding a path of its name. Trade-off: a
    record written by a Python-built study before 2026-12-04 holds its working folder's OWNER/NAME folder
    relative, and is read as a hub id from every folder, as a resume reads it (it was read as that folder
    only from the folder it ran in)."""
    from encoderlab.data.assets import ASSETS
    from encoderlab.data.hubmodels import is_hub_id

    names = {*ASSETS} | {r.name for r in spec.runs} | {d.name for d in spec.data}
    if location in names or not is_hub_id(location):
        return False
    return spec.names_hub_ids or not ((spec_folder(spec) or Path.cwd()) / location).exists()


def spec_folder(spec: StudySpec) -> Path | None:
    """The folder of the study's file (where its relative paths were looked for), None when not read
    from one (the working folder, as the nodes' `load_pretrained` reads them)."""
    return Path(spec.folder) if spec.folder is not None else None
