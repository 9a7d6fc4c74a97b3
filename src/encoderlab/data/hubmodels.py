"""Model and tokenizer repos on the hub, named `OWNER/NAME` or pinned as `OWNER/NAME@REVISION`.

A model or tokenizer source that is no folder and no asset is a hub id (`is_hub_id`). This module is the
one place that finds its files: the mirror under `ENCODERLAB_HUB_MODELS` (`model_mirror`), the local hub
cache (`cached_snapshot`) or a download (`download_model_repo`, the one call that downloads a model repo).
The generic pieces (mirror roots, the hub asked once, its failures as one line) are `data/hub.py`'s.

A revision is pinned with `@`, as the hub's own file system names one (`hf://OWNER/NAME@REV/...`) and
`hf download --revision REV` takes it: a commit sha, a branch, a tag or `refs/pr/N`. Unpinned, the repo
is read at its default branch as it is now, which a later push changes under the same name; pinned to a
commit, the name is one set of weights, and a study keys its nodes by it (a pinned and an unpinned
start are two runs). Where the pin is honoured:
  * a download and the local hub cache: `snapshot_download(..., revision=REV)` (the cache keeps each
    commit's snapshot and each branch's or tag's ref, so an offline load finds the one pinned);
  * a mirror: it has no revisions, so the pin must be a commit and is checked against the records
    `hf download --revision SHA --local-dir DIR` leaves for every file a load reads (`data/mirrorpin.py`,
    the check corpora get for `#hf_revision`); a branch, or a file of another commit, is one line.
Trade-off: `@` cannot begin a repo name on the hub, so OWNER/NAME@REV is never a repo; a folder of that
name in the working folder is still read first, as every OWNER/NAME is (`data/localpath.py`).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from encoderlab.data.hub import (
    HUB_MODELS_ENV,
    hf_download,
    hub_failure,
    hub_offline,
    incomplete_snapshot_error,
    is_commit,
    is_revision,
    mirror_location,
    mirror_root,
    no_folder,
    no_revision,
    probe_hub,
    quiet_hub,
    reach_hub,
    refetch_fix,
    well_formed_hub_id,
)
from encoderlab.data.hubdown import note_cached_read, unreachable
from encoderlab.data.mirrorpin import check_mirror_pin, mirror_commit, mirror_files, refuse_branch_pin
from encoderlab.errors import UserError, first_line

MODEL_FILES = ("*.json", "*.safetensors", "*.txt", "*.model")
"""What a model download fetches: configs, safetensors weights and tokenizer files (no pickle, no code)."""
TOKENIZER_GLOBS = ("*.json", "*.txt", "*.model")
"""What a tokenizer download fetches: its files and the model config, not the weights."""
DOWNLOAD_FIX = "check the path, or the network, or set HF_HUB_OFFLINE=1 to use the local hub cache"
"""The fix of a model repo the hub could not give (`download_model_repo`, `check_model_repo`)."""


def load_globs(what: str) -> tuple[str, ...]:
    """The glob patterns of the files a load of a model repo as `what` reads ("model": `MODEL_FILES`,
    "tokenizer": `TOKENIZER_GLOBS`), on which a cached snapshot of it is judged (huggingface_hub 2.4 caches
    the repo's whole file list, and a snapshot lacking files of `MODEL_FILES` it names is no model's).
    Patterns of a repo, not the files of a model folder: those are `model.readfiles.read_files`."""
    return TOKENIZER_GLOBS if what == "tokenizer" else MODEL_FILES


def split_revision(name: str) -> tuple[str, str | None]:
    """(OWNER/NAME, REV) of `OWNER/NAME@REV`; (name, None) when no revision is pinned."""
    repo, at, revision = name.partition("@")
    return (repo, revision) if at else (name, None)


def is_hub_id(name: str) -> bool:
    """True when `name` has the form OWNER/NAME of a hub repo, or OWNER/NAME@REV with a revision the hub
    could hold (what callers try after folders and assets; a bare NAME is an asset or a typo there, never
    a repo)."""
    repo, revision = split_revision(name)
    return "/" in repo and well_formed_hub_id(repo) and (revision is None or is_revision(revision))


def bad_revision(name: str) -> str | None:
    """The revision of `name` when it is OWNER/NAME@REV with a REV no hub revision can be, else None."""
    repo, revision = split_revision(name)
    if revision is None or is_hub_id(name) or not is_hub_id(repo):
        return None
    return revision


def model_location(hub_id: str, base: Path | None = None) -> str:
    """What to pass to `from_pretrained` for the model repo `hub_id` (a model or a tokenizer, pinned or
    not; `base`: see `no_folder`): its mirror folder, its pin checked (module docstring), or the id."""
    repo, revision = split_revision(hub_id)
    location = mirror_location(repo, "model", revision, base, local=hub_id)
    if location != repo:
        if revision is not None:
            _check_pin(repo, Path(location), revision)
        return location
    return hub_id


def _check_pin(repo: str, folder: Path, revision: str) -> None:
    """Refuse a mirror read at a pin its download records do not name, for every file a load reads."""
    refuse_branch_pin(repo, folder, revision, HUB_MODELS_ENV, "model")
    check_mirror_pin(repo, folder, _mirror_reads(folder), revision, HUB_MODELS_ENV, "model")


def _mirror_reads(folder: Path) -> list[str]:
    """The repo paths of a mirror's files that a load reads (what a download fetches: `MODEL_FILES`)."""
    return [name for name in mirror_files(folder) if any(fnmatch.fnmatch(name, g) for g in MODEL_FILES)]


