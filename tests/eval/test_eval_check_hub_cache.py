"""`eval --check` of a hub id reads the configs and tokenizer the local hub cache holds, asks the hub only for
what the cache lacks, and never downloads weights; offline, a snapshot holding them is read whatever else of
the repo it lacks (`data.hubmodels.check_files`, `cached_snapshot`).

Before, every check online was a `snapshot_download` of the branch, which asks the hub for the branch's commit
(`repo_info`) however complete the cache is; and offline, a snapshot was judged against the repo's whole file
list (trees/COMMIT.json, which huggingface_hub >= 2.4 caches with every `snapshot_download`), so one without the
weights or `.gitattributes` (neither of which a check or encoderlab's download fetches) was refused as not
cached. The hub is faked at huggingface_hub's own calls (`HfApi.repo_info`, `list_repo_tree` and the
per-file `hf_hub_download` that `snapshot_download` makes), which record each request; nothing downloads."""

from __future__ import annotations

import shutil

import huggingface_hub._snapshot_download as snapshot_module
import pytest
from huggingface_hub import HfApi, constants
from huggingface_hub.hf_api import ModelInfo, RepoFile
from tests.eval.fixtures import check_hub_id, model_folder
from tests.eval.hub_snapshot_fixtures import write_tree

from encoderlab.data.hub import HUB_MODELS_ENV

pytestmark = pytest.mark.usefixtures("isolated_tasks")
HUB_ID = "someone/enc"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _repo(tmp_path):
    """The repo on the hub: the test model's files and the `.gitattributes` every hub repo holds."""
    repo = model_folder(tmp_path / "repo")
    (repo / ".gitattributes").write_text("*.safetensors filter=lfs diff=lfs merge=lfs -text\n")
    return repo


def _cache(tmp_path, monkeypatch, lacking=("model.safetensors", ".gitattributes"), listed=True):
    """The local hub cache holding `HUB_ID` at COMMIT (main's ref) without the files `lacking`, and, with
    `listed`, the repo's whole file list at COMMIT, as `hf download` or a check's download leaves them."""
    repo = _repo(tmp_path)
    storage = tmp_path / "hub-cache" / "models--someone--enc"
    snapshot = storage / "snapshots" / COMMIT
    shutil.copytree(repo, snapshot)
    for name in lacking:
        (snapshot / name).unlink()
    (storage / "refs").mkdir()
    (storage / "refs" / "main").write_text(COMMIT)
    if listed:
        write_tree(storage, COMMIT, {p.name: p.read_bytes() for p in repo.iterdir() if p.is_file()})
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.delenv(HUB_MODELS_ENV, raising=False)
    return repo, snapshot


def _hub(monkeypatch, repo, snapshot) -> list[tuple[str, str]]:
    """The hub serving `repo` as HUB_ID at COMMIT, online: each request made, as (call, what)."""
    asked: list[tuple[str, str]] = []

    def repo_info(self, repo_id, *, revision=None, **kwargs):
        asked.append(("repo_info", str(revision)))
        return ModelInfo(id=repo_id, sha=COMMIT, siblings=[])

    def list_repo_tree(self, repo_id, *, revision=None, **kwargs):
        asked.append(("list_repo_tree", str(revision)))
        files = sorted(p for p in repo.iterdir() if p.is_file())
        return [RepoFile(path=p.name, size=p.stat().st_size, oid="0" * 40) for p in files]

    def hf_hub_download(repo_id, filename, *, revision=None, **kwargs):
        target = snapshot / filename
        if revision == COMMIT and target.is_file():  # a cached file at a commit: no request (its docs)
            return str(target)
        asked.append(("hf_hub_download", f"{filename}@{revision}"))
        shutil.copy(repo / filename, target)
        return str(target)

    monkeypatch.setattr(HfApi, "repo_info", repo_info)
    monkeypatch.setattr(HfApi, "model_info", repo_info)
    monkeypatch.setattr(HfApi, "list_repo_tree", list_repo_tree)
    monkeypatch.setattr(snapshot_module, "hf_hub_download", hf_hub_download)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # online (tests/conftest.py sets it): the check may ask the hub
    return asked


def _check(tmp_path, capsys) -> tuple[int, str, str]:
    return check_hub_id(tmp_path, capsys, HUB_ID)


def test_a_cached_snapshot_holding_the_configs_and_tokenizer_is_checked_without_asking_the_hub(
    tmp_path, capsys, monkeypatch
):
    asked = _hub(monkeypatch, *_cache(tmp_path, monkeypatch))
    code, said, err = _check(tmp_path, capsys)
    assert code == 0, err
    assert asked == []  # was [("repo_info", "main")]: the branch's commit asked of the hub on every check
    assert "its weights are not in the local hub cache and --check downloads none" in said.splitlines()[0]


def test_a_file_the_cached_snapshot_lacks_is_the_only_one_asked_for_at_its_commit(
    tmp_path, capsys, monkeypatch
):
    lacking = ("model.safetensors", ".gitattributes", "tokenizer_config.json")
    asked = _hub(monkeypatch, *_cache(tmp_path, monkeypatch, lacking))
    code, _, err = _check(tmp_path, capsys)
    assert code == 0, err
    assert asked == [("hf_hub_download", f"tokenizer_config.json@{COMMIT}")]  # no weights, no repo_info


def test_a_snapshot_with_no_cached_file_list_has_its_commits_list_asked_once(tmp_path, capsys, monkeypatch):
    """Files fetched one by one (transformers' `from_pretrained`) leave no file list: what the commit holds is
    asked once, at the snapshot's commit, and nothing the snapshot holds is fetched again."""
    asked = _hub(monkeypatch, *_cache(tmp_path, monkeypatch, listed=False))
    code, _, err = _check(tmp_path, capsys)
    assert code == 0, err
    assert asked == [("list_repo_tree", COMMIT)]


def test_nothing_cached_downloads_the_configs_and_tokenizer_and_no_weights(tmp_path, capsys, monkeypatch):
    repo, snapshot = _cache(tmp_path, monkeypatch)
    shutil.rmtree(snapshot.parents[1])  # the cache holds nothing of the repo (the fake hub fills the folder)
    snapshot.mkdir(parents=True)
    asked = _hub(monkeypatch, repo, snapshot)
    code, _, err = _check(tmp_path, capsys)
    assert code == 0, err
    fetched = sorted(what for call, what in asked if call == "hf_hub_download")
    assert asked[:2] == [("repo_info", "main"), ("list_repo_tree", COMMIT)]
    assert fetched and not any(".safetensors" in f or ".gitattributes" in f for f in fetched), fetched


def test_offline_a_snapshot_holding_the_configs_and_tokenizer_is_checked(tmp_path, capsys, monkeypatch):
    """What a check online leaves (the configs and tokenizer, and the repo's whole file list) is read offline:
    before, the snapshot lacked files the list names (the weights, `.gitattributes`) and was refused as "not a
    folder or asset, and the hub is offline"."""
    _cache(tmp_path, monkeypatch)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, said, err = _check(tmp_path, capsys)
    assert code == 0 and said.startswith(f"model {HUB_ID}: tokenizer and config read"), (said, err)
