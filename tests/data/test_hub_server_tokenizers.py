"""A tokenizer named by a hub id (`data prepare --tokenizer OWNER/NAME`) downloaded through huggingface_hub's
real code from a local hub server (tests/data/hub_server.py): its configs and tokenizer files only
(`TOKENIZER_GLOBS`), never the repo's weights, which the file list huggingface_hub 2.4 caches
(trees/COMMIT.json) names all the same.

Two gaps that list left, which hand-written caches hid: offline, the snapshot was judged against a model's
files (`MODEL_FILES`: it lacks `model.safetensors`), so the tokenizer downloaded online was refused as "not a
folder or asset, and the hub is offline"; and the commit prepared data records of its tokenizer
(`hubmodels.hub_read`, meta.json's `tokenizer.commit`) was null, the snapshot judged the same way."""

from __future__ import annotations

import pytest
from huggingface_hub import constants
from tests.data.hub_cache_fixtures import SHA_B
from tests.data.hub_server import ServedRepo
from tests.data.hub_server_fixtures import go_offline, repo_files
from tests.eval.fixtures import model_folder

from encoderlab.cli import main
from encoderlab.data.hubmodels import (
    MODEL_FILES,
    TOKENIZER_GLOBS,
    cached_snapshot,
    check_model_repo,
    hub_read,
)
from encoderlab.data.tokenizer import load_tokenizer
from encoderlab.errors import UserError

HUB_ID = "someone/enc"


def _served(hub_server, tmp_path) -> None:
    """someone/enc at SHA_B (main): a model's repo, its weights, tokenizer, `.gitattributes` and card."""
    files = repo_files(model_folder(tmp_path / "repo"))
    assert "model.safetensors" in files  # what a tokenizer's download leaves out and the file list names
    hub_server.add(ServedRepo(HUB_ID, commits={SHA_B: files}, refs={"main": SHA_B}))


def test_a_tokenizer_downloaded_online_loads_offline_from_the_cache_the_library_wrote(
    hub_server, tmp_path, monkeypatch
):
    _served(hub_server, tmp_path)
    online = load_tokenizer(HUB_ID)
    snapshot = f"{constants.HF_HUB_CACHE}/models--someone--enc/snapshots/{SHA_B}"
    answered = go_offline(hub_server, monkeypatch)
    offline = load_tokenizer(
        HUB_ID
    )  # was: "tokenizer 'someone/enc' is not a folder or asset, and the hub is offline"
    assert offline.get_vocab() == online.get_vocab() and offline.name_or_path == snapshot
    assert len(hub_server.requests) == answered


def test_the_commit_of_a_tokenizer_read_from_the_hub_is_recorded(hub_server, tmp_path, monkeypatch):
    _served(hub_server, tmp_path)
    load_tokenizer(HUB_ID)
    assert hub_read(HUB_ID) == {"hub_id": HUB_ID, "commit": SHA_B}  # was null
    go_offline(hub_server, monkeypatch)
    load_tokenizer(HUB_ID)
    assert hub_read(HUB_ID) == {"hub_id": HUB_ID, "commit": SHA_B}


def test_a_studys_check_of_a_tokenizer_downloaded_online_passes_offline(hub_server, tmp_path, monkeypatch):
    """What a study checks of its tokenizer ids before anything runs (`study.hubids.check_hub_ids`), offline,
    and what `study plan` notes as not cached (`uncached_start_notes`: `cached_snapshot` of its files)."""
    _served(hub_server, tmp_path)
    load_tokenizer(HUB_ID)
    go_offline(hub_server, monkeypatch)
    check_model_repo(
        HUB_ID, "tokenizer"
    )  # was: "tokenizer 'someone/enc' is not a folder or asset, and the hub ..."
    assert cached_snapshot(HUB_ID, TOKENIZER_GLOBS).name == SHA_B
    assert cached_snapshot(HUB_ID, MODEL_FILES) is None  # a start model's weights: not cached
    with pytest.raises(UserError, match="is not a folder or asset, and the hub is offline"):
        check_model_repo(HUB_ID, "model")


def test_study_plan_notes_no_tokenizer_the_cache_holds(hub_server, tmp_path, monkeypatch, capsys):
    """`study plan`'s note on a hub id the local hub cache does not hold (`hubids.uncached_start_notes`)."""
    from tests.study.study_fixtures import MINE, polarity_task_file, tiny_corpus

    _served(hub_server, tmp_path)
    load_tokenizer(HUB_ID)
    go_offline(hub_server, monkeypatch)
    tiny_corpus(tmp_path / "corpus.jsonl", 300)
    polarity_task_file(tmp_path)
    study = tmp_path / "my-study.yaml"
    study.write_text(MINE.replace("vocab_size: 300", f"tokenizer: {HUB_ID}"))
    capsys.readouterr()
    main(["study", "plan", str(study)])
    said = capsys.readouterr().out
    assert "taken as a hub id" not in said, (
        said
    )  # was: "dataset main reads tokenizer 'someone/enc', taken as ..."
