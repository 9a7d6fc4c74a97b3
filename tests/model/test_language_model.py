"""Every model class satisfies the LanguageModel protocol, and its methods compute what the
callers computed before they stopped asking which class they hold.

The adapters are built from tiny random transformers configs (no files), the Encoder from a small
config. The loss is checked against transformers' own masked-LM loss for the adapters and against
the plain (unfused) head for the Encoder; the protocol's signatures are compared with each class's,
which `isinstance` on a runtime-checkable protocol cannot see.
"""

from __future__ import annotations

import inspect
import json

import pytest
import torch
import torch.nn.functional as F
from model_fixtures import (
    ADAPTED_FAMILIES,
    VOCAB,
    albert_config,
    bert_config,
    deberta_config,
    deberta_v1_config,
    distilbert_config,
    electra_config,
    make_model,
    modernbert_config,
    mpnet_config,
    randomize,
    roberta_config,
)

from encoderlab.data.synthetic import synthetic_spec
from encoderlab.model.hf_registry import ADAPTERS, hf_class
from encoderlab.model.protocol import LanguageModel, ModelShape
from encoderlab.objectives import IGNORE, lm_loss

ADAPTED = ADAPTED_FAMILIES
FAMILIES = ("encoder", *ADAPTED)
METHODS = (
    "forward",
    "lm_logits",
    "lm_loss",
    "set_attn_impl",
    "fsdp_units",
    "folder_state",
    "save_hf",
    "check_attention_mode",
)


def _model(family: str):
    if family == "encoder":
        return make_model(seed=3)
    configs = {
        "bert": bert_config,
        "roberta": roberta_config,
        "roberta-prelayernorm": lambda: roberta_config("RobertaPreLayerNormConfig"),
        "electra": electra_config,
        "distilbert": distilbert_config,
        "mpnet": mpnet_config,
        "albert": albert_config,
        "modernbert": modernbert_config,
    }
    config = {**configs, "deberta": deberta_v1_config, "deberta-v2": deberta_config}[family]()
    config._attn_implementation = ADAPTERS[family].attention_kernel
    return ADAPTERS[family](randomize(hf_class(family)(config)))


