"""Transplants copy exactly the chosen tensors, reproduce A when everything is taken, and refuse
mismatched models and out-of-range layers with one line."""

from __future__ import annotations

import json
import re

import pytest
import torch
from analysis_helpers import make_adapter, make_model

from encoderlab.analysis.transplant import (
    TransplantSpec,
    format_layers,
    layer_groups,
    parse_layers,
    save_transplant,
    sweep_specs,
    transplant,
    transplant_sweep,
)
from encoderlab.errors import UserError
from encoderlab.model.io import is_model_folder, load_model_folder


def _source(key: str, spec: TransplantSpec) -> str:
    """Where a key must come from, written independently of the implementation's module table."""
    if key.startswith("embed_tokens"):
        return "A" if spec.embeddings else "B"
    if key.startswith(("norm.", "lm_head.")):
        return "A" if spec.head else "B"
    layer, rest = int(key.split(".")[1]), key.split(".", 2)[2]
    if layer not in spec.layers:
        return "B"
    attention = rest.startswith(("self_attn", "input_layernorm"))
    return "A" if spec.part == "block" or (spec.part == "attention") == attention else "B"


TIED = {"hf.cls.predictions.decoder.weight", "hf.decoder.weight"}  # adapters' copies of the word embedding


def _adapted_source(key: str, spec: TransplantSpec) -> str:
    """The same for BERT and ModernBERT keys (`hf.bert.encoder.layer.N.attention...`, `hf.model.layers.N.attn...`)."""
    block = re.search(r"(?:encoder\.layer|\.layers)\.(\d+)\.(\w+)", key)
    if block:
        layer, sub = int(block[1]), block[2]
        if layer not in spec.layers:
            return "B"
        attention = sub in ("attention", "attn", "attn_norm")
        return "A" if spec.part == "block" or (spec.part == "attention") == attention else "B"
    if ".embeddings." in key or key in TIED:
        return "A" if spec.embeddings else "B"
    return "A" if spec.head else "B"  # final norm, prediction head, decoder bias


FAMILIES = {
    "encoder": (lambda seed: make_model(seed, qk_norm=True), _source),
    "bert": (lambda seed: make_adapter("bert", seed), _adapted_source),
    "modernbert": (lambda seed: make_adapter("modernbert", seed), _adapted_source),
}


SPECS = [
    TransplantSpec(layers=(1,)),
    TransplantSpec(layers=(0, 2), part="attention"),
    TransplantSpec(layers=(0, 1, 2), part="mlp", head=True),
    TransplantSpec(layers=(2,), embeddings=True),
    TransplantSpec(layers=(0, 2), part="mlp", embeddings=True, head=True),
]


@pytest.mark.parametrize(
    "family,spec",
    # the adapters tie their LM head to the embedding, so they take both or neither
    [(f, s) for f in FAMILIES for s in SPECS if f == "encoder" or s.embeddings == s.head],
    ids=lambda x: x if isinstance(x, str) else x.describe(),
)
def test_state_dict_is_a_where_chosen_and_b_elsewhere(family, spec):
    make, source = FAMILIES[family]
    a, b = make(0), make(1)
    out = transplant(a, b, spec).state_dict()
    sa, sb = a.state_dict(), b.state_dict()
    assert set(out) == set(sb)
    sources = {k: source(k, spec) for k in out}
    assert "A" in sources.values() and "B" in sources.values()
    for key, tensor in out.items():
        expected = sa[key] if sources[key] == "A" else sb[key]
        assert torch.equal(tensor, expected), key
    assert all(torch.equal(v, sb[k]) for k, v in b.state_dict().items())  # B untouched


def test_transplanting_everything_reproduces_a_and_nothing_outside_layers_reproduces_b():
    a, b = make_model(0), make_model(1)
    ids = torch.randint(5, 65, (2, 9))
    full = transplant(a, b, TransplantSpec(layers=(0, 1, 2), embeddings=True, head=True))
    expect = a.lm_logits(a(ids).last_hidden_state)
    assert torch.equal(full.lm_logits(full(ids).last_hidden_state), expect)
    blocks_only = transplant(a, b, TransplantSpec(layers=(0, 1, 2)))
    assert not torch.allclose(blocks_only(ids).last_hidden_state, a(ids).last_hidden_state)
    attention_then_mlp = transplant(
        a,
        transplant(a, b, TransplantSpec(layers=(0, 1, 2), part="attention")),
        TransplantSpec(layers=(0, 1, 2), part="mlp"),
    )
    # The two parts partition a block: taking both equals taking the blocks.
    assert torch.equal(attention_then_mlp(ids).last_hidden_state, blocks_only(ids).last_hidden_state)


def test_saved_transplant_is_a_model_folder_with_provenance(tmp_path, tokenizer):
    a, b = make_model(0), make_model(1)
    spec = TransplantSpec(layers=(0, 1), part="mlp")
    out = save_transplant(a, b, spec, tmp_path / "t", tokenizer=tokenizer, sources={"a": "clm", "b": "mlm"})
    assert is_model_folder(out) and (out / "tokenizer.json").is_file()
    loaded = load_model_folder(out)
    for key, tensor in transplant(a, b, spec).state_dict().items():
        assert torch.equal(loaded.state_dict()[key], tensor)
    record = json.loads((out / "transplant.json").read_text())
    assert record["spec"]["layers"] == [0, 1] and record["sources"] == {"a": "clm", "b": "mlm"}


