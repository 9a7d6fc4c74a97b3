"""The advice as a printed table, `advice.json`, and a figure with the numbers behind it.

Output folder:
```
OUT/advice.json           everything in `Advice` (predictions, crossovers, backtest, verdict, figure data)
OUT/advise.png            curves with their bands, every run, the crossovers and the target
OUT/curves.csv|json       the curves behind the figure (schedule, compute, value, low, high)
OUT/runs.csv|json         the runs behind the figure (schedule, N, D, compute, seed, value)
```
"""

from __future__ import annotations

from pathlib import Path

from encoderlab.advise.decide import CURVE_COLUMNS, INTERVAL, RUN_COLUMNS, Advice, percent
from encoderlab.advise.reach import times
from encoderlab.atomic import savefig_atomic

_COLUMNS = ("schedule", "curve", "at target", "{:.0%} interval", "P(best)", "largest rung", "P(best) there")


def _num(v, fmt: str = "{:#.4g}") -> str:
    # "#": trailing zeros kept, so a bound of 5 reads 5.000 beside 5.253 (same significant digits)
    return "-" if v is None else fmt.format(v)


def _rung(point) -> str:
    return "none shared" if point is None else f"N={point[0]:.3g}, D={point[1]:.3g}"


def _crossover_line(c, reach: float | None = None, interval: float = INTERVAL) -> str:
    """One pair's crossing; `reach`: the compute up to which both schedules have runs, past which the
    crossing is the curves' extrapolation and the line says so. The interval is `--interval`'s over the
    replicates that cross (was a bare "interval", read as the point fit's own, of unstated width)."""
    past = (
        f"; past C = {reach:.3g}, the largest compute both have runs at: read from the curves alone"
        if reach is not None and c.compute is not None and c.compute > reach * (1 + 1e-9)
        else ""
    )
    if c.verdict == "insufficient evidence":
        where = "the point fit does not cross"
        if c.point == "cross":
            where = f"the point fit crosses at C = {c.compute:.3g}{past}"
        elif c.point == "identical":
            where = "the point fits are one curve"
        one = f", {c.same:.0%} are one curve" if c.same or c.point == "identical" else ""
        return f"  {c.a} vs {c.b}: insufficient evidence ({where}; {c.share:.0%} of replicates cross in range{one})"
    if c.verdict == "identical":
        return (
            f"  {c.a} vs {c.b}: identical on this ladder (equal curves across the searched range, in the point "
            f"fit and {c.same:.0%} of replicates)"
        )
    if c.compute is None:
        return f"  {c.a} vs {c.b}: no crossover in the searched range ({c.share:.0%} of replicates cross)"
    other = c.b if c.first == c.a else c.a
    return (
        f"  {c.a} vs {c.b}: {c.first} leads below C = {c.compute:.3g}, {other} above "
        f"({interval:.0%} interval [{_num(c.low, '{:.3g}')}, {_num(c.high, '{:.3g}')}] over the replicates that "
        f"cross; {c.share:.0%} of replicates cross{past})"
    )


def _target_compute(advice: Advice) -> str:
    """The C of a target given as (N, D), and how it was had from 6ND: scaled by the ladder's measured FLOPs per
    6ND, it was printed as a bare C, which a user checking 6ND found off by that ratio. A target given as
    compute is its C already ("at C = 1e+19 FLOPs (C = 1e+19 FLOPs)" before)."""
    c, ratio = f"{advice.target_compute:.3g} FLOPs", advice.flops_per_6nd
    if ratio is None:
        return ""
    if ratio == 1.0:
        return f" (C = 6ND = {c})"
    return f" (C = {c}: 6ND x {ratio:.3g}, the ladder's measured FLOPs per 6ND)"


def _reach(advice: Advice, a: str, b: str) -> float:
    """The largest compute both schedules have a run at (the smaller of their largest runs)."""
    return min(max(r["compute"] for r in advice.runs if r["schedule"] == s) for s in (a, b))


def _distance(advice: Advice) -> str:
    """How far past the ladder the recommendation reaches, said in its own line: a target 53,333x the largest
    run's compute printed a recommendation as firm as one 2.5x past it (only a warning above it said so, and
    none at all under the ladder's own span)."""
    past = advice.past_ladder
    what = "forecast at" if advice.method == "extrapolation" else "the target is at"
    line = f"{what} {times(past.compute)} the ladder's largest compute"
    if past.params is not None and past.tokens is not None:
        line += f", {times(past.params)} its largest N and {times(past.tokens)} its largest D"
    return line + ("; no run measured there" if past.beyond else "")


def _backtest_lines(advice: Advice) -> list[str]:
    bt = advice.backtest
    if bt is None:
        return ["backtest: not possible (see the reason below)"]
    return [
        f"backtest: refitted without the rung {_rung(bt.held_out)}, predicting it; baseline: the ranking at "
        f"{_rung(bt.baseline_rung)}",
        f"  extrapolation: {percent(bt.extrapolation_accuracy)} of pairs ranked right, pairwise error "
        f"{bt.extrapolation_error:.3g}; single rung: {percent(bt.baseline_accuracy)}, {bt.baseline_error:.3g} -> "
        f"{'passed' if bt.passed else 'failed'}",
    ]


