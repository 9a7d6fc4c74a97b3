"""BERT-family and ModernBERT checkpoints behind the LanguageModel protocol, against transformers."""

from __future__ import annotations

import pytest
import torch
from model_fixtures import (
    VOCAB,
    bert_config,
    logits,
    modernbert_config,
    packed_minus_alone,
    randomize,
    save_tiny_tokenizer,
)

from encoderlab.model.hf_adapters import BertAdapter, ModernBertAdapter
from encoderlab.model.hub import load_pretrained

TOL = 1e-5


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    from transformers import BertForMaskedLM

    folder = tmp_path_factory.mktemp("bert")
    randomize(BertForMaskedLM(bert_config())).save_pretrained(str(folder))
    save_tiny_tokenizer(folder)
    return folder


@pytest.fixture(scope="module")
def modernbert_folder(tmp_path_factory):
    from transformers import ModernBertForMaskedLM

    folder = tmp_path_factory.mktemp("modernbert")
    randomize(ModernBertForMaskedLM(modernbert_config())).save_pretrained(str(folder))
    return folder


@pytest.fixture
def ids():
    return torch.randint(5, VOCAB, (2, 20), generator=torch.Generator().manual_seed(4))


def _reference(cls, folder, **config):
    model = cls.from_pretrained(str(folder), attn_implementation="sdpa", **config)
    return model.eval()


def test_bert_bidirectional_and_padding_match_bert_for_masked_lm(bert_folder, ids):
    from transformers import BertForMaskedLM

    loaded = load_pretrained(bert_folder)
    assert isinstance(loaded.model, BertAdapter) and loaded.family == "bert" and loaded.notes == []
    c = loaded.model.config
    assert (c.hidden_size, c.n_layers, c.vocab_size, len(loaded.model.layers)) == (32, 2, VOCAB, 2)
    ref = _reference(BertForMaskedLM, bert_folder)
    pad = torch.ones_like(ids, dtype=torch.bool)
    pad[1, 13:] = False
    with torch.no_grad():
        assert (logits(loaded.model, ids) - ref(input_ids=ids).logits).abs().max() <= TOL
        expected = ref(input_ids=ids, attention_mask=pad.long()).logits
    assert (logits(loaded.model, ids, padding_mask=pad) - expected)[pad].abs().max() <= TOL


@pytest.mark.parametrize("padded", [False, True])
def test_bert_causal_matches_bert_as_decoder(bert_folder, ids, padded):
    from transformers import BertForMaskedLM

    loaded = load_pretrained(bert_folder)
    ref = _reference(BertForMaskedLM, bert_folder, is_decoder=True)  # transformers' own causal mask
    pad = torch.ones_like(ids, dtype=torch.bool)
    pad[1, 13:] = False
    kwargs = {"padding_mask": pad} if padded else {}
    with torch.no_grad():
        expected = ref(input_ids=ids, attention_mask=pad.long() if padded else None).logits
    got = logits(loaded.model, ids, attention_mode="causal", **kwargs)
    assert (got - expected)[pad].abs().max() <= TOL
    # The mode is per call: bidirectional again right after.
    with torch.no_grad():
        assert (
            logits(loaded.model, ids) - _reference(BertForMaskedLM, bert_folder)(input_ids=ids).logits
        ).abs().max() <= TOL


@pytest.mark.parametrize("family", ["bert", "modernbert"])
@pytest.mark.parametrize("mode", ["bidirectional", "causal"])
def test_packed_equals_documents_alone(request, family, mode):
    model = load_pretrained(request.getfixturevalue(f"{family}_folder")).model
    assert packed_minus_alone(model, mode) <= TOL


@pytest.mark.parametrize("family", ["bert", "modernbert"])
def test_causal_mode_ignores_future_tokens(request, family, ids):
    model = load_pretrained(request.getfixturevalue(f"{family}_folder")).model
    changed = ids.clone()
    changed[:, 11:] = torch.randint(5, VOCAB, (2, 9), generator=torch.Generator().manual_seed(8))
    before = logits(model, ids, attention_mode="causal")
    after = logits(model, changed, attention_mode="causal")
    assert (before[:, :11] - after[:, :11]).abs().max() <= 1e-5
    # Bidirectionally the same change reaches the early positions: the test can fail.
    assert (logits(model, ids)[:, :11] - logits(model, changed)[:, :11]).abs().max() > 1e-3


