"""Hub ids, resolved to the Hugging Face hub or to a local mirror of it laid out as the hub is.

Every hub id that encoderlab reads (a dataset streamed by `data prepare`, an evaluation dataset, a
tokenizer) goes through this module, so one setting per repo type decides where it comes from:

  * unset: the id itself, for `datasets` / `transformers` to fetch;
  * `ENCODERLAB_HUB_DATA=DIR` (datasets; `eval --hub-data DIR`) and `ENCODERLAB_HUB_MODELS=DIR`
    (models and tokenizers): the folder `DIR/<owner>/<name>`, holding the repo's files at their
    repo paths (a dataset card `README.md` whose YAML `configs` map config names to data files, the
    parquet files under `sample/10BT/...`, `tokenizer.json`, ...), which is what
    `hf download [--repo-type dataset] OWNER/NAME --local-dir DIR/OWNER/NAME` writes.

Reading a resolved split's records (the stream, its documents, each record's text field) is
`data/hubread.py`; this module says where a hub id is and which files a split is, and reads none of them.

Callers hand the result to the same call as for the hub id (`datasets.load_dataset(loc, config,
split=..., streaming=True)`, `AutoTokenizer.from_pretrained(loc)`): with a local folder `datasets`
resolves configs and data files from the card exactly as it does for the hub repo, so a lab mirrors
a corpus once on a login node and points compute nodes at it, and the tests run the hub code path on
simulated repos (tests/data/hub_corpus_fixtures.py, tests/eval/hub_fixtures.py). Downloads and the local
hub cache are tested against a local hub server (tests/data/hub_server.py), through the libraries' own code.

Downloads. Without a mirror, a model or tokenizer id is fetched by `hubmodels.download_model_repo` (the
one place that downloads one: `huggingface_hub.snapshot_download`, which asks the hub once and falls back
to the local hub cache; `hubmodels` also reads a revision pinned as `OWNER/NAME@REV`) and a dataset id is first asked for once (`reach_hub`); both run with the
hub libraries' own log lines and warnings silenced (`quiet_hub`). An unreachable hub is then one line
at once, naming the fix, where transformers' per-file downloads retried each file for ~23 s and
printed every retry. With `HF_HUB_OFFLINE=1`, a hub id whose snapshot is in the local hub cache is
read from there (`hubmodels.model_mirror`), so "set HF_HUB_OFFLINE=1 to use the local hub cache" is a fix.

Trade-offs: a plain mirror folder instead of the hub cache layout (`HF_HUB_CACHE`: blobs, refs and
symlinks that only `huggingface_hub` writes) or a local hub server (`HF_ENDPOINT`: a process to
run); the price is that a mirror has no revision of its own, so what a prepared folder records as
the revision of a mirrored repo is `local` and its identity is the list of files read, each with its
size, sha256 and mtime (checked by a rerun as local files are: `data/freshness.py`), and a source that
pins a revision (`hf_revision`) there is read only when the records `hf download --revision SHA
--local-dir` leaves name that commit for the card and every data file of the split (`data/mirrorpin.py`;
the identity then names the commit), and refused otherwise rather than read at whatever the mirror holds. Datasets and
models have a root each because the hub keeps them in separate namespaces (a dataset and a model may
share `owner/name`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import os
import re
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from encoderlab.data.mirrorpin import check_mirror_pin, refuse_branch_pin
from encoderlab.errors import UserError, first_line

HUB_DATA_ENV = "ENCODERLAB_HUB_DATA"
"""Environment variable naming the folder of dataset mirrors, DIR/<owner>/<name>."""
HUB_MODELS_ENV = "ENCODERLAB_HUB_MODELS"
"""Environment variable naming the folder of model (and tokenizer) mirrors, DIR/<owner>/<name>."""

HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")
"""A repo id as the hub spells it: NAME or OWNER/NAME, each part starting with a letter or digit."""
_ENVS = {"dataset": HUB_DATA_ENV, "model": HUB_MODELS_ENV}


def hub_offline() -> bool:
    """True when `HF_HUB_OFFLINE` forbids reaching the hub (callers refuse at once instead of the
    ~23 s of retries `datasets` would spend)."""
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on")


def hf_download(repo: str, kind: str = "model", revision: str | None = None) -> str:
    """The `hf download` command that fills the local hub cache with the repo `repo` (`kind`: "model" or
    "dataset"), at `revision` when one is named: one spelling for every refusal (`refetch_fix`)."""
    repo_type = " --repo-type dataset" if kind == "dataset" else ""
    return f"hf download{repo_type}{f' --revision {revision}' if revision else ''} {repo}"


def refetch_fix(repo: str, kind: str = "model", revision: str | None = None) -> str:
    """The fix of a refusal of what the local hub cache lacks, or may hold cut short: both ways to fill
    it, the hub reachable once or `hf download` of the repo. Older lines named only the first (HF_HUB_OFFLINE
    unset), which a user offline on purpose (a compute node) cannot take: `hf download` runs wherever the
    hub is reachable, into the same cache."""
    return f"run once with the hub reachable (HF_HUB_OFFLINE unset), or `{hf_download(repo, kind, revision)}`"


def mirror_root(kind: str = "dataset") -> Path | None:
    """The folder of `kind` ("dataset" or "model") mirrors, if its variable is set (a folder)."""
    env = _ENVS[kind]
    value = os.environ.get(env)
    if not value:
        return None
    root = Path(value).expanduser()
    if root.exists() and not root.is_dir():  # a missing root is a missing mirror: its download hint follows
        raise UserError(f"{env}={value} is a file, not a folder; point it at the {kind} mirrors or unset it")
    return root


def well_formed_hub_id(hub_id: str) -> bool:
    """Whether `hub_id` has the hub's form, NAME or OWNER/NAME (`HUB_ID`), with no `..`: the one test of
    it, which `check_hub_id`, a task file's `data.hub` and `hubmodels.is_hub_id` share."""
    return HUB_ID.fullmatch(hub_id) is not None and ".." not in hub_id


