"""The per-layer figures as drawn: what each PNG shows is its table's numbers, on axes a reader can read.

Each figure is caught as it is saved (`savefig_atomic` patched to keep it), rendered, and read back
from matplotlib's own artists, so a line, tick or title is checked as the PNG shows it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from encoderlab.analysis import plots

ROWS = [  # three layers of an `analyze cka` table with a seed twin (`CkaLayer`, labels added)
    {"layer": i, "cka": 1 - d, "divergence": d, "cka_std": 0.01 * (i + 1), "chance_floor": 0.39,
     "baseline_cka": 1 - n, "baseline_divergence": n, "ratio": d / n, "ratio_ci_low": d / n - 0.1,
     "ratio_ci_high": d / n + 0.1, "ratio_per_seed": [d / n] * 3, "pair_label": "A vs B",
     "baseline_label": "B' vs B (seed noise)"}
    for i, (d, n) in enumerate([(0.5953, 0.5710), (0.6636, 0.6104), (0.7105, 0.6576)])
]  # fmt: skip
PROBE = [
    {"model": m, "task": "seq", "kind": "sequence", "layer": i, "accuracy": a, "macro_f1": a, "val_accuracy": a,
     "lam": 0.1}
    for m, accs in (("a", [91.7, 100.0, 91.7]), ("b", [83.3, 75.0, 91.7])) for i, a in enumerate(accs)
]  # fmt: skip


@pytest.fixture
def saved(monkeypatch):
    """The figures saved while the test runs (kept open: the drawing code closes only its own handle)."""
    figures = []

    def keep(fig, path, **kwargs):
        figures.append(fig)
        fig.savefig(path, **kwargs)

    monkeypatch.setattr(plots, "savefig_atomic", keep)
    return figures


def _drawn(fig):
    canvas = FigureCanvasAgg(fig)  # the PNG's own backend (a figure kept past savefig may hold a bare canvas)
    canvas.draw()
    return canvas.get_renderer()


def _layer_ticks(ax) -> list[float]:
    low, high = ax.get_xlim()
    return [t for t in ax.get_xticks() if low <= t <= high]


@pytest.mark.parametrize(
    "draw",
    [
        lambda out: plots.plot_cka(ROWS, out / "cka"),
        lambda out: plots.plot_cka_ratio(ROWS, out / "cka_ratio"),
        lambda out: plots.plot_probe(PROBE, out / "probe"),
    ],
    ids=["cka", "cka_ratio", "probe"],
)
def test_a_per_layer_figure_ticks_whole_layers_and_shows_its_whole_title(draw, saved, tmp_path):
    # was: ticks at 0.25, 0.5, ... on 3 layers (a "layer 0.75" that no block is), and cka_ratio's title ran
    # past both edges of its figure, cut to "A divergence relative to seed noise (band: 95% CI over samp"
    draw(tmp_path)
    (fig,) = saved
    renderer = _drawn(fig)
    ax = fig.axes[0]
    assert _layer_ticks(ax) and all(float(t).is_integer() for t in _layer_ticks(ax)), ax.get_xticks()
    box = fig.bbox
    for title in [ax.title, *([fig._suptitle] if fig._suptitle else [])]:
        extent = title.get_window_extent(renderer)
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1 and extent.y1 <= box.y1, title.get_text()


def test_the_cka_figures_draw_the_numbers_of_their_tables(saved, tmp_path):
    plots.plot_cka(ROWS, tmp_path / "cka")
    plots.plot_cka_ratio(ROWS, tmp_path / "cka_ratio")
    cka, ratio = (fig.axes[0] for fig in saved)
    table = json.loads((tmp_path / "cka.json").read_text())
    assert table == json.loads((tmp_path / "cka_ratio.json").read_text()) == ROWS
    lines = {line.get_label(): line for line in cka.get_lines()}
    assert list(lines["A vs B"].get_ydata()) == [r["divergence"] for r in table]
    assert list(lines["B' vs B (seed noise)"].get_ydata()) == [r["baseline_divergence"] for r in table]
    assert list(lines["A vs B"].get_xdata()) == [r["layer"] for r in table]
    (ratio_line,) = [line for line in ratio.get_lines() if line.get_label() == "A vs B"]
    assert list(ratio_line.get_ydata()) == [r["ratio"] for r in table]
    # the bands: +- the sd over seeds around the divergence, the 95% interval around the ratio
    assert "band: ± 1 sd over sampling seeds" in cka.get_title().replace("\n", " ")  # was unnamed
    (cka_band,) = cka.collections
    (ratio_band,) = ratio.collections
    low_edge = sorted({round(y, 12) for _, y in cka_band.get_paths()[0].vertices})
    for row in table:
        assert any(math.isclose(y, row["divergence"] - row["cka_std"]) for y in low_edge)
        assert any(math.isclose(y, row["ratio_ci_high"]) for _, y in ratio_band.get_paths()[0].vertices)


def test_an_infinite_ratio_is_named_on_the_figure_and_the_other_layers_keep_their_band(saved, tmp_path):
    # a twin sharing B's layer 0 (both froze it from one start model): seed noise 0 there, ratio inf, no interval.
    # matplotlib left layer 0 out without a word, and its missing interval dropped every other layer's band.
    rows = [{**ROWS[0], "ratio": math.inf, "ratio_ci_low": None, "ratio_ci_high": None}, *ROWS[1:]]
    plots.plot_cka_ratio(rows, tmp_path / "cka_ratio")
    (ax,) = saved[0].axes
    notes = [t.get_text().replace("\n", " ") for t in ax.texts]
    assert notes == ["not drawn: A vs B at layer 0 (ratio inf)"]
    (band,) = ax.collections
    edges = band.get_paths()[0].vertices[:, 1]
    for row in rows[1:]:
        assert any(math.isclose(y, row["ratio_ci_high"]) for y in edges)
        assert any(math.isclose(y, row["ratio_ci_low"]) for y in edges)


def _covered(legend_box, ax) -> list[str]:
    """The lines of `ax` that pass under `legend_box`, sampled along each segment in display space (a line
    with its markers outside the box can still run behind it)."""
    hidden = []
    for line in ax.get_lines():
        points = line.get_transform().transform(line.get_xydata())
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            if any(
                legend_box.contains(x0 + t * (x1 - x0), y0 + t * (y1 - y0)) for t in np.linspace(0, 1, 50)
            ):
                hidden.append(line.get_label())
                break
    return hidden


def test_a_line_figures_legend_hides_no_line(saved, tmp_path):
    # was: the study's LR-sensitivity figure put its legend where matplotlib found room ("best"), over the
    # top line (CLM 25% -> MLM-40 ran behind the box between the two LRs)
    scores = {"MLM-40": (70.0, 61.9), "MLM-20": (69.8, 62.0), "CLM": (64.0, 63.2), "CLM 25% -> MLM-40": (72.0, 71.3),
              "MLM-40 seed 2": (69.9, 61.9)}  # fmt: skip
    rows = [
        {"model": m, "lr": lr, "mean": s, "ci_low": s - 0.4, "ci_high": s + 0.4}
        for m, pair in scores.items()
        for lr, s in zip((1e-4, 5e-4), pair)
    ]
    plots.line_panels(
        rows, tmp_path / "lr", x="lr", y="mean", series="model", panel=None, band=("ci_low", "ci_high"),
        xlabel="fine-tuning learning rate", ylabel="mean test score over tasks (%)", title="LR", xlog=True,
    )  # fmt: skip
    (fig,) = saved
    renderer = _drawn(fig)
    (ax,) = [a for a in fig.axes if a.get_visible()]
    legend = ax.get_legend().get_window_extent(renderer)
    assert _covered(legend, ax) == []
    box = fig.bbox  # and the legend is whole on the figure
    assert box.x0 <= legend.x0 and legend.x1 <= box.x1 and box.y0 <= legend.y0 and legend.y1 <= box.y1
    # the log axis is ticked at the LRs drawn: one decade's minor ticks read 2, 3, 4 x 10^-4, run together,
    # and the grid's 5e-4 had no label
    shown = [
        t.get_text() for t in ax.get_xticklabels(minor=False) + ax.get_xticklabels(minor=True) if t.get_text()
    ]
    assert shown == ["0.0001", "0.0005"]
