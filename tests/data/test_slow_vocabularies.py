"""A tokenizer shipped as a slow tokenizer's vocabulary and no tokenizer.json loads as a fast tokenizer,
through the same `load_tokenizer` a hub id reaches; before, such a folder was refused ("no
tokenizer.json", or "holds no tokenizer files" without a tokenizer_config.json).

  * SentencePiece, as microsoft/deberta-v3-base ships it (`spm.model`, and a tokenizer_config.json of
    `{"do_lower_case": false, "vocab_type": "spm"}`): a real unigram model trained here by the
    `sentencepiece` package with DeBERTa-v3's special pieces ([PAD] 0, [CLS] 1, [SEP] 2, [UNK] 3), the
    ids checked against sentencepiece's own encoder.
  * WordPiece, as older BERT-family repos ship it (config.json and vocab.txt only), and byte-level BPE
    (vocab.json + merges.txt): tiny vocabularies whose ids are worked out by hand below.
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


def _wordpiece(folder):
    folder.mkdir()
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "##s", "on"]
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": len(words)}))
    return folder


def test_a_wordpiece_vocab_txt_beside_config_json_loads_as_bert_s_tokenizer(tmp_path):
    tok = load_tokenizer(_wordpiece(tmp_path / "bert"))
    # [CLS] the cat ##s sat [SEP]; BERT's default lower-cases, as transformers' own class does
    assert tok.is_fast and tok("The cats sat")["input_ids"] == [2, 5, 6, 8, 7, 3]
    assert tok("the cat", "on")["token_type_ids"] == [0, 0, 0, 0, 1, 1]
    spec = token_spec(tok)
    assert (spec.pad_id, spec.bos_id, spec.eos_id, spec.mask_id, spec.unk_id) == (0, 2, 3, 4, 1)


def test_a_byte_level_bpe_vocab_and_merges_load_as_roberta_s_tokenizer(tmp_path):
    folder = tmp_path / "roberta"
    folder.mkdir()
    vocab = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "t", "h", "e", "\u0120", "c", "a", "th", "the"]
    vocab += ["\u0120c", "\u0120ca", "\u0120cat"]
    (folder / "vocab.json").write_text(json.dumps({w: i for i, w in enumerate(vocab)}))
    merges = ["t h", "th e", "\u0120 c", "\u0120c a", "\u0120ca t"]
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    (folder / "config.json").write_text(json.dumps({"model_type": "roberta", "vocab_size": len(vocab)}))
    tok = load_tokenizer(folder)
    assert tok.is_fast and tok("the cat")["input_ids"] == [0, 12, 15, 2]  # <s> the \u0120cat </s>


def test_a_vocabulary_without_a_config_naming_its_class_is_still_refused(tmp_path):
    folder = _wordpiece(tmp_path / "bare")
    (folder / "config.json").unlink()
    with pytest.raises(UserError, match="holds no tokenizer files"):
        load_tokenizer(folder)


def test_a_bert_checkpoint_with_only_vocab_txt_loads_with_its_tokenizer(tmp_path):
    """config.json, the weights and vocab.txt, as older BERT-family repos hold them: the model comes with
    its tokenizer (it came without one, and evaluation refused it as having no tokenizer files)."""
    from transformers import BertConfig, BertForMaskedLM

    from encoderlab.model.hub import load_pretrained

    folder = _wordpiece(tmp_path / "bert")
    config = BertConfig(
        vocab_size=10, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    )
    BertForMaskedLM(config).save_pretrained(str(folder))
    loaded = load_pretrained(folder)
    assert loaded.tokenizer is not None and loaded.tokenizer("the cats")["input_ids"] == [2, 5, 6, 8, 3]


def test_a_tokenizer_json_without_its_config_is_refused_where_its_class_adds_specials(tmp_path, capsys):
    """tokenizer.json alone beside a `bert` config.json loads as BERT's class, which added [CLS] and
    [SEP] past the vocabulary and made them bos/eos: a model with spare embedding rows loaded silently,
    wrapping every row in two untrained tokens. Refused before anything is written."""
    from tests.eval.conftest import make_tokenizer, vocabulary_texts
    from transformers import BertConfig, BertForMaskedLM

    from encoderlab.cli import main

    tok = make_tokenizer(vocabulary_texts())  # [PAD] [BOS] [EOS] [MASK] [UNK]: no [CLS], no [SEP]
    config = BertConfig(
        vocab_size=len(tok) + 30,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
    )
    BertForMaskedLM(config).save_pretrained(str(tmp_path / "bert"))
    tok.save_pretrained(str(tmp_path / "bert"))
    (tmp_path / "bert" / "tokenizer_config.json").unlink()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["export", str(tmp_path / "bert"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1
    assert "no tokenizer_config.json" in err[0] and "[CLS]" in err[0] and "[SEP]" in err[0]
    assert not (tmp_path / "out").exists()
