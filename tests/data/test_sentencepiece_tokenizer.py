"""A tokenizer shipped as a SentencePiece model and no tokenizer.json, as microsoft/deberta-v3-base is
(`spm.model`, and a tokenizer_config.json of `{"do_lower_case": false, "vocab_type": "spm"}`), loads
as a fast tokenizer through the same `load_tokenizer` a hub id reaches.

The vocabulary is a real SentencePiece unigram model trained here by the `sentencepiece` package, with
DeBERTa-v3's special pieces ([PAD] 0, [CLS] 1, [SEP] 2, [UNK] 3); the ids are checked against
sentencepiece's own encoder, the reference. Before, such a folder was refused as "no tokenizer.json".
"""

from __future__ import annotations

import json

import pytest
from tests.model.model_fixtures import SPM_TEXTS as TEXTS
from tests.model.model_fixtures import save_deberta_v3_tokenizer

from encoderlab.data.tokenizer import load_tokenizer, token_spec
from encoderlab.errors import UserError


@pytest.fixture(scope="module")
def spm_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("deberta_v3_tokenizer")
    save_deberta_v3_tokenizer(folder)
    (folder / "config.json").write_text(json.dumps({"model_type": "deberta-v2", "vocab_size": 128}))
    return folder


def test_a_sentencepiece_only_folder_loads_as_a_fast_tokenizer_with_its_ids(spm_folder, tmp_path):
    import sentencepiece as spm

    tok = load_tokenizer(spm_folder)
    reference = spm.SentencePieceProcessor(model_file=str(spm_folder / "spm.model"))
    assert tok.is_fast and type(tok).__name__ == "DebertaV2Tokenizer"
    for text in TEXTS + ["cats on logs"]:
        assert tok(text, add_special_tokens=False)["input_ids"] == reference.encode(text)
    pair = tok("the cat", "a mat")["input_ids"]
    assert pair[0] == 1 and pair.count(2) == 2  # [CLS] first, a [SEP] after each text
    spec = token_spec(tok)
    assert (spec.pad_id, spec.bos_id, spec.eos_id, spec.unk_id) == (0, 1, 2, 3) and spec.mask_id is not None
    tok.save_pretrained(str(tmp_path / "saved"))  # a model folder then carries the fast tokenizer.json
    assert (tmp_path / "saved" / "tokenizer.json").is_file()
    assert load_tokenizer(tmp_path / "saved")("the cat")["input_ids"] == tok("the cat")["input_ids"]


def test_without_the_sentencepiece_package_it_is_one_line(spm_folder, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "sentencepiece" else real(name, *a)
    )
    with pytest.raises(UserError) as exc:
        load_tokenizer(spm_folder)
    assert str(exc.value) == (
        f"{spm_folder} holds a SentencePiece vocabulary (spm.model) and no tokenizer.json, and converting it "
        "needs the sentencepiece package: pip install sentencepiece"
    )
