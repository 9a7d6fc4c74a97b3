"""Layers constant across texts in exact arithmetic, whose float32 features vary only by rounding that
depends on a text's length: CKA and the probe say "undefined" for them (they reported a CKA of 0.31, "1.3x
seed noise", and a probe's accuracy of the rounding), while a layer of small but real variation keeps its
number (`analysis.collapsed`: suspicion from the features, the verdict from a float64 rerun)."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
import torch
from analysis_helpers import make_adapter, make_model, make_texts

from encoderlab.analysis.cka import ROUNDING, compare, linear_cka
from encoderlab.analysis.collapsed import collapsed_layers, relative_spread, suspect_layers
from encoderlab.analysis.features import pooled_features
from encoderlab.analysis.inputs import MIN_TEXTS
from encoderlab.analysis.probe import ProbeTask, probe_features, probe_model, split_rows


def _flat(seed: int, delta: float = 0.0):
    """A tiny model of ours whose every embedding row is one vector (plus `delta` of seeded noise): with
    `delta` 0 every block is constant across texts in exact arithmetic (attention averages identical
    values; RoPE moves only the weights), and varies in float32 only by the rounding of those weights'
    sum, which depends on the text's length."""
    model = make_model(seed)
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        w = model.embed_tokens.weight
        w[:] = w[7] + delta * torch.randn(w.shape, generator=g)
    return model


@pytest.fixture(scope="module")
def texts():
    return list(dict.fromkeys(make_texts(80, lo=1, hi=12)))[:60]


def _task(texts: list[str]) -> ProbeTask:
    labels = [int(len(t.split()) > 6) for t in texts]  # the length is what the rounding encodes
    return ProbeTask("len", "sequence", texts, labels, ["short", "long"])


def test_a_model_constant_in_exact_arithmetic_has_an_undefined_cka_not_one_of_its_rounding(
    tokenizer, texts, capsys
):
    flat = _flat(0)
    feats = pooled_features(flat, tokenizer, texts)
    assert not any(bool((f == f[:1]).all()) for f in feats)  # not exactly constant: not `check_varies`' case
    noise = np.random.default_rng(0).normal(size=(len(texts), 8))
    assert all(math.isfinite(linear_cka(f, noise)) for f in feats)  # `ROUNDING` let them through
    report = compare(
        (flat, tokenizer), (make_model(1), tokenizer), texts, baseline=(make_model(2), tokenizer), n=MIN_TEXTS
    )
    assert all(math.isnan(r.cka) for r in report.layers)
    assert all(math.isnan(x) for r in report.layers for x in r.ratio_per_seed)
    err = capsys.readouterr().err
    assert "model A is constant across the texts in layers 0-2 (in float64" in err


def test_a_layer_after_a_collapsed_one_is_undefined_too(tokenizer, texts):
    # BERT's block 1 with a zero LayerNorm weight emits its bias at every token; block 2 then reads a
    # token-constant state, and varies only by float32 rounding (2e-7 of its magnitude), read as a CKA
    a, b, twin = (make_adapter("bert", seed) for seed in (0, 1, 2))
    with torch.no_grad():
        a.layers[1].output.LayerNorm.weight.zero_()
    assert 0 < relative_spread(pooled_features(a, tokenizer, texts)[2]) < 1e-5
    report = compare((a, tokenizer), (b, tokenizer), texts, baseline=(twin, tokenizer), n=MIN_TEXTS)
    assert [math.isnan(r.cka) for r in report.layers] == [False, True, True]


def test_a_layer_of_small_but_real_variation_keeps_its_cka(tokenizer, texts):
    near = _flat(0, delta=1e-6)  # every layer varies by about 5e-5 of its magnitude: suspect, but real
    feats = pooled_features(near, tokenizer, texts)
    assert suspect_layers(feats, (torch.float32,)) == [0, 1, 2]  # so the float64 recheck ran, and said no
    assert collapsed_layers(near, feats, lambda m: pooled_features(m, tokenizer, texts)) == []
    b = make_model(1)
    report = compare((near, tokenizer), (b, tokenizer), texts, n=len(texts), seeds=(42,))
    other = pooled_features(b, tokenizer, texts)
    assert [r.cka for r in report.layers] == pytest.approx([linear_cka(x, y) for x, y in zip(feats, other)])
    assert all(math.isfinite(r.cka) for r in report.layers)