def format_advice(advice: Advice) -> str:
    """The table and the verdict, as printed by `encoderlab advise`."""
    head = [c.format(advice.interval) for c in _COLUMNS]
    rows = [
        [
            p.schedule,
            p.curve or "none (<3 computes)",
            _num(p.value),
            f"[{_num(p.low)}, {_num(p.high)}]" if p.low is not None else "-",
            _num(p.p_best, "{:.2f}"),
            _num(p.rung_value),
            _num(p.rung_p_best, "{:.2f}"),
        ]
        for p in advice.predictions
    ]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    table = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [head, *rows]]
    lines = [
        f"{advice.metric} ({advice.better} is better) at {advice.target}{_target_compute(advice)}; "
        f"{advice.n_boot} bootstrap replicates, seed {advice.seed}"
        + (f", seed noise sd {advice.seed_noise:.3g} (given)" if advice.seed_noise is not None else "")
        + (", pretraining seeds paired across schedules" if advice.seeds_paired else "")
        + f"; largest common rung: {_rung(advice.rung)}",
        "",
        *table,
        "",
        f"crossovers ({advice.path}):",
        *(
            [_crossover_line(c, _reach(advice, c.a, c.b), advice.interval) for c in advice.crossovers]
            or ["  none computed (a schedule has no curve)"]
        ),
        *_backtest_lines(advice),
        "",
        *(f"warning: {w}" for w in advice.warnings),
        f"recommendation at the target: {advice.recommendation or 'insufficient evidence'} "
        f"(method: {advice.method}; {_distance(advice)})",
        f"ranking by {advice.method}: {_ranking(advice)}",
        f"why: {advice.reason}",
    ]
    return "\n".join(lines)


def _ranking(advice: Advice) -> str:
    """The method's ranking, best first, with `=` between schedules of one value: schedules whose runs all
    scored alike were printed `MLM-40 > CLM`, a ranking the advice's own values (and P(best) 0.50) deny."""
    value = {
        p.schedule: p.value if advice.method == "extrapolation" else p.rung_value for p in advice.predictions
    }
    out = advice.ranking[0]
    for before, name in zip(advice.ranking, advice.ranking[1:]):
        tied = value.get(name) is not None and value.get(before) == value.get(name)
        out += f" {'=' if tied else '>'} {name}"
    return out


def _draw_schedule(ax, advice: Advice, p, color) -> bool:
    """One schedule's runs and curve with its band; True where a curve was drawn past its runs."""
    curve = [r for r in advice.curves if r["schedule"] == p.schedule]
    runs = [r for r in advice.runs if r["schedule"] == p.schedule]
    if curve:
        x = [r["compute"] for r in curve]
        # dashed past the schedule's largest run: there the curve is its form alone (was drawn as solid as
        # the fitted part, so the extrapolation to the target looked as measured as the ladder)
        top = max(r["compute"] for r in runs)
        fitted = [r for r in curve if r["compute"] <= top]
        ax.plot(
            [r["compute"] for r in fitted],
            [r["value"] for r in fitted],
            color=color,
            label=f"{p.schedule} ({p.curve})",
        )
        past = [r for r in curve if r["compute"] >= (fitted[-1]["compute"] if fitted else 0.0)]
        ax.plot([r["compute"] for r in past], [r["value"] for r in past], color=color, ls="--", lw=1)
        ax.fill_between(
            x, [r["low"] for r in curve], [r["high"] for r in curve], color=color, alpha=0.2, lw=0
        )
    ax.scatter(
        [r["compute"] for r in runs],
        [r["value"] for r in runs],
        color=color,
        s=14,
        alpha=0.8,
        label=None if curve else p.schedule,
    )
    return bool(curve) and len(past) > 1


def plot_advice(advice: Advice, stem: Path) -> Path:
    """Curves with bands, every run, the crossovers and the target; PNG plus curves/runs tables."""
    from encoderlab.analysis.plots import pyplot, save_table

    plt = pyplot()

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    extrapolated = False
    for i, p in enumerate(advice.predictions):
        extrapolated |= _draw_schedule(ax, advice, p, colors[i % len(colors)])
    if extrapolated:
        ax.plot([], [], color="grey", ls="--", lw=1, label="curve past its runs (its form alone)")
    # labelled once: a dotted line and a grey band with no legend entry read as anything (were unlabelled)
    drawn = [c for c in advice.crossovers if c.compute is not None]
    for k, c in enumerate(drawn):
        ax.axvline(c.compute, color="grey", ls=":", lw=1, label=None if k else "crossover (point fit)")
        if c.low is not None:
            band = f"crossover's {advice.interval:.0%} interval"
            ax.axvspan(c.low, c.high, color="grey", alpha=0.08, lw=0, label=None if k else band)
    ax.axvline(advice.target_compute, color="black", ls="--", lw=1, label="target")
    ax.set_xscale("log")
    ax.set_xlabel(f"training compute C (FLOPs); curves: {advice.path}", fontsize=9)
    ax.set_ylabel(f"{advice.metric} ({advice.better} is better)")
    verdict = advice.recommendation or "insufficient evidence"
    ax.set_title(f"{verdict} at {advice.target} ({advice.method}); bands: {advice.interval:.0%}", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    png = stem.with_suffix(".png")
    savefig_atomic(fig, png, dpi=120)
    plt.close(fig)
    save_table(list(advice.curves), stem.parent / "curves", CURVE_COLUMNS)
    save_table(list(advice.runs), stem.parent / "runs", RUN_COLUMNS)
    return png
