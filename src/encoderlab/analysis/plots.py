"""Figures of the analyses: one function per figure type, each writing a PNG and its numbers.

Every figure is drawn from a flat table (a list of dicts) and saved as `<stem>.png` next to
`<stem>.csv` and `<stem>.json` holding exactly that table, so a reader can re-plot or check any
point without re-running a model. matplotlib runs on the Agg backend (headless, deterministic);
nothing here computes a statistic, it only draws what the analysis modules produced.

Layout: a figure has one panel per task (or task family) and one line per model, with a shaded
band where a confidence interval exists. Axes name their units: CKA divergence is a fraction,
scores are the evaluation metric in percent (0-100, as `encoderlab.eval.metrics` returns them).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

from encoderlab.atomic import json_text, savefig_atomic, write_csv_atomic, write_text_atomic


def pyplot():
    """matplotlib's pyplot on the Agg backend, imported when a figure is drawn: importing it writes its
    font cache and config folder ($HOME/.cache/matplotlib, or MPLCONFIGDIR), which every `analyze` command
    did on import, a refused one too (a command refused leaves nothing behind)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_json(value, path: Path) -> None:
    """`value` as strict JSON at `path` (non-finite numbers as null). A value that is not JSON (a Path, a
    numpy array) is a TypeError, a bug in the caller, not its str written as if it were a number."""
    write_text_atomic(path, json_text(value, indent=1))


def save_table(rows: Sequence[dict], stem: Path, columns: Sequence[str] | None = None) -> None:
    """Write `rows` as `<stem>.csv` and `<stem>.json`; the CSV's columns are `columns` (a table of fixed
    columns: its header even with no rows), else the union of the rows' keys in first-seen order."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    write_csv_atomic(stem.with_suffix(".csv"), rows, columns)
    write_json(list(rows), stem.with_suffix(".json"))


def _grouped(rows: Sequence[dict], key: str) -> dict:
    groups: dict = {}
    for row in rows:
        groups.setdefault(row[key], []).append(row)
    return groups


def whole_ticks(ax) -> None:
    """Tick `ax`'s x axis at whole numbers only: on a few layers matplotlib's default put ticks at 0.25,
    0.5, ..., a "layer 0.75" that no block is."""
    from matplotlib.ticker import MaxNLocator  # here, not at import: see `pyplot`

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def fitted_title(text: str, inches: float) -> str:
    """`text` wrapped to lines that fit `inches` of width at the default title size (12 pt: about 11 characters
    of our titles an inch, 10 leaves a margin): a long title was cut at both edges of the PNG, which matplotlib
    neither shrinks nor wraps."""
    return textwrap.fill(text, width=max(20, int(10 * inches)))


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def line_panels(
    rows: Sequence[dict],
    stem: Path,
    *,
    x: str,
    y: str,
    series: str,
    panel: str | None,
    xlabel: str,
    ylabel: str,
    title: str,
    band: tuple[str, str] | None = None,
    xlog: bool = False,
    table: Sequence[dict] | None = None,
    integer_x: bool = False,
) -> Path:
    """Lines of `y` against `x`, one per `series` value, one panel per `panel` value; PNG + the
    table behind it (`rows`, or `table` when the plotted rows are a reshaped view of it); `integer_x`
    ticks x at whole numbers only (layers)."""
    if not rows:
        raise ValueError(f"no data to plot for {stem.name}")
    panels = _grouped(rows, panel) if panel else {"": list(rows)}
    cols = min(3, len(panels))
    n_rows = math.ceil(len(panels) / cols)
    plt = pyplot()
    width = 5 + _legend_inches(rows, series)  # each panel's legend beside it, the axes keeping their 5 inches
    fig, axes = plt.subplots(n_rows, cols, figsize=(width * cols, 3.8 * n_rows), squeeze=False)
    for ax, (name, panel_rows) in zip(axes.flat, panels.items()):
        hidden = [
            note
            for label, line in _grouped(panel_rows, series).items()
            for note in _line(ax, line, label, x, y, band)
        ]
        if hidden:  # a point the axes cannot show is named, not dropped without a word
            text = fitted_title("not drawn: " + "; ".join(hidden), 4.8)
            ax.text(0.01, 0.01, text, transform=ax.transAxes, fontsize="small", va="bottom", color="tab:red")
        if xlog:
            _log_ticks(ax, panel_rows, x)
        if integer_x:
            whole_ticks(ax)
        ax.set_title(fitted_title(str(name) if panel else title, 5))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        # beside the axes, as the study's results figure: matplotlib's "best" spot inside them still ran a
        # line behind the box (the LR-sensitivity figure's top line, between its two LRs)
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    if panel:
        fig.suptitle(fitted_title(title, 5 * cols))
    fig.tight_layout()
    stem.parent.mkdir(parents=True, exist_ok=True)
    png = stem.with_suffix(".png")
    savefig_atomic(fig, png, dpi=120)
    plt.close(fig)
    save_table(rows if table is None else table, stem)
    return png


def _legend_inches(rows: Sequence[dict], series: str) -> float:
    """About the width of a legend of `series`'s labels at the "small" font (handle and padding, then some
    0.07 inch a character), which the figure adds so the axes keep their width beside it."""
    return 0.8 + 0.07 * max(len(str(r[series])) for r in rows)


def _log_ticks(ax, rows: Sequence[dict], x: str) -> None:
    """A log x axis ticked at the values drawn (an LR grid): within one decade matplotlib labelled its minor
    ticks 2, 3 and 4 x 10^-4, run into each other, and left the grid's own 5e-4 without a label."""
    ax.set_xscale("log")
    values = sorted({float(r[x]) for r in rows if _present(r[x])})
    ax.set_xticks(values, [f"{v:g}" for v in values])
    ax.set_xticks([], minor=True)