def _float64_norms(model):
    """A float64 copy of `model` whose every RMSNorm normalises by the formula, in float64 throughout."""
    from encoderlab.model.encoder import RMSNorm

    exact = copy.deepcopy(model).to(torch.float64)
    for norm in (m for m in exact.modules() if isinstance(m, RMSNorm)):
        norm.forward = lambda x, n=norm: n.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + n.eps)
    return exact


def test_the_float64_recheck_normalises_in_float64(tokenizer, texts):
    # the copy's RMSNorm cast its float64 input to float32 and back: the recheck's features carried float32
    # rounding (about 1e-8 of their magnitude), which can hide a collapse or blur a real small variation
    near = _flat(0, delta=1e-6)
    feats = pooled_features(near, tokenizer, texts)
    seen: list[list[torch.Tensor]] = []
    collapsed_layers(near, feats, lambda m: seen.append(pooled_features(m, tokenizer, texts)) or seen[-1])
    assert len(seen) == 1  # every layer was suspect, so the recheck ran
    want = pooled_features(_float64_norms(near), tokenizer, texts)
    for got, ref in zip(seen[0], want):
        assert relative_spread(torch.stack([got, ref]).reshape(2, -1)) <= ROUNDING
    assert next(near.parameters()).dtype == torch.float32  # the model itself is left as it was


def test_the_probe_of_a_collapsed_layer_is_undefined_not_a_fit_of_its_rounding(tokenizer, texts, capsys):
    task = _task(texts)
    rows = probe_model(_flat(0), tokenizer, task)
    assert all(math.isnan(r.accuracy) and math.isnan(r.macro_f1) for r in rows)
    assert rows[0].n_test == len(split_rows(len(texts), 0)[2])
    assert "is constant across the examples of len in layers 0-2" in capsys.readouterr().err


def test_the_probe_of_a_layer_of_small_but_real_variation_keeps_its_score(tokenizer, texts):
    task = _task(texts)
    near = _flat(0, delta=1e-6)
    rows = probe_model(near, tokenizer, task)
    feats = pooled_features(near, tokenizer, texts, dtype=torch.float32)
    splits = split_rows(len(texts), 0)
    direct = [probe_features(f.numpy(), np.asarray(task.labels), 2, splits, i) for i, f in enumerate(feats)]
    assert [r.accuracy for r in rows] == [r.accuracy for r in direct]
    assert all(math.isfinite(r.accuracy) for r in rows)


def test_analyze_probe_writes_null_for_a_collapsed_model_and_names_no_best_layer(
    tmp_path, tokenizer, texts, capsys
):
    from encoderlab.cli import main
    from encoderlab.model.io import save_model_folder

    folder = save_model_folder(_flat(0), tmp_path / "flat", tokenizer=tokenizer)
    records = [
        {"id": str(i), "text": t, "meta": {"label": str(len(t.split()) > 6)}} for i, t in enumerate(texts)
    ]
    (tmp_path / "len.jsonl").write_text("\n".join(json.dumps(r) for r in records))
    main(
        [
            "analyze",
            "probe",
            str(folder),
            "--tasks",
            str(tmp_path / "len.jsonl"),
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert "no layer has a probe score" in capsys.readouterr().out
    rows = json.loads((tmp_path / "out" / "probe.json").read_text())
    assert [r["accuracy"] for r in rows] == [None, None, None]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_in_half_precision_every_layer_is_rechecked_and_only_the_collapsed_are_undefined(
    tokenizer, texts, dtype
):
    # half precision's rounding is as large as real variation: the features alone cannot tell them apart
    b = (make_model(1).to(dtype), tokenizer)
    flat = compare((_flat(0).to(dtype), tokenizer), b, texts, n=len(texts), seeds=(42,))
    near = compare((_flat(0, delta=1e-3).to(dtype), tokenizer), b, texts, n=len(texts), seeds=(42,))
    assert all(math.isnan(r.cka) for r in flat.layers)
    assert all(math.isfinite(r.cka) for r in near.layers)


def test_a_sweep_score_of_a_collapsed_last_layer_is_undefined_with_no_share_of_the_gap():
    # the probe's NaN went on as a share of the gap (NaN, printed "+nan% of the gap") and a score "nan"
    from encoderlab.analysis.transplant import gap_recovered, sweep_line

    assert gap_recovered(math.nan, 50.0, 60.0) is None and gap_recovered(55.0, math.nan, 60.0) is None
    row = {
        "name": "layers-0-0",
        "description": "layer 0 (block)",
        "accuracy": math.nan,
        "gap_recovered": None,
    }
    line = sweep_line(row)
    assert "nan" not in line and "undefined" in line
    assert gap_recovered(55.0, 50.0, 60.0) == 0.5
