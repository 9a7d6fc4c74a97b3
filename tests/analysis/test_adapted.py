"""Transplants, features, probes and CKA on adapted models: tiny random BERT and ModernBERT built
by transformers from configs, reached through the same `model.layers` that freezing uses."""

from __future__ import annotations

import copy
import json
import random

import pytest
import torch
from analysis_helpers import WORDS, make_adapter, make_model, make_texts
from tests.model.model_fixtures import ADAPTED_FAMILIES
from tests.reliability.errors_doc import assert_printed_as_documented

from encoderlab.analysis.cka import compare
from encoderlab.analysis.features import Encoding, block_outputs, pooled_features
from encoderlab.analysis.probe import load_task, probe_model
from encoderlab.analysis.transplant import (
    TransplantSpec,
    save_transplant,
    transplant,
)
from encoderlab.cli import main
from encoderlab.errors import UserError
from encoderlab.model.io import is_model_folder, load_model_folder, save_model_folder

FINAL_NORM = {
    "modernbert": "hf.model.final_norm",
    "roberta-prelayernorm": "hf.roberta_prelayernorm.LayerNorm",
}
"""The pre-norm families' norm on the body's output, which transformers' `hidden_states[-1]` includes."""
SHARED = ["albert"]  # one layer applied at every depth: transplants of some layers are refused
FAMILIES = [f for f in ADAPTED_FAMILIES if f not in SHARED]


def _ids(n: int = 12) -> torch.Tensor:
    return torch.randint(5, 65, (2, n), generator=torch.Generator().manual_seed(7))


def _logits(model, ids):
    with torch.no_grad():
        return model.lm_logits(model(ids).last_hidden_state)


@pytest.mark.parametrize("family", [*FAMILIES, *SHARED])
def test_everything_reproduces_a_and_the_parts_partition_each_block(family):
    a, b = make_adapter(family, 0), make_adapter(family, 1)
    ids = _ids()
    everything = TransplantSpec(layers=(0, 1, 2), embeddings=True, head=True)
    assert torch.equal(_logits(transplant(a, b, everything), ids), _logits(a, ids))
    blocks = transplant(a, b, TransplantSpec(layers=(0, 1, 2)))
    assert not torch.allclose(_logits(blocks, ids), _logits(a, ids))
    halves = transplant(
        a,
        transplant(a, b, TransplantSpec(layers=(0, 1, 2), part="attention")),
        TransplantSpec(layers=(0, 1, 2), part="mlp"),
    )
    assert torch.equal(_logits(halves, ids), _logits(blocks, ids))
    anatomy = b.anatomy
    for block in b.layers:  # attention and MLP parts: disjoint, and together the whole block
        att = {id(p) for n in anatomy.attention for p in block.get_submodule(n).parameters()}
        mlp = {id(p) for n in anatomy.mlp for p in block.get_submodule(n).parameters()}
        assert not att & mlp and att | mlp == {id(p) for p in block.parameters()}


@pytest.mark.parametrize("family", FAMILIES)
def test_tied_head_needs_the_embeddings_and_saved_transplants_reload(family, tmp_path, tokenizer):
    a, b = make_adapter(family, 0), make_adapter(family, 1)
    with pytest.raises(UserError, match="take both or neither"):
        transplant(a, b, TransplantSpec(layers=(0,), head=True))
    spec = TransplantSpec(layers=(0, 2), part="attention")
    folder = save_transplant(a, b, spec, tmp_path / "t", tokenizer=tokenizer, sources={"a": "x", "b": "y"})
    loaded = load_model_folder(folder)
    assert type(loaded) is type(b) and is_model_folder(folder)
    assert torch.equal(_logits(loaded, _ids()), _logits(transplant(a, b, spec), _ids()))
    assert json.loads((folder / "transplant.json").read_text())["spec"]["part"] == "attention"


@pytest.mark.parametrize(
    "a,b,message",
    [
        (lambda: make_adapter("bert", 0), lambda: make_adapter("modernbert", 1), r"\(bert vs modernbert\)"),
        (lambda: make_model(0), lambda: make_adapter("bert", 1), r"\(encoderlab vs bert\)"),
        (
            lambda: make_adapter("bert", 0),
            lambda: make_adapter("bert", 1, intermediate_size=48),
            "intermediate_size 64 vs 48",
        ),
        (
            lambda: make_adapter("modernbert", 0),
            lambda: make_adapter("modernbert", 1, layer_types=["full_attention"] * 3),
            "layer_types",
        ),
    ],
)
def test_different_architectures_are_refused_in_one_line(a, b, message):
    with pytest.raises(UserError, match=message) as exc:
        transplant(a(), b(), TransplantSpec(layers=(0,)))
    assert "\n" not in str(exc.value)


def test_token_ids_alone_do_not_block_a_transplant():
    transplant(make_adapter("bert", 0), make_adapter("bert", 1, pad_token_id=1), TransplantSpec(layers=(0,)))


@pytest.mark.parametrize("family", ["encoder", *FAMILIES, *SHARED])
def test_block_outputs_are_each_blocks_own_output(family):
    """Layer l is the output of `model.layers[l]` for every class. ModernBERT's and
    RoBERTa-PreLayerNorm's `hidden_states` end with the final norm applied; the last block's own output
    is the input of that norm."""
    model = make_model(0) if family == "encoder" else make_adapter(family, 0)
    ids, mask = _ids(), torch.ones(2, 12, dtype=torch.bool)
    with torch.no_grad():
        outs = block_outputs(model, ids, mask, "bidirectional")
        states = model(ids, padding_mask=mask, output_hidden_states=True)
    assert len(outs) == len(model.layers) == 3
    for layer in range(2):
        torch.testing.assert_close(outs[layer], states.hidden_states[layer + 1])
    if family in FINAL_NORM:
        assert not torch.allclose(outs[-1], states.hidden_states[-1])
        with torch.no_grad():
            normed = model.get_submodule(FINAL_NORM[family])(outs[-1])
        torch.testing.assert_close(normed, states.last_hidden_state)
    else:
        torch.testing.assert_close(outs[-1], states.hidden_states[-1])


