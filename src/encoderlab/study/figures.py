"""The report's figures: each a PNG with the numbers behind it (CSV beside it, and in the report).

The three curves of paper 1 (data efficiency, LR sensitivity, mask ratio) are `analysis/curves.py`'s,
drawn from evaluation's summaries of the study's models; the study only places each model on the
axes: its checkpoint step, its masking ratio (read from the RunConfig it trained), its label. A
data-efficiency line's last point is the final model scored on the checkpoints' tasks and LRs only,
so every point of a line follows the same protocol.

The loss figures, read from the runs' metrics.jsonl, are `lossfigures.py`'s; `Figure` and its save are
`figurefile.py`'s. This module keeps what reads evaluation summaries and CKA results (`StudyData`) and
the one list of every figure in report order. Trade-off: a new figure is listed here whichever module
draws it, so the report's order is decided in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from encoderlab.analysis.curves import Placed, curve_rows
from encoderlab.analysis.plots import LAYER_LABEL, line_panels, pyplot, whole_ticks
from encoderlab.eval.degenerate import TAGGER_RULE
from encoderlab.eval.summary import ALL, EvalRecord
from encoderlab.study.data import CkaResult, StudyData
from encoderlab.study.figurefile import Figure, save_figure
from encoderlab.study.lossfigures import loss_figure, validation_figure
from encoderlab.study.table import ResultsTable
from encoderlab.train.freeze import format_layers
from encoderlab.words import count_of, lr_text, noun


def figures(data: StudyData, table: ResultsTable, study_dir: Path, folder: Path) -> list[Figure]:
    """Draw every figure the study has numbers for into `folder`; returns them as the report shows them."""
    curves = _curves(data, table)
    drawn = [
        _fig_results(data, table, folder),
        _fig_curve(
            data, folder, "data_efficiency", curves.get("data_efficiency", []), "step", "pretraining step",
            "Data efficiency: score against pretraining step",
            note=_checkpoint_protocol(data) + _degenerate_points(data),
        ),
        _fig_curve(
            data, folder, "lr_stability", curves.get("lr_sensitivity", []), "lr", "fine-tuning learning rate",
            "Fine-tuning LR sensitivity (mean test score over tasks)", logx=True,
        ),
        _fig_mask_ratio(data, curves.get("mask_ratio", []), folder),
        *[_fig_cka(r, folder, cka_figure_name(r, data.cka), data.label, _twin(data, r)) for r in data.cka],
        loss_figure(data, study_dir, folder),
        validation_figure(data, study_dir, folder),
    ]  # fmt: skip
    return [f for f in drawn if f is not None]


def _curves(data: StudyData, table: ResultsTable) -> dict[str, list[dict]]:
    """Paper 1's three curves from the study's models, placed on their axes."""
    final_steps, designs = data.final_steps(), data.mask_ratios()
    points = [
        Placed(model=m, summary=data.summary(m), mask_ratio=designs[m][1] if m in designs else None, label=m)
        for m in table.models
    ]
    with_checkpoints = dict.fromkeys(e.model for e in data.evals if e.step is not None)
    lines = {m: _early(data, m) for m in with_checkpoints}
    curves = curve_rows(points, average=True)
    early_points = [
        Placed(
            model=m,
            summary=data.summary(m, step, keep=keep),
            step=final_steps.get(m) if step is None else step,
        )
        for m, (steps, keep) in lines.items()
        for step in [*steps, None]
    ]
    curves["data_efficiency"] = curve_rows(early_points, average=True).get("data_efficiency", [])
    for row in curves.get("mask_ratio", []):  # the line each point belongs to: MLM, or CLM x% -> MLM
        row["design"] = designs[row["model"]][0]
    return curves


def _checkpoint_protocol(data: StudyData) -> str:
    """What the data-efficiency points average: the checkpoints' tasks and LRs, often fewer than the
    final models' (a scale's `checkpoint_tasks`), which the caption names so the line is not read as
    the results table's average."""
    early = [e for e in data.evals if e.step is not None]
    if not early:
        return ""
    tasks = ", ".join(sorted({e.record.task for e in early}))
    lrs = ", ".join(map(lr_text, sorted({e.record.lr for e in early})))
    return (
        f" Every point, the last (the final model) too, is the mean over the tasks and learning rates the "
        f"checkpoints were fine-tuned on: {tasks} at LR {lrs}."
    )


