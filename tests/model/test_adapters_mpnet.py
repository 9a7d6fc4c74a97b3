"""MPNet checkpoints (`model_type` "mpnet") behind the LanguageModel protocol, against transformers'
`MPNetForMaskedLM` and `MPNetModel`.

The sentence-transformers folder is laid out as sentence-transformers/all-mpnet-base-v2 is on the hub
(main as listed on 2025-03-06 in github.com/Atharva2099/WikiFace, HF_listings/
sentence-transformers_all-mpnet-base-v2/model_info.md at commit f69afa6bbcd1fad90d728ee0abedba5bf21cad7d):
  * config.json with `architectures` ["MPNetForMaskedLM"] but `MPNetModel` weights: the body and its
    pooler, no MLM head, as model.safetensors (and pytorch_model.bin, onnx/, openvino/);
  * the sentence-transformers files: modules.json (Transformer, Pooling in 1_Pooling, Normalize),
    1_Pooling/config.json (mean pooling), sentence_bert_config.json (max_seq_length 384),
    config_sentence_transformers.json, and the training's data_config.json and train_script.py;
  * MPNet's WordPiece tokenizer (vocab.txt, tokenizer.json, tokenizer_config.json,
    special_tokens_map.json: <s> 0, <pad> 1, </s> 2, [UNK], <mask> last).
Field values are the repo's where the fixture can keep them (pad id 1, positions 2 beyond the usable
count, layer_norm_eps 1e-5), at a tiny width.

Causal mode has no transformers decoder to compare with: it is checked against transformers' class given
the causal 4D additive mask (which MPNet takes as is) and, independently, for one layer against the
bidirectional output of each prefix.
"""

from __future__ import annotations

import json

import pytest
import torch
from model_fixtures import (
    VOCAB,
    exported_gap,
    logits,
    mpnet_config,
    packed_minus_alone,
    randomize,
    serve_hub_repo,
)

from encoderlab.model.hf_mpnet import MPNetAdapter
from encoderlab.model.hub import load_pretrained

TOL = 1e-5
HUB_ID = "sentence-transformers/all-mpnet-base-v2"
MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
]
POOLING = {
    "word_embedding_dimension": 32,
    "pooling_mode_cls_token": False,
    "pooling_mode_mean_tokens": True,
    "pooling_mode_max_tokens": False,
    "pooling_mode_mean_sqrt_len_tokens": False,
}


def _tokenizer(folder) -> None:
    """MPNet's tokenizer files in miniature (VOCAB words: the specials, then words, <mask> last)."""
    from transformers import MPNetTokenizer

    words = ["<s>", "<pad>", "</s>", "<unk>", "[UNK]", "the", "cat", "sat", "on", "mat"]
    words += [f"w{i}" for i in range(VOCAB - len(words) - 1)] + ["<mask>"]
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    MPNetTokenizer(vocab=str(folder / "vocab.txt"), do_lower_case=True).save_pretrained(str(folder))


def _config(**overrides):
    return mpnet_config(layer_norm_eps=1e-5, architectures=["MPNetForMaskedLM"], **overrides)


@pytest.fixture(scope="module")
def mlm(tmp_path_factory):
    """microsoft/mpnet-base's kind: a masked LM with its head."""
    from transformers import MPNetForMaskedLM

    folder = tmp_path_factory.mktemp("mpnet_mlm")
    randomize(MPNetForMaskedLM(_config())).save_pretrained(str(folder))
    _tokenizer(folder)
    return folder


def _sentence_repo(root):
    """all-mpnet-base-v2's files: `MPNetModel` weights (pooler included) under the masked LM's config."""
    from safetensors.torch import save_file
    from transformers import MPNetModel

    root.mkdir(parents=True, exist_ok=True)
    body = randomize(MPNetModel(_config()))
    state = {k: v.contiguous() for k, v in body.state_dict().items()}
    save_file(state, str(root / "model.safetensors"))
    torch.save(state, root / "pytorch_model.bin")
    body.config.save_pretrained(str(root))
    _tokenizer(root)
    (root / "modules.json").write_text(json.dumps(MODULES, indent=2))
    (root / "1_Pooling").mkdir()
    (root / "1_Pooling" / "config.json").write_text(json.dumps(POOLING, indent=2))
    (root / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": 384, "do_lower_case": False})
    )
    versions = {"sentence_transformers": "2.0.0", "transformers": "4.6.1", "pytorch": "1.8.1"}
    (root / "config_sentence_transformers.json").write_text(json.dumps({"__version__": versions}))
    (root / "data_config.json").write_text(
        json.dumps([{"name": "s2orc_title_abstract.jsonl.gz", "lines": 1}])
    )
    (root / "train_script.py").write_text("# the sprint's training script\n")
    for other in ("onnx/model.onnx", "openvino/openvino_model.bin", "openvino/openvino_model.xml"):
        (root / other).parent.mkdir(exist_ok=True)
        (root / other).write_bytes(b"not for encoderlab")
    return root


@pytest.fixture
def ids():
    return torch.randint(5, VOCAB, (2, 20), generator=torch.Generator().manual_seed(4))


def _reference(folder, cls="MPNetForMaskedLM"):
    import transformers

    return getattr(transformers, cls).from_pretrained(str(folder)).eval()


