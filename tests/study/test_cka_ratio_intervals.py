"""The study report's CKA figure draws each layer's ratio with its 95% interval over sampling seeds, and its
CSV holds the bounds.

`analyze cka` computes the interval per layer (`CkaLayer.ratio_ci_low/high`, from
`analysis.cka_report.seed_interval`, which tests/analysis/test_cka.py checks against a t-interval computed
directly from each seed's linear CKA). Until 2026-12-06 the study's CKA node wrote it to cka.json but left
it out of the result the report reads, so the figure's ratio panel and its CSV had no intervals, though the
claim beside it is decided by intervals. A node finished before then has none: its figure still renders,
without bars, and its caption says there are none.
"""

from __future__ import annotations

import csv
import dataclasses
import json

import pytest
from fake_study import backend, run_cka_node, small_spec

import encoderlab.study.figures as figures
from encoderlab.config import from_dict
from encoderlab.study.data import CkaResult
from encoderlab.study.report import write_report
from encoderlab.study.runner import run_study
from encoderlab.study.spec import CkaSpec

BOUNDS = ("ratio_ci_low", "ratio_ci_high")


def test_the_cka_node_hands_the_report_each_layers_interval_as_cka_json_holds_it(tmp_path, monkeypatch):
    from tests.analysis.analysis_helpers import make_model, make_texts

    models = {"a": make_model(0), "b": make_model(1), "twin": make_model(2)}
    # 50 of 60 texts at the three default sampling seeds: three distinct draws, so every layer has an interval
    analysis = CkaSpec(a="a", b="b", noise=("twin", "b"), n_texts=50)
    result = run_cka_node(tmp_path, monkeypatch, analysis, models, make_texts(60))
    layers = json.loads((tmp_path / "cka.json").read_text())["layers"]
    for key in BOUNDS:
        assert result[key] == [r[key] for r in layers]  # exactly what `analyze cka` computed
    lows, highs = result["ratio_ci_low"], result["ratio_ci_high"]
    assert all(lo is not None and lo < r < hi for lo, r, hi in zip(lows, result["ratio"], highs))
    read = from_dict(CkaResult, result, where="cka")  # as the report reads the node's marker
    assert (read.ratio_ci_low, read.ratio_ci_high) == (result["ratio_ci_low"], result["ratio_ci_high"])


def test_without_a_noise_pair_the_node_writes_no_interval(tmp_path, monkeypatch):
    from tests.analysis.analysis_helpers import make_model, make_texts

    models = {"a": make_model(0), "b": make_model(1)}
    result = run_cka_node(tmp_path, monkeypatch, CkaSpec(a="a", b="b", n_texts=50), models, make_texts(60))
    assert result["ratio"] is None and all(result[k] is None for k in BOUNDS)


def _spy(monkeypatch) -> dict:
    """name -> the ratio panel's axes, taken as each figure is saved."""
    drawn = {}
    save = figures.save_figure

    def spy(fig, folder, name, *args, **kwargs):
        drawn[name] = fig.axes
        return save(fig, folder, name, *args, **kwargs)

    monkeypatch.setattr(figures, "save_figure", spy)
    return drawn


def test_the_ratio_panel_draws_each_layers_interval_and_the_csv_holds_it(tmp_path, monkeypatch):
    run_study(small_spec(), tmp_path, backend(), progress=False)
    drawn = _spy(monkeypatch)
    write_report(tmp_path)

    (node_json,) = tmp_path.rglob("cka/**/cka.json")  # the fake node writes its result there
    node = json.loads(node_json.read_text())
    rows = list(csv.DictReader((tmp_path / "report" / "figures" / "cka_clm.csv").open()))
    for key in BOUNDS:
        assert [float(r[key]) for r in rows] == pytest.approx(node[key])
    ratio_ax = drawn["cka_clm"][1]
    (bars,) = ratio_ax.containers  # one errorbar set: a vertical segment per layer
    segments = bars.lines[2][0].get_segments()
    assert len(segments) == len(rows)
    for (x0, y0), (x1, y1) in segments:
        layer = round(x0)
        assert x0 == x1 == layer
        assert sorted((y0, y1)) == pytest.approx([node["ratio_ci_low"][layer], node["ratio_ci_high"][layer]])
    assert "95% CI over sampling seeds" in ratio_ax.get_legend_handles_labels()[1]
    assert "95% t-interval over the sampling seeds" in (tmp_path / "report" / "report.html").read_text()


def test_an_old_cka_node_without_intervals_still_renders_and_says_it_has_none(tmp_path, monkeypatch):
    drawn = _spy(monkeypatch)
    old = CkaResult(  # a node finished before 2026-12-06: a ratio per layer, no interval
        a="clm", b="mlm", divergence=[0.3, 0.2, 0.1], noise_divergence=[0.1, 0.1, 0.1], ratio=[3.0, 2.0, 1.0]
    )
    fig = figures._fig_cka(old, tmp_path, "cka_clm")
    assert drawn["cka_clm"][1].containers == []  # the ratio drawn, no bars
    assert "No bars: the CKA node finished before nodes wrote each layer's interval" in fig.caption
    rows = list(csv.DictReader((tmp_path / "cka_clm.csv").open()))
    assert [r["ratio"] for r in rows] == [str(r) for r in old.ratio]
    assert all(r[k] == "" for r in rows for k in BOUNDS)
    # a new node with one sampling seed wrote the fields, with no interval in them: not called old
    one_seed = dataclasses.replace(old, ratio_ci_low=[None] * 3, ratio_ci_high=[None] * 3)
    fig = figures._fig_cka(one_seed, tmp_path, "cka_clm")
    assert drawn["cka_clm"][1].containers == []
    assert "No layer has an interval over sampling seeds" in fig.caption and "No bars" not in fig.caption