def _degenerate_points(data: StudyData) -> str:
    """The data-efficiency points whose fine-tuning runs predicted one output (evaluation's `degenerate`),
    named in the caption: the demo's MLM-40 line fell from step 100 to its final model, whose brown-pos score
    was the tag prior's for 2 of 3 seeds, and only the report's "Degenerate predictions" list said so."""
    final_steps = data.final_steps()
    said = [
        f"{data.label(m)} at step {final_steps.get(m) if step is None else step} on {task} "
        f"({count_of(d.runs, d.of, 'fine-tuning seed')})"
        for m, (steps, keep) in (
            (m, _early(data, m)) for m in dict.fromkeys(e.model for e in data.evals if e.step is not None)
        )
        for step in [*steps, None]
        for task, t in sorted(data.summary(m, step, keep=keep).tasks.items())
        if (d := t.degenerate)
    ]
    if not said:
        return ""
    return (
        f" Points whose runs predicted one output (a tagger: {TAGGER_RULE}), their score "
        f"the label prior's, not a sign the model learned the task: {'; '.join(said)}."
    )


def _early(data: StudyData, model: str) -> tuple[list[int], Callable[[EvalRecord], bool]]:
    """A model's checkpoint steps, and a filter that keeps its final model's runs on the checkpoints'
    tasks and LRs (checkpoints are often evaluated on fewer of them)."""
    early = [e for e in data.evals if e.model == model and e.step is not None]
    tasks, lrs = {e.record.task for e in early}, {e.record.lr for e in early}
    return sorted({e.step for e in early}), lambda r: r.task in tasks and r.lr in lrs


def _err(rows: list[dict]) -> list[list[float]]:
    lo = [r["mean"] - r["ci_low"] if r["ci_low"] is not None else 0.0 for r in rows]
    hi = [r["ci_high"] - r["mean"] if r["ci_high"] is not None else 0.0 for r in rows]
    return [lo, hi]


def _fig_results(data: StudyData, table: ResultsTable, folder: Path) -> Figure | None:
    plt = pyplot()

    rows = [
        {
            "model": data.label(m),
            "family": f,
            "mean": c.mean,
            "ci_low": c.ci_low,
            "ci_high": c.ci_high,
            "n": c.n,
        }
        for m in table.models
        for f in table.shown_families  # as the results table: no Avg bar repeating a lone family's
        if (c := table.cells[m].get(f))
    ]
    if not rows:
        return None
    models = list(dict.fromkeys(r["model"] for r in rows))
    fams = table.shown_families
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(fams) * max(1, len(models)) / 2), 4))
    width = 0.8 / len(models)
    for i, m in enumerate(models):
        mine = {r["family"]: r for r in rows if r["model"] == m}
        xs = [j + i * width for j, f in enumerate(fams) if f in mine]
        sel = [mine[f] for f in fams if f in mine]
        ax.bar(xs, [r["mean"] for r in sel], width, yerr=_err(sel), capsize=3, label=m)
    ax.set_xticks([j + width * (len(models) - 1) / 2 for j in range(len(fams))])
    ax.set_xticklabels([table.family_heading(f) for f in fams])  # as the results table heads them
    ax.set_ylabel("test score (task metric, %)")
    # beside the axes: inside, it hid the tallest bars
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    ax.set_title("Results per task family (mean ± 95% CI over fine-tuning seeds)")
    return save_figure(
        fig,
        folder,
        "results",
        rows,
        "Results per family",
        # the bars are means: "bars are 95% t-intervals" named the whiskers' numbers as the bars'
        "Bars: the test score at the LR chosen on validation, averaged over the family's tasks (Avg: over all "
        "tasks), mean over fine-tuning seeds; whiskers: 95% t-intervals over fine-tuning seeds.",
    )


def _fig_lines(folder: Path, name: str, rows: list[dict], title: str, caption: str, **axes) -> Figure | None:
    """A line figure drawn by `analysis.plots.line_panels` (PNG + CSV + JSON), as a report figure."""
    if len({r[axes["x"]] for r in rows}) < 2:
        return None
    png = line_panels(
        rows, folder / name, y="mean", panel=None, band=("ci_low", "ci_high"), title=title, **axes
    )
    return Figure(name=name, title=title, caption=caption, png=png, rows=rows)


