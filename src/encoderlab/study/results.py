"""From finished nodes to numbers: the protocol's selection rule, family scores and the claims.

Everything here reads a study folder (`graph.json` plus each node's `node.json` marker), so a
report can be regenerated at any time, also from a study that is only partly finished.

The protocol is paper 1's: for each (model, checkpoint, task) the LR with the best mean
validation score over seeds is chosen, and the test scores of the seeds at that LR are reported.
A family score per seed is the mean of its tasks' test scores at their chosen LRs; the interval
is Student's t over seeds, and two models are compared by a paired t-test over the same seeds
(`encoderlab.eval.stats`). A claim "holds" when the difference has the paper's sign, and is
called significant when the 95% interval of the paired difference excludes zero.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean

from encoderlab.errors import UserError
from encoderlab.eval.stats import paired_test, summarize
from encoderlab.study.graph import Node
from encoderlab.study.runner import read_marker

ALL = "all"
"""Pseudo-family: the mean over every task."""


@dataclass
class StudyData:
    """What a study folder holds, as plain data."""

    spec: dict
    nodes: list[Node]
    markers: dict[str, dict] = field(default_factory=dict)
    """Finished nodes' markers by node name."""

    @property
    def evals(self) -> list[dict]:
        """One row per finished eval node: model, step, task, family, lr, seed, val, test."""
        rows = []
        for n in self.nodes:
            m = self.markers.get(n.name)
            if n.kind == "eval" and m is not None:
                c = n.config
                rows.append(
                    {k: c[k] for k in ("model", "step", "task", "family", "lr", "seed")}
                    | {
                        "val": m["result"]["val"],
                        "test": m["result"]["test"],
                        "metric": m["result"].get("metric", "score"),
                        "splits": m["result"].get("splits"),
                    }
                )
        return rows

    def results_of(self, kind: str) -> dict[str, dict]:
        """Results of finished nodes of `kind` by node name."""
        return {
            n.name: self.markers[n.name]["result"]
            for n in self.nodes
            if n.kind == kind and n.name in self.markers
        }

    def label(self, model: str) -> str:
        """Display label of a model id (run name, possibly with '/sN')."""
        name = model.split("/s")[0]
        run = next((r for r in self.spec["runs"] if r["name"] == name), None)
        base = (run or {}).get("label") or name
        return base + model[len(name) :]


def load_study(study_dir: Path) -> StudyData:
    """Read a study folder; a folder that is not a study is a UserError."""
    study_dir = Path(study_dir)
    try:
        spec = json.loads((study_dir / "study.json").read_text())
        graph = json.loads((study_dir / "graph.json").read_text())
    except FileNotFoundError:
        raise UserError(
            f"{study_dir} is not a study folder (no study.json/graph.json); run: encoderlab study run NAME --out {study_dir}"
        ) from None
    nodes = [
        Node(kind=g["kind"], name=g["name"], config=g["config"], deps=tuple(g["deps"]), key=g["key"])
        for g in graph
    ]
    data = StudyData(spec=spec, nodes=nodes)
    for n in nodes:
        m = read_marker(study_dir, n)
        if m is not None:
            data.markers[n.name] = m
    return data


# --------------------------------------------------------------------------- selection and scores


def task_scores(rows: list[dict], model: str, step: int | None) -> dict[str, dict]:
    """Per task: the LR chosen on validation, test score per seed at it, and the LR curve.

    The selection is evaluation's own (`encoderlab.eval.protocol.summarize_task`), so a study's
    number for a task is the number `encoderlab eval` reports for the same runs."""
    from encoderlab.eval.protocol import summarize_task  # imports torch: only when there are numbers

    out: dict[str, dict] = {}
    mine = [r for r in rows if r["model"] == model and r["step"] == step]
    for task in sorted({r["task"] for r in mine}):
        runs = [r for r in mine if r["task"] == task]
        grid: dict[float, dict[int, dict]] = {}
        for r in runs:
            grid.setdefault(r["lr"], {})[r["seed"]] = {
                "seed": r["seed"],
                "val_score": r["val"],
                "test_score": r["test"],
                "metric": r["metric"],
                "family": r["family"],
                "test": r.get("splits") or {"test": {r["metric"]: r["test"]}},
            }
        summary = summarize_task(grid)
        out[task] = {
            "family": summary["family"],
            "best_lr": summary["best_lr"],
            "by_seed": {int(sd): v for sd, v in summary["test_by_seed"].items()},
            "test_curve": {c["lr"]: c["test"]["mean"] for c in summary["curve"]},
            "test_by_lr_seed": {(r["lr"], r["seed"]): r["test"] for r in runs},
            "splits": summary["test_splits"],
        }
    return out


