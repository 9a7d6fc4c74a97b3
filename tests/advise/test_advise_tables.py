"""`advise`'s figure tables keep their header when empty: `curves.csv` of a ladder with no schedule fitted
(too few rungs: the single-rung ranking) was a bare line break, `analysis.plots.save_table` taking its
columns from the rows."""

from __future__ import annotations

import csv
import dataclasses
import json

from encoderlab.advise.decide import CURVE_COLUMNS, RUN_COLUMNS, advise
from encoderlab.advise.ladder import KNOWN_METRICS, Ladder, Observation
from encoderlab.advise.predict import Target
from encoderlab.advise.report import format_advice, plot_advice
from encoderlab.advise.synthetic import CLM_LIKE, MLM_LIKE
from encoderlab.analysis.plots import save_table


def _two_rung_advice():
    """Advice on a ladder of two rungs a schedule: too few to fit a curve (the single-rung ranking)."""
    values = {MLM_LIKE: [(3.0, 3.01), (2.6, 2.61)], CLM_LIKE: [(2.9, 2.91), (2.5, 2.52)]}
    runs = [
        Observation(schedule=s, params=n, tokens=20 * n, seed=k, value=v)
        for s, rungs in values.items()
        for n, seeds in zip((1e7, 2e7), rungs)
        for k, v in enumerate(seeds)
    ]
    return advise(Ladder(KNOWN_METRICS["val/mlm15"], tuple(runs)), Target(params=1e8, tokens=2e9), n_boot=20)


def test_an_empty_table_of_given_columns_has_its_header(tmp_path):
    save_table([], tmp_path / "t", columns=("a", "b"))
    assert (tmp_path / "t.csv").read_text().splitlines() == ["a,b"]
    assert json.loads((tmp_path / "t.json").read_text()) == []
    save_table([{"b": 1, "a": 2}], tmp_path / "t", columns=("a", "b"))
    assert (tmp_path / "t.csv").read_text().splitlines() == ["a,b", "2,1"]


def test_advise_without_curves_writes_the_curves_header(tmp_path):
    adv = _two_rung_advice()
    assert adv.curves == () and adv.method == "single rung"
    plot_advice(adv, tmp_path / "advise")
    with (tmp_path / "curves.csv").open(newline="") as fh:
        assert next(csv.reader(fh)) == list(CURVE_COLUMNS)
    with (tmp_path / "runs.csv").open(newline="") as fh:
        table = list(csv.reader(fh))
    assert table[0] == list(RUN_COLUMNS) and len(table) == 1 + 8  # 2 schedules x 2 rungs x 2 seeds
    assert {tuple(r) for r in adv.runs} == {RUN_COLUMNS}  # the rows' keys are the columns, in order


def test_the_printed_table_keeps_four_significant_digits_on_round_numbers():
    """A bound of exactly 5 read `5` beside `5.253` (`.4g` drops trailing zeros); it reads `5.000`."""
    adv = _two_rung_advice()
    first = dataclasses.replace(adv.predictions[0], value=5.253, low=5.0, high=5.5, rung_value=3.0)
    printed = format_advice(dataclasses.replace(adv, predictions=(first, *adv.predictions[1:])))
    assert "5.253" in printed and "[5.000, 5.500]" in printed and "3.000" in printed


def test_the_figure_names_the_crossover_line_and_its_band(tmp_path, monkeypatch):
    """The crossover's dotted line and grey band had no legend entry; a reader could not tell them apart
    from the target's line or know the band's width. And the curves were solid up to ten times the target:
    past each schedule's largest run they are dashed now, and the legend says what that means."""
    import numpy as np

    from encoderlab.advise import report
    from encoderlab.advise.synthetic import synthetic_ladder

    legends = []
    monkeypatch.setattr(
        report,
        "savefig_atomic",
        lambda fig, path, **kw: legends.append(
            (
                [t.get_text() for t in fig.axes[0].get_legend().get_texts()],
                {ln.get_label(): max(ln.get_xdata(), default=0.0) for ln in fig.axes[0].get_lines()},
            )
        ),
    )
    syn = synthetic_ladder(np.random.default_rng(3), crossover=3.0)
    adv = advise(syn.ladder, Target(flops=syn.target_flops), n_boot=20, interval=0.5)
    plot_advice(adv, tmp_path / "advise")
    (labels, ends) = legends[0]
    assert "crossover (point fit)" in labels and "crossover's 50% interval" in labels, labels
    assert "curve past its runs (its form alone)" in labels, labels
    top = max(r["compute"] for r in adv.runs if r["schedule"] == "MLM-40")
    assert ends["MLM-40 (E + A*C^-a)"] <= top < adv.target_compute
