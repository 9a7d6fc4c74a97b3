"""`eval --check`'s embedding rows from the safetensors headers (`model.headercheck`) against the load's
own refusal, for the adapter families (a masked-LM checkpoint, a bare base model whose keys the load
prefixes) and ModernBERT (whose load meets `decoder.bias` before the embedding): a config.json whose `vocab_size` is not the stored rows gets the load's line,
word for word, reading no tensor data; a folder the load takes passes. The encoderlab and Llama-style
folders are checked end to end in tests/eval/test_eval_check.py."""

from __future__ import annotations

import json

import pytest
from model_fixtures import bert_config, modernbert_config, randomize, save_tiny_tokenizer

from encoderlab.errors import UserError
from encoderlab.model import hub
from encoderlab.model.headercheck import check_embedding_rows


def _bert(folder):
    from transformers import BertForMaskedLM

    randomize(BertForMaskedLM(bert_config())).save_pretrained(str(folder))


def _bare_bert(folder):
    from transformers import BertModel

    randomize(BertModel(bert_config(), add_pooling_layer=False)).save_pretrained(str(folder))


def _modernbert(folder):
    from transformers import ModernBertForMaskedLM

    randomize(ModernBertForMaskedLM(modernbert_config())).save_pretrained(str(folder))


@pytest.mark.parametrize("save", [_bert, _bare_bert, _modernbert])
def test_a_vocab_size_unlike_the_stored_rows_gets_the_loads_line_from_the_headers(
    save, tmp_path, monkeypatch
):
    save(tmp_path)
    save_tiny_tokenizer(tmp_path)
    check_embedding_rows(hub.model_files(tmp_path))  # as saved: the load takes it, so does the check
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "vocab_size": config["vocab_size"] + 8}))
    with pytest.raises(UserError) as ran:
        hub.load_pretrained(str(tmp_path))
    monkeypatch.setattr(hub, "read_hf_weights", lambda *a, **k: pytest.fail("tensor data read"))
    with pytest.raises(UserError) as checked:
        check_embedding_rows(hub.model_files(tmp_path))
    assert str(checked.value) == str(ran.value), (str(checked.value), str(ran.value))
    implied = f"{config['vocab_size'] + 8}"
    assert "has shape" in str(ran.value) and f"implies ({implied}" in str(
        ran.value
    )  # the rows, not another fault