def resolved_commit(hub_id: str) -> str | None:
    """The commit a load of `hub_id` reads now, told without the network: its pin when that is a commit;
    else a mirror's, when its download records name one commit for every file a load reads (`_check_pin`
    would accept it); else the commit of the hub cache snapshot it resolves to (a snapshot folder is named
    by its commit, whatever files of the repo it lacks: a tokenizer's download has no weights). None when
    nothing tells it (a mirror without records, nothing cached)."""
    repo, revision = split_revision(hub_id)
    if revision is not None and is_commit(revision):
        return revision
    folder = mirror_folder(hub_id)
    if folder is not None:  # no record, an edited file, or files of two downloads: no one commit
        return mirror_commit(repo, folder, _mirror_reads(folder), HUB_MODELS_ENV, "model")
    # not `cached_snapshot`, which refuses a snapshot lacking a model's files: a tokenizer's was recorded null
    cached = None if mirror_root("model") is not None else _cached(hub_id, MODEL_FILES)
    return cached.folder.name if cached is not None and is_commit(cached.folder.name) else None


def hub_read(name: str) -> dict[str, str | None]:
    """`{"hub_id": name, "commit": ...}` of a model or tokenizer `name` read from the hub (no folder, no
    asset, a hub id): the commit a load reads now (`resolved_commit`, null when nothing tells it), asked
    after the load so it names the files read. Empty for any other name. What outputs record of a hub id
    read unpinned, so a later run can pin that commit (`OWNER/NAME@SHA`) and read the same files:
    a run's and an evaluation's `start_model` (`runlayout.start_model_record`), prepared data's
    `tokenizer` (`data.prepare`)."""
    from encoderlab.data.assets import ASSETS

    if not name or name in ASSETS or Path(name).expanduser().exists() or not is_hub_id(name):
        return {}
    return {"hub_id": name, "commit": resolved_commit(name)}


def model_mirror(
    hub_id: str, what: str = "model", base: Path | None = None, patterns: tuple[str, ...] = MODEL_FILES
) -> Path | None:
    """The mirror folder of the model repo `hub_id` under `ENCODERLAB_HUB_MODELS` (or, when the hub is
    offline, its snapshot in the local hub cache), or None when no mirror root is set and the id is to
    be fetched from the hub (`download_model_repo`); refused with one line when the hub is offline
    (`HF_HUB_OFFLINE`) and neither a mirror nor the cache has it, or the root lacks this repo (each line
    naming the folder `hub_id` is not, in the working folder or `base`: `no_folder`). `patterns`: the
    files the caller reads, which the snapshot must hold (`cached_snapshot`)."""
    location = model_location(hub_id, base)
    if location != hub_id:
        return Path(location)
    if hub_offline():
        cached = cached_snapshot(hub_id, patterns)
        if cached is not None:
            return cached
        raise _offline_refusal(hub_id, what, base)
    return None


