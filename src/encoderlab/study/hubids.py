"""A study's start models and tokenizers named OWNER/NAME: hub ids, or relative paths of that shape.

Such a name is a relative path too, looked for in the working folder before the hub (`load_pretrained`).
`check_shadowed_hub_ids` refuses one a study not read from a file names when the working folder holds
a path of that name; `check_hub_ids` asks a mirror, the local hub cache or the hub for each hub id a
node still to run reads (`unread_hub_ids`: those only finished nodes read are left alone).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from encoderlab.errors import UserError
from encoderlab.study.graph import Node
from encoderlab.study.spec import StudySpec


def check_hub_ids(spec: StudySpec, fetched: bool = True, unread: frozenset[str] = frozenset()) -> None:
    """Refuse a start model or tokenizer named by a hub id (OWNER/NAME) that is no folder beside the study
    file (where its relative paths are read from: `files._with_paths`) and that no mirror, nor the local
    hub cache, nor the hub (asked once) has (`hub.check_model_repo`), naming that folder, before anything
    runs, for `study plan` too: the node found it when its turn came, after the study folder was made,
    and named the working folder as the one the id was not (its `load_pretrained` looks there).
    `study plan` (`fetched=False`) asks no hub, as for corpora: with no model mirror it leaves them to
    the run (a plan is made on a login node without the hub, of models the run will download).
    The ids in `unread` are not checked: no node still to run reads them (`unread_hub_ids`), so a resumed
    study whose nodes reading an id all finished needs no hub for it."""
    import os

    from encoderlab.data.assets import ASSETS
    from encoderlab.data.hub import HUB_MODELS_ENV, check_model_repo, is_hub_id

    if not fetched and not os.environ.get(HUB_MODELS_ENV):
        return

    names = {*ASSETS} | {r.name for r in spec.runs} | {d.name for d in spec.data}
    ids: dict[str, tuple[str, str]] = {}  # each id once, as the first run or dataset naming it
    for location, where, what in start_ids(spec):
        ids.setdefault(location, (where, what))
    base = spec_folder(spec)
    for location, (where, what) in ids.items():
        if location in names or not is_hub_id(location) or ((base or Path.cwd()) / location).exists():
            continue  # a folder beside the study file (one in the working folder: `check_shadowed_hub_ids`)
        if location in unread:
            continue  # every node reading it finished: its result is kept, the id is not read again
        try:
            check_model_repo(location, what, base)
        except UserError as exc:
            raise UserError(f"study {spec.name}, {where}: {exc}") from None


def unread_hub_ids(spec: StudySpec, study_dir: Path | None, nodes: Iterable[Node]) -> frozenset[str]:
    """The start model and tokenizer hub ids of `spec` that no node of its graph (`nodes`) still to run
    in `study_dir` reads: those every node reading them finished (no node config of one still to run,
    a pretraining node's start model, a prepare node's tokenizer, an as-is model's evaluation or CKA,
    holds it). The start checks leave them alone (`check_hub_ids`, `checks.check_sources`): resuming a
    finished study offline needs no hub for them. Empty without a graph or a study folder."""
    from encoderlab.data.hub import is_hub_id
    from encoderlab.study.runner import read_marker

    nodes = list(nodes)
    if not nodes or study_dir is None:
        return frozenset()
    todo = [n for n in nodes if read_marker(Path(study_dir), n) is None]
    out: set[str] = set()

    def walk(value) -> None:
        if isinstance(value, str):
            out.add(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list | tuple):
            for v in value:
                walk(v)

    for node in todo:
        walk(node.config)
    return frozenset(loc for loc, _, _ in start_ids(spec) if is_hub_id(loc) and loc not in out)


def check_shadowed_hub_ids(spec: StudySpec, study_dir: Path | None) -> None:
    """Refuse a study not read from a file (a built-in, or a study folder's record: `spec.folder` is None)
    whose start model or tokenizer hub id (OWNER/NAME) also names a path in the working folder: its nodes'
    `load_pretrained` would load that path in the hub model's place, silently. A study file's relative
    paths are made absolute beside it (`files._Paths._not_from_cwd` refuses one found in the working
    folder instead), so its record holds such an id only as a hub id, and a built-in names only hub ids:
    resuming `study_dir` (it holds study.json), the first run read the hub; a first run would read the
    path, which is ambiguous, so it is refused too. Keys and records are unchanged."""
    from encoderlab.data.hub import is_hub_id

    if spec.folder is not None:
        return
    record = None if study_dir is None else Path(study_dir) / "study.json"
    resumed = record is not None and record.is_file()
    names = {r.name for r in spec.runs} | {d.name for d in spec.data}
    for location, where, what in start_ids(spec):
        if location not in names and is_hub_id(location) and Path(location).exists():
            named = (
                f"in {record}" if resumed else "(a study not read from a study file names no relative paths)"
            )
            fix = "resume the study" if resumed else "run the study"
            raise UserError(
                f"study {spec.name}, {where}: {what} '{location}' is a hub id {named}, but the working folder "
                f"holds {Path.cwd() / location}, which the study's nodes would load in its place; {fix} from "
                "another working folder (or move that one away)"
            )


def start_ids(spec: StudySpec) -> list[tuple[str, str, str]]:
    """(location, "dataset D" or "run R", "tokenizer" or "model") of each tokenizer and start model."""
    return [
        *((d.tokenizer, f"dataset {d.name}", "tokenizer") for d in spec.data),
        *((r.init, f"run {r.name}", "model") for r in spec.runs if r.init),
    ]


def spec_folder(spec: StudySpec) -> Path | None:
    """The folder of the study's file (where its relative paths were looked for), None when not read
    from one (the working folder, as the nodes' `load_pretrained` reads them)."""
    return Path(spec.folder) if spec.folder is not None else None