def _fig_curve(
    data: StudyData,
    folder: Path,
    name: str,
    rows: list[dict],
    x: str,
    xlabel: str,
    title: str,
    logx: bool = False,
    note: str = "",
) -> Figure | None:
    rows = [{**r, "model": data.label(r["model"])} for r in rows if r["name"] == ALL]
    caption = "Points are means over fine-tuning seeds; bands are 95% t-intervals." + note
    return _fig_lines(
        folder, name, rows, title, caption,
        x=x, series="model", xlabel=xlabel, ylabel="mean test score over tasks (%)", xlog=logx,
    )  # fmt: skip


def _fig_mask_ratio(data: StudyData, rows: list[dict], folder: Path) -> Figure | None:
    several = len({r["design"] for r in rows}) > 1  # pure MLM and CLM -> MLM runs: one line each per family
    rows = [
        {
            **r,
            "model": data.label(r["model"]),  # as every other figure and table names it (was the model id)
            "ratio_pct": 100 * r["mask_ratio"],
            "name": (f"{r['design']}: " if several else "")
            + ("Avg" if r["name"] == ALL else r["name"].upper()),
        }
        for r in rows
    ]
    caption = (
        "Score per family against the MLM masking ratio of each run (of a run at several pretraining seeds, its first)"
        + (
            ": runs of MLM alone, and runs of CLM then MLM at each ratio (paper 1's biphasic mask-ratio figure)."
            if several
            else "."
        )
    )
    return _fig_lines(
        folder, "mask_ratio", rows, "Masking-ratio sensitivity", caption,
        x="ratio_pct", series="name", xlabel="MLM masking ratio (%)", ylabel="test score (%)",
    )  # fmt: skip


def _twin(data: StudyData, result: CkaResult) -> str:
    """The label of the seed twin the CKA's noise pair sets against b (empty: none named)."""
    spec = next((c for c in data.spec.cka if (c.a, c.b) == (result.a, result.b)), None)
    return data.label(spec.noise[0]) if spec and spec.noise else ""


def cka_figure_name(result: CkaResult, results: list[CkaResult]) -> str:
    """`cka_<a>`, or `cka_<a>-vs-<b>` when another CKA of the study compares the same run a (named by a
    alone, the second figure overwrote the first's PNG and CSV)."""
    shared = sum(r.a == result.a for r in results) > 1
    return f"cka_{result.a}{f'-vs-{result.b}' if shared else ''}".replace("/", "_")


def _fig_cka(
    result: CkaResult, folder: Path, name: str, label: Callable[[str], str] = str, twin: str = ""
) -> Figure | None:
    """Divergence per layer of a vs b and of the seed-noise pair (`twin`: the twin's label), and below it
    the ratio the CKA claim reads, with paper 2's low layers shaded in both. It drew the divergences alone,
    so the figure showed neither the ratio the claim is decided on nor the layers it averages."""
    plt = pyplot()
    div = result.divergence
    if not div:
        return None
    noise, ratio = result.noise_divergence, result.ratio
    low = list((result.low_layers or {}).get("low_layers") or [])
    has_ratio = bool(ratio) and any(r is not None for r in ratio)
    fig, axes = plt.subplots(
        2 if has_ratio else 1, 1, figsize=(6, 7 if has_ratio else 4), sharex=True, squeeze=False
    )
    top = axes[0][0]
    a, b = label(result.a), label(result.b)  # by label, as the claims and tables name runs (were ids)
    layers = list(range(len(div)))
    top.plot(layers, _nan(div), marker="o", label=f"{a} vs {b}")
    if noise:
        top.plot(
            layers,
            _nan(noise),
            marker="s",
            linestyle="--",
            label=f"seed noise: {twin or f'the twin of {b}'} vs {b}",
        )
    top.set_ylabel("divergence 1 − linear CKA")
    top.set_title(f"CKA divergence per layer: {a} vs {b}")
    drawn_ci = _ratio_panel(axes[1][0], result) if has_ratio else False
    for ax in (row[0] for row in axes):
        if low:  # the group the claim averages against the other layers
            ax.axvspan(min(low) - 0.5, max(low) + 0.5, color="0.9", zorder=0, label=_low_words(low))
        # beside the axes: the deep layers, where the divergence is largest, sit at the top right
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    axes[-1][0].set_xlabel(LAYER_LABEL)
    whole_ticks(axes[-1][0])
    rows = [
        {
            "layer": i,
            "divergence": d,
            "noise_divergence": noise[i] if noise else None,
            "ratio": (ratio or [None] * len(div))[i],
            "ratio_ci_low": (result.ratio_ci_low or [None] * len(div))[i],
            "ratio_ci_high": (result.ratio_ci_high or [None] * len(div))[i],
            "low_layer": i in low,
        }
        for i, d in enumerate(div)
    ]
    caption = _cka_caption(has_ratio, low, _bars_words(result, drawn_ci))
    return save_figure(fig, folder, name, rows, f"CKA divergence: {a} vs {b}", caption)