def _offline_refusal(hub_id: str, what: str, base: Path | None) -> UserError:
    """`model_mirror`'s line for a hub id neither mirrored nor cached with the hub offline. A pinned one
    names its revision, what the cache holds of the repo and the download of that revision: "pass a local
    folder, or mirror the repo" alone read as if the repo were unknown here, where the cache often holds
    it at another revision (main), which a load never reads in its place."""
    start = f"{what} '{hub_id}' is not a folder or asset, and the hub is offline (HF_HUB_OFFLINE=1)"
    repo, revision = split_revision(hub_id)
    if revision is None:
        return UserError(  # the fix of what the cache lacks, as every such line (it named neither way to fill it)
            f"{start}{no_folder(hub_id, base)}; {refetch_fix(repo)}; or pass a local folder, or mirror the repo "
            f"and set {HUB_MODELS_ENV}"
        )
    held = cached_revisions(repo)
    holds = f"it holds {held_text(held)}" if held else "nor any other"
    other = f"pin one it holds ({repo}@{held[0]})" if held else "pass a local folder"
    return UserError(
        f"{start}, and the local hub cache has no revision '{revision}' of {repo} ({holds})"
        f"{no_folder(hub_id, base)}; download it with the hub online ({hf_download(repo, 'model', revision)}), "
        f"or {other}"
    )


def held_text(held: list[str]) -> str:
    """The revisions a refusal names of those the hub cache holds (`cached_revisions`): the first three,
    then `...` (a repo's refs/pr/N can be many)."""
    return ", ".join(held[:3]) + (", ..." if held[3:] else "")


def cache_storage(repo: str, kind: str = "models") -> Path:
    """The local hub cache's folder of the repo `repo` (`kind`: "models" or "datasets"), as huggingface_hub
    names it (`datasets--OWNER--NAME`), whether or not it exists."""
    from huggingface_hub import constants  # read now: the cache folder is the environment's

    return Path(constants.HF_HUB_CACHE) / f"{kind}--{repo.replace('/', '--')}"


def cached_revisions(repo: str, kind: str = "models") -> list[str]:
    """The revisions of the repo `repo` (`kind`: "models" or "datasets", huggingface_hub's folder prefix)
    the local hub cache holds, no network: its branches and tags (`refs/`, sorted; a parquet export's
    `refs/convert/parquet` as such), then the commits of snapshots no ref names (an offline load reads each
    pinned)."""
    storage = cache_storage(repo, kind)
    refs = storage / "refs"
    named = (
        {p.relative_to(refs).as_posix(): p for p in refs.rglob("*") if p.is_file()} if refs.is_dir() else {}
    )
    targets = {p.read_text(encoding="utf-8", errors="replace").strip() for p in named.values()}
    snapshots = storage / "snapshots"
    commits = sorted(p.name for p in snapshots.iterdir() if p.is_dir()) if snapshots.is_dir() else []
    return sorted(named) + [c for c in commits if c not in targets]