def check_hub_id(hub_id: str, what: str = "hub id", path: bool = False) -> str:
    """`hub_id` if it looks like `OWNER/NAME` (or `NAME`); no `..`, no absolute path. `path`: it was
    looked for as a path first (a model or tokenizer), so a missing one is named as one too."""
    if not well_formed_hub_id(hub_id):
        missing = path and not Path(hub_id).expanduser().exists()
        nor = "not an existing path, nor " if missing else "not "
        raise UserError(f"'{hub_id}' is {nor}a {what} of the form OWNER/NAME; fix it")
    return hub_id


_REVISION = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)*")
_SHA = re.compile(r"[0-9a-f]{40}")


def is_commit(revision: str) -> bool:
    """True for a full commit sha (40 hex digits, as the hub writes them): a revision that names one
    immutable tree, unlike a branch or tag, which may move."""
    return _SHA.fullmatch(revision) is not None


def is_revision(revision: str) -> bool:
    """True when `revision` can name a hub revision (a commit sha, a branch or tag, `refs/pr/N`): git ref
    characters, no `..`, no empty part, not ending in `.` or `.lock`."""
    return (
        _REVISION.fullmatch(revision) is not None
        and ".." not in revision
        and not revision.endswith((".", ".lock"))
    )


def check_revision(revision: str) -> str:
    """`revision` if it can name a hub revision (`is_revision`), else one line (ValueError)."""
    if not is_revision(revision):
        raise ValueError(
            f"hf_revision={revision!r} is not a hub revision (a commit sha, or a branch or tag name); fix it, "
            "e.g. hf_revision=main or the 40-hex commit sha of the dataset page's history"
        )
    return revision