def test_a_masked_lm_matches_transformers_bidirectional_padded_and_under_a_causal_4d_mask(mlm, ids):
    loaded = load_pretrained(mlm)
    model = loaded.model
    assert type(model) is MPNetAdapter and loaded.family == "mpnet" and loaded.notes == []
    assert model.segment_types == 1 and model.attn_impl == "eager" and model.config.max_seq_len == 64
    pad = torch.ones_like(ids, dtype=torch.bool)
    pad[1, 13:] = False
    ref = _reference(mlm)
    causal = torch.zeros(20, 20).masked_fill(~torch.ones(20, 20, dtype=torch.bool).tril(), torch.finfo().min)
    with torch.no_grad():
        assert (logits(model, ids) - ref(input_ids=ids).logits).abs().max() <= TOL
        padded = ref(input_ids=ids, attention_mask=pad.long()).logits
        expected = ref(input_ids=ids, attention_mask=causal[None, None].expand(2, 1, 20, 20)).logits
    assert (logits(model, ids, padding_mask=pad) - padded)[pad].abs().max() <= TOL
    assert (logits(model, ids, attention_mode="causal") - expected).abs().max() <= TOL


def test_causal_position_is_the_bidirectional_output_of_its_prefix(tmp_path):
    """The relative bias is computed from distances inside the model, so this is the check that a causal
    mask leaves it right: for one layer, position i sees exactly what the prefix ending at i sees."""
    from transformers import MPNetForMaskedLM

    randomize(MPNetForMaskedLM(_config(num_hidden_layers=1))).save_pretrained(str(tmp_path / "one"))
    _tokenizer(tmp_path / "one")
    model, ref = load_pretrained(tmp_path / "one").model, _reference(tmp_path / "one")
    row = torch.randint(5, VOCAB, (1, 12), generator=torch.Generator().manual_seed(2))
    causal = logits(model, row, attention_mode="causal")
    with torch.no_grad():
        prefixes = torch.stack([ref(input_ids=row[:, : i + 1]).logits[0, -1] for i in range(12)])
    assert (causal[0] - prefixes).abs().max() <= TOL
    assert (causal[0] - logits(model, row)[0]).abs().max() > 1e-3  # and it is not bidirectional


def test_positions_start_after_the_pad_id_mpnets_code_fixes_not_the_configs(tmp_path, ids):
    """Was: the shift read config.json's `pad_token_id`, but MPNet's embeddings number positions after a
    pad id of 1 whatever the config says; a config saying 0 got positions one short of transformers'
    (and `study plan` one usable position too many)."""
    from transformers import MPNetForMaskedLM

    from encoderlab.model.sources import usable_positions

    randomize(MPNetForMaskedLM(_config(pad_token_id=0))).save_pretrained(str(tmp_path / "pad0"))
    _tokenizer(tmp_path / "pad0")
    model = load_pretrained(tmp_path / "pad0").model
    given = torch.arange(20).expand(2, 20)
    with torch.no_grad():
        expected = _reference(tmp_path / "pad0")(input_ids=ids).logits
    assert (logits(model, ids, position_ids=given) - expected).abs().max() <= TOL
    raw = json.loads((tmp_path / "pad0" / "config.json").read_text())
    assert raw["pad_token_id"] == 0 and usable_positions(raw) == model.config.max_seq_len == 64


@pytest.mark.parametrize("mode", ["bidirectional", "causal"])
def test_packed_documents_equal_the_documents_alone(mlm, mode):
    assert packed_minus_alone(load_pretrained(mlm).model, mode) <= TOL


def test_round_trip_and_export(mlm, tmp_path, ids):
    assert exported_gap(mlm, tmp_path, ids, _reference) <= TOL


def test_the_sentence_transformers_hub_id_loads_its_body_carries_pooler_and_files_and_exports_them(
    tmp_path, monkeypatch, ids
):
    """all-mpnet-base-v2 through the download a hub id makes: its configs, safetensors and tokenizer are
    fetched (not the pickle, ONNX, OpenVINO or the script); the body equals `MPNetModel`'s, the MLM head is
    fresh with a note and the same on every load, and the export gives `MPNetModel` its pooler back and
    sentence-transformers its files."""
    from transformers import MPNetModel

    repo = _sentence_repo(tmp_path / "repo")
    fetched = serve_hub_repo(monkeypatch, tmp_path, HUB_ID, repo)
    loaded = load_pretrained(HUB_ID)
    assert sorted(fetched) == [
        "1_Pooling/config.json",
        "config.json",
        "config_sentence_transformers.json",
        "data_config.json",
        "model.safetensors",
        "modules.json",
        "sentence_bert_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.txt",
    ]
    assert loaded.family == "mpnet" and len(loaded.notes) == 1
    assert "MLM head freshly initialised" in loaded.notes[0]
    assert loaded.tokenizer("the cat")["input_ids"] == [0, 5, 6, 2] and loaded.spec.mask_id == VOCAB - 1
    assert set(loaded.model.sentence_files) == {
        "modules.json",
        "1_Pooling/config.json",
        "sentence_bert_config.json",
        "config_sentence_transformers.json",
    }
    reference = MPNetModel.from_pretrained(str(repo)).eval()
    with torch.no_grad():
        theirs = reference(input_ids=ids)
        ours = loaded.model(ids).last_hidden_state
    assert (ours - theirs.last_hidden_state).abs().max() <= TOL
    assert torch.equal(logits(load_pretrained(HUB_ID).model, ids), logits(loaded.model, ids))
    loaded.model.save_hf(tmp_path / "hf")
    exported = MPNetModel.from_pretrained(str(tmp_path / "hf")).eval()
    with torch.no_grad():
        again = exported(input_ids=ids)
    assert (again.pooler_output - theirs.pooler_output).abs().max() <= TOL
    assert json.loads((tmp_path / "hf" / "1_Pooling" / "config.json").read_text()) == POOLING
