"""A hub revision pinned on a mirror, checked against the mirror's own download records: a corpus's
(`#hf_revision=SHA` on `ENCODERLAB_HUB_DATA`) and a model's or tokenizer's (`OWNER/NAME@SHA` on
`ENCODERLAB_HUB_MODELS`: `data/hubmodels.py`).

A mirror folder has no revisions, but one written by `hf download --repo-type dataset ID --revision REV
--local-dir DIR` records, for each file PATH it downloaded, `DIR/.cache/huggingface/download/PATH.metadata`:
three lines, the commit sha the file was downloaded at (the hub's `X-Repo-Commit` header: a sha even when
REV is a branch or tag), its etag, and the time the record was written. That is huggingface_hub's
local-folder layout (`huggingface_hub/_local_folder.py`: `get_local_download_paths`,
`write_download_metadata`, verified in huggingface_hub 2.4.0), whose own reader (`read_download_metadata`)
trusts a record only while the file's mtime is at most 1 s past that time: a file edited since is not
what was downloaded. The same rule is used here.

A pin on a mirror is accepted when the dataset card (`README.md`, which lists the split's files) and every
data file of the split (for a model: every config, weight and tokenizer file a load reads) have such a
record naming that commit, unedited since; then the mirror is read as
it is (no revision is passed to `datasets` for a folder) and the identity records the commit. Anything else
is one line: a branch or tag (the records name commits only; resolving one needs the hub), a file without a
record (copied, or downloaded without `--local-dir`), one edited since, or one of another commit. Trade-off:
one small read and a stat per file of the split on each resolution, no hashing (a rerun checks the bytes
read by their sha256 anyway: `data/freshness.py`).

A mirror read unpinned is checked the same way when it is read (`verified_commit`), and the commit its
records verify then is kept in meta.json (the source's `mirror_commit`: `data/sources.py`), so a merge of
its parts with parts pinned to that commit, or a study's corpus pinned to it, needs no mirror later.
"""

from __future__ import annotations

from pathlib import Path

from encoderlab.errors import UserError

RECORDS = Path(".cache") / "huggingface" / "download"
"""Where `hf download --local-dir DIR` keeps its per-file records, under DIR."""


def mirror_files(folder: Path) -> list[str]:
    """The repo paths of every file of the mirror `folder`, sorted, its download records (`RECORDS`) aside."""
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and RECORDS.parts[0] not in p.relative_to(folder).parts[:1]
    )


def recorded_commit(folder: Path, path: str) -> tuple[str | None, str]:
    """(the commit sha `folder`'s download record names for its repo file `path`, "") when the file is
    unedited since; else (None, why not, in words)."""
    record = folder / RECORDS / f"{path}.metadata"
    try:
        lines = record.read_text(encoding="utf-8").splitlines()
        commit, written = lines[0].strip(), float(lines[2].strip())
        mtime = (folder / path).stat().st_mtime
    except FileNotFoundError:
        return None, f"has no download record ({RECORDS / path}.metadata)"
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return None, f"has an unreadable download record ({RECORDS / path}.metadata)"
    if mtime - 1 > written:  # huggingface_hub's rule: a file modified after its download
        return None, "was modified after it was downloaded"
    return commit, ""


def _where(hub_id: str, folder: Path, pin: str, env: str, kind: str) -> str:
    named = f"{hub_id}@{pin}" if kind == "model" else f"hf:{hub_id}#hf_revision={pin}"
    return f"{named}: {env} mirrors {hub_id} in {folder}"


def _drop(pin: str, kind: str) -> str:
    """How a source drops its pin, in the words of its kind (a model's `@REV`, a corpus's option)."""
    return f"drop @{pin}" if kind == "model" else "drop hf_revision"


def _pin(hub_id: str, commit: str, kind: str) -> str:
    return f"{hub_id}@{commit}" if kind == "model" else f"hf_revision={commit}"