def _line(ax, rows: Sequence[dict], label, x: str, y: str, band: tuple[str, str] | None) -> list[str]:
    """Draw one series (its `band` where the row has one: one row without it dropped the whole band, so an
    infinite ratio at layer 0 hid the intervals of every other layer) and return what it could not draw: a
    non-finite y (an infinite CKA ratio, where the seed noise is 0), which matplotlib silently leaves out."""
    line = sorted((r for r in rows if _present(r[x]) and r[y] is not None), key=lambda r: r[x])
    drawn = [r for r in line if math.isfinite(r[y])]
    (handle,) = ax.plot([r[x] for r in drawn], [r[y] for r in drawn], marker="o", label=str(label))
    if band and any(_present(r[band[0]]) for r in drawn):
        edges = [[r[k] if _present(r[k]) else math.nan for r in drawn] for k in band]
        ax.fill_between([r[x] for r in drawn], *edges, alpha=0.2, color=handle.get_color())
    return [f"{label} at {x} {r[x]} ({y} {r[y]})" for r in line if not math.isfinite(r[y])]


LAYER_LABEL = "layer (block index)"
"""The x axis of every per-layer figure: layer l is the output of block l (`analysis.features`), never
the embedding output; the study report's CKA figure uses it too."""


def plot_cka(rows: Sequence[dict], stem: Path, title: str = "Layer-wise CKA divergence") -> Path:
    """Divergence (1 - CKA) by layer for A vs B (band: +- sd over sampling seeds, which the title names: it
    named no band, beside a ratio figure whose band is a 95% interval; one seed has none) and, when
    present, B' vs B (the seed noise)."""
    if any(row.get("cka_std") for row in rows):
        title += " (band: ± 1 sd over sampling seeds)"
    lines = []
    for row in rows:
        d, sd = row["divergence"], row.get("cka_std") or 0.0
        lines.append(
            {
                "layer": row["layer"],
                "pair": row.get("pair_label", "A vs B"),
                "divergence": d,
                "lo": d - sd,
                "hi": d + sd,
            }
        )
        if _present(row.get("baseline_divergence")):
            label = row.get("baseline_label", "seed twin vs B")
            lines.append(
                {
                    "layer": row["layer"],
                    "pair": label,
                    "divergence": row["baseline_divergence"],
                    "lo": None,
                    "hi": None,
                }
            )
    return line_panels(
        lines, stem, x="layer", y="divergence", series="pair", panel=None, table=rows, band=("lo", "hi"),
        integer_x=True, xlabel=LAYER_LABEL, ylabel="divergence 1 - CKA (fraction)", title=title,
    )  # fmt: skip