def download_model_repo(
    hub_id: str, what: str = "model", patterns: tuple[str, ...] = MODEL_FILES, commit: str | None = None
) -> Path:
    """The local folder of the model repo `hub_id` (`what`: "model" or "tokenizer"; at its pinned
    revision, if any), its `patterns` fetched by `snapshot_download` (the local hub cache when the hub
    cannot be reached and the cache has it), or one line saying what failed and the fix. `commit`: the
    commit of the revision a cached snapshot holds (`check_files`), read in its place."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import RevisionNotFoundError

    repo, revision = split_revision(hub_id)
    cached = _read_without_download(hub_id, what, patterns, commit)
    if isinstance(cached, Path):
        return cached
    if cached is not None and unreachable(cached):  # nothing cached to read in its place
        if timed_out(cached):  # a silent hub: say how long it was given
            raise unanswered_download(hub_id, what, cached, no_folder(hub_id))
        raise hub_failure(hub_id, what, cached, DOWNLOAD_FIX, no_folder(hub_id))
    with quiet_hub():
        try:
            return Path(snapshot_download(repo, revision=commit or revision, allow_patterns=list(patterns)))
        except RevisionNotFoundError:
            raise no_revision(repo, revision, what, "model") from None
        except Exception as exc:  # the hub raises many types; each ends in one line for the user
            raise hub_failure(hub_id, what, exc, DOWNLOAD_FIX, no_folder(hub_id)) from None


def _read_without_download(
    hub_id: str, what: str, patterns: tuple[str, ...], commit: str | None
) -> Path | Exception | None:
    """`download_model_repo`'s folder when the hub need not or cannot give more: the local hub cache's
    snapshot holding `patterns`, where the hub names that commit for the revision, or does not answer
    (then said once, in one line naming the commit). What the one request raised where the hub did not
    answer it and nothing complete is cached (`download_model_repo` refuses in one line); None where
    `snapshot_download` is to run: the hub answered (a newer commit there, nothing cached, or its refusal of
    the repo or revision, which the download's own line gives), the library offline (HF_HUB_OFFLINE) or a
    commit pinned whose snapshot is cached (read with no request).

    Why: `snapshot_download` asks the hub with no timeout, so a hub that accepts the connection and never
    answers held a fully cached load forever, and one resetting it (`ReadError`, which the library does not
    read as "offline") refused it; and it read the cache silently, so a run could not tell it read an older
    commit than the hub's. Asked here once (`probe_hub`, within `HF_HUB_ETAG_TIMEOUT`). Trade-offs: each
    load asks the hub once even where an earlier load in the process found it down (a hub back up is then
    read again); where the download follows (a cache behind the hub's commit, nothing cached, a commit pin
    not cached) `repo_info` is asked twice, here then by `snapshot_download` (a commit pin: once, where it
    asked none), as `snapshot_download` takes no timeout for it and `list_repo_tree` none at all
    (huggingface_hub 2.4 `_snapshot_download.py`): asked first within the timeout, a hub that accepts the
    connection and never answers is one line, where it held a download with nothing cached forever."""
    from huggingface_hub import constants

    repo, revision = split_revision(hub_id)
    pinned = commit or revision
    if constants.HF_HUB_OFFLINE:
        return None  # the library reads its cache asking nothing
    found = _cached(f"{repo}@{pinned}" if pinned else repo, patterns)
    if found is not None and pinned is not None and is_commit(pinned):
        return None  # a commit's snapshot: the library reads it asking nothing
    answer = probe_hub(repo, "model", pinned)
    if found is None or not found.listed:  # nothing to read in the hub's place
        return answer if isinstance(answer, Exception) and unreachable(answer) else None
    if isinstance(answer, str):
        return found.folder if found.folder.name == answer else None
    if not unreachable(answer):
        return None  # not there, gated, no such revision: snapshot_download's own refusal stands
    note_cached_read(what, "model", hub_id, answer, found.folder.name)  # a tokenizer's repo is a model repo
    return found.folder


def timed_out(exc: Exception) -> bool:
    """True when the client gave up waiting (httpx's or requests' timeout types), not when the hub refused
    or reset the connection: only then does `unanswered_download` name HF_HUB_ETAG_TIMEOUT; a refused or
    reset connection keeps `hub_failure`'s line, as before the bounded probe."""
    return "Timeout" in type(exc).__name__


def unanswered_download(hub_id: str, what: str, exc: Exception, here: str = "") -> UserError:
    """One line for a download the hub did not answer (`unreachable`) with no copy cached: the hub's URL
    (HF_ENDPOINT's), the client's error, and the fixes. Was `snapshot_download`'s wait without limit on a
    hub that accepts the connection and never answers (`repo_info`, `list_repo_tree`: no timeout). `here`:
    `no_folder`'s clause, for an id that was a local path too."""
    from huggingface_hub import constants

    cause = f"{type(exc).__name__}: {first_line(exc)}"
    return UserError(
        f"cannot download {what} '{hub_id}': the Hugging Face hub at {constants.ENDPOINT} did not answer "
        f"within HF_HUB_ETAG_TIMEOUT={constants.HF_HUB_ETAG_TIMEOUT} s ({cause}){here}, and the local hub cache "
        "holds no complete copy of it; check HF_ENDPOINT and the network, or set HF_HUB_OFFLINE=1 to read "
        "a copy cached before"
    )


def check_model_repo(hub_id: str, what: str = "model", base: Path | None = None) -> None:
    """Refuse, downloading nothing, the model repo `hub_id` (`what`: "model" or "tokenizer") that
    `model_mirror` refuses or `download_model_repo` could not fetch: no mirror of it, or neither in the
    local hub cache nor on the hub, asked once (`reach_hub`, at the pinned revision; never with the hub
    offline), each in the line of the call that refuses it, naming the folder `hub_id` is not in `base`
    (`no_folder`). A study checks its hub ids so before anything runs (`study.checks.check_hub_ids`). The
    local hub cache's snapshot is judged on the files `what` reads (`load_globs`): a tokenizer's download
    fetches no weights."""
    patterns = load_globs(what)
    if (
        model_mirror(hub_id, what, base, patterns) is not None
        or cached_snapshot(hub_id, patterns) is not None
    ):
        return
    repo, revision = split_revision(hub_id)
    reach_hub(repo, "model", what, DOWNLOAD_FIX, revision=revision, here=no_folder(hub_id, base))


def cached_snapshot(hub_id: str, patterns: tuple[str, ...] = MODEL_FILES) -> Path | None:
    """The local hub cache's snapshot of the model repo `hub_id` (at its pinned revision: a commit's
    snapshot, or the one a cached branch or tag ref names), if it has one holding the repo's files of
    `patterns` (no network): what an offline load reads (`model_mirror`; `MODEL_FILES`), and a study a
    start model's positions from (`model.sources.max_positions`; `TOKENIZER_GLOBS`). None where it holds
    none, or lacks a file of `patterns` that the repo's cached file list names (`CachedSnapshot`)."""
    found = _cached(hub_id, patterns)
    return found.folder if found is not None and found.listed is not False else None


@dataclass(frozen=True)
class CachedSnapshot:
    """A snapshot folder the local hub cache holds of a model repo, and what the repo's file list at its
    commit (trees/COMMIT.json, cached by huggingface_hub >= 2.4's `snapshot_download`) says of it."""

    folder: Path
    """`snapshots/COMMIT`: its name is the commit."""
    listed: bool | None
    """True: it holds every file of the patterns asked that the list names; False: it lacks some; None:
    no list is cached (huggingface_hub < 2.4, or files fetched one by one, as transformers fetches them)."""


def _cached(hub_id: str, patterns: tuple[str, ...]) -> CachedSnapshot | None:
    """`hub_id`'s snapshot in the local hub cache, judged on `patterns` only: `snapshot_download` asked
    for the whole repo refuses a snapshot lacking any file the list names, and every download of
    `MODEL_FILES` lacks at least `.gitattributes` (so a model downloaded with huggingface_hub >= 2.4 was
    refused offline as not cached)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    repo, revision = split_revision(hub_id)
    with quiet_hub():
        try:
            folder = Path(
                snapshot_download(
                    repo, revision=revision, allow_patterns=list(patterns), local_files_only=True
                )
            )
        except incomplete_snapshot_error() as exc:  # a LocalEntryNotFoundError: a snapshot lacking files
            return CachedSnapshot(Path(exc.snapshot_path), listed=False)
        except (LocalEntryNotFoundError, HFValidationError):  # an id the hub refuses is in no cache
            return None
    return CachedSnapshot(folder, listed=_has_file_list(repo, folder.name))


def _has_file_list(repo: str, commit: str) -> bool | None:
    """True when huggingface_hub caches the model repo's file list at `commit` (no network); None when
    it does not, or is too old to (< 2.4: no `get_cached_repo_tree`)."""
    try:
        from huggingface_hub import get_cached_repo_tree
        from huggingface_hub.errors import CachedRepoTreeNotFoundError
    except ImportError:
        return None
    try:
        get_cached_repo_tree(repo, revision=commit)
    except CachedRepoTreeNotFoundError:
        return None
    return True


def check_files(hub_id: str, patterns: tuple[str, ...] = TOKENIZER_GLOBS) -> Path:
    """The folder of the model repo `hub_id`'s `patterns` (its configs and tokenizer, no weights: what
    `eval --check` reads, `model.hub.model_files`), with the hub asked only for what the local hub cache
    lacks. A snapshot the repo's cached file list says holds them is read as it is, the hub not asked; one
    lacking some is completed at its own commit (`snapshot_download` given a commit sha asks no
    `repo_info`, and fetches only the files it lacks); one with no cached list, at its commit too, the hub
    asked for that commit's file list once; nothing cached, downloaded as before (`download_model_repo`).
    Before, every check online was a `snapshot_download` of the branch: the hub asked for its commit, and
    its file list where not cached, however complete the cache was.

    Trade-off: an unpinned id is read at the commit its cached branch ref names, which a push to the hub
    since then has left behind; the run's load (`MODEL_FILES`) asks the hub and reads the branch as it is
    now. A check of what the run reads exactly pins the commit (`OWNER/NAME@SHA`)."""
    found = _cached(hub_id, patterns)
    if found is not None and found.listed:
        return found.folder
    commit = found.folder.name if found is not None else None
    return download_model_repo(hub_id, "model", patterns, commit=commit)


def missing_blob(file: Path) -> UserError | None:
    """The refusal of `file` when it is a link of a local hub cache snapshot
    (`models--OWNER--NAME/snapshots/COMMIT/...`, each file a link to `../../blobs/SHA`) whose blob the
    cache no longer holds (blobs pruned or deleted by hand, a copy of the cache without `blobs/`); None
    for any other file. The load's own advice for a missing file (restore it from a copy, --resume from
    the checkpoint before, re-download the model) does not say how to get a blob back; downloading that
    commit again does: the hub client fetches the blob of every link that points at nothing."""
    if not file.is_symlink() or file.exists():
        return None
    parts = file.absolute().parts  # the link's own path, not its target's: the snapshot names the commit
    for i in range(len(parts) - 3, -1, -1):
        if parts[i].startswith("models--") and parts[i + 1] == "snapshots":
            repo, commit = parts[i].removeprefix("models--").replace("--", "/", 1), parts[i + 2]
            return UserError(
                f"{file} links to a blob the local hub cache no longer holds; download commit {commit} again "
                f"with the hub online (it fetches the missing blobs): {hf_download(repo, 'model', commit)}"
            )
    return None


def missing_tokenizer_blob(folder: Path) -> UserError | None:
    """`missing_blob`'s refusal of the first tokenizer file of `folder` (`TOKENIZER_GLOBS`: tokenizer.json,
    tokenizer_config.json, special_tokens_map.json, vocab files, configs) whose hub cache blob is gone;
    None when there is none. A link to nothing is no file to transformers nor to the tokenizer checks, so
    before, tokenizer.json gone was "copy the tokenizer.json that belongs with it", and
    tokenizer_config.json or every tokenizer file gone loaded silently (without special tokens, or with
    no tokenizer at all): another tokenizer than the commit's."""
    from fnmatch import fnmatch

    in_cache = any(part.startswith("models--") for part in folder.absolute().parts)
    if not (in_cache and folder.is_dir()):  # no listing of other folders (a prepared one holds many shards)
        return None
    links = sorted(p for p in folder.iterdir() if p.is_symlink())
    return next(
        (
            refused
            for link in links
            if any(fnmatch(link.name, glob) for glob in TOKENIZER_GLOBS) and (refused := missing_blob(link))
        ),
        None,
    )


def mirror_folder(hub_id: str) -> Path | None:
    """The folder of `hub_id`'s mirror under `ENCODERLAB_HUB_MODELS`, when the root is set and holds it
    (its pin is not checked: the folder that would be read, for the checks that no output lands in it)."""
    root = mirror_root("model")
    repo = split_revision(hub_id)[0]
    return root / repo if root is not None and (root / repo).is_dir() else None
