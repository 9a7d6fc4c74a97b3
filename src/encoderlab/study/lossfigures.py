"""The loss figures: each pretraining run's metrics.jsonl as the trainer wrote it, drawn as the training loss
(each run on its own objective, so MLM and CLM lines do not share a scale, and a CLM -> MLM run's line breaks
where its objective changes) and the held-out losses of `train/validation.py`, of which `val/mlm15` (MLM at
15% on fixed rows and masks) is the one yardstick that runs of every objective and mask ratio are compared
on, with `val/clm` beside it.

Split from `figures.py` along its seam: these read the runs' logs from the study folder, where the other
figures read evaluation summaries and CKA results through `StudyData`. Trade-off: `figures.figures` still
lists every figure in report order, so a new figure is added in two places (drawn here, listed there).
"""

from __future__ import annotations

import itertools
from pathlib import Path

from encoderlab.analysis.plots import line_panels, pyplot
from encoderlab.jsonlines import finite_number, read_records
from encoderlab.study.data import StudyData
from encoderlab.study.figurefile import Figure, save_figure
from encoderlab.study.runner import node_dir


def _metrics(data: StudyData, study_dir: Path) -> list[tuple[str, dict]]:
    """(model label, metrics record) of every finished pretraining run, in graph and step order."""
    out = []
    for n in data.nodes:
        res = data.result_of(n.name)
        if n.kind != "pretrain" or not res.get("metrics"):
            continue
        path = node_dir(study_dir, n) / res["metrics"]
        if not path.exists():
            continue
        label = data.label(n.name.split("/", 1)[1])
        out += [(label, record) for record in read_records(path)]
    return out


def _finite(record: dict, key: str) -> float | None:
    """`record[key]` when it is a finite number; a log line edited by hand (a loss as text) is drawn as
    no point, a gap the figure shows (it was a TypeError traceback), and a diverged step as none."""
    value = record.get(key)
    return float(value) if finite_number(value) else None


def loss_figure(data: StudyData, study_dir: Path, folder: Path) -> Figure | None:
    """Pretraining loss against optimizer step, from each run's metrics.jsonl."""
    plt = pyplot()

    rows = [
        {"model": model, "step": rec.get("step"), "loss": loss, "objective": rec.get("objective", "")}
        for model, rec in _metrics(data, study_dir)
        if (loss := _finite(rec, "loss")) is not None
    ]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for model in dict.fromkeys(r["model"] for r in rows):
        color = None
        for phase in _phases([r for r in rows if r["model"] == model]):  # one line per objective, not joined
            (line,) = ax.plot(
                [r["step"] for r in phase], [r["loss"] for r in phase], color=color, label=model
            )
            color, model = line.get_color(), "_" + model  # a later phase: the run's colour, no second entry
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("training loss (nats/token, own objective)")
    ax.set_title("Pretraining loss")
    ax.legend(fontsize=8)
    return save_figure(
        fig,
        folder,
        "pretraining_loss",
        rows,
        "Pretraining loss",
        "Each run's loss on its own objective (MLM and CLM losses are not comparable to each other)."
        + _switches(rows),
    )


def _phases(rows: list[dict]) -> list[list[dict]]:
    """A run's loss records split where its objective changes (a CLM -> MLM run: its CLM steps, then its MLM
    steps), so the figure draws no segment from a CLM loss to an MLM one: one line jumped at the switch."""
    out: list[list[dict]] = []
    for r in rows:
        if not out or r["objective"] != out[-1][-1]["objective"]:
            out.append([])
        out[-1].append(r)
    return out


def _switches(rows: list[dict]) -> str:
    """The caption's note of where a run changes objective (its line breaks there)."""
    said = [
        f"{model} from {phase[0]['objective']} to {after[0]['objective']} after step {phase[-1]['step']}"
        for model in dict.fromkeys(r["model"] for r in rows)
        for phase, after in itertools.pairwise(_phases([r for r in rows if r["model"] == model]))
    ]
    return f" A run's line breaks where it changes objective: {'; '.join(said)}." if said else ""


