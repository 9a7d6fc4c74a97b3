"""A dataset repo's hub cache as huggingface_hub leaves it, and the hub serving or refusing one, shared by the
eval tests of hub snapshots (test_hub_csv_snapshot.py, test_hub_snapshot_tree.py and the modules beside them):
an empty cache of the test's own (the `cache` fixture), a snapshot `hf download` left (its files, refs and
file list, or its blobs and links), a hub that serves a local folder and records what was fetched, one that
cannot be reached, and the line a snapshot nothing tells complete is refused with. The libraries' own download
and cache code, unreplaced, is tested against a local hub server (tests/data/hub_server.py).

A helper that one test module wrote and others imported lives here under a public name
(tests/test_import_layers.py refuses a test module importing another test module's underscore name)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import types
from pathlib import Path

import datasets.download.download_manager as download_manager
import datasets.load
import huggingface_hub._snapshot_download
import pytest
from datasets.data_files import DataFilesDict, DataFilesList, DataFilesPatternsDict
from huggingface_hub import HfApi, constants
from huggingface_hub.errors import RemoteEntryNotFoundError
from huggingface_hub.hf_api import DatasetInfo, RepoFile
from tests.eval import hub_fixtures as hub

SERVED_COMMIT = "0123456789abcdef0123456789abcdef01234567"
QRELS = "BeIR/msmarco-qrels"
REAL_FACTORY = datasets.load.dataset_module_factory


def local_only(factory):
    """`datasets`' `dataset_module_factory` that fails a test resolving anything but a local folder."""

    def local(path, *args, **kwargs):
        assert Path(path).is_dir(), f"resolved {path} on the hub"
        return factory(path, *args, **kwargs)

    return local


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty hub cache, `datasets` cache and ENCODERLAB_HOME of the test's own, no mirror, the hub
    offline."""
    monkeypatch.delenv("ENCODERLAB_HUB_DATA", raising=False)
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "encoderlab-home"))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    return tmp_path / "hub-cache"


def dataset_storage(cache: Path, repo: str) -> Path:
    """The hub cache's folder of the dataset repo `repo`."""
    return cache / ("datasets--" + repo.replace("/", "--"))


def blob_id(data: bytes) -> str:
    """A file's git blob sha1, as the hub lists it (`blob_id`)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def write_tree(storage: Path, commit: str, files: dict[str, bytes]) -> None:
    """The repo's file list at `commit` (`files`: every file of the repo, path -> bytes), as
    `snapshot_download` (so `hf download`) caches it before fetching: `trees/COMMIT.json` as
    `huggingface_hub._tree_cache.write_tree_cache` writes it."""
    listing = {name: {"size": len(files[name]), "blob_id": blob_id(files[name])} for name in sorted(files)}
    (storage / "trees").mkdir(parents=True, exist_ok=True)
    (storage / "trees" / f"{commit}.json").write_text(
        json.dumps({"format_version": 1, "files": listing}, indent=1)
    )


def cache_snapshot(cache: Path, repo: str, folder: Path, names: list[str]) -> None:
    """What `hf download --repo-type dataset REPO` (or `--include` of `names`) left in the hub cache:
    the files `names` of the repo `folder`, refs/main, and the repo's file list (`write_tree`)."""
    snapshot = dataset_storage(cache, repo) / "snapshots" / SERVED_COMMIT
    for name in names:
        (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(folder / name, snapshot / name)
    (dataset_storage(cache, repo) / "refs").mkdir(parents=True, exist_ok=True)
    (dataset_storage(cache, repo) / "refs" / "main").write_text(SERVED_COMMIT)
    files = {f.relative_to(folder).as_posix(): f.read_bytes() for f in folder.rglob("*") if f.is_file()}
    write_tree(dataset_storage(cache, repo), SERVED_COMMIT, files)


def qrels_repo(root: Path) -> Path:
    """BeIR/msmarco-qrels (train.tsv, dev.tsv, test.tsv: query-id, corpus-id, score), ids zero-padded."""
    triples = {s: [(f"00{i}", f"0{1000 + i}", i % 2) for i in range(4)] for s in ("train", "dev", "test")}
    return hub.qrels_repo_folder(root, QRELS, triples)


def hub_online(monkeypatch, cache: Path, repo: str, folder: Path) -> dict[str, list]:
    """The hub serving `folder` as the dataset repo `repo` at SERVED_COMMIT: what was fetched, by whom."""
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    base = f"hf://datasets/{repo}@{SERVED_COMMIT}"
    real_factory, real_cached = datasets.load.dataset_module_factory, download_manager.cached_path
    fetched: dict[str, list] = {"resolved": [], "hf_hub_download": [], "cached_path": []}

    def as_urls(local: DataFilesDict | DataFilesPatternsDict) -> DataFilesDict:
        if isinstance(local, DataFilesPatternsDict):  # a card's `configs`: resolved as on the hub
            local = local.resolve(str(folder))
        return DataFilesDict(
            {
                s: DataFilesList([f.replace(str(folder), base) for f in fs], fs.origin_metadata)
                for s, fs in local.items()
            }
        )

    def factory(path, *args, **kwargs):
        if path != repo:
            return real_factory(path, *args, **kwargs)
        fetched["resolved"].append("dataset_module_factory")  # `datasets`' one resolution
        kwargs.pop("revision", None)
        module = real_factory(str(folder), *args, **kwargs)
        if "data_files" in module.builder_kwargs:
            module.builder_kwargs["data_files"] = as_urls(module.builder_kwargs["data_files"])
        for config in module.builder_configs_parameters.builder_configs or ():
            config.data_files = as_urls(config.data_files)
        module.builder_kwargs.update(base_path=base, repo_id=repo)
        (dataset_storage(cache, repo) / "refs").mkdir(parents=True, exist_ok=True)
        (dataset_storage(cache, repo) / "refs" / "main").write_text(SERVED_COMMIT)
        return module

    def hf_hub_download(repo_id, filename, *, repo_type=None, revision=None, **kwargs):
        assert (repo_id, repo_type, revision) == (repo, "dataset", SERVED_COMMIT)
        fetched["hf_hub_download"].append(filename)
        if not (folder / filename).is_file():
            raise RemoteEntryNotFoundError("404", response=types.SimpleNamespace(headers={}, request=None))
        target = dataset_storage(cache, repo) / "snapshots" / SERVED_COMMIT / filename
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(folder / filename, target)
        return str(target)

    def metadata(name):  # a resolution of the repo's metadata, as the hub answers it
        def call(self, repo_id, *args, **kwargs):
            fetched["resolved"].append(name)
            files = [f.relative_to(folder).as_posix() for f in sorted(folder.rglob("*")) if f.is_file()]
            if name == "list_repo_tree":
                return [RepoFile(path=f, size=(folder / f).stat().st_size, oid="0" * 40) for f in files]
            return DatasetInfo(id=repo_id, sha=SERVED_COMMIT, siblings=[{"rfilename": f} for f in files])

        return call

    for name in ("repo_info", "dataset_info", "list_repo_tree"):
        monkeypatch.setattr(HfApi, name, metadata(name))
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hf_hub_download)
    monkeypatch.setattr(huggingface_hub._snapshot_download, "hf_hub_download", hf_hub_download)

    def cached_path(url, *args, **kwargs):
        if not str(url).startswith(base + "/"):
            return real_cached(url, *args, **kwargs)
        fetched["cached_path"].append(str(url)[len(base) + 1 :])
        return str(folder / str(url)[len(base) + 1 :])

    monkeypatch.setattr(datasets.load, "dataset_module_factory", factory)
    monkeypatch.setattr(download_manager, "cached_path", cached_path)
    return fetched


