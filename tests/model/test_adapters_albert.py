"""ALBERT checkpoints (`model_type` "albert") behind the LanguageModel protocol, against transformers'
`AlbertForMaskedLM`.

The hub folder is laid out as albert/albert-base-v2's main branch (commit 8e2f239, "Adds the tokenizer
configuration file (#6)", its tree page as stored by the docs search) holds its files: .gitattributes,
README.md, config.json (684 bytes), flax_model.msgpack, model.safetensors (47.4 MB, added by the
safetensors conversion, #2), pytorch_model.bin, rust_model.ot, spiece.model, tf_model.h5, tokenizer.json
(1.31 MB) and tokenizer_config.json (25 bytes; its content is not shown there: a `do_lower_case` flag is
written here). config.json holds its fields
beside the sizes (`architectures` ["AlbertForMaskedLM"], gelu_new, no dropout, one group of one layer,
`embedding_size` 128, pad 0, bos 2, eos 3: the values PaddleNLP's table of albert-base-v2 lists, code
index file id 21149179911, where the hub's own fields down_scale_factor, gap_size, net_structure_type and
num_memory_blocks appear in albert_chinese_base's config.json quoted in file id 9647982530), the masked
LM's weights with the pooler (`albert.pooler.*`, ALBERT's pretraining class had one), the SentencePiece
`spiece.model`, a tokenizer.json, and pytorch_model.bin, tf_model.h5, flax_model.msgpack, rust_model.ot
that a download leaves alone.

Causal mode has no transformers decoder flag: transformers' own class is run with `is_causal` set on
`AlbertAttention` (its SDPA path's causal kernel) and with a causal 4D additive mask.
"""

from __future__ import annotations

import json

import pytest
import torch
from model_fixtures import (
    VOCAB,
    albert_config,
    exported_gap,
    logits,
    packed_minus_alone,
    randomize,
    save_albert_tokenizer,
    serve_hub_repo,
)

from encoderlab.errors import UserError
from encoderlab.model.hf_albert import AlbertAdapter
from encoderlab.model.hub import load_pretrained

TOL = 1e-5
HUB_ID = "albert/albert-base-v2"
HUB_FIELDS = {  # albert-base-v2's config.json fields beside the sizes
    "architectures": ["AlbertForMaskedLM"],
    "bos_token_id": 2,
    "classifier_dropout_prob": 0.1,
    "down_scale_factor": 1,
    "eos_token_id": 3,
    "gap_size": 0,
    "hidden_act": "gelu_new",
    "initializer_range": 0.02,
    "inner_group_num": 1,
    "layer_norm_eps": 1e-12,
    "model_type": "albert",
    "net_structure_type": 0,
    "num_hidden_groups": 1,
    "num_memory_blocks": 0,
    "pad_token_id": 0,
    "type_vocab_size": 2,
}


def _write(folder, *, tokenizer_json: bool = False, base: bool = False, **overrides):
    """An albert-base-v2-style folder at a tiny size (no dropout, so logits compare exactly): the masked
    LM's weights and a pooler (or, `base`, `AlbertModel`'s: no MLM head), spiece.model, and with
    `tokenizer_json` the tokenizer.json transformers converts it into."""
    from safetensors.torch import save_file
    from transformers import AlbertForMaskedLM, AlbertModel, AutoTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    config = albert_config(**{k: v for k, v in HUB_FIELDS.items() if k != "architectures"} | overrides)
    model = randomize(AlbertForMaskedLM(config))
    body = randomize(AlbertModel(config), seed=1)  # for its pooler
    state = body.state_dict() if base else model.state_dict()
    prefix = "" if base else "albert."
    state |= {f"{prefix}pooler.{k}": v for k, v in body.pooler.state_dict().items()}
    save_file({k: v.clone().contiguous() for k, v in state.items()}, str(folder / "model.safetensors"))
    raw = {**HUB_FIELDS, **model.config.to_diff_dict()}  # an override wins
    raw = {k: v for k, v in raw.items() if k not in ("transformers_version", "dtype", "tie_word_embeddings")}
    (folder / "config.json").write_text(json.dumps(raw, indent=2))
    save_albert_tokenizer(folder)
    if tokenizer_json:
        AutoTokenizer.from_pretrained(str(folder)).backend_tokenizer.save(str(folder / "tokenizer.json"))
    return folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return _write(tmp_path_factory.mktemp("albert"))


