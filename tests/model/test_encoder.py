"""The encoder against transformers' EuroBERT and Llama, and its masking semantics."""

from __future__ import annotations

import pytest
import torch
from model_fixtures import VOCAB, eurobert_reference, llama_reference, logits, make_model, randomize

from encoderlab.data.synthetic import positions_from_doc_ids
from encoderlab.model import SIZES, Encoder, ModelConfig

TOL = 1e-5  # float32 and the same weights as transformers' own classes: equal up to summation order


@pytest.mark.parametrize("kv_heads", [4, 2, 1])  # MHA, GQA, MQA
@pytest.mark.parametrize("tie", [False, True])
def test_bidirectional_matches_eurobert(ids, kv_heads, tie):
    model = make_model(n_kv_heads=kv_heads, tie_embeddings=tie, norm_eps=1e-6, rope_theta=500.0)
    ref = eurobert_reference(model)
    with torch.no_grad():
        expected = ref(input_ids=ids).logits
    assert (logits(model, ids) - expected).abs().max() <= TOL


@pytest.mark.parametrize("kv_heads", [4, 2])
def test_causal_matches_llama(ids, kv_heads):
    model = make_model(n_kv_heads=kv_heads)
    ref = llama_reference(model)
    with torch.no_grad():
        expected = ref(input_ids=ids).logits
    got = logits(model, ids, attention_mode="causal")
    assert (got - expected).abs().max() <= TOL
    # The bidirectional output differs, so the comparison above really exercises the mode.
    assert (logits(model, ids) - expected).abs().max() > 1e-3


def test_padding_matches_eurobert_attention_mask(ids):
    model = make_model()
    ref = eurobert_reference(model)
    pad = torch.ones_like(ids, dtype=torch.bool)
    pad[0, 15:] = False
    with torch.no_grad():
        expected = ref(input_ids=ids, attention_mask=pad.long()).logits
    got = logits(model, ids, padding_mask=pad)
    assert (got - expected)[pad].abs().max() <= TOL


@pytest.mark.parametrize("mode", ["bidirectional", "causal"])
def test_padding_equals_unpadded(ids, mode):
    model = make_model()
    padded = ids.clone()
    padded[:, 20:] = 0
    pad = torch.ones_like(ids, dtype=torch.bool)
    pad[:, 20:] = False
    got = logits(model, padded, attention_mode=mode, padding_mask=pad)[:, :20]
    alone = logits(model, ids[:, :20], attention_mode=mode)
    assert (got - alone).abs().max() <= 1e-5


def packed_row(lengths: list[int], seed: int = 3):
    g = torch.Generator().manual_seed(seed)
    docs = [torch.randint(4, VOCAB, (n,), generator=g) for n in lengths]
    doc_ids = torch.cat([torch.full((n,), i) for i, n in enumerate(lengths)])
    return docs, torch.cat(docs)[None], doc_ids[None]


@pytest.mark.parametrize("mode", ["bidirectional", "causal"])
@pytest.mark.parametrize("attn_impl", ["sdpa", "flex"])
def test_packed_equals_documents_alone(mode, attn_impl):
    model = make_model(attn_impl=attn_impl)
    docs, ids, doc_ids = packed_row([5, 9, 1, 7])
    packed = logits(
        model, ids, attention_mode=mode, doc_ids=doc_ids, position_ids=positions_from_doc_ids(doc_ids)
    )
    alone = torch.cat([logits(model, d[None], attention_mode=mode) for d in docs], dim=1)
    assert (packed - alone).abs().max() <= 1e-5
    # Without the document mask the same row gives different outputs: the mask is doing the work.
    leaky = logits(model, ids, attention_mode=mode, position_ids=positions_from_doc_ids(doc_ids))
    assert (leaky - alone).abs().max() > 1e-3


@pytest.mark.parametrize("attn_impl", ["sdpa", "flex"])
def test_causal_outputs_ignore_future_tokens(ids, attn_impl):
    model = make_model(attn_impl=attn_impl)
    changed = ids.clone()
    changed[:, 12:] = torch.randint(
        4, VOCAB, changed[:, 12:].shape, generator=torch.Generator().manual_seed(9)
    )
    doc_ids = torch.zeros_like(ids)  # one document: exercises the masked path too
    for kwargs in ({}, {"doc_ids": doc_ids}):
        before = logits(model, ids, attention_mode="causal", **kwargs)
        after = logits(model, changed, attention_mode="causal", **kwargs)
        assert (before[:, :12] - after[:, :12]).abs().max() <= 1e-6
        assert (before[:, 12:] - after[:, 12:]).abs().max() > 1e-3
    bidir = logits(model, ids) - logits(model, changed)
    assert bidir[:, :12].abs().max() > 1e-3