def hub_unreachable(monkeypatch) -> list[str]:
    """The hub unreachable without an offline setting: `datasets` resolves a local folder, and a repo id
    raises ConnectionError, as when it cannot connect; the repo ids it was asked to resolve, in order."""
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    tries: list[str] = []

    def unreachable(path, *args, **kwargs):
        if Path(path).is_dir():
            return REAL_FACTORY(path, *args, **kwargs)
        tries.append(path)
        raise ConnectionError(f"Couldn't reach '{path}' on the Hub (ConnectError)")

    monkeypatch.setattr(datasets.load, "dataset_module_factory", unreachable)
    return tries


TREE_COMMIT = "89abcdef0123456789abcdef0123456789abcdef"


def downloaded_snapshot(
    cache: Path, repo: str, files: dict[str, str], fetched: list[str], tree: bool = True
) -> Path:
    """What `hf download --repo-type dataset REPO [--include ...]` leaves of the repo `files` at TREE_COMMIT,
    the files `fetched` in its snapshot (and, with `tree`, the repo's whole list in trees/); the
    snapshot folder."""
    storage = cache / ("datasets--" + repo.replace("/", "--"))
    snapshot = storage / "snapshots" / TREE_COMMIT
    for name in fetched:
        data = files[name].encode()
        blob = storage / "blobs" / blob_id(data)
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
        (snapshot / name).symlink_to(os.path.relpath(blob, (snapshot / name).parent))
    (storage / "refs").mkdir(parents=True, exist_ok=True)
    (storage / "refs" / "main").write_text(TREE_COMMIT)
    if tree:
        write_tree(storage, TREE_COMMIT, {name: text.encode() for name, text in files.items()})
    return snapshot


def unchecked_line(snapshot: Path, repo: str) -> str:
    """The line for `repo`'s `snapshot` that nothing tells complete (`hubcomplete.unchecked`)."""
    listed = snapshot.parents[1] / "trees" / f"{TREE_COMMIT}.json"
    return (
        f"cannot load {repo} from the hub cache: nothing tells its snapshot {snapshot} complete "
        "(encoderlab did not fetch this config into it, and huggingface_hub holds no readable file list "
        f"of the repo at that commit, {listed}), so a download cut short would give splits missing rows, "
        "unseen; run once with the hub reachable (HF_HUB_OFFLINE unset), or "
        f"`hf download --repo-type dataset --revision {TREE_COMMIT} {repo}`"
    )


def write_export(folder: Path, configs: dict) -> Path:
    """A dataset's parquet export at `folder` (a mirror of the `refs/convert/parquet` branch, or its hub cache
    snapshot) as the hub's converter lays it out, `<config>/<split>/0000.parquet` and no card
    (huggingface/dataset-viewer#1463: `[config]/[split]/[shard index: 0000 to 9999].parquet`): `configs` maps
    each config to (its label names, {split: rows}), each row's text naming its config and split."""
    from datasets import ClassLabel, Dataset, Features, Value

    for config, (labels, splits) in configs.items():
        features = Features({"text": Value("string"), "label": ClassLabel(names=list(labels))})
        for split, n in splits.items():
            path = folder / config / split / "0000.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            rows = {
                "text": [f"{config} {split} row {i}" for i in range(n)],
                "label": [i % len(labels) for i in range(n)],
            }
            Dataset.from_dict(rows, features=features).to_parquet(path)
    return folder