def family_by_seed(scores: dict[str, dict]) -> dict[str, dict[int, float]]:
    """Per family (and ALL): the per-seed mean over its tasks, over seeds every task has."""
    fams: dict[str, list[str]] = {}
    for task, s in scores.items():
        fams.setdefault(s["family"], []).append(task)
        fams.setdefault(ALL, []).append(task)
    out = {}
    for fam, tasks in fams.items():
        seeds = set.intersection(*(set(scores[t]["by_seed"]) for t in tasks))
        out[fam] = {sd: fmean(scores[t]["by_seed"][sd] for t in tasks) for sd in sorted(seeds)}
    return out


def compare(a: dict[int, float], b: dict[int, float]) -> dict | None:
    """Paired comparison over the seeds both have (None with fewer than 2)."""
    seeds = sorted(set(a) & set(b))
    if len(seeds) < 2:
        return None
    return paired_test([a[s] for s in seeds], [b[s] for s in seeds])


def results_table(data: StudyData) -> dict:
    """{model: {family: summary (+ 'vs_baseline': paired test)}} for final models, plus columns."""
    rows = data.evals
    baseline = data.spec["baseline"]
    models = list(dict.fromkeys(r["model"] for r in rows if r["step"] is None))
    fam = {m: family_by_seed(task_scores(rows, m, None)) for m in models}
    per_task = {m: task_scores(rows, m, None) for m in models}
    families = sorted({f for m in models for f in fam[m]} - {ALL}) + [ALL]
    tasks = sorted({t for m in models for t in per_task[m]})
    table: dict[str, dict] = {}
    base_id = next((m for m in models if m.split("/s")[0] == baseline), None)
    for m in models:
        cells = {}
        for col, values in [
            *[(f, fam[m].get(f)) for f in families],
            *[(t, _task_seeds(per_task[m], t)) for t in tasks],
        ]:
            if not values:
                continue
            cell = summarize(list(values.values()))
            if base_id and m != base_id:
                ref = fam[base_id].get(col) if col in families else _task_seeds(per_task[base_id], col)
                cell["vs_baseline"] = compare(values, ref) if ref else None
            cells[col] = cell
        table[m] = cells
    return {
        "models": models,
        "families": families,
        "tasks": tasks,
        "baseline": base_id,
        "cells": table,
        "per_task": per_task,
    }


def _task_seeds(scores: dict, task: str) -> dict[int, float] | None:
    return scores[task]["by_seed"] if task in scores else None


# --------------------------------------------------------------------------- curves


def data_efficiency(data: StudyData) -> list[dict]:
    """Rows (model, step, family, mean, ci_low, ci_high) for models with intermediate checkpoints.

    Checkpoints are often evaluated on fewer tasks and LRs than final models (the `checkpoint_*`
    settings of a study), so the final point is scored on the checkpoints' tasks and LRs only: every
    point of a curve follows the same protocol."""
    final_steps = _final_steps(data)
    out = []
    for model in dict.fromkeys(r["model"] for r in data.evals if r["step"] is not None):
        mine = [r for r in data.evals if r["model"] == model]
        early = [r for r in mine if r["step"] is not None]
        tasks, lrs = {r["task"] for r in early}, {r["lr"] for r in early}
        rows = early + [r for r in mine if r["step"] is None and r["task"] in tasks and r["lr"] in lrs]
        for step in [*sorted({r["step"] for r in early}), None]:
            fams = family_by_seed(task_scores(rows, model, step))
            for family, seeds in fams.items():
                s = summarize(list(seeds.values()))
                out.append(
                    {
                        "model": model,
                        "step": final_steps.get(model) if step is None else step,
                        "family": family,
                        "mean": s["mean"],
                        "ci_low": s["ci_low"],
                        "ci_high": s["ci_high"],
                    }
                )
    return out


def _final_steps(data: StudyData) -> dict[str, int]:
    """Steps each pretrained model ran (from the pretrain results, else the config)."""
    out = {}
    for n in data.nodes:
        if n.kind == "pretrain":
            res = data.markers.get(n.name, {}).get("result", {})
            out[n.name.split("/", 1)[1]] = res.get("steps") or n.config.get("steps")
    return out


