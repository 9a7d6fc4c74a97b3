"""A file of a local hub cache snapshot whose blob is gone: the layout huggingface_hub writes, each file
of `snapshots/COMMIT/` a link to `../../blobs/SHA`, with the blob of the weights deleted (a cache pruned
by hand, a copy of the cache without `blobs/`). Before, the load advised what fits a model folder of
one's own: "restore it from a copy, or for a run's checkpoint delete that checkpoint folder and --resume
from the one before" (an encoderlab folder), or "has no weights ...; re-download the model" (a Hugging
Face folder), neither saying how to get a cache's blob back. Now the line names the download of that
commit, which fetches the blob of every link that points at nothing."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from tests.data.hub_cache_fixtures import HUB_ID, SHA_B, cache_two_commits, commit_model_folder
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import cli
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.errors import UserError
from encoderlab.model.hub import load_pretrained


def _link_to_blobs(snapshot_folder: Path) -> None:
    """Store each file of `snapshot_folder` as the hub cache does: its bytes in `../../blobs/SHA256`, the
    file a relative link to it."""
    blobs = snapshot_folder.parent.parent / "blobs"
    blobs.mkdir(exist_ok=True)
    for file in sorted(p for p in snapshot_folder.rglob("*") if p.is_file()):
        blob = blobs / hashlib.sha256(file.read_bytes()).hexdigest()
        os.replace(file, blob)
        file.symlink_to(os.path.relpath(blob, file.parent))


def _cached_encoderlab_model(folder: Path, sha: str) -> None:
    _link_to_blobs(commit_model_folder(folder, sha))


def _cached_hf_config(folder: Path, sha: str) -> None:
    """A Hugging Face BERT folder's config.json and model.safetensors (its bytes do not matter: the
    blob is deleted before anything reads it)."""
    from transformers import BertConfig

    folder.mkdir(parents=True)
    small = {"hidden_size": 8, "num_attention_heads": 2, "intermediate_size": 8, "num_hidden_layers": 1}
    BertConfig(vocab_size=16, **small).to_json_file(str(folder / "config.json"))
    (folder / "model.safetensors").write_bytes(sha.encode())
    _link_to_blobs(folder)


def _drop_blob(storage: Path, sha: str, name: str = "model.safetensors") -> Path:
    """Delete the blob the file `name` of commit `sha` links to; returns the link."""
    link = storage / "snapshots" / sha / name
    link.resolve().unlink()
    assert link.is_symlink() and not link.exists()
    return link


def _expected(link: Path, sha: str) -> str:
    return (
        f"{link} links to a blob the local hub cache no longer holds; download commit {sha} again with the "
        f"hub online (it fetches the missing blobs): hf download --revision {sha} {HUB_ID}"
    )


@pytest.mark.parametrize(
    ("save", "name"),
    [
        (_cached_encoderlab_model, "model.safetensors"),
        (_cached_hf_config, "model.safetensors"),
        (_cached_hf_config, "config.json"),  # was "... is neither an encoderlab ... (no config.json)"
    ],
    ids=["encoderlab", "hf", "hf-config"],
)
def test_a_file_whose_blob_is_gone_names_the_download_of_its_commit(tmp_path, monkeypatch, save, name):
    storage = cache_two_commits(tmp_path, monkeypatch, save)
    link = _drop_blob(storage, SHA_B, name)
    with pytest.raises(UserError) as refused:
        load_pretrained(HUB_ID)  # main is at B
    assert str(refused.value) == _expected(link, SHA_B)


def test_a_command_reading_a_snapshot_whose_blob_is_gone_is_one_line_and_writes_nothing(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    storage = cache_two_commits(tmp_path, monkeypatch, _cached_encoderlab_model)
    link = _drop_blob(storage, SHA_B)
    before = world_state(tmp_path)
    code, err = cli(["export", HUB_ID, "--out", tmp_path / "x"], capsys)
    assert code == 2 and err.strip() == f"encoderlab: error: {_expected(link, SHA_B)}", err
    assert_printed_as_documented("hub-cache-blob-missing", err, tmp_path)
    assert_unchanged(before)


def _cached_hf_sharded(folder: Path, sha: str) -> None:
    """A Hugging Face BERT folder with sharded weights: model.safetensors.index.json and its one shard."""
    import json

    from transformers import BertConfig

    folder.mkdir(parents=True)
    small = {"hidden_size": 8, "num_attention_heads": 2, "intermediate_size": 8, "num_hidden_layers": 1}
    BertConfig(vocab_size=16, **small).to_json_file(str(folder / "config.json"))
    shard = "model-00001-of-00001.safetensors"
    index = {"metadata": {}, "weight_map": {"bert.embeddings.word_embeddings.weight": shard}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    (folder / shard).write_bytes(sha.encode())
    _link_to_blobs(folder)


@pytest.mark.parametrize("name", ["model.safetensors.index.json", "model-00001-of-00001.safetensors"])
def test_a_sharded_snapshot_whose_index_or_shard_blob_is_gone_names_the_download(tmp_path, monkeypatch, name):
    """The index's blob gone (a copy of the cache without blobs/ loses it too) was "no weights ...;
    re-download the model": the index link was taken for no index at all."""
    storage = cache_two_commits(tmp_path, monkeypatch, _cached_hf_sharded)
    link = _drop_blob(storage, SHA_B, name)
    with pytest.raises(UserError) as refused:
        load_pretrained(HUB_ID)
    assert str(refused.value) == _expected(link, SHA_B)


def _cached_with_tokenizer_files(folder: Path, sha: str) -> None:
    """The encoderlab test model with every kind of tokenizer file a hub repo ships: tokenizer.json and
    tokenizer_config.json (saved with it), special_tokens_map.json and a vocabulary file."""
    commit_model_folder(folder, sha)
    (folder / "special_tokens_map.json").write_text('{"mask_token": "[MASK]"}')
    (folder / "vocab.txt").write_text("[PAD]\n[MASK]\n")
    _link_to_blobs(folder)


TOKENIZER_NAMES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"]


@pytest.mark.parametrize("read", ["tokenizer", "model"])
@pytest.mark.parametrize(
    "names", [*([n] for n in TOKENIZER_NAMES), TOKENIZER_NAMES], ids=[*TOKENIZER_NAMES, "all"]
)
def test_a_tokenizer_file_whose_blob_is_gone_names_the_download_of_its_commit(
    tmp_path, monkeypatch, read, names
):
    """Before, tokenizer.json gone was "has tokenizer_config.json but no tokenizer.json; ... copy the
    tokenizer.json that belongs with it"; tokenizer_config.json gone loaded a tokenizer without its
    special tokens, and the other files or all of them gone loaded silently (`load_pretrained`: a model
    without a tokenizer) or "holds no tokenizer files". The line names the first file gone."""
    from encoderlab.data.tokenizer import load_tokenizer

    storage = cache_two_commits(tmp_path, monkeypatch, _cached_with_tokenizer_files)
    links = [_drop_blob(storage, SHA_B, name) for name in names]
    with pytest.raises(UserError) as refused:
        (load_tokenizer if read == "tokenizer" else load_pretrained)(HUB_ID)
    assert str(refused.value) == _expected(min(links), SHA_B)