@pytest.fixture
def ids():
    return torch.randint(5, VOCAB, (2, 20), generator=torch.Generator().manual_seed(4))


def _reference(folder, causal: bool = False):
    from transformers import AlbertForMaskedLM

    ref = AlbertForMaskedLM.from_pretrained(str(folder), attn_implementation="sdpa").eval()
    for group in ref.albert.encoder.albert_layer_groups:
        for layer in group.albert_layers:
            layer.attention.is_causal = causal
    return ref


def test_albert_matches_transformers_bidirectional_padded_with_token_types_and_causal(folder, ids):
    loaded = load_pretrained(folder)
    model = loaded.model
    assert type(model) is AlbertAdapter and loaded.family == "albert" and loaded.notes == []
    assert model.segment_types == 2 and model.config.max_seq_len == 64 and model.config.n_layers == 3
    shape = model.config.matmul_shape()
    assert shape.input_projection == 16 and shape.head_transform == 16  # embedding_size, both ways
    assert len(model.layers) == 3 and len(set(map(id, model.layers))) == 1  # one layer, three times
    assert set(model.carried.state_dict()) == {"albert.pooler.weight", "albert.pooler.bias"}
    pad = torch.ones_like(ids, dtype=torch.bool)
    pad[1, 13:] = False
    types = (torch.arange(20) >= 8).long().expand(2, 20)
    causal4d = torch.zeros(20, 20).masked_fill(
        ~torch.ones(20, 20, dtype=torch.bool).tril(), torch.finfo().min
    )
    with torch.no_grad():
        assert (logits(model, ids) - _reference(folder)(input_ids=ids).logits).abs().max() <= TOL
        padded = _reference(folder)(input_ids=ids, attention_mask=pad.long()).logits
        typed = _reference(folder)(input_ids=ids, token_type_ids=types).logits
        causal = _reference(folder, causal=True)(input_ids=ids).logits
        masked = _reference(folder)(
            input_ids=ids, attention_mask=causal4d[None, None].expand(2, 1, 20, 20)
        ).logits
    assert (logits(model, ids, padding_mask=pad) - padded)[pad].abs().max() <= TOL
    assert (logits(model, ids, segment_ids=types) - typed).abs().max() <= TOL
    assert (logits(model, ids, attention_mode="causal") - causal).abs().max() <= TOL
    assert (masked - causal).abs().max() <= TOL  # the 4D additive mask is taken as is
    assert (logits(model, ids) - causal).abs().max() > 1e-3  # and causal is not bidirectional


def test_hidden_states_are_each_application_of_the_shared_layer(folder, ids):
    model = load_pretrained(folder).model
    with torch.no_grad():
        states = model(ids, output_hidden_states=True).hidden_states
        theirs = _reference(folder).albert(input_ids=ids, output_hidden_states=True).hidden_states
    assert len(states) == 4 and all(torch.equal(a, b) for a, b in zip(states, theirs, strict=True))
    assert not torch.allclose(states[1], states[2])  # the same weights, applied again


@pytest.mark.parametrize("mode", ["bidirectional", "causal"])
def test_packed_documents_equal_the_documents_alone(folder, mode):
    assert packed_minus_alone(load_pretrained(folder).model, mode) <= TOL


def test_round_trip_and_export(folder, tmp_path, ids):
    assert exported_gap(folder, tmp_path, ids, _reference) <= TOL


