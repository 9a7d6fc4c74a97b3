"""A model repo downloaded by encoderlab through huggingface_hub's real code, from a local hub server
(tests/data/hub_server.py), then loaded offline, the server stopped, from the cache the library wrote.

The hub cache fixtures (hub_cache_fixtures.py) are written by hand; they missed that huggingface_hub 2.4
caches the repo's whole file list (trees/COMMIT.json) with every `snapshot_download`, and judges an offline
snapshot against it: a download of the files encoderlab reads (`MODEL_FILES`) never fetches `.gitattributes`
or the README, so every offline load of a hub id was refused as "not cached" (fixed in `hubmodels._cached`,
which judges a snapshot on the files read). Here the cache is the library's own, so such a gap shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from huggingface_hub import constants
from tests.data.hub_cache_fixtures import POSITIONS, SHA_A, SHA_B, commit_model_folder
from tests.data.hub_server import HubServer, ServedRepo
from tests.data.hub_server_fixtures import REPO_EXTRAS, go_offline, repo_files
from tests.eval.fixtures import model_folder

from encoderlab.data.hub import hub_offline
from encoderlab.errors import UserError
from encoderlab.model.hub import load_pretrained
from encoderlab.model.sources import source_path

HUB_ID = "someone/enc"


def storage() -> Path:
    """The repo's folder in the hub cache the server's test set (`serve_hub`)."""
    return Path(constants.HF_HUB_CACHE) / "models--someone--enc"


def test_a_model_downloaded_online_loads_offline_from_the_cache_the_library_wrote(
    hub_server, tmp_path, monkeypatch
):
    hub_server.add(
        ServedRepo(HUB_ID, commits={SHA_B: repo_files(model_folder(tmp_path / "repo"))}, refs={"main": SHA_B})
    )
    online = load_pretrained(HUB_ID)
    snapshot = storage() / "snapshots" / SHA_B
    listed = json.loads((storage() / "trees" / f"{SHA_B}.json").read_text())["files"]
    assert set(REPO_EXTRAS) <= set(listed) and not any((snapshot / name).exists() for name in REPO_EXTRAS)
    assert (storage() / "refs" / "main").read_text() == SHA_B  # the library's cache, not a hand-written one
    answered = go_offline(hub_server, monkeypatch)
    assert hub_offline() and constants.HF_HUB_OFFLINE
    offline = load_pretrained(
        HUB_ID
    )  # was: "model 'someone/enc' is not a folder or asset, and the hub is offline"
    assert source_path(HUB_ID) == snapshot and len(hub_server.requests) == answered
    assert offline.tokenizer.get_vocab() == online.tokenizer.get_vocab()
    online_weights, offline_weights = online.model.state_dict(), offline.model.state_dict()
    assert all(online_weights[k].equal(offline_weights[k]) for k in online_weights)


def _two_commits(server: HubServer, tmp_path: Path) -> None:
    """someone/enc with commits A (tag v1, pull request 1) and B (main), told apart by their positions."""
    commits = {sha: repo_files(commit_model_folder(tmp_path / sha[:1], sha)) for sha in (SHA_A, SHA_B)}
    server.add(ServedRepo(HUB_ID, commits=commits, refs={"main": SHA_B, "v1": SHA_A, "refs/pr/1": SHA_A}))


def _positions(folder: Path) -> int:
    return json.loads((folder / "config.json").read_text())["model"]["max_seq_len"]


def test_a_pinned_commit_tag_and_pull_request_download_online_and_load_offline_at_their_commits(
    hub_server, tmp_path, monkeypatch
):
    _two_commits(hub_server, tmp_path)
    pins = {f"{HUB_ID}@v1": SHA_A, f"{HUB_ID}@refs/pr/1": SHA_A, f"{HUB_ID}@{SHA_B}": SHA_B}
    for pin, sha in pins.items():
        assert source_path(pin).name == sha and _positions(source_path(pin)) == POSITIONS[sha]
    asked = [path for method, path in hub_server.requests if method == "GET" and "/api/" in path]
    assert f"/api/models/{HUB_ID}/revision/v1" in asked  # the tag resolved by the hub
    # the sha, not cached, asks one `repo_info`, ours, bounded by HF_HUB_ETAG_TIMEOUT (snapshot_download asks
    # none for a sha, but lists its tree with no timeout: `hubmodels._read_without_download`)
    assert sum(f"revision/{SHA_B}" in path for path in asked) == 1, asked
    assert (storage() / "refs" / "v1").read_text() == SHA_A
    answered = go_offline(hub_server, monkeypatch)
    for pin, sha in pins.items():  # each pin reads its own commit's snapshot, the server stopped
        folder = source_path(pin)
        assert folder.name == sha and _positions(folder) == POSITIONS[sha], pin
        assert load_pretrained(pin).model.config.max_seq_len == POSITIONS[sha]
    assert len(hub_server.requests) == answered


def test_a_revision_the_served_repo_lacks_is_one_line_naming_the_pin(hub_server, tmp_path):
    _two_commits(hub_server, tmp_path)
    with pytest.raises(UserError) as refused:
        source_path(f"{HUB_ID}@v9")
    assert "has no revision 'v9'" in str(refused.value) and "\n" not in str(refused.value)