def _params(fn) -> list[tuple[str, object]]:
    return [(p.name, p.kind) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_model_class_satisfies_the_protocol_with_its_signatures(family):
    model = _model(family)
    assert isinstance(model, LanguageModel) and isinstance(model.config, ModelShape)
    for name in METHODS:
        assert _params(getattr(type(model), name)) == _params(getattr(LanguageModel, name)), name
    assert isinstance(model.layers, torch.nn.ModuleList) and len(model.layers) == model.config.n_layers


def test_a_module_without_the_methods_is_not_a_language_model():
    assert not isinstance(torch.nn.Linear(2, 2), LanguageModel)


def _targets(shape, seed=5):
    g = torch.Generator().manual_seed(seed)
    targets = torch.randint(5, VOCAB, shape, generator=g)
    targets[torch.rand(shape, generator=g) < 0.6] = IGNORE
    return targets


@pytest.mark.parametrize("family", ADAPTED)
def test_adapter_loss_is_transformers_masked_lm_loss(family):
    model = _model(family)
    ids = torch.randint(5, VOCAB, (2, 20), generator=torch.Generator().manual_seed(4))
    targets = _targets(ids.shape)
    with torch.no_grad():
        total, n = lm_loss(model, model(ids).last_hidden_state, targets)
        reference = model.hf(input_ids=ids, labels=targets).loss  # mean over the labelled positions
    assert n == int((targets != IGNORE).sum())
    assert torch.allclose(total / n, reference, atol=1e-5)


def test_encoder_loss_takes_the_fused_head_and_equals_the_plain_one():
    model = make_model(seed=3).train()
    hidden = torch.randn(30, model.config.hidden_size, requires_grad=True)
    targets = torch.randint(0, VOCAB, (30,), generator=torch.Generator().manual_seed(1))
    fused = model.lm_loss(hidden, targets)
    assert "LinearCrossEntropy" in type(fused.grad_fn).__name__
    plain = F.cross_entropy(model.lm_logits(hidden).float(), targets, reduction="sum")
    assert torch.allclose(fused, plain, rtol=1e-5)


@pytest.mark.parametrize("tied", [False, True])
def test_encoder_fsdp_units_and_folder_state_follow_tying(tied):
    model = make_model(tie_embeddings=tied)
    assert model.fsdp_units() == [*model.layers, *([] if tied else [model.lm_head])]
    state, meta = model.folder_state()
    assert ("lm_head.weight" in state) is not tied and meta["model"]["tie_embeddings"] is tied


@pytest.mark.parametrize(
    "family", ["bert", "roberta", "roberta-prelayernorm", "distilbert", "albert", "modernbert"]
)
def test_adapters_cannot_be_sharded_and_keep_sdpa(family):
    model = _model(family)
    assert model.fsdp_units() == []
    model.set_attn_impl("flex")
    assert model.attn_impl == "sdpa"
    state, meta = model.folder_state()
    assert meta["family"] == family and set(state) <= set(model.hf.state_dict())


@pytest.mark.parametrize("family", ADAPTED)
def test_positions_from_zero_are_where_transformers_numbers_a_row(family):
    """The table `study plan` reads without torch (`sources.POSITIONS_AFTER_PAD`, was held to the RoBERTa
    subclasses, which MPNet is not) must name exactly the families whose transformers class numbers a
    row's positions after the pad id: the adapter shifts encoderlab's positions from 0 by that table, so a
    family missing from it (or wrongly in it) gives other logits than transformers' own numbering."""
    model = _model(family)
    ids = torch.randint(5, VOCAB, (2, 20), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        own = model(ids).last_hidden_state  # transformers numbers the positions itself
        given = model(ids, position_ids=torch.arange(20).expand(2, 20)).last_hidden_state
        moved = model(ids, position_ids=torch.arange(20).expand(2, 20) + 1).last_hidden_state
    assert (own - given).abs().max() <= 1e-5
    if getattr(model.body.embeddings, "position_embeddings", None) is not None:  # a table of absolute ones
        assert (moved - given).abs().max() > 1e-3  # the positions reach the model (RoPE's, DeBERTa's: shifts)


def test_encoder_kernel_switch_changes_the_config_only():
    model = make_model()
    model.set_attn_impl("flex")
    assert model.attn_impl == "flex" == model.config.attn_impl
    model.set_attn_impl("sdpa")
    assert model.attn_impl == "sdpa"


@pytest.mark.parametrize("family", FAMILIES)
def test_hf_architecture_is_the_class_the_export_names(family, tmp_path):
    model = _model(family)
    model.save_hf(tmp_path, synthetic_spec(VOCAB))
    assert json.loads((tmp_path / "config.json").read_text())["architectures"] == [model.hf_architecture]


@pytest.mark.parametrize("family", FAMILIES)
def test_anatomy_partitions_each_block_and_names_the_embeddings_and_head(family):
    """A transplant takes what `anatomy` names: each block's attention and MLP parts must be disjoint
    and cover the block, and the embeddings and head must be modules holding the embedding and LM-head
    weights (found by value, as the transplant finds them by identity)."""
    model = _model(family)
    parts = model.anatomy
    for block in model.layers:
        att = {id(p) for n in parts.attention for p in block.get_submodule(n).parameters()}
        mlp = {id(p) for n in parts.mlp for p in block.get_submodule(n).parameters()}
        assert att and mlp and not att & mlp and att | mlp == {id(p) for p in block.parameters()}
    embeddings = [p for n in parts.embeddings for p in model.get_submodule(n).parameters()]
    head = [p for n in parts.head for p in model.get_submodule(n).parameters()]
    # a row per token (ELECTRA-small's rows are narrower than its blocks, projected into them)
    assert any(p.ndim == 2 and p.shape[0] == model.config.vocab_size for p in embeddings)
    assert not {id(p) for p in embeddings + head} & {id(p) for p in model.layers.parameters()}
    hidden = torch.randn(2, model.config.hidden_size)
    with torch.no_grad():
        assert model.lm_logits(hidden).abs().sum() > 0
        for p in head:  # the head is everything the LM logits are computed with
            p.zero_()
        assert torch.equal(model.lm_logits(hidden), torch.zeros(2, model.config.vocab_size))