def test_groups_without_sharing_load_and_match(tmp_path, ids):
    """num_hidden_groups = num_hidden_layers: a layer per application, no weights shared."""
    one_each = _write(tmp_path / "groups", num_hidden_groups=3)
    model = load_pretrained(one_each).model
    assert len(set(map(id, model.layers))) == 3
    with torch.no_grad():
        reference = _reference(one_each)(input_ids=ids).logits
    assert (logits(model, ids) - reference).abs().max() <= TOL


def test_a_base_checkpoint_gets_a_seeded_head_and_keeps_its_pooler(tmp_path, ids):
    base = _write(tmp_path / "base", base=True)
    first, again = load_pretrained(base), load_pretrained(base)
    assert any("MLM head freshly initialised" in n for n in first.notes)
    assert set(first.model.carried.state_dict()) == {"albert.pooler.weight", "albert.pooler.bias"}
    assert torch.equal(logits(first.model, ids), logits(again.model, ids))


def test_several_layers_per_group_are_refused_in_one_line(tmp_path):
    """inner_group_num 2 would run two blocks per application: the protocol's layers would lie."""
    folder = _write(tmp_path / "inner")  # transformers builds no checkpoint of two
    raw = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**raw, "inner_group_num": 2}))
    with pytest.raises(
        UserError,
        match=rf"^{folder}/config.json: inner_group_num 2 runs several ALBERT layers per application, ",
    ) as e:
        load_pretrained(folder)
    assert "\n" not in str(e.value)


def test_the_hub_id_loads_through_the_download(tmp_path, monkeypatch, ids):
    repo = _write(tmp_path / "repo", tokenizer_json=True)
    for other in (
        "pytorch_model.bin",
        "tf_model.h5",
        "flax_model.msgpack",
        "rust_model.ot",
        ".gitattributes",
    ):
        (repo / other).write_bytes(b"not for encoderlab")
    (repo / "README.md").write_text("# ALBERT Base v2\n")
    (repo / "tokenizer_config.json").write_text('{"do_lower_case": true}\n')
    fetched = serve_hub_repo(monkeypatch, tmp_path, HUB_ID, repo)
    loaded = load_pretrained(HUB_ID)
    assert sorted(fetched) == [
        "config.json",
        "model.safetensors",
        "spiece.model",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    assert loaded.family == "albert" and loaded.notes == []
    assert type(loaded.tokenizer).__name__ == "AlbertTokenizer"
    encoded = loaded.tokenizer("the cat")["input_ids"]
    assert encoded[0] == 2 and encoded[-1] == 3 and loaded.spec.mask_id == 4  # [CLS] ... [SEP], [MASK]
    with torch.no_grad():
        reference = _reference(repo)(input_ids=ids).logits
    assert (logits(loaded.model, ids) - reference).abs().max() <= TOL


def test_freezing_some_of_albert_s_shared_layers_is_refused_before_the_run_writes(folder, tmp_path, capsys):
    """Freezing layer 0 of a one-layer-shared ALBERT would freeze all three: one line, the run folder not
    made; all of them (or none) trains."""
    from tests.reliability.hostile_world import TINY_RUN
    from tests.reliability.test_hostile_inputs import assert_one_line, cli

    (tmp_path / "run.yaml").write_text(TINY_RUN.replace("{type: clm}", "{type: mlm}"))

    def pretrain(out, freeze):
        sets = [f"model.init={folder}", f"phases.0.freeze={freeze}", "data.synthetic_vocab=30"]
        return cli(["pretrain", "--config", tmp_path / "run.yaml", "--out", out, "--set", *sets], capsys)

    code, err = pretrain(tmp_path / "some", "0-1")
    assert_one_line(
        code,
        err,
        r"phase 0-mlm\d*: freeze spec '0-1' takes layer 0 but not layer 2, which runs the same weights "
        r"\(albert's layers share their weights across depth\), so one cannot be frozen alone; choose all "
        r"of layers 0-2 or none of them",
    )
    assert not (tmp_path / "some").exists()
    code, err = pretrain(tmp_path / "all", "0-2")
    assert code == 0, err
