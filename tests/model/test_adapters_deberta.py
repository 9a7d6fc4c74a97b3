"""DeBERTa-v2/v3 checkpoints behind the LanguageModel protocol, against transformers' `DebertaV2ForMaskedLM`.

The v3 folder is laid out as microsoft/deberta-v3-base is on the hub: its config.json's fields (no
`legacy` key, `pos_att_type` as "p2c|c2p", no absolute positions, no token types;
https://huggingface.co/microsoft/deberta-v3-base/blob/e339e9c9cfc61aabba5c47ed41203af62f5b22cd/config.json)
at a tiny width, and weights holding the original MLM head (`lm_predictions.lm_head.*`) and the
replaced-token-detection head (`mask_predictions.*`) beside the body. Causal mode has no transformers
reference (the class has no decoder mode), so a one-layer model is checked against the direct
computation: position i under a causal mask is the bidirectional output of the prefix ending at i.
"""

from __future__ import annotations

import json

import pytest
import torch
from model_fixtures import (
    VOCAB,
    exported_gap,
    logits,
    packed_minus_alone,
    randomize,
    save_deberta_v3_tokenizer,
    save_tiny_tokenizer,
    serve_hub_repo,
)

from encoderlab.errors import UserError
from encoderlab.model.hf_deberta import DebertaV2Adapter
from encoderlab.model.hub import load_pretrained

TOL = 1e-5
V3 = {  # microsoft/deberta-v3-base's config.json fields, at a tiny size
    "model_type": "deberta-v2",
    "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 32,
    "initializer_range": 0.02,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
    "relative_attention": True,
    "position_buckets": 8,
    "norm_rel_ebd": "layer_norm",
    "share_att_key": True,
    "pos_att_type": "p2c|c2p",
    "layer_norm_eps": 1e-7,
    "max_relative_positions": -1,
    "position_biased_input": False,
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "type_vocab_size": 0,
    "vocab_size": VOCAB,
}
RTD_HEAD = {
    "dense.weight": (32, 32),
    "dense.bias": (32,),
    "LayerNorm.weight": (32,),
    "classifier.weight": (1, 32),
}


def _write(folder, raw: dict, legacy: bool, extra: dict | None = None, base: bool = False, spm: bool = False):
    """A checkpoint folder: config.json as `raw` (exactly), random weights with the head `legacy`
    names (or none, `base`), plus `extra` weights; the tiny tokenizer, or (`spm`) DeBERTa-v3's files."""
    from safetensors.torch import save_file
    from transformers import DebertaV2Config, DebertaV2ForMaskedLM

    folder.mkdir(parents=True, exist_ok=True)
    model = randomize(DebertaV2ForMaskedLM(DebertaV2Config(**{**raw, "legacy": legacy})))
    state = model.deberta.state_dict() if base else model.state_dict()
    state = {k: v.clone().contiguous() for k, v in state.items() if "decoder" not in k}  # tied copies
    save_file({**state, **(extra or {})}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(raw))
    save_deberta_v3_tokenizer(folder) if spm else save_tiny_tokenizer(folder)
    return folder


@pytest.fixture(scope="module")
def v3(tmp_path_factory):
    g = torch.Generator().manual_seed(9)
    rtd = {f"mask_predictions.{k}": torch.randn(s, generator=g) for k, s in RTD_HEAD.items()}
    return _write(tmp_path_factory.mktemp("v3"), V3, legacy=False, extra=rtd, spm=True)


@pytest.fixture
def ids():
    return torch.randint(5, VOCAB, (2, 20), generator=torch.Generator().manual_seed(4))


def _reference(folder, **config):
    from transformers import DebertaV2ForMaskedLM

    return DebertaV2ForMaskedLM.from_pretrained(str(folder), **config).eval()