def plot_cka_ratio(rows: Sequence[dict], stem: Path) -> Path:
    """The ratio of divergence to seed-noise divergence by layer (1 = no more than seed noise),
    with its 95% interval over sampling seeds as a band where there is one."""
    return line_panels(
        [{**r, "series": r.get("pair_label", "A vs B")} for r in rows], stem, x="layer", y="ratio", series="series",
        panel=None, band=("ratio_ci_low", "ratio_ci_high"), table=rows, integer_x=True, xlabel=LAYER_LABEL,
        ylabel="d(A, B) / d(B', B) (ratio, 1 = seed noise)",
        title="CKA divergence relative to seed noise (band: 95% CI over sampling seeds)",
    )  # fmt: skip


def plot_probe(rows: Sequence[dict], stem: Path) -> Path:
    """Probe test accuracy by layer, one line per model, one panel per task."""
    return line_panels(
        rows, stem, x="layer", y="accuracy", series="model", panel="task", integer_x=True,
        xlabel=LAYER_LABEL, ylabel="probe test accuracy (%)", title="Linear probe accuracy by layer",
    )  # fmt: skip


def plot_transplant(rows: Sequence[dict], stem: Path) -> Path:
    """Horizontal bars of the probe score of A, B and each transplant (with the share of gap recovered)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.5))
    names = [r["name"] for r in rows]
    scores = [r["accuracy"] for r in rows]
    ax.barh(
        range(len(rows)), scores, color=["tab:gray" if r["name"] in ("A", "B") else "tab:blue" for r in rows]
    )
    for i, r in enumerate(rows):
        if _present(r.get("gap_recovered")):
            ax.text(scores[i], i, f" {100 * r['gap_recovered']:+.0f}% of gap", va="center", fontsize="small")
    ax.set_yticks(range(len(rows)), names)
    ax.invert_yaxis()
    ax.set_xlabel("probe test accuracy (%)")
    ax.set_title(fitted_title("Transplants into B: probe score and share of the B -> A gap recovered", 7))
    fig.tight_layout()
    png = stem.with_suffix(".png")
    stem.parent.mkdir(parents=True, exist_ok=True)
    savefig_atomic(fig, png, dpi=120)
    plt.close(fig)
    save_table(rows, stem)
    return png


SCORE_LABEL = "test score (metric, 0-100)"


def plot_data_efficiency(rows: Sequence[dict], stem: Path) -> Path:
    """Selected test score against pretraining step, one line per model, one panel per task or family."""
    return line_panels(
        rows, stem, x="step", y="mean", series="model", panel="name", band=("ci_low", "ci_high"),
        xlabel="pretraining step", ylabel=SCORE_LABEL, title="Data efficiency (best-validation LR, 95% t-CI)",
    )  # fmt: skip


def plot_lr_sensitivity(rows: Sequence[dict], stem: Path) -> Path:
    """Test score against fine-tuning LR (log axis), one line per model, one panel per task or family."""
    return line_panels(
        rows, stem, x="lr", y="mean", series="model", panel="name", band=("ci_low", "ci_high"), xlog=True,
        xlabel="fine-tuning learning rate", ylabel=SCORE_LABEL, title="LR sensitivity (mean over seeds, 95% t-CI)",
    )  # fmt: skip


def plot_mask_ratio(rows: Sequence[dict], stem: Path) -> Path:
    """Selected test score against MLM masking ratio, one line per model group, one panel per family."""
    return line_panels(
        [{**r, "mask_ratio_pct": 100 * r["mask_ratio"]} for r in rows], stem, x="mask_ratio_pct", y="mean",
        series="model", panel="name", band=("ci_low", "ci_high"), table=rows, xlabel="masking ratio (%)",
        ylabel=SCORE_LABEL, title="Masking-ratio sensitivity (best-validation LR, 95% t-CI)",
    )  # fmt: skip