VALIDATION_KEYS = {
    "val/mlm15": "MLM loss at 15% masking (every run, whatever its objective)",
    "val/clm": "next-token (CLM) loss",
}
"""The held-out losses the validation figure draws (`train/validation.py`): the two every run is
scored on with the same rows and masks. `val/mlm` (a run's own mask ratio) is left out: it differs
between runs of different ratios, so its lines would not share a scale."""


def validation_figure(data: StudyData, study_dir: Path, folder: Path) -> Figure | None:
    """Held-out losses against tokens seen, one panel per loss, one line per pretraining run."""
    rows = [
        {
            "model": model,
            "metric": key,
            "step": rec.get("step"),
            "tokens": rec.get("tokens"),
            "loss": loss,
        }
        for model, rec in _metrics(data, study_dir)
        for key in VALIDATION_KEYS
        if (loss := _finite(rec, key)) is not None
    ]
    if not rows:
        return None
    x = "tokens" if all(r["tokens"] is not None for r in rows) else "step"
    rows += _unigram_rows(data, rows, x)
    title = "Held-out loss during pretraining"
    png = line_panels(
        rows, folder / "validation_loss", x=x, y="loss", series="model", panel="metric", title=title,
        xlabel="tokens seen" if x == "tokens" else "optimizer step", ylabel="held-out loss (nats/token)",
    )  # fmt: skip
    caption = (
        "Loss on the same held-out rows of each run's prepared validation split (the same masks for every "
        "run), every `validation.every` steps and at the last step: "
        + "; ".join(f"{k}: {v}" for k, v in VALIDATION_KEYS.items())
        + ". Runs trained on different data are scored on different rows: compare lines of one dataset."
        + _validation_shape(rows, x)
    )
    return Figure(name="validation_loss", title=title, caption=caption, png=png, rows=rows)


def _validation_shape(rows: list[dict], x: str) -> str:
    """The caption's words for what is drawn: lines, or one point per run validated once. A run validated
    at one step only (paper 2's demo) is a single marker, and the unigram reference over one x is a point
    too; the caption promised curves and a "flat line" the figure did not have."""
    runs = [r for r in rows if r["step"] is not None]  # the unigram rows have no step
    seen: dict[str, set] = {}
    for r in runs:
        seen.setdefault(r["model"], set()).add(r[x])
    once = [model for model, at in seen.items() if len(at) == 1]
    unigram = (
        "the flat 'unigram entropy' line is"
        if len({r[x] for r in runs}) > 1
        else "the 'unigram entropy' point (one x: no line to draw) is"
    )
    text = (
        f" {unigram[0].upper()}{unigram[1:]} the entropy of a dataset's training-token frequencies: a run "
        "at that level predicts token frequencies only (the unigram plateau), whatever its objective."
    )
    if not once:
        return text.replace("at that level", "at that line")
    at = sorted({r[x] for r in runs if r["model"] in once})
    where = f"at {x} {', '.join(f'{v:g}' if isinstance(v, float) else str(v) for v in at)}"
    who = "Every run was" if len(once) == len(seen) else f"{', '.join(once)}: each"
    return (
        f" {who} validated once ({where}), so each such run is one point (a marker), not a curve: it shows "
        "where the run ended, not how its loss fell." + text
    )


def _unigram_rows(data: StudyData, rows: list[dict], x: str) -> list[dict]:
    """A flat reference line per prepared dataset across each panel's x range (`StudyData.unigram`)."""
    span = [r[x] for r in rows]
    return [
        {
            "model": f"unigram entropy ({name})",
            "metric": key,
            "step": None,
            "tokens": None,
            x: at,
            "loss": entropy,
        }
        for name, entropy in data.unigram.items()
        for key in VALIDATION_KEYS
        for at in sorted({min(span), max(span)})  # one x: one point, not the same point twice
    ]