def test_v3_keeps_its_own_head_and_matches_transformers(v3, ids):
    loaded = load_pretrained(v3)
    model = loaded.model
    assert isinstance(model, DebertaV2Adapter) and loaded.family == "deberta-v2" and not model.hf.legacy
    # The replaced-token-detection head is left out, with a note; the MLM head is the checkpoint's.
    assert len(loaded.notes) == 1 and loaded.notes[0].startswith(
        "4 weights of a head no masked LM uses left out"
    )
    ref = _reference(v3, legacy=False)
    pad = torch.ones_like(ids, dtype=torch.bool)
    pad[1, 13:] = False
    with torch.no_grad():
        assert (logits(model, ids) - ref(input_ids=ids).logits).abs().max() <= TOL
        padded = ref(input_ids=ids, attention_mask=pad.long()).logits
        # transformers' default (legacy) would have dropped that head for a fresh one
        assert (_reference(v3)(input_ids=ids).logits - ref(input_ids=ids).logits).abs().max() > 0.1
    assert (logits(model, ids, padding_mask=pad) - padded)[pad].abs().max() <= TOL
    assert model.config.max_seq_len == 64 and model.attn_impl == "eager"


def test_a_legacy_head_checkpoint_keeps_the_legacy_head(tmp_path, ids):
    folder = _write(tmp_path / "legacy", {**V3, "legacy": True}, legacy=True)
    loaded = load_pretrained(folder)
    assert loaded.model.hf.legacy and loaded.notes == []
    with torch.no_grad():
        assert (logits(loaded.model, ids) - _reference(folder)(input_ids=ids).logits).abs().max() <= TOL


def test_causal_position_is_the_bidirectional_output_of_its_prefix(tmp_path):
    folder = _write(tmp_path / "one", {**V3, "num_hidden_layers": 1}, legacy=False)
    model, ref = load_pretrained(folder).model, _reference(folder, legacy=False)
    row = torch.randint(5, VOCAB, (1, 12), generator=torch.Generator().manual_seed(2))
    causal = logits(model, row, attention_mode="causal")
    with torch.no_grad():
        prefixes = torch.stack([ref(input_ids=row[:, : i + 1]).logits[0, -1] for i in range(12)])
    assert (causal[0] - prefixes).abs().max() <= TOL


def test_causal_mode_never_sees_later_tokens(v3, ids):
    model = load_pretrained(v3).model
    changed = ids.clone()
    changed[:, 12:] = torch.randint(5, VOCAB, (2, 8), generator=torch.Generator().manual_seed(8))
    a, b = logits(model, ids, attention_mode="causal"), logits(model, changed, attention_mode="causal")
    assert (a[:, :12] - b[:, :12]).abs().max() <= TOL and (a[:, 12:] - b[:, 12:]).abs().max() > 1e-3
    assert (logits(model, ids)[:, :12] - a[:, :12]).abs().max() > 1e-3  # and it is not bidirectional


@pytest.mark.parametrize("mode", ["bidirectional", "causal"])
def test_packed_documents_equal_the_documents_alone(v3, mode):
    assert packed_minus_alone(load_pretrained(v3).model, mode) <= TOL


def test_a_convolution_checkpoint_matches_transformers_and_refuses_causal_mode(tmp_path, ids):
    # deberta-v2-xlarge's layout: absolute positions too, and a width-3 convolution after block 0
    raw = {
        **V3,
        "position_biased_input": True,
        "conv_kernel_size": 3,
        "conv_act": "gelu",
        "pos_att_type": ["p2c", "c2p"],
    }
    folder = _write(tmp_path / "conv", raw, legacy=False)
    model, ref = load_pretrained(folder).model, _reference(folder, legacy=False)
    pad = torch.ones_like(ids, dtype=torch.bool)
    pad[1, 13:] = False
    with torch.no_grad():
        expected = ref(input_ids=ids, attention_mask=pad.long()).logits
    assert (logits(model, ids, padding_mask=pad) - expected)[pad].abs().max() <= TOL
    with pytest.raises(
        UserError, match=r"convolution after block 0 \(conv_kernel_size 3\) that sees the next token"
    ):
        model(ids, attention_mode="causal")


def test_a_base_checkpoint_gets_the_same_fresh_head_on_every_load(tmp_path, ids):
    folder = _write(tmp_path / "base", V3, legacy=False, base=True)
    first, again = load_pretrained(folder), load_pretrained(folder)
    assert any("MLM head freshly initialised" in n for n in first.notes)
    assert torch.equal(logits(first.model, ids), logits(again.model, ids))


def test_round_trip_and_export_keep_the_head(v3, tmp_path, ids):
    assert (
        exported_gap(v3, tmp_path, ids, _reference) <= TOL
    )  # transformers reads the export with the same head, no flag needed


