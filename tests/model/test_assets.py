"""The real checkpoints (fetched assets) load through `load_pretrained` with transformers' logits."""

from __future__ import annotations

import pytest
import torch
from model_fixtures import logits

from encoderlab.errors import UserError
from encoderlab.model import Encoder
from encoderlab.model.hf_adapters import BertAdapter
from encoderlab.model.hub import load_pretrained

pytestmark = [pytest.mark.assets, pytest.mark.slow]
TEXT = "The capital of France is Paris. The capital of Germany is"


def _cached(name: str):
    from encoderlab.data.assets import asset_dir

    try:
        return asset_dir(name)
    except UserError:
        pytest.skip(f"asset {name} is not fetched (encoderlab assets fetch {name})")


def test_minilm_loads_as_bert_with_a_fresh_head():
    from transformers import BertForMaskedLM

    folder = _cached("minilm")
    pre = load_pretrained("minilm")
    assert isinstance(pre.model, BertAdapter) and pre.family == "bert"
    assert any("MLM head freshly initialised" in n for n in pre.notes)
    assert pre.spec.mask_id == pre.tokenizer.mask_token_id == 103
    ids = pre.tokenizer([TEXT], return_tensors="pt").input_ids
    ref = BertForMaskedLM.from_pretrained(str(folder), attn_implementation="sdpa").eval()
    # Both heads are fresh; give transformers' model ours so the body (loaded by transformers' own
    # loader) is what the comparison tests.
    ref.cls.load_state_dict(pre.model.hf.cls.state_dict())
    with torch.no_grad():
        expected = ref(input_ids=ids).logits
    assert (logits(pre.model, ids) - expected).abs().max() <= 1e-4


def test_smollm2_in_causal_mode_gives_causal_lm_logits():
    from transformers import AutoModelForCausalLM

    folder = _cached("smollm2-135m")
    pre = load_pretrained("smollm2-135m")
    assert isinstance(pre.model, Encoder) and pre.family == "llama"
    cfg = pre.model.config
    assert (cfg.n_layers, cfg.hidden_size, cfg.vocab_size, cfg.tie_embeddings) == (30, 576, 49152, True)
    ids = pre.tokenizer([TEXT], return_tensors="pt").input_ids
    ref = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    with torch.no_grad():
        expected = ref(input_ids=ids).logits
    assert (logits(pre.model, ids, attention_mode="causal") - expected).abs().max() <= 1e-4
    assert expected[0, -1].argmax() == logits(pre.model, ids, attention_mode="causal")[0, -1].argmax()


def test_minilm_exports_with_its_pooler_and_sentence_files(tmp_path):
    """The real all-MiniLM-L6-v2 folder: the export loads in AutoModel with nothing freshly initialised
    and gives the source's hidden states and pooled output (transformers' model of the source is the
    reference); its sentence-transformers files come along."""
    from transformers import AutoModel

    from encoderlab.model.export import export_hf

    folder = _cached("minilm")
    pre = load_pretrained("minilm")
    export_hf(pre.model, pre.tokenizer, tmp_path / "hf")
    got, info = AutoModel.from_pretrained(str(tmp_path / "hf"), output_loading_info=True)
    assert not info["missing_keys"]
    ref = AutoModel.from_pretrained(str(folder), attn_implementation="sdpa").eval()
    ids = pre.tokenizer([TEXT], return_tensors="pt").input_ids
    with torch.no_grad():
        out, expected = got.eval()(input_ids=ids), ref(input_ids=ids)
        assert (out.pooler_output - expected.pooler_output).abs().max() <= 1e-5
        assert (out.last_hidden_state - pre.model(ids).last_hidden_state).abs().max() <= 1e-5
    for name in ("modules.json", "sentence_bert_config.json", "1_Pooling/config.json"):
        assert (tmp_path / "hf" / name).read_text() == (folder / name).read_text()
