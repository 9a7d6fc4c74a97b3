"""`eval --check` of a hub id, through huggingface_hub's real download and cache code against a local hub
server (tests/data/hub_server.py): online it fetches the configs and tokenizer and no weights, and offline,
the server stopped, the same check reads them from the cache the library wrote.

The hub faked at huggingface_hub's own calls (test_eval_check_hub_cache.py) and the hand-written caches
tested what encoderlab asks, not what the library then writes and judges; with huggingface_hub 2.4 the
snapshot a check leaves (no weights, no `.gitattributes`, the repo's whole file list cached) was refused
offline as not cached (fixed in `hubmodels._cached`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from huggingface_hub import constants
from tests.data.hub_cache_fixtures import SHA_B
from tests.data.hub_server import ServedRepo
from tests.data.hub_server_fixtures import REPO_EXTRAS, go_offline, repo_files
from tests.eval.fixtures import check_hub_id, model_folder

pytestmark = pytest.mark.usefixtures("isolated_tasks")
HUB_ID = "someone/enc"


def _check(tmp_path, capsys) -> tuple[int, str, str]:
    return check_hub_id(tmp_path, capsys, HUB_ID)


def test_a_check_online_fetches_no_weights_and_the_same_check_offline_reads_the_library_cache(
    hub_server, tmp_path, capsys, monkeypatch
):
    files = repo_files(model_folder(tmp_path / "repo"))
    hub_server.add(ServedRepo(HUB_ID, commits={SHA_B: files}, refs={"main": SHA_B}))
    code, said, err = _check(tmp_path, capsys)
    assert code == 0, err
    fetched = {
        path.rsplit("/", 1)[1]
        for method, path in hub_server.requests
        if method == "GET" and "/resolve/" in path
    }
    assert fetched == {"config.json", "tokenizer.json", "tokenizer_config.json"}  # no weights, no extras
    snapshot = Path(constants.HF_HUB_CACHE) / "models--someone--enc" / "snapshots" / SHA_B
    assert sorted(p.name for p in snapshot.iterdir()) == sorted(fetched)
    answered = go_offline(hub_server, monkeypatch)
    code, said, err = _check(tmp_path, capsys)  # was: "... is not a folder or asset, and the hub is offline"
    assert code == 0 and said.startswith(f"model {HUB_ID}: tokenizer and config read"), (said, err)
    assert len(hub_server.requests) == answered and not set(REPO_EXTRAS) & {
        p.name for p in snapshot.iterdir()
    }
