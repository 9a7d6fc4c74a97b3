"""What a CKA report records of how it was computed, and what `cka.compare` reads as its pool of texts."""

from __future__ import annotations

import json

import pytest
from analysis_helpers import SPECIALS, make_model, make_texts

from encoderlab.analysis.cka import compare
from encoderlab.analysis.commands import cka_command
from encoderlab.analysis.inputs import MIN_TEXTS, Encoding
from encoderlab.model.io import save_model_folder


def test_compare_records_the_precision_the_models_ran_in(tokenizer):
    texts = make_texts(MIN_TEXTS)
    a, b = make_model(0), make_model(1)
    same = compare((a.double(), tokenizer), (b.double(), tokenizer), texts, n=MIN_TEXTS, seeds=(1,))
    assert same.dtype == "float64" and same.to_dict()["dtype"] == "float64"
    mixed = compare((a.half(), tokenizer), (b.float(), tokenizer), texts, n=MIN_TEXTS, seeds=(1,))
    assert mixed.dtype == "A float16, B float32"


def test_analyze_cka_writes_and_prints_its_dtype(tokenizer, tmp_path, capsys):
    models = [str(save_model_folder(make_model(s), tmp_path / f"m{s}", tokenizer=tokenizer)) for s in (0, 1)]
    (tmp_path / "texts.txt").write_text("\n".join(make_texts(MIN_TEXTS)) + "\n")
    out = tmp_path / "out"
    cka_command(
        *models, texts=str(tmp_path / "texts.txt"), out=out, n=MIN_TEXTS, seeds=(1,), dtype="bfloat16"
    )
    assert json.loads((out / "cka_report.json").read_text())["dtype"] == "bfloat16"
    assert "(models run in bfloat16)" in capsys.readouterr().out


def test_compare_counts_a_repeated_text_once_as_analyze_cka_does(tokenizer):
    """From Python, 50 texts given twice were a pool of 100: three different draws, an interval, and a text
    drawn twice in one sample weighed double; `read_texts` dropped the repeats only for the command."""
    texts = make_texts(MIN_TEXTS)
    assert len(set(texts)) == MIN_TEXTS
    pair = (make_model(0), tokenizer), (make_model(1), tokenizer)
    with pytest.warns(UserWarning, match=f"the pool of texts holds {MIN_TEXTS} repeated texts"):
        report = compare(*pair, texts + texts[::-1], n=MIN_TEXTS)
    alone = compare(*pair, texts, n=MIN_TEXTS)
    assert report.distinct_draws == 1 and [r.cka for r in report.layers] == [r.cka for r in alone.layers]


def _digit_tokenizer():
    """A tokenizer of `WORDS` that reads each digit as its own token (`w12` is 3 tokens, 1 for `make_tokenizer`),
    so it cuts a long text at another point than the word-level one."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(SPECIALS + ["w", *"0123456789"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Digits(individual_digits=True)]
    )
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    special = dict(zip(("pad_token", "unk_token", "cls_token", "sep_token", "mask_token"), SPECIALS))
    return PreTrainedTokenizerFast(tokenizer_object=tok, **special)


def test_compare_notes_texts_cut_at_other_points_by_two_tokenizers(tokenizer, capsys):
    """`--max-length` cuts each text at its own tokenizer's point, so two tokenizers may read different spans
    of one text (the `features` module's trade-off): that passed without a word."""
    texts, limit = make_texts(MIN_TEXTS), 10
    digits = _digit_tokenizer()
    a, b = (make_model(0), tokenizer), (make_model(1, vocab_size=len(digits)), digits)
    cut_a = {t for t in texts if len(t.split()) + 2 > limit}  # [CLS] and [SEP] count
    cut_b = {t for t in texts if sum(len(w) for w in t.split()) + 2 > limit}  # `w` and each digit a token
    assert cut_a and cut_b - cut_a  # both cut, the digit tokenizer sooner
    compare(a, b, texts, n=MIN_TEXTS, seeds=(1,), encoding=Encoding(max_length=limit))
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("encoderlab: note:")]
    assert notes == [
        f"encoderlab: note: A and B have different tokenizers and --max-length {limit} cut {len(cut_a | cut_b)} "
        f"of the {MIN_TEXTS} texts drawn (A's tokenizer {len(cut_a)}, B's {len(cut_b)}), each at another point, "
        "so for those the models read different spans; give shorter texts, or a larger --max-length where the "
        "models allow it"
    ]
    # one tokenizer cuts every text at one point; texts that fit are read whole by both: no note
    compare(
        a, (make_model(1), tokenizer), texts, n=MIN_TEXTS, seeds=(1,), encoding=Encoding(max_length=limit)
    )
    compare(a, b, texts, n=MIN_TEXTS, seeds=(1,), encoding=Encoding(max_length=64))
    assert "note" not in capsys.readouterr().err