def mirror_location(
    hub_id: str, kind: str, revision: str | None = None, base: Path | None = None, local: str | None = None
) -> str:
    """`hub_id`'s mirror folder under its kind's root, or `hub_id` when no root is set; one line when the
    root lacks it, with the download that fills it (at `revision`). `local`: the name a model's source was
    looked for as a path first (`OWNER/NAME@REV`), for `no_folder`; `hub_id` by default."""
    check_hub_id(hub_id, f"{kind} id", path=kind == "model")
    root = mirror_root(kind)
    if root is None:
        return hub_id
    folder = root / hub_id
    if not folder.is_dir():
        here, check = (
            (no_folder(local or hub_id, base), "check the path, or ") if kind == "model" else ("", "")
        )
        raise UserError(
            f"{_ENVS[kind]}={root} has no mirror of {hub_id}{here}; {check}download it with: "
            f"{hf_download(hub_id, kind, revision)} --local-dir {folder}"
        )
    return str(folder)


def dataset_location(hub_id: str, revision: str | None = None) -> str:
    """What to pass to `datasets.load_dataset` for the dataset repo `hub_id`: its mirror folder
    when `ENCODERLAB_HUB_DATA` is set, else the id (`revision` only shapes the download hint)."""
    return mirror_location(hub_id, "dataset", revision)


def no_folder(name: str, base: Path | None = None) -> str:
    """ ", and there is no folder CWD/NAME": a model or tokenizer id is a relative path too (`runs/my-run`),
    looked for in the working folder before the hub, so a line refusing it on the hub names both places
    (it named the hub alone, and a mistyped run folder read as a repo that could not be downloaded).
    `base`: the folder it was looked for in instead (a study file's, whose relative paths are its)."""
    return f", and there is no folder {(base or Path.cwd()) / name}"


# ---------------------------------------------------------------- the hub itself

_HUB_LOGGERS = ("huggingface_hub", "transformers", "datasets")


