"""RoBERTa, XLM-R and CamemBERT checkpoints behind the LanguageModel protocol, against transformers' classes.

What differs from BERT is the position numbering (from pad_token_id + 1): packed documents, whose
0-based positions the adapter shifts, must match the documents run alone through transformers'
own numbering, and the usable positions are the table's rows less that offset."""

from __future__ import annotations

import pytest
import torch
from model_fixtures import VOCAB, logits, packed_minus_alone, randomize, roberta_config, save_tiny_tokenizer

from encoderlab.model.hf_adapters import CamembertAdapter, RobertaAdapter, XLMRobertaAdapter
from encoderlab.model.hub import load_pretrained
from encoderlab.model.sources import max_positions, usable_positions

TOL = 1e-5
FAMILIES = {
    "roberta": ("RobertaConfig", "RobertaForMaskedLM", RobertaAdapter),
    "xlm-roberta": ("XLMRobertaConfig", "XLMRobertaForMaskedLM", XLMRobertaAdapter),
    "camembert": ("CamembertConfig", "CamembertForMaskedLM", CamembertAdapter),
}


@pytest.fixture(scope="module", params=list(FAMILIES))
def folder(request, tmp_path_factory):
    import transformers

    config_cls, model_cls, _ = FAMILIES[request.param]
    out = tmp_path_factory.mktemp(request.param)
    model = getattr(transformers, model_cls)(roberta_config(config_cls))
    randomize(model).save_pretrained(str(out))
    save_tiny_tokenizer(out)
    return request.param, out


@pytest.fixture
def ids():
    return torch.randint(5, VOCAB, (2, 20), generator=torch.Generator().manual_seed(4))


def _reference(family, out, **config):
    import transformers

    cls = getattr(transformers, FAMILIES[family][1])
    return cls.from_pretrained(str(out), attn_implementation="sdpa", **config).eval()


def test_matches_transformers_bidirectional_padded_and_causal(folder, ids):
    family, out = folder
    loaded = load_pretrained(out)
    assert type(loaded.model) is FAMILIES[family][2] and loaded.family == family and loaded.notes == []
    pad = torch.ones_like(ids, dtype=torch.bool)
    pad[1, 13:] = False
    ref = _reference(family, out)
    with torch.no_grad():
        assert (logits(loaded.model, ids) - ref(input_ids=ids).logits).abs().max() <= TOL
        expected = ref(input_ids=ids, attention_mask=pad.long()).logits
        causal = _reference(family, out, is_decoder=True)(input_ids=ids).logits
    assert (logits(loaded.model, ids, padding_mask=pad) - expected)[pad].abs().max() <= TOL
    assert (logits(loaded.model, ids, attention_mode="causal") - causal).abs().max() <= TOL


@pytest.mark.parametrize("mode", ["bidirectional", "causal"])
def test_packed_documents_restart_at_the_first_real_position(folder, mode):
    assert packed_minus_alone(load_pretrained(folder[1]).model, mode) <= TOL


def test_usable_positions_leave_out_the_offset(folder):
    family, out = folder
    model = load_pretrained(out).model
    # 66 rows, pad id 0: positions 1..65 are real, so 65 tokens fit (transformers' own numbering).
    assert model.config.max_seq_len == max_positions(out) == 65
    _reference(family, out)(input_ids=torch.full((1, 65), 7))  # the longest row runs
    with pytest.raises((IndexError, RuntimeError)):
        _reference(family, out)(input_ids=torch.full((1, 66), 7))  # one more does not


def test_roberta_base_takes_512_of_its_514_rows():
    raw = {"model_type": "roberta", "max_position_embeddings": 514, "pad_token_id": 1}
    assert usable_positions(raw) == 512
    assert usable_positions({**raw, "model_type": "xlm-roberta"}) == 512
    assert usable_positions({**raw, "model_type": "camembert"}) == 512
    assert usable_positions({**raw, "model_type": "bert"}) == 514  # BERT numbers from 0


def test_adapter_round_trips_through_a_model_folder(folder, tmp_path, ids):
    from encoderlab.model.io import save_model_folder

    family, out = folder
    loaded = load_pretrained(out)
    save_model_folder(loaded.model, tmp_path / "m", loaded.tokenizer)
    again = load_pretrained(tmp_path / "m")
    assert again.family == family and type(again.model) is type(loaded.model)
    assert max_positions(tmp_path / "m") == 65
    assert torch.equal(logits(again.model, ids), logits(loaded.model, ids))
