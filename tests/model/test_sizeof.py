"""A model folder's size from its files alone (`model/sizeof.py`): parameters from the safetensors
headers against the loaded model's own count, blocks from its config, and files that are no
safetensors giving no count rather than a wrong one."""

from __future__ import annotations

import json

import pytest
from model_fixtures import bert_config, make_model, save_tiny_tokenizer

from encoderlab.model.io import save_model_folder
from encoderlab.model.sizeof import header_params, stored_size


def _bert(folder, **kwargs):
    from transformers import BertForMaskedLM

    model = BertForMaskedLM(bert_config())
    model.save_pretrained(str(folder), **kwargs)
    return model


@pytest.mark.parametrize("shards", [None, "20KB"], ids=["one-file", "sharded"])
def test_a_transformers_folder_counts_the_parameters_transformers_builds(tmp_path, shards):
    model = _bert(tmp_path, **({"max_shard_size": shards} if shards else {}))
    assert (len(list(tmp_path.glob("*.safetensors"))) > 1) == (shards is not None)
    size = stored_size(tmp_path)
    assert size.params == sum(p.numel() for p in model.parameters())  # tied head counted once
    assert size.layers == 2


def test_an_encoderlab_model_folder_and_its_run_count_the_encoders_parameters(tmp_path):
    model = make_model()
    save_model_folder(model, tmp_path / "run" / "final", save_tiny_tokenizer(tmp_path / "tok"))
    expected = sum(p.numel() for p in model.parameters())
    assert stored_size(tmp_path / "run" / "final").params == expected
    assert stored_size(tmp_path / "run") == stored_size(tmp_path / "run" / "final")  # a run: its final model
    assert stored_size(tmp_path / "run").layers == model.config.n_layers


def test_files_that_are_no_safetensors_give_no_count(tmp_path):
    _bert(tmp_path)
    (weights,) = tmp_path.glob("*.safetensors")
    good = header_params(weights)
    assert good and good > 0
    data = weights.read_bytes()
    cases = {
        "truncated": data[:20],
        "huge-length": (2**62).to_bytes(8, "little") + data[8:],
        "not-json": len(b"{oops").to_bytes(8, "little") + b"{oops",
    }
    shape = json.dumps({"w": {"dtype": "F32", "shape": ["2"], "data_offsets": [0, 8]}}).encode()
    cases["bad-shape"] = len(shape).to_bytes(8, "little") + shape
    for name, raw in cases.items():
        weights.write_bytes(raw)
        assert header_params(weights) is None, name
        assert stored_size(tmp_path).params is None, name
    weights.unlink()  # configs only (a hub snapshot whose weights were never fetched)
    assert stored_size(tmp_path).params is None and stored_size(tmp_path).layers == 2
    assert stored_size(tmp_path / "nothing") is None