def _ratio_panel(ax, result: CkaResult) -> bool:
    """The ratio per layer against 1, with each layer's 95% interval over sampling seeds as an error bar where
    the node wrote one (bars, not a band: a layer is a point, and nothing lies between two layers); returns
    whether any bar was drawn. The panel drew the ratio alone, so a layer's ratio read against 1 showed no
    uncertainty though the claim decides by intervals."""
    ratio = _nan(result.ratio or [])
    layers = list(range(len(ratio)))
    ax.plot(layers, ratio, marker="o", color="C2", label="ratio: divergence / seed noise")
    lows, highs = _nan(result.ratio_ci_low or []), _nan(result.ratio_ci_high or [])
    with_ci = [i for i in range(min(len(lows), len(highs))) if lows[i] == lows[i] and highs[i] == highs[i]]
    if with_ci:  # asymmetric: the bounds as written, not re-derived from the ratio
        centres = [(lows[i] + highs[i]) / 2 for i in with_ci]
        ax.errorbar(
            with_ci,
            centres,
            yerr=[
                [c - lows[i] for c, i in zip(centres, with_ci)],
                [highs[i] - c for c, i in zip(centres, with_ci)],
            ],
            fmt="none",
            ecolor="C2",
            capsize=3,
            label="95% CI over sampling seeds",
        )
    ax.axhline(1.0, color="0.4", linestyle=":", label="1: no more than seed noise")
    ax.set_ylabel("divergence / seed noise")
    return bool(with_ci)


def _nan(values: list[float | None]) -> list[float]:
    """None (an undefined CKA or ratio) as NaN: a gap in the line, not a TypeError."""
    return [float("nan") if v is None else v for v in values]


def _low_words(low: list[int]) -> str:
    return f"paper 2's low {noun(len(low), 'layer')} {format_layers(low)}"


def _cka_caption(has_ratio: bool, low: list[int], bars: str = "") -> str:
    text = (
        "Linear CKA (float64) of mean-pooled hidden states per layer on held-out texts; the dashed line is the "
        "divergence between two runs that differ only in seed."
    )
    if has_ratio:
        text += (
            " Below: the ratio of the two, the number the CKA claim reads (1: the runs differ no more than seed "
            "noise). The ratio is the mean over sampling seeds of each seed's divergence over its seed noise, so "
            "it differs a little from divergence / noise_divergence, which are means over the seeds."
        )
        text += bars
    if low:
        text += (
            f" Shaded: {_low_words(low)}, the group whose mean ratio the claim sets against 1 and against the "
            "other layers' (paper 2's groups, scaled to this depth)."
        )
    return text


def _bars_words(result: CkaResult, drawn: bool) -> str:
    """What the ratio panel's bars are, or why it has none: an old node's figure said nothing of the intervals
    the claim beside it is decided by, so a reader could not tell "none computed" from "none written"."""
    if drawn:
        return (
            " Bars: each layer's 95% t-interval over the sampling seeds (ratio_ci_low/high), widened for the texts "
            "two samples share, the interval the claim's group means get; it covers which texts were drawn for "
            "these fixed models, not pretraining-seed variation."
        )
    if result.ratio_ci_low is None:  # the node's result has no such field: it finished before 2026-12-06
        return (
            " No bars: the CKA node finished before nodes wrote each layer's interval over sampling seeds; delete "
            "its folder under nodes/cka/ and run the study again to draw them."
        )
    return " No layer has an interval over sampling seeds (one seed, every seed drew the same texts, or no finite ratio)."