def lr_curves(data: StudyData) -> list[dict]:
    """Rows (model, lr, mean test over tasks and seeds, per-seed values) for final models."""
    rows = data.evals
    out = []
    for model in dict.fromkeys(r["model"] for r in rows if r["step"] is None):
        scores = task_scores(rows, model, None)
        lrs = sorted({lr for s in scores.values() for lr in s["test_curve"]})
        for lr in lrs:
            per_seed = _lr_seed_means(scores, lr)
            if per_seed:
                s = summarize(list(per_seed.values()))
                out.append(
                    {
                        "model": model,
                        "lr": lr,
                        "mean": s["mean"],
                        "ci_low": s["ci_low"],
                        "ci_high": s["ci_high"],
                    }
                )
    return out


def _lr_seed_means(scores: dict[str, dict], lr: float) -> dict[int, float]:
    """Per seed, the mean over tasks of the test score at `lr` (seeds every task has)."""
    per_task = [{sd: v for (l_, sd), v in s["test_by_lr_seed"].items() if l_ == lr} for s in scores.values()]
    seeds = set.intersection(*(set(p) for p in per_task)) if per_task else set()
    return {sd: fmean(p[sd] for p in per_task) for sd in sorted(seeds)}


def lr_spread_by_seed(scores: dict[str, dict]) -> dict[int, float]:
    """Per seed: the range (max - min) over the LR grid of the task-averaged test score."""
    lrs = sorted({lr for s in scores.values() for lr in s["test_curve"]})
    curves = [_lr_seed_means(scores, lr) for lr in lrs]
    seeds = set.intersection(*(set(c) for c in curves)) if curves else set()
    return {sd: max(c[sd] for c in curves) - min(c[sd] for c in curves) for sd in sorted(seeds)}


def run_mask_ratios(data: StudyData) -> dict[str, float]:
    """Model id -> masking ratio, for the runs of the baseline's comparison group whose every phase is
    MLM at one ratio (read from the RunConfig each node trained, not declared beside it; a seed twin
    in another group is left out)."""
    from encoderlab.config import from_dict
    from encoderlab.study.resolve import mask_ratio
    from encoderlab.train.config import RunConfig

    group = {r["name"]: r["group"] for r in data.spec["runs"]}
    compared = {name for name, g in group.items() if g == group.get(data.spec["baseline"])}
    out = {}
    for n in data.nodes:
        if n.kind == "pretrain" and n.name.split("/")[1] in compared:
            ratio = mask_ratio(from_dict(RunConfig, n.config["run"], where=n.name))
            if ratio is not None:
                out[n.name.split("/", 1)[1]] = ratio
    return out


def mask_ratio_curve(data: StudyData, table: dict) -> list[dict]:
    """Rows (ratio, family, mean, ci) for runs trained with MLM alone at one ratio."""
    ratios = run_mask_ratios(data)
    out = []
    for model in table["models"]:
        if model not in ratios:
            continue
        for family, cell in table["cells"][model].items():
            if family in table["families"]:
                out.append(
                    {
                        "ratio": ratios[model],
                        "model": model,
                        "family": family,
                        "mean": cell["mean"],
                        "ci_low": cell["ci_low"],
                        "ci_high": cell["ci_high"],
                    }
                )
    return out


# --------------------------------------------------------------------------- claims


def _fmt(x: float | None, sign: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:+.2f}" if sign else f"{x:.2f}"


def _pm(s: dict) -> str:
    return (
        f"{_fmt(s['mean'])} ± {_fmt(s['half_width'])}" if s.get("half_width") is not None else _fmt(s["mean"])
    )


def _verdict(diff: dict | None, holds: bool) -> tuple[str, bool | None]:
    """('holds' | 'does not hold' | 'no difference' | 'not tested', significant?)."""
    if diff is None:
        return ("holds in direction" if holds else "does not hold"), None
    if diff["mean"] == 0:  # identical paired scores (e.g. every model predicts the majority class)
        return "no difference", False
    significant = diff["ci_low"] is not None and (diff["ci_low"] > 0 or diff["ci_high"] < 0)
    return ("holds" if holds else "does not hold"), significant


def _diff_text(diff: dict | None) -> str:
    if diff is None:
        return "fewer than 2 paired seeds, so no interval"
    sig = diff["ci_low"] is not None and (diff["ci_low"] > 0 or diff["ci_high"] < 0)
    return (
        f"difference {_fmt(diff['mean'], True)}, 95% CI [{_fmt(diff['ci_low'], True)}, {_fmt(diff['ci_high'], True)}], "
        f"paired p = {diff['p_value']:.3g}, n = {diff['n']} seeds; the difference "
        + ("exceeds the CI (significant)" if sig else "is within the CI (not significant)")
    )


