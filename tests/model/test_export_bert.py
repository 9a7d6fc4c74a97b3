"""A model from a BERT-family sentence-transformers folder (MiniLM's layout) exports whole.

The source is a `BertModel` checkpoint with a pooler and sentence-transformers files; BertForMaskedLM
has no pooler, so the adapter once dropped `bert.pooler.dense.*` at load and `AutoModel` on the export
got a freshly initialised pooler (a transformers MISSING report), and the sentence-transformers files
stayed behind. The reference throughout is transformers' own model of the source folder.
"""

from __future__ import annotations

import json

import pytest
import torch
from model_fixtures import VOCAB, logits, randomize
from tests.train.helpers import tiny_run

from encoderlab.model.export import export_hf
from encoderlab.model.hub import load_pretrained
from encoderlab.model.io import save_model_folder
from encoderlab.objectives import MLM
from encoderlab.train import Phase, pretrain
from encoderlab.train.config import ModelSpec

TOL = 1e-5
"""fp32 on CPU, same weights and kernels on both sides: the differences seen are 0."""
SENTENCE_FILES = {
    "modules.json": json.dumps(
        [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ]
    ),
    "sentence_bert_config.json": '{"max_seq_length": 32, "do_lower_case": false}',
    "1_Pooling/config.json": '{"word_embedding_dimension": 32, "pooling_mode_mean_tokens": true}',
}


def _sentence_bert(folder, vocab: int = VOCAB):
    """A BertModel folder with a random pooler and sentence-transformers files; the model."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64
    )
    model = randomize(BertModel(cfg)).eval()
    model.save_pretrained(str(folder))
    for name, text in SENTENCE_FILES.items():
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(text)
    return model


def _check_export(out, source, ours, ids) -> None:
    """`out` loads in AutoModel with nothing missing, the source's pooler, our hidden states and the
    source's pooled output; in AutoModelForMaskedLM with our logits; the sentence files are there."""
    from transformers import AutoModel, AutoModelForMaskedLM

    body, info = AutoModel.from_pretrained(str(out), output_loading_info=True)
    assert not info["missing_keys"] and not info["mismatched_keys"]
    assert torch.equal(body.pooler.dense.weight, source.pooler.dense.weight)
    mlm, info = AutoModelForMaskedLM.from_pretrained(str(out), output_loading_info=True)
    assert not info["missing_keys"]
    with torch.no_grad():
        got = body.eval()(input_ids=ids)
        assert (got.last_hidden_state - ours(ids).last_hidden_state).abs().max() <= TOL
        assert (mlm.eval()(input_ids=ids).logits - logits(ours, ids)).abs().max() <= TOL
        return got, {n: (out / n).read_text() for n in SENTENCE_FILES}


def test_pooler_and_sentence_files_survive_a_model_folder_and_export(tmp_path, ids):
    source = _sentence_bert(tmp_path / "st")
    save_model_folder(load_pretrained(tmp_path / "st").model, tmp_path / "folder")
    ours = load_pretrained(tmp_path / "folder").model
    export_hf(ours, None, tmp_path / "hf")
    got, files = _check_export(tmp_path / "hf", source, ours, ids)
    with torch.no_grad():  # nothing trained yet: the pooled output is the source's own
        assert (got.pooler_output - source(input_ids=ids).pooler_output).abs().max() <= TOL
    assert files == SENTENCE_FILES


def test_a_run_continued_from_a_sentence_bert_folder_exports_its_pooler(tmp_path, ids):
    source = _sentence_bert(tmp_path / "st", vocab=128)  # tiny_run's synthetic vocabulary
    phases = (Phase(objective=MLM(mask_ratio=0.3), steps=2),)
    cfg = tiny_run(tmp_path / "run", phases=phases, model=ModelSpec(init=str(tmp_path / "st")))
    pretrain(cfg)
    ours = load_pretrained(tmp_path / "run").model
    export_hf(ours, None, tmp_path / "hf")
    _, files = _check_export(tmp_path / "hf", source, ours, ids)
    assert files == SENTENCE_FILES


def test_sentence_modules_with_weights_are_not_carried_and_the_load_says_so(tmp_path):
    _sentence_bert(tmp_path / "st")
    (tmp_path / "st" / "1_Pooling" / "model.safetensors").write_bytes(b"weights")
    pre = load_pretrained(tmp_path / "st")
    assert any("sentence-transformers files were not kept" in n for n in pre.notes)
    export_hf(pre.model, None, tmp_path / "hf")
    assert not (tmp_path / "hf" / "modules.json").exists()


@pytest.mark.parametrize("name", ["../evil.json", "/tmp/evil.json", "a/../../evil.json"])
def test_a_stored_sentence_file_name_outside_the_folder_is_refused(tmp_path, name):
    from encoderlab.errors import UserError

    _sentence_bert(tmp_path / "st")
    save_model_folder(load_pretrained(tmp_path / "st").model, tmp_path / "folder")
    meta = json.loads((tmp_path / "folder" / "config.json").read_text())
    meta["sentence_transformers"][name] = "{}"
    (tmp_path / "folder" / "config.json").write_text(json.dumps(meta))
    with pytest.raises(UserError, match="no file inside the folder"):
        load_pretrained(tmp_path / "folder")
