"""A hub id pinned to a revision the local hub cache lacks, with the hub offline (HF_HUB_OFFLINE=1): one
line naming the id, the revision, what the cache holds of the repo and the download of that revision.
Before, a model's line was the one an id the cache knows nothing of gets ("pass a local folder, or mirror
the repo and set ENCODERLAB_HUB_MODELS"), which read as if the repo were unknown here while the cache held
it at main; and a corpus pinned with `#hf_revision` was refused without its revision or a download that
a mirror's pin check accepts."""

from __future__ import annotations

from pathlib import Path

import pytest
from huggingface_hub import constants
from tests.data.hub_cache_fixtures import HUB_ID, cache_two_commits, commit_model_folder
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import cli
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.data.hub import HUB_MODELS_ENV, resolve_dataset
from encoderlab.errors import UserError
from encoderlab.model.hub import load_pretrained

OFFLINE = "is not a folder or asset, and the hub is offline (HF_HUB_OFFLINE=1)"


def _expected(pinned: str, held: str, other: str, cwd: Path) -> str:
    revision = pinned.partition("@")[2]
    return (
        f"model '{pinned}' {OFFLINE}, and the local hub cache has no revision '{revision}' of {HUB_ID} ({held}), "
        f"and there is no folder {cwd / pinned}; download it with the hub online (hf download --revision "
        f"{revision} {HUB_ID}), or {other}"
    )


def test_a_pinned_revision_the_cache_lacks_names_what_it_holds_and_the_download(tmp_path, monkeypatch):
    cache_two_commits(tmp_path, monkeypatch, commit_model_folder)  # main and v1
    with pytest.raises(UserError) as refused:
        load_pretrained(f"{HUB_ID}@v2")
    held, other = "it holds main, v1", f"pin one it holds ({HUB_ID}@main)"
    assert str(refused.value) == _expected(f"{HUB_ID}@v2", held, other, tmp_path)


def test_a_pinned_revision_of_a_repo_the_cache_lacks_names_the_download(tmp_path, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv(HUB_MODELS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as refused:
        load_pretrained(f"{HUB_ID}@v2")
    expected = _expected(f"{HUB_ID}@v2", "nor any other", "pass a local folder", tmp_path)
    assert str(refused.value) == expected
    with pytest.raises(UserError) as unpinned:  # unpinned: the line as before
        load_pretrained(HUB_ID)
    assert str(unpinned.value).endswith(  # both ways to fill the cache, as every line of what it lacks
        f"; run once with the hub reachable (HF_HUB_OFFLINE unset), or `hf download {HUB_ID}`; or pass a local "
        f"folder, or mirror the repo and set {HUB_MODELS_ENV}"
    )


def test_a_command_reading_a_revision_the_cache_lacks_is_one_line_and_writes_nothing(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    cache_two_commits(tmp_path, monkeypatch, commit_model_folder)
    before = world_state(tmp_path)
    code, err = cli(["export", f"{HUB_ID}@v2", "--out", tmp_path / "x"], capsys)
    expected = _expected(f"{HUB_ID}@v2", "it holds main, v1", f"pin one it holds ({HUB_ID}@main)", tmp_path)
    assert code == 2 and err.strip() == f"encoderlab: error: {expected}", err
    assert_printed_as_documented("model-revision-not-cached", err, tmp_path)
    assert_unchanged(before)


def test_a_corpus_pinned_offline_names_its_revision_and_the_mirror_download(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("ENCODERLAB_HUB_DATA", raising=False)
    with pytest.raises(UserError) as refused:
        resolve_dataset("me/notes", split="train", revision="v1")
    assert str(refused.value) == (
        "hub dataset 'me/notes' pinned at #hf_revision=v1 needs the Hugging Face hub but HF_HUB_OFFLINE=1; unset "
        "it, or mirror the dataset at that revision (hf download --repo-type dataset --revision v1 me/notes "
        "--local-dir DIR/me/notes) and set ENCODERLAB_HUB_DATA=DIR"
    )
