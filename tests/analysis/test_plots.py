"""The per-layer figures as drawn: what each PNG shows is its table's numbers, on axes a reader can read.

Each figure is caught as it is saved (`savefig_atomic` patched to keep it), rendered, and read back
from matplotlib's own artists, so a line, tick or title is checked as the PNG shows it."""

from __future__ import annotations

import json
import math

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
