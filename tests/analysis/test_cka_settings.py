"""What a CKA report records of how it was computed, and what `cka.compare` reads as its pool of texts."""

from __future__ import annotations

import json

import pytest
from analysis_helpers import make_model, make_texts

from encoderlab.analysis.cka import compare
from encoderlab.analysis.commands import cka_command
from encoderlab.analysis.inputs import MIN_TEXTS
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