def test_modernbert_matches_modernbert_for_masked_lm(modernbert_folder, ids):
    from transformers import ModernBertForMaskedLM

    loaded = load_pretrained(modernbert_folder)
    assert isinstance(loaded.model, ModernBertAdapter) and len(loaded.model.layers) == 3
    ref = _reference(ModernBertForMaskedLM, modernbert_folder)
    pad = torch.ones_like(ids, dtype=torch.bool)
    pad[0, 14:] = False
    with torch.no_grad():
        assert (logits(loaded.model, ids) - ref(input_ids=ids).logits).abs().max() <= TOL
        expected = ref(input_ids=ids, attention_mask=pad.long()).logits
    assert (logits(loaded.model, ids, padding_mask=pad) - expected)[pad].abs().max() <= TOL


def test_modernbert_causal_keeps_the_sliding_window(modernbert_folder, ids):
    # In causal mode a local layer must still see only |q - k| <= 2; with one local layer first,
    # its output at position 10 depends on tokens 8..10 only.
    model = load_pretrained(modernbert_folder).model
    first = model.layers[0]
    assert first.attn.sliding_window is not None
    captured = {}
    handle = first.register_forward_hook(
        lambda m, i, o: captured.__setitem__("out", o[0] if isinstance(o, tuple) else o)
    )
    try:
        changed = ids.clone()
        changed[:, :8] = 5 + (changed[:, :8] + 1) % (VOCAB - 5)
        with torch.no_grad():
            model(ids, attention_mode="causal")
            a = captured["out"].clone()
            model(changed, attention_mode="causal")
            b = captured["out"].clone()
    finally:
        handle.remove()
    assert (a[:, 10:] - b[:, 10:]).abs().max() <= 1e-5
    assert (a[:, :10] - b[:, :10]).abs().max() > 1e-3


def test_minilm_like_base_checkpoint_gets_a_fresh_mlm_head(tmp_path, ids):
    from transformers import BertModel

    base = randomize(BertModel(bert_config(), add_pooling_layer=True))
    base.save_pretrained(str(tmp_path))
    loaded = load_pretrained(tmp_path)
    assert any("MLM head freshly initialised" in n for n in loaded.notes)
    with torch.no_grad():
        expected = base(input_ids=ids).last_hidden_state
        got = loaded.model(ids).last_hidden_state
    assert (got - expected).abs().max() <= TOL
    hf = loaded.model.hf
    assert hf.cls.predictions.decoder.weight is hf.bert.embeddings.word_embeddings.weight


def test_hidden_states_follow_the_protocol(bert_folder, modernbert_folder, ids):
    for folder in (bert_folder, modernbert_folder):
        model = load_pretrained(folder).model
        out = model(ids, output_hidden_states=True)
        assert len(out.hidden_states) == model.config.n_layers + 1


@pytest.mark.parametrize("family", ["bert", "modernbert"])
def test_adapter_round_trips_through_a_model_folder(request, tmp_path, family, ids):
    from encoderlab.model.io import is_model_folder, save_model_folder

    loaded = load_pretrained(request.getfixturevalue(f"{family}_folder"))
    save_model_folder(loaded.model, tmp_path / "m", loaded.tokenizer)
    assert is_model_folder(tmp_path / "m")
    again = load_pretrained(tmp_path / "m")
    assert again.family == family and type(again.model) is type(loaded.model)
    for mode in ("bidirectional", "causal"):
        assert torch.equal(
            logits(again.model, ids, attention_mode=mode), logits(loaded.model, ids, attention_mode=mode)
        )


def test_a_partly_missing_head_is_built_once_and_drawn_as_a_seeded_build_draws_it(tmp_path, monkeypatch):
    """An untied BERT saved without its decoder was built unseeded, found to lack it, and built again
    seeded: two full builds. Now one, with the same head as that seeded build (the fingerprint stands)."""
    from safetensors.torch import save_file
    from transformers import BertForMaskedLM

    from encoderlab.model.hf_registry import seeded_init

    config = bert_config(tie_word_embeddings=False)
    model = randomize(BertForMaskedLM(config))
    model.save_pretrained(str(tmp_path))
    state = {k: v.clone() for k, v in model.state_dict().items() if k != "cls.predictions.decoder.weight"}
    save_file(state, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    with seeded_init(state):
        expected = BertForMaskedLM(config).cls.predictions.decoder.weight.detach().clone()
    built, init = [], BertForMaskedLM.__init__

    def counted(self, *args, **kwargs):
        init(self, *args, **kwargs)
        built.append(next(self.parameters()).device.type)

    monkeypatch.setattr(BertForMaskedLM, "__init__", counted)
    loaded = load_pretrained(tmp_path)
    assert [d for d in built if d != "meta"] == ["cpu"]  # one build of weights; a skeleton costs none
    assert torch.equal(loaded.model.hf.cls.predictions.decoder.weight, expected)
    assert any("lacks ['cls.predictions.decoder.weight']" in n for n in loaded.notes)