def refuse_branch_pin(hub_id: str, folder: Path, pin: str, env: str, kind: str = "dataset") -> None:
    """One line for a pin `pin` of the mirror `folder` of `hub_id` (set by the variable `env`; `kind`:
    "dataset" or "model", which shapes how the pin is named) that is no full commit sha: the records
    name commits only (checked before the mirror's card is read)."""
    from encoderlab.data.hub import is_commit

    if not is_commit(pin):
        raise UserError(
            f"{_where(hub_id, folder, pin, env, kind)}, whose download records name commits, not branches or "
            f"tags; pin the 40-hex commit sha the mirror was downloaded at (the first line of {folder / RECORDS}/"
            f"*.metadata), or {_drop(pin, kind)} to read the mirror as it is"
        )


def check_mirror_pin(
    hub_id: str, folder: Path, paths: list[str], pin: str, env: str, kind: str = "dataset"
) -> None:
    """Refuse, with one line, a pin `pin` (a commit sha: `refuse_branch_pin`) of the mirror `folder` of
    `hub_id` (set by the variable `env`) unless the files `paths` (repo paths) it reads were downloaded
    at that commit and not edited since (module docstring): a dataset's card and the data files of its
    split, a model's configs, weights and tokenizer files (`kind`: "dataset" or "model")."""
    where = _where(hub_id, folder, pin, env, kind)
    from encoderlab.data.hub import hf_download

    again = f"{hf_download(hub_id, kind, pin)} --local-dir {folder}"
    drop = f"(or {_drop(pin, kind)} to read the mirror as it is)"
    card = ["README.md"] if kind == "dataset" and (folder / "README.md").is_file() else []
    for path in card + paths:
        commit, why = recorded_commit(folder, path)
        if commit is None:
            raise UserError(
                f"{where}, and its {path} {why}, so the pin cannot be checked; download it again with: {again} "
                f"{drop}"
            )
        if commit != pin:
            raise UserError(
                f"{where}, and its {path} was downloaded at commit {commit}, not {pin}; download it at {pin} "
                f"with: {again} (or pin {_pin(hub_id, commit, kind)} if that commit is the one meant)"
            )


def read_unpinned(ident) -> bool:
    """Whether a hub source's recorded identity is that of a mirror read unpinned (revision `local`)."""
    return (
        isinstance(ident, dict) and ident.get("revision") == "local" and isinstance(ident.get("mirror"), str)
    )


def verified_commit(ident: dict) -> str | None:
    """The commit a hub source read unpinned from a mirror (`read_unpinned`) holds: the one its download
    records name for its card and every data file it lists, none edited since (`check_mirror_pin`, what a
    prepare pinned to that commit checks; a stat and a small read per file, no network). None when the
    records are missing, edited or name several commits, or the mirror is not on this machine."""
    from encoderlab.data.hub import HUB_DATA_ENV

    mirror, hub_id, files = ident.get("mirror"), ident.get("hub_id"), ident.get("files")
    files = files if isinstance(files, list) else []
    if not (isinstance(mirror, str) and isinstance(hub_id, str) and all(isinstance(f, str) for f in files)):
        return None
    return mirror_commit(hub_id, Path(mirror), files, HUB_DATA_ENV)


def mirror_commit(hub_id: str, folder: Path, paths: list[str], env: str, kind: str = "dataset") -> str | None:
    """The one commit the download records of the mirror `folder` name for `paths` (a dataset's card
    too), none edited since: the pin `check_mirror_pin` would accept. None otherwise (a stat and a small
    read per file, no network)."""
    from encoderlab.data.hub import is_commit

    card = kind == "dataset" and (folder / "README.md").is_file()
    first = "README.md" if card else (paths or [None])[0]
    commit = recorded_commit(folder, first)[0] if first else None
    if not (commit and is_commit(commit)):
        return None
    try:
        check_mirror_pin(hub_id, folder, paths, commit, env, kind)
    except UserError:  # not verified: a pin of it would be refused
        return None
    return commit
