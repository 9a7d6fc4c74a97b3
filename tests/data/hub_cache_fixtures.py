"""The local hub cache and a model mirror as huggingface_hub leaves them, shared by the data, model, eval,
train and study tests of hub ids: two commits of someone/enc told apart by their positions, the cache
holding both, and the record a download writes beside each file. Written by hand, these caches lack what the
library adds (huggingface_hub 2.4's trees/COMMIT.json, which hid that every offline load was refused); what
huggingface_hub itself writes and reads is tested against a local hub server (hub_server.py).

A helper that one test module wrote and others imported lives here under a public name
(tests/test_import_layers.py refuses a test module importing another test module's underscore name)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from huggingface_hub import constants
from tests.eval.fixtures import model_folder

from encoderlab.data.hub import HUB_MODELS_ENV

HUB_ID = "someone/enc"
SHA_A = "a" * 40
SHA_B = "b" * 40
POSITIONS = {SHA_A: 96, SHA_B: 64}  # what tells the two commits' configs apart


def commit_model_folder(folder: Path, sha: str) -> Path:
    """The test model with the positions that mark commit `sha` (the weights do not depend on them)."""
    model_folder(folder)
    config = json.loads((folder / "config.json").read_text())
    config["model"]["max_seq_len"] = POSITIONS[sha]
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def cache_two_commits(tmp_path: Path, monkeypatch, save) -> Path:
    """The local hub cache holding commits A and B of someone/enc (each folder written by `save(folder,
    sha)`), `main` at B and the tag `v1` at A, the hub offline, no mirror; the working folder is the
    test's own. Returns the repo's cache folder."""
    storage = tmp_path / "hub-cache" / "models--someone--enc"
    for sha in (SHA_A, SHA_B):
        save(storage / "snapshots" / sha, sha)
    (storage / "refs").mkdir()
    (storage / "refs" / "main").write_text(SHA_B)
    (storage / "refs" / "v1").write_text(SHA_A)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv(HUB_MODELS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    return storage


def download_record(repo: Path, path: str, commit: str) -> None:
    """What huggingface_hub's `write_download_metadata` writes for a file it downloaded into `repo`."""
    record = repo / ".cache" / "huggingface" / "download" / f"{path}.metadata"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(f"{commit}\n{'e' * 64}\n{time.time()}\n")