@pytest.mark.parametrize("attn_impl", ["sdpa", "flex"])
def test_padded_and_packed_rows_match_transformers_in_both_modes(attn_impl):
    """Random norms and weights everywhere (a swapped norm would show): padding against transformers'
    own attention_mask (EuroBERT bidirectional, Llama causal), and a packed row against transformers
    run on each document alone."""
    model = randomize(make_model(n_kv_heads=1, norm_eps=1e-6, rope_theta=500.0, attn_impl=attn_impl))
    refs = {"bidirectional": eurobert_reference(model), "causal": llama_reference(model)}
    ids = torch.randint(4, VOCAB, (2, 16), generator=torch.Generator().manual_seed(5))
    pad = torch.ones_like(ids, dtype=torch.bool)
    pad[0, 9:] = False
    docs, row, doc_ids = packed_row([6, 1, 9])
    for mode, ref in refs.items():
        with torch.no_grad():
            expected = ref(input_ids=ids, attention_mask=pad.long()).logits
            alone = torch.cat([ref(input_ids=d[None]).logits for d in docs], dim=1)
        got = logits(model, ids, attention_mode=mode, padding_mask=pad)
        assert (got - expected)[pad].abs().max() <= TOL, mode
        packed = logits(
            model, row, attention_mode=mode, doc_ids=doc_ids, position_ids=positions_from_doc_ids(doc_ids)
        )
        assert (packed - alone).abs().max() <= TOL, mode


def test_hidden_states_are_embeddings_then_each_block(ids):
    model = make_model()
    out = model(ids, output_hidden_states=True)
    assert len(out.hidden_states) == model.config.n_layers + 1
    assert torch.equal(out.hidden_states[0], model.embed_tokens(ids))
    assert torch.allclose(model.norm(out.hidden_states[-1]), out.last_hidden_state)


def test_too_long_input_is_refused():
    model = make_model(max_seq_len=8)
    with pytest.raises(ValueError, match="max_seq_len"):
        model(torch.zeros(1, 9, dtype=torch.long))


def _meta_count(cfg: ModelConfig) -> int:
    with torch.device("meta"):
        model = Encoder(cfg)
    return sum(p.numel() for p in model.parameters())  # parameters() counts a tied weight once


def test_tiny_is_under_5m_with_8k_vocab():
    cfg = ModelConfig.from_size("tiny", vocab_size=8192)
    assert cfg.num_params() == _meta_count(cfg) < 5_000_000


# EuroBERT's model cards: parameters without embeddings / with one embedding, 128,256 vocab.
PAPER_COUNTS = {"210m": (113e6, 212e6), "610m": (460e6, 608e6), "1b": (966e6, 1.19e9)}


@pytest.mark.parametrize("size", list(PAPER_COUNTS))
def test_named_sizes_match_paper_counts(size):
    cfg = ModelConfig.from_size(size, vocab_size=128_256)
    assert cfg.num_params() == _meta_count(cfg)
    body = cfg.num_params(include_embedding=False)
    non_emb, with_emb = PAPER_COUNTS[size]
    assert abs(body - non_emb) / non_emb < 0.005
    assert abs(body + cfg.vocab_size * cfg.hidden_size - with_emb) / with_emb < 0.005


@pytest.mark.parametrize("size", list(SIZES))
def test_num_params_matches_instantiation_for_every_size(size):
    for overrides in ({}, {"tie_embeddings": True, "attention_bias": True, "qk_norm": True}):
        cfg = ModelConfig.from_size(size, vocab_size=1000, **overrides)
        assert cfg.num_params() == _meta_count(cfg)


def test_flex_model_folder_loads_with_sdpa_on_cpu_and_trains(tmp_path, caplog):
    """flex_attention has no CPU backward: a folder saved with flex must still fine-tune on CPU."""
    import logging

    from encoderlab.model.io import load_model_folder, save_model_folder

    model = Encoder(ModelConfig.from_size("tiny", vocab_size=VOCAB, attn_impl="flex"))
    save_model_folder(model, tmp_path / "m")
    with caplog.at_level(logging.INFO, logger="encoderlab.model.io"):
        loaded = load_model_folder(tmp_path / "m")
    assert loaded.config.attn_impl == "sdpa" and "attn_impl=flex; using sdpa" in caplog.text
    doc_ids = torch.tensor([[0, 0, 0, 1, 1, 1]])
    out = loaded(torch.randint(0, VOCAB, (1, 6)), doc_ids=doc_ids).last_hidden_state
    out.sum().backward()  # the dense mask path: a backward exists on CPU
    assert loaded.embed_tokens.weight.grad is not None


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_rms_norm_is_bit_identical_to_llama_below_float64(dtype):
    # the norm normalises in float64 for a float64 copy (analysis' recheck); every narrower dtype keeps
    # Llama's float32 normalisation to the bit, so training runs and exported models are unchanged
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    from encoderlab.model.encoder import RMSNorm

    g = torch.Generator().manual_seed(0)
    x = (torch.randn(3, 5, 16, generator=g) * 7).to(dtype)
    ours, ref = RMSNorm(16, 1e-6), LlamaRMSNorm(16, eps=1e-6)
    with torch.no_grad():
        ours.weight.copy_(torch.randn(16, generator=g))
        ref.weight.copy_(ours.weight)
    ours, ref = ours.to(dtype), ref.to(dtype)
    with torch.no_grad():
        assert torch.equal(ours(x), ref(x))