@contextlib.contextmanager
def quiet_hub() -> Iterator[None]:
    """The hub libraries' own log lines (retry notices, "couldn't connect") and warnings silenced for
    the duration, so that a failure is encoderlab's one line; their progress bars stay."""
    loggers = [logging.getLogger(name) for name in _HUB_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def incomplete_snapshot_error() -> type[Exception] | tuple:
    """huggingface_hub's `IncompleteSnapshotError` (>= 2.4; `()`, which catches nothing, before): what
    `snapshot_download` offline (or `local_files_only`) raises for a snapshot folder lacking a file, of those
    asked for, that the repo's cached file list (trees/COMMIT.json) names, its `snapshot_path` that folder
    (huggingface_hub/_snapshot_download.py, `_raise_if_incomplete_snapshot`). A LocalEntryNotFoundError:
    caught as that, it reads as "nothing cached"."""
    try:
        from huggingface_hub.errors import IncompleteSnapshotError
    except ImportError:
        return ()
    return IncompleteSnapshotError


def transport_errors() -> tuple[type[Exception], ...]:
    """The HTTP client's errors of a connection (refused, reset, closed without an answer, timed out),
    which huggingface_hub lets through unwrapped from a file's download once its retries are spent
    (file_download.py `http_get`): httpx2's TransportError under huggingface_hub 2.x, httpx's before.
    Neither is an OSError or a ConnectionError, so a caller catching those saw a traceback."""
    for name in ("httpx2", "httpx"):
        try:
            return (importlib.import_module(name).TransportError,)
        except ImportError:
            continue
    return ()


def hub_failure(hub_id: str, what: str, exc: Exception, fix: str, here: str = "") -> UserError:
    """One line for a hub request that failed: a repo that is not there or gated, else `fix`; `here`
    (`no_folder`'s clause) for an id that was a local path too."""
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    if isinstance(exc, GatedRepoError):
        return UserError(
            f"{what} '{hub_id}' is gated on the Hugging Face hub; accept its terms on its page and log in "
            "with `hf auth login`"
        )
    if isinstance(exc, RepositoryNotFoundError):
        return UserError(
            f"{what} '{hub_id}' is not on the Hugging Face hub, or is private{here}; "
            f"check the {'path or the ' if here else ''}id, or log in with `hf auth login`"
        )
    reason = first_line(exc)  # snapshot_download's names the cause: "Got: ConnectError: ..."
    reason = reason[len("Got: ") :] if reason.startswith("Got: ") else f"{type(exc).__name__}: {reason}"
    return UserError(f"cannot download {what} '{hub_id}' from the Hugging Face hub ({reason}){here}; {fix}")


def hub_refusal(hub_id: str, repo_type: str, what: str, revision: str | None, pin: str) -> UserError | None:
    """After a library's read of `hub_id` failed online: the hub asked once for the repo at `revision`,
    and its refusal (not there, gated, no such revision) as `hub_failure`'s or `no_revision`'s line with
    its fix; None where the hub serves it or cannot be asked (the caller's line stands). Asked, not read
    off the exception: `datasets` re-raises its DatasetNotFoundError `from None` after trying its cache,
    so the hub's GatedRepoError or RepositoryNotFoundError is gone, and its words ("doesn't exist on the
    Hub or cannot be accessed", "is a gated dataset") name no fix. One request, on the failure path only."""
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    exc = _repo_info_error(hub_id, repo_type, revision)
    if isinstance(exc, RevisionNotFoundError):
        return no_revision(hub_id, revision, what, repo_type, pin)
    if isinstance(exc, (GatedRepoError, RepositoryNotFoundError)):
        return hub_failure(hub_id, what, exc, "")
    return None  # served, or unreachable, offline: the caller's line names the library's own cause


def reach_hub(
    hub_id: str, repo_type: str, what: str, fix: str, revision: str | None = None, here: str = ""
) -> None:
    """Ask the hub for `hub_id`'s repo (at `revision`, when one is pinned) once (no retries), so that an
    unreachable hub, a missing repo or revision is one line at once rather than after the retries of
    the library that then reads it (`here`: `no_folder`'s clause, for an id that was a local path too)."""
    from huggingface_hub.errors import RevisionNotFoundError

    exc = _repo_info_error(hub_id, repo_type, revision)
    if isinstance(exc, RevisionNotFoundError):
        raise no_revision(hub_id, revision, what, repo_type) from None
    if exc is not None:
        raise hub_failure(hub_id, what, exc, fix, here) from None


def _repo_info_error(hub_id: str, repo_type: str, revision: str | None) -> Exception | None:
    """What `probe_hub` raised (the hub raises many types), None where the hub serves the repo: the one
    request `reach_hub` and `hub_refusal` make."""
    found = probe_hub(hub_id, repo_type, revision)
    return found if isinstance(found, Exception) else None


def probe_hub(hub_id: str, repo_type: str, revision: str | None) -> str | Exception:
    """The commit the hub names for `hub_id`'s repo at `revision` (its default branch when None), asked
    once, quietly, with no retries, or what the request raised. Bounded by huggingface_hub's own
    `HF_HUB_ETAG_TIMEOUT` (read now, 10 s unless set): `repo_info`'s default is no limit, so a hub that
    accepts the connection and never answers held the call (a study's `check_model_repo`, a corpus's
    `reach_hub`) until it dropped the connection, or forever."""
    from huggingface_hub import HfApi, constants

    kwargs = {"revision": revision} if revision else {}
    with quiet_hub():
        try:
            info = HfApi().repo_info(
                hub_id, repo_type=repo_type, timeout=constants.HF_HUB_ETAG_TIMEOUT, **kwargs
            )
        except Exception as exc:
            return exc
    return getattr(info, "sha", None) or ""


def no_revision(
    hub_id: str, revision: str | None, what: str, repo_type: str, pin: str | None = None
) -> UserError:
    """One line for a revision the hub's repo `hub_id` lacks, naming the pin as its kind writes it (a
    model's `@REV`, a corpus's `#hf_revision`, or `pin`: a task file's `data.revision`)."""
    pin = pin or (f"the @{revision} of {hub_id}@{revision}" if repo_type == "model" else "#hf_revision")
    return UserError(
        f"{what} '{hub_id}' has no revision '{revision}' on the Hugging Face hub; fix {pin} "
        "(a commit sha, branch or tag of the repo)"
    )


# ---------------------------------------------------------------- datasets: files and streaming

HF_URL = re.compile(r"hf://datasets/[^@]+@(?P<rev>[^/]+)/(?P<path>.+)")
"""A hub data file as `datasets` names it: `hf://datasets/OWNER/NAME@COMMIT/PATH`."""


@dataclass(frozen=True)
class HubDataset:
    """One split of one config of a hub dataset, resolved to its data files (nothing downloaded)."""

    hub_id: str
    config: str | None
    split: str
    data_dir: str | None
    """The repo folder read (`load_dataset(..., data_dir=)`), if any."""
    location: str
    """What `datasets.load_dataset` is given: the id, or its mirror folder."""
    files: tuple[str, ...]
    """The split's data files in the order `datasets` streams them (hf:// URLs or mirror paths)."""
    revision: str
    """The commit the files were resolved at (`local` for a mirror; a pinned mirror's, its pin, checked)."""
    pinned: str | None = None
    """The revision the source asked the hub for (`hf_revision`: a sha, branch or tag); None: the default
    branch, or a mirror (read as it is; a pin of it is checked against its download records)."""

    def repo_path(self, index: int) -> str:
        """File `index`'s path inside the repo (e.g. `sample/10BT/000_00000.parquet`)."""
        url = self.files[index]
        match = HF_URL.fullmatch(url)
        if match:
            return match["path"]
        try:
            return Path(url).relative_to(self.location).as_posix()
        except ValueError:
            return url

    def span(self, hf_files: str | None) -> range:
        """The indices of the data files that a source's `hf_files=A:B` selects (a Python slice of the
        card's order, `:B` and `A:` too; all files without it), e.g. the part of FineWeb-Edu's 350BT
        sample a study reads; `--shard` then splits that range."""
        n_files = len(self.files)
        if hf_files is None:
            return range(n_files)
        a, colon, b = hf_files.partition(":")
        try:
            start, stop = int(a) if a.strip() else 0, int(b) if b.strip() else n_files
        except ValueError:
            start = stop = -1
        if not colon or not 0 <= start < stop <= n_files:
            raise UserError(
                f"source hf:{self.hub_id}: hf_files={hf_files} is not a slice A:B of its {n_files} data files "
                f"(0 <= A < B <= {n_files}); e.g. hf_files=0:{max(1, n_files // 2)}"
            )
        return range(start, stop)

    def identity(self, span: range | None = None) -> dict:
        """What names exactly this data: id, config, split, revision, files (recorded in meta.json), and
        the `span` of them read when a source names one (`hf_files`; absent otherwise, as before it)."""
        return ({"file_span": [span.start, span.stop]} if span is not None else {}) | {
            "kind": "hf",
            "hub_id": self.hub_id,
            "config": self.config,
            "split": self.split,
            "data_dir": self.data_dir,
            "revision": self.revision,
            "mirror": self.location if self.location != self.hub_id else None,
            "files": [self.repo_path(i) for i in range(len(self.files))],
        }


def import_datasets():
    """The `datasets` module, which reads every hub dataset (the `hub` extra, not a base dependency);
    a one-line UserError naming the install when it is missing."""
    try:
        import datasets
    except ImportError:
        raise UserError(
            "reading a hub dataset needs the `datasets` package, which is not installed; install it: "
            "pip install 'encoderlab[hub]' (or pip install datasets)"
        ) from None
    return datasets


def listing_builder(datasets, path: str, *args, **kwargs):
    """`datasets.load_dataset_builder(path, ...)` for its config alone (data files, builder name, options), with
    a temporary cache folder, removed on return: a builder takes a lock file in its cache folder and leaves it
    there, so a refusal that followed a listing (an --out inside the mirror, a mirror's bad CSV header) left one
    in HF_HOME/datasets or the caller's cache. Nothing is prepared through it, so nothing is lost."""
    with tempfile.TemporaryDirectory(prefix="encoderlab-listing-") as scratch:
        return datasets.load_dataset_builder(path, *args, **(kwargs | {"cache_dir": scratch}))


@functools.cache
def _resolve(
    hub_id: str,
    config: str | None,
    split: str,
    data_dir: str | None,
    location: str,
    pinned: str | None = None,
) -> HubDataset:
    datasets = import_datasets()

    if location == hub_id:  # no mirror: one request says at once whether the hub can be reached
        fix = f"check the network, or mirror the dataset and set {HUB_DATA_ENV}"
        reach_hub(hub_id, "dataset", "hub dataset", fix, pinned)
    at = {"revision": pinned} if pinned else {}  # unpinned: the call as before pinning existed
    try:
        with quiet_hub():
            builder = listing_builder(datasets, location, config, data_dir=data_dir, **at)
    except ValueError as exc:  # an unknown config lists the valid ones
        raise UserError(f"hub dataset '{hub_id}': {first_line(exc)}; fix #hf_config") from None
    except Exception as exc:  # the hub raises many types; all mean "cannot get this dataset"
        fix = "check the id" + (f" and #hf_revision={pinned}" if pinned else "")
        raise UserError(f"cannot resolve hub dataset '{hub_id}' ({first_line(exc)}); {fix}") from None
    data_files = builder.config.data_files or {}
    if split not in data_files:
        raise UserError(
            f"hub dataset '{hub_id}' (config {builder.config.name}) has no split '{split}'; "
            f"valid: {', '.join(data_files) or 'none'}; fix #hf_split"
        )
    files = tuple(str(f) for f in data_files[split])
    revs = {m["rev"] for f in files if (m := HF_URL.fullmatch(f))}
    revision = revs.pop() if len(revs) == 1 else ("local" if not revs else "mixed")
    return HubDataset(hub_id, builder.config.name, split, data_dir, location, files, revision, pinned)


def list_mirror(hub_id: str, config: str | None, split: str, data_dir: str | None, mirror: str) -> HubDataset:
    """`hub_id`'s split as the mirror folder `mirror` holds it now (not `_resolve`'s cache, which keeps what
    this process listed first; no network): what a rerun compares with the files it read (`freshness`)."""
    return _resolve.__wrapped__(hub_id, config, split, data_dir, mirror)


def resolve_dataset(
    hub_id: str,
    config: str | None = None,
    split: str = "train",
    data_dir: str | None = None,
    revision: str | None = None,
) -> HubDataset:
    """The data files of `hub_id`'s `config`/`split` (from the dataset card, as `datasets` reads it), at
    `revision` when one is pinned (else the default branch, as it is now). A mirror has no revisions: a
    pin there is checked against the records `hf download --local-dir` leaves (`data/mirrorpin.py`) and
    refused unless they name that commit; the mirror is then read as it is, its identity naming the commit."""
    location = dataset_location(hub_id, revision)
    if location != hub_id:
        if revision is not None:
            refuse_branch_pin(hub_id, Path(location), revision, HUB_DATA_ENV)
        ds = _resolve(hub_id, config, split, data_dir, location)
        if revision is None:
            return ds
        paths = [ds.repo_path(k) for k in range(len(ds.files))]
        check_mirror_pin(hub_id, Path(location), paths, revision, HUB_DATA_ENV)
        return replace(ds, revision=revision)  # `pinned` stays None: a folder is read with no revision
    if hub_offline():  # a pin is named with the download of that revision the mirror's check accepts
        pin, fix = (
            (
                f" pinned at #hf_revision={revision}",
                f" at that revision ({hf_download(hub_id, 'dataset', revision)} --local-dir DIR/{hub_id})",
            )
            if revision
            else ("", "")
        )
        raise UserError(
            f"hub dataset '{hub_id}'{pin} needs the Hugging Face hub but HF_HUB_OFFLINE=1; unset it, or mirror the "
            f"dataset{fix} and set {HUB_DATA_ENV}{'=DIR' if revision else ''}"
        )
    return _resolve(hub_id, config, split, data_dir, location, revision)