def test_tied_models_need_embeddings_and_head_together():
    a, b = make_model(0, tie_embeddings=True), make_model(1, tie_embeddings=True)
    with pytest.raises(
        UserError, match=r"take both or neither \(pass --embeddings and --head together, or neither;"
    ):
        transplant(a, b, TransplantSpec(layers=(0,), head=True))
    both = transplant(a, b, TransplantSpec(layers=(0,), embeddings=True, head=True))
    assert torch.equal(both.lm_head.weight, a.embed_tokens.weight)


@pytest.mark.parametrize(
    "b_overrides,message",
    [
        ({"hidden_size": 64}, "hidden_size 32 vs 64"),
        ({"n_layers": 4}, "n_layers 3 vs 4"),
        ({"qk_norm": True}, "qk_norm"),
    ],
)
def test_different_architectures_are_refused(b_overrides, message):
    with pytest.raises(UserError, match=message):
        transplant(make_model(0), make_model(1, **b_overrides), TransplantSpec(layers=(0,)))


@pytest.mark.parametrize("family", ["bert", "modernbert"])
def test_adapters_of_other_shapes_are_refused_by_their_transformers_config(family):
    """An adapter's architecture is its transformers config (what its folder stores), compared key by key."""
    with pytest.raises(UserError, match="intermediate_size 64 vs 96|intermediate_size 48 vs 96"):
        transplant(
            make_adapter(family, 0),
            make_adapter(family, 1, intermediate_size=96),
            TransplantSpec(layers=(0,)),
        )
    transplant(make_adapter(family, 0), make_adapter(family, 1), TransplantSpec(layers=(0,)))


def test_models_differing_only_in_token_ids_are_compatible():
    transplant(make_model(0, pad_id=0), make_model(1, pad_id=3), TransplantSpec(layers=(0,)))


@pytest.mark.parametrize(
    "text,message",
    [
        ("0-3", "layer 3 is out of range: the models have 3 layers"),
        ("2-1", "runs backwards"),
        ("a-b", "not valid"),
    ],
)
def test_bad_layer_ranges_are_one_line_errors(text, message):
    with pytest.raises(UserError, match=message) as exc:
        parse_layers(text, 3)
    assert "\n" not in str(exc.value)


def test_layer_parsing_and_sweeps():
    assert parse_layers("0-2,5, 7", 8) == (0, 1, 2, 5, 7)
    assert format_layers((0, 1, 2, 5)) == "layers 0-2,5"
    assert layer_groups(22) == [
        tuple(range(0, 8)),
        tuple(range(8, 15)),
        tuple(range(15, 22)),
    ]  # the paper's split
    names = [name for name, _ in sweep_specs(22, "all")]
    assert names == ["layers-0-7", "layers-8-14", "layers-15-21", "all-attention", "all-mlp"]
    assert [s.layers for _, s in sweep_specs(3, "layers")] == [(0,), (1,), (2,)]
    with pytest.raises(UserError, match="out of range"):
        transplant(make_model(0), make_model(1), TransplantSpec(layers=(3,)))


@pytest.mark.parametrize("groups", [0, 5])
def test_a_sweep_into_more_groups_than_layers_or_none_is_one_line(groups):
    with pytest.raises(UserError, match=f"--groups {groups} cannot split the model's 4 layers"):
        sweep_specs(4, "groups", groups)


def test_freezing_presets_name_the_same_layers_as_the_detour_freeze_recipes():
    assert parse_layers("paper2-low", 22) == tuple(range(0, 8))
    assert parse_layers("paper2-mid", 22) == tuple(range(8, 15))
    for n in (4, 12, 22, 28):  # the sweep's groups are the freezing groups at every depth
        assert layer_groups(n) == [parse_layers(f"paper2-{g}", n) for g in ("low", "mid", "late")]


def test_sweep_saves_every_transplant_and_scores_the_gap_recovered(tmp_path, tokenizer):
    a, b = make_model(0), make_model(1)

    def score(model):  # a score that only layer 0's MLP decides: the expected shares are exact
        return float(model.layers[0].mlp.down_proj.weight.detach().sum())

    rows = transplant_sweep(a, b, sweep_specs(3, "all"), tmp_path, tokenizer=tokenizer, score=score)
    by_name = {r["name"]: r for r in rows}
    assert by_name["A"]["accuracy"] == score(a) and by_name["B"]["accuracy"] == score(b)
    shares = {r["name"]: r["gap_recovered"] for r in rows if "gap_recovered" in r}
    assert shares == pytest.approx(
        {"layers-0-0": 1.0, "layers-1-1": 0.0, "layers-2-2": 0.0, "all-attention": 0.0, "all-mlp": 1.0}
    )
    assert all(is_model_folder(tmp_path / name) for name in shares)
