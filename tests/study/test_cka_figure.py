"""The study report's CKA figure shows what the CKA claim is decided on: the ratio of each layer's divergence
to its seed noise, against 1, with paper 2's low layers marked and the seed-noise pair named.

Until 2026-12-06 it drew the two divergences alone, with a legend entry "seed noise" naming no run, so a
reader could not see the ratio the claim reads nor which layers it averages.
"""

from __future__ import annotations

import csv

from fake_study import backend, small_spec

import encoderlab.study.figures as figures
from encoderlab.study.report import write_report
from encoderlab.study.runner import run_study


def test_the_cka_figure_draws_the_claims_ratio_and_marks_the_low_layers(tmp_path, monkeypatch):
    run_study(small_spec(), tmp_path, backend(), progress=False)
    drawn = {}
    save = figures.save_figure

    def spy(fig, folder, name, *args, **kwargs):
        drawn[name] = [(ax.get_ylabel(), ax.get_legend_handles_labels()[1], ax) for ax in fig.axes]
        return save(fig, folder, name, *args, **kwargs)

    monkeypatch.setattr(figures, "save_figure", spy)
    write_report(tmp_path)

    cka = tmp_path / "report" / "figures" / "cka_clm.csv"
    rows = list(csv.DictReader(cka.open()))
    low = [int(r["layer"]) for r in rows if r["low_layer"] == "True"]
    ratios = [float(r["ratio"]) for r in rows]
    assert low and low[0] == 0 and len(low) < len(rows)

    (_, top_labels, _), (ratio_label, labels, ratio_ax) = drawn["cka_clm"]
    assert "seed noise: MLM-40 seed 2 vs MLM-40" in top_labels  # the pair, as the claim names it
    assert "seed noise" in ratio_label and "1: no more than seed noise" in labels
    line = next(li for li in ratio_ax.get_lines() if li.get_label().startswith("ratio"))
    assert list(line.get_ydata()) == ratios  # the CSV's ratio, the number the claim averages
    span = next(p for p in ratio_ax.patches if p.get_label().startswith("paper 2's low"))
    x0, x1 = span.get_x(), span.get_x() + span.get_width()  # in layers (data coordinates)
    assert x0 < min(low) and max(low) < x1 < max(low) + 1
    html = (tmp_path / "report" / "report.html").read_text()
    assert "the number the CKA claim reads" in html