@pytest.mark.parametrize("family", sorted(FINAL_NORM))
def test_last_layer_features_are_the_last_blocks_output(family, tokenizer):
    """Pooled features of a pre-norm model's last layer (ModernBERT, RoBERTa-PreLayerNorm) are the mean
    of its last block's output, not of the final norm's (the reference switches the final norm off and
    reads the model's output)."""
    model = make_adapter(family, 0)
    texts = ["w1 w2 w3", "w4 w5 w6 w7 w8 w9 w10 w11 w12 w13"]
    feats = pooled_features(model, tokenizer, texts, Encoding(batch_size=2))
    bare = copy.deepcopy(model)
    parent, name = FINAL_NORM[family].rsplit(".", 1)
    setattr(bare.get_submodule(parent), name, torch.nn.Identity())
    for i, text in enumerate(texts):
        ids = tokenizer(text, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            last = bare(ids).last_hidden_state[0].double().mean(0)
        torch.testing.assert_close(feats[-1][i], last, rtol=1e-5, atol=1e-6)


def _topic_task(tmp_path):
    rng = random.Random(0)
    topics = [WORDS[0:20], WORDS[20:40], WORDS[40:60]]
    rows = [
        {"id": str(i), "text": " ".join(rng.choices(topics[i % 3], k=6)), "meta": {"label": f"t{i % 3}"}}
        for i in range(120)
    ]
    path = tmp_path / "seq.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return path


@pytest.mark.parametrize("family", [*FAMILIES, *SHARED])
def test_probes_and_cka_run_on_adapted_models(family, tmp_path, tokenizer):
    model = make_adapter(family, 0)
    rows = probe_model(model, tokenizer, load_task(str(_topic_task(tmp_path))))
    assert [r.layer for r in rows] == [0, 1, 2]
    assert max(r.accuracy for r in rows) > 80  # chance 33: topic words are linearly readable
    texts = make_texts(60)
    same = compare((model, tokenizer), (model, tokenizer), texts, n=50, seeds=(42,))
    assert all(r.cka == pytest.approx(1.0) for r in same.layers)
    other = compare((make_adapter(family, 1), tokenizer), (model, tokenizer), texts, n=50, seeds=(42,))
    assert all(0 < r.divergence < 1 for r in other.layers)


def test_transplant_sweep_command_on_modernbert_folders(tmp_path, tokenizer):
    a = save_model_folder(make_adapter("modernbert", 0), tmp_path / "a", tokenizer=tokenizer)
    b = save_model_folder(make_adapter("modernbert", 1), tmp_path / "b", tokenizer=tokenizer)
    out = tmp_path / "sweep"
    task = _topic_task(tmp_path)
    main(
        [
            "analyze",
            "transplant",
            str(a),
            str(b),
            "--sweep",
            "all",
            "--probe-task",
            str(task),
            "--out",
            str(out),
        ]
    )
    rows = json.loads((out / "transplant_sweep.json").read_text())
    assert [r["name"] for r in rows] == [
        "A",
        "B",
        "layers-0-0",
        "layers-1-1",
        "layers-2-2",
        "all-attention",
        "all-mlp",
    ]
    assert all(0 <= r["accuracy"] <= 100 for r in rows)
    assert type(load_model_folder(out / "all-mlp")).__name__ == "ModernBertAdapter"


def test_a_transplant_of_some_of_albert_s_shared_layers_is_refused_and_writes_nothing(
    tmp_path, tokenizer, capsys
):
    """ALBERT's three layers are one set of weights applied three times: a transplant of layer 0 would
    copy all three. One line, before any folder is written, for one transplant and for a sweep of single
    layers; all layers (or the parts sweep, attention and MLP over all layers) still go through."""
    a = save_model_folder(make_adapter("albert", 0), tmp_path / "a", tokenizer=tokenizer)
    b = save_model_folder(make_adapter("albert", 1), tmp_path / "b", tokenizer=tokenizer)
    shared = (
        "takes layer 0 but not layer 1, which runs the same weights (albert's layers share their weights across "
        "depth), so one cannot be transplanted alone; choose all of layers 0-2 or none of them"
    )
    refused = {
        ("--layers", "0"): f"the transplant {shared}",
        (
            "--sweep",
            "layers",
        ): f"--sweep layers: its transplant of layer 0 {shared}, or sweep the attention and "
        "MLP parts of every layer (--sweep parts)",
    }
    for (flag, value), line in refused.items():
        out = tmp_path / f"t{flag}"
        with pytest.raises(SystemExit) as exc:
            main(["analyze", "transplant", str(a), str(b), flag, value, "--out", str(out)])
        err = capsys.readouterr().err.strip()
        assert exc.value.code == 2 and err == f"encoderlab: error: {line}", err
        assert not out.exists()
        if flag == "--layers":
            assert_printed_as_documented("transplant-shared-layers", err, tmp_path)
    main(["analyze", "transplant", str(a), str(b), "--layers", "0-2", "--out", str(tmp_path / "all")])
    main(["analyze", "transplant", str(a), str(b), "--sweep", "parts", "--out", str(tmp_path / "parts")])
    assert type(load_model_folder(tmp_path / "parts" / "all-mlp")).__name__ == "AlbertAdapter"