def test_added_token_rows_are_the_mean_in_the_embedding_and_the_head_bias(v3, ids):
    model = load_pretrained(v3).model
    emb = model.body.embeddings.word_embeddings.weight.detach().clone()
    bias = model.hf.lm_predictions.lm_head.bias.detach().clone()
    model.add_token_rows([VOCAB, VOCAB + 1, 7], mean_of=5)
    assert model.config.vocab_size == VOCAB + 2 and logits(model, ids).shape[-1] == VOCAB + 2
    grown = model.body.embeddings.word_embeddings.weight
    assert torch.allclose(grown[VOCAB + 1], emb[:5].mean(0)) and torch.allclose(grown[7], emb[:5].mean(0))
    assert torch.allclose(model.hf.lm_predictions.lm_head.bias[VOCAB], bias[:5].mean(0))
    assert model.hf.lm_predictions.lm_head.dense.weight.shape == (
        32,
        32,
    )  # transformers' resize would grow it


def test_the_hub_id_reads_the_repos_safetensors_and_spm_model_and_nothing_else(
    v3, tmp_path, monkeypatch, ids
):
    """microsoft/deberta-v3-base's files on the hub (main, 82d8d18): config.json, tokenizer_config.json,
    spm.model, model.safetensors (fp16), and pytorch_model.bin (pickle), tf_model.h5, rust_model.ot. The
    download (a fake `snapshot_download` copying what its patterns match) takes the first four."""
    import shutil

    from safetensors.torch import load_file, save_file

    repo = tmp_path / "repo"
    shutil.copytree(v3, repo)
    half = {k: v.half() for k, v in load_file(str(repo / "model.safetensors")).items()}
    save_file(half, str(repo / "model.safetensors"))
    for other in ("pytorch_model.bin", "tf_model.h5", "rust_model.ot"):
        (repo / other).write_bytes(b"not for encoderlab")
    fetched = serve_hub_repo(monkeypatch, tmp_path, "microsoft/deberta-v3-base", repo)
    loaded = load_pretrained("microsoft/deberta-v3-base")
    assert sorted(fetched) == ["config.json", "model.safetensors", "spm.model", "tokenizer_config.json"]
    assert loaded.family == "deberta-v2" and type(loaded.tokenizer).__name__ == "DebertaV2Tokenizer"
    reference = _reference(repo, legacy=False, dtype=torch.float32)
    with torch.no_grad():
        assert (logits(loaded.model, ids) - reference(input_ids=ids).logits).abs().max() <= TOL


def test_the_original_head_over_a_narrower_embedding_is_one_line_not_a_traceback(tmp_path, capsys):
    """transformers' original head (`lm_predictions`) multiplies the hidden states by the word embeddings,
    so with `embedding_size` under `hidden_size` its first forward raised a shape error; the legacy head
    (`cls.predictions`, down to the embedding width first) runs, and still loads."""
    from tests.reliability.errors_doc import assert_printed_as_documented
    from tests.reliability.test_hostile_inputs import cli
    from transformers import DebertaV2Config, DebertaV2ForMaskedLM

    narrow = {**V3, "embedding_size": 16}
    with pytest.raises(RuntimeError, match="cannot be multiplied"):  # what the load used to lead to
        DebertaV2ForMaskedLM(DebertaV2Config(**narrow, legacy=False))(input_ids=torch.tensor([[5, 6]]))
    folder = _write(tmp_path / "narrow", narrow, legacy=False)
    code, err = cli(["export", folder, "--out", tmp_path / "x"], capsys)
    assert code == 2 and err.strip() == (
        f"encoderlab: error: {folder}/config.json: embedding_size 16 differs from hidden_size 32, which DeBERTa's "
        "original MLM head (lm_predictions) cannot run: transformers multiplies the hidden states by the word "
        "embeddings; use a checkpoint whose two widths agree, or one with the legacy head (cls.predictions, "
        "legacy: true in config.json)"
    ), err
    assert_printed_as_documented("deberta-original-head-narrow-embedding", err, tmp_path)
    assert not (tmp_path / "x").exists()
    assert load_pretrained(
        _write(tmp_path / "legacy", {**narrow, "legacy": True}, legacy=True)
    ).model.hf.legacy