def check_claims(data: StudyData, table: dict) -> list[dict]:
    """For each claim of the spec: status, significance, numbers and a generated sentence."""
    out = []
    rows = data.evals
    cka = {r.get("a"): r for r in data.results_of("cka").values()}
    for claim in data.spec["claims"]:
        a, b, kind = claim["a"], claim["b"], claim["kind"]
        la, lb = data.label(a), data.label(b)
        fam = claim.get("family") or ALL
        where = "the average over all tasks" if fam == ALL else f"{fam.upper()}"
        status, sig, numbers = "not tested", None, {}
        sentence = "the study has no finished results for it yet."
        if kind == "beats":
            sa, sb = (family_by_seed(task_scores(rows, m, None)).get(fam) for m in (a, b))
            if fam != ALL and fam not in {r["family"] for r in rows}:
                sentence = f"no {fam.upper()} task is evaluated at this scale."
            elif sa and sb:
                diff = compare(sa, sb)
                s_a, s_b = summarize(list(sa.values())), summarize(list(sb.values()))
                status, sig = _verdict(diff, s_a["mean"] > s_b["mean"])
                numbers = {"a": s_a, "b": s_b, "diff": diff}
                sentence = f"{la} {_pm(s_a)} vs {lb} {_pm(s_b)} on {where} ({_diff_text(diff)})."
        elif kind == "faster_early":
            steps = sorted({r["step"] for r in rows if r["step"] is not None and r["model"] in (a, b)})
            common = [s for s in steps if {r["model"] for r in rows if r["step"] == s} >= {a, b}]
            if common:
                step = common[0]
                sa, sb = (family_by_seed(task_scores(rows, m, step))[ALL] for m in (a, b))
                diff = compare(sa, sb)
                s_a, s_b = summarize(list(sa.values())), summarize(list(sb.values()))
                status, sig = _verdict(diff, s_a["mean"] > s_b["mean"])
                numbers = {"step": step, "a": s_a, "b": s_b, "diff": diff}
                sentence = f"at step {step}, {la} {_pm(s_a)} vs {lb} {_pm(s_b)} on the average over tasks ({_diff_text(diff)})."
        elif kind == "more_stable":
            ra, rb = (lr_spread_by_seed(task_scores(rows, m, None)) for m in (a, b))
            if len({r["lr"] for r in rows}) < 2:
                sentence = "the evaluation grid has a single learning rate at this scale."
            elif ra and rb:
                diff = compare(rb, ra)  # positive when a's spread is smaller
                s_a, s_b = summarize(list(ra.values())), summarize(list(rb.values()))
                status, sig = _verdict(diff, s_a["mean"] < s_b["mean"])
                numbers = {"a": s_a, "b": s_b, "diff": diff}
                sentence = (
                    f"the spread of the task-averaged test score over the LR grid is {_pm(s_a)} for {la} vs {_pm(s_b)} "
                    f"for {lb} (spread of {lb} minus {la}: {_diff_text(diff)})."
                )
        elif kind == "cka_low_layers" and a in cka:
            r = cka[a]
            ratio = r.get("ratio") or r["divergence"]
            n = len(ratio)
            low = fmean(ratio[: max(1, n // 3)])
            rest = fmean(ratio[max(1, n // 3) :]) if n > 1 else float("nan")
            above = r.get("ratio") is not None and low > 1.0
            status, sig = ("holds" if low > rest else "does not hold"), None
            numbers = {"low": low, "rest": rest, "layers": n, "ratio": ratio}
            what = (
                "divergence / seed-noise divergence"
                if r.get("ratio") is not None
                else "divergence (no seed-noise pair)"
            )
            sentence = (
                f"mean {what} is {_fmt(low)} in the low third of the {n} layers vs {_fmt(rest)} in the others; "
                + (
                    "the low layers diverge more than seed noise."
                    if above
                    else "the low layers do not exceed seed noise."
                )
                + " (No interval over seeds: one CKA per pair.)"
            )
        prefix = {
            "holds": "Holds at this scale",
            "holds in direction": "Holds in direction at this scale",
            "does not hold": "Does not hold at this scale",
            "no difference": "Undecided at this scale (identical scores, no difference)",
            "not tested": "Not tested",
        }[status]
        if sig:
            prefix += " (significant)"
        elif sig is not None:
            # A difference inside the interval neither confirms nor refutes the claim: say only the direction.
            prefix = {
                "holds": "Undecided at this scale (same direction as the paper, not significant)",
                "does not hold": "Undecided at this scale (opposite direction to the paper, not significant)",
            }.get(status, prefix)
        out.append(
            {
                **claim,
                "status": status,
                "significant": sig,
                "numbers": numbers,
                "sentence": f"{prefix}: {sentence}",
            }
        )
    return out
