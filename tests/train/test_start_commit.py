"""A run started from a hub id records, in env.json, the commit it read (`runlayout.start_model_record`):
an unpinned id is whatever the repo's default branch held, which a later push changes under the same
name, so without the commit nothing told which weights the run continued. The hub cache is the layout
huggingface_hub writes (`snapshots/COMMIT/`, `refs/BRANCH`), read offline by the real `snapshot_download`;
a mirror's commit comes from the records `hf download --local-dir` leaves."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tests.data.hub_cache_fixtures import SHA_A, SHA_B, cache_two_commits
from tests.reliability.test_hostile_inputs import cli
from tests.reliability.treestate import assert_unchanged, world_state
from tests.train.helpers import tiny_run

from encoderlab.data.hub import HUB_MODELS_ENV
from encoderlab.errors import UserError
from encoderlab.model import Encoder, ModelConfig
from encoderlab.model.card import find_run, render_card
from encoderlab.model.io import save_model_folder
from encoderlab.objectives import MLM
from encoderlab.train.config import ModelSpec, Phase
from encoderlab.train.entry import pretrain


def _save(folder: Path) -> Path:
    return save_model_folder(Encoder(ModelConfig.from_size("tiny", vocab_size=128)), folder)


def _run(tmp_path: Path, init: str, name: str) -> dict:
    phases = (Phase(objective=MLM(mask_ratio=0.3), steps=1),)
    cfg = tiny_run(tmp_path / name, phases=phases, model=ModelSpec(init=init))
    pretrain(cfg)
    return json.loads((tmp_path / name / "env.json").read_text())


@pytest.fixture
def cache(tmp_path, monkeypatch):
    cache_two_commits(tmp_path, monkeypatch, lambda folder, sha: _save(folder))


def test_a_run_from_a_hub_id_records_the_commit_it_read(tmp_path, cache):
    assert _run(tmp_path, "someone/enc", "main")["start_model"] == {"hub_id": "someone/enc", "commit": SHA_B}
    pinned = _run(tmp_path, "someone/enc@v1", "v1")["start_model"]
    assert pinned == {"hub_id": "someone/enc@v1", "commit": SHA_A}
    card = render_card("v1", "EuroBertForMaskedLM", None, find_run(tmp_path / "v1"), None, "v1")
    assert "size `tiny`" not in card  # the size a continued run's config holds by default, never read
    assert (
        f"- Model: continued from `someone/enc@v1` at commit `{SHA_A}` (load: weights).\n" in card
    )  # the card says so
    _save(tmp_path / "model")
    assert "start_model" not in _run(tmp_path, str(tmp_path / "model"), "run")  # a folder is its own record


def test_a_mirror_records_the_commit_its_download_records_name_or_none(tmp_path, monkeypatch):
    repo = _save(tmp_path / "hub" / "someone" / "enc")
    monkeypatch.setenv(HUB_MODELS_ENV, str(tmp_path / "hub"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert _run(tmp_path, "someone/enc", "copied")["start_model"]["commit"] is None  # copied in: no records
    for p in repo.iterdir():
        if p.is_file():
            record = repo / ".cache" / "huggingface" / "download" / f"{p.name}.metadata"
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text(f"{SHA_A}\n{'e' * 64}\n{time.time()}\n")  # as `hf download --local-dir` writes
    assert _run(tmp_path, "someone/enc", "downloaded")["start_model"]["commit"] == SHA_A


def test_a_run_or_export_inside_its_hub_ids_cache_folder_is_refused_and_writes_nothing(
    tmp_path, monkeypatch, capsys
):
    """The hub id's cache folder is what the run continues from, as eval's source is: a run folder (or an
    export) in its snapshot or blobs/ is refused before anything is written (`sources.guarded_folder`,
    eval's guard). Before, only a mirror was guarded here and the run was written into the hub cache."""
    storage = cache_two_commits(tmp_path, monkeypatch, lambda folder, sha: _save(folder))
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    before = world_state(tmp_path)  # the hub cache (storage) is in it
    for out in (storage / "snapshots" / SHA_B / "run", storage / "blobs"):
        cfg = tiny_run(
            out, phases=(Phase(objective=MLM(mask_ratio=0.3), steps=1),), model=ModelSpec(init="someone/enc")
        )
        with pytest.raises(
            UserError, match=rf"^--out {out} is, contains or lies inside the source {storage};"
        ):
            pretrain(cfg)
        code, err = cli(["export", "someone/enc", "--out", str(out)], capsys)  # export reads it too
        assert code == 2 and f"--out {out} is, contains or lies inside the source {storage};" in err, err
    assert_unchanged(before)
