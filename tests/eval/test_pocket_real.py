"""One real pocket task (WNUT-16) end to end on a tiny model; skipped unless the asset is cached."""

from __future__ import annotations

import json

import pytest

from encoderlab.eval import evaluate

pytestmark = [pytest.mark.assets, pytest.mark.slow]


def test_wnut16_on_a_tiny_model(tmp_path):
    from encoderlab.data.assets import asset_jsonl, is_fetched

    if not is_fetched("wnut16"):
        pytest.skip("wnut16 is not fetched (encoderlab assets fetch wnut16)")
    from tests.eval.conftest import make_tokenizer, tiny_model

    from encoderlab.model.io import save_model_folder

    texts = [json.loads(line)["text"] for line in asset_jsonl("wnut16").read_text().splitlines()]
    tok = make_tokenizer(texts)
    # the tests' 2-layer model: what is tested is the real task's data, labels and metrics, not a size
    model = save_model_folder(tiny_model(len(tok)), tmp_path / "tiny", tok)
    summary = evaluate(
        str(model),
        suite="pocket",
        tasks=["wnut16"],
        lrs=[5e-4],
        seeds=[0],
        out=tmp_path / "eval",
        progress=False,
    )
    record = json.loads((tmp_path / "eval" / "results.jsonl").read_text())
    test = record["test"]["test"]
    assert test["n"] > 400 and test["seqeval"]["mode"] == "strict"
    # From random weights one epoch learns at least the dominant "O" tag (~90% of words; 1/21 is chance).
    assert test["accuracy"] > 85 and 0 <= test["entity_f1"] <= 100
    assert summary.tasks["wnut16"].best_lr == 5e-4
