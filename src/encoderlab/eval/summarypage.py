"""The summary files of a model's evaluation: `summary.json` (the data) and `summary.md` (the tables).

`protocol.evaluate` computes a `summary.ModelSummary` from every record of the model in its folder and
hands it to `write_summary`, which writes both files atomically (`atomic.write_text_atomic`), so a
reader sees the old summary or the new one, never half of either; they are rewritten whole on each
call, so tasks evaluated by separate calls add up. Design:
- **summary.json is the summary as data** (`config.to_dict`), the one a model card's `export --eval`
  reads back; nothing is computed here that is not in it.
- **summary.md is the same as tables**, for a person: per task the best LR (chosen on validation) and
  the validation and test scores there as mean ± 95% t half-width over seeds, to the digits of the
  interval (`words.estimate_text`; `(n=1)`: one seed, no interval, two places), other test splits,
  degenerate predictions named, a validation or test read from the data's split of the other part
  (`tasks.splits.from_other_split_notes`: GLUE's validation scored as test) and a validation cut from train
  too small to pick an LR by noted (`tasks.splits.cut_validation_note`), QA training answers skipped for an
  `answer_start` off their text noted (`tasks.splits.skipped_answers_note`, from the records' counts, as
  `eval` and `eval --check` say it); per family the mean over its tasks per
  seed; and the test mean per LR of each task (the stability analysis). Its header says the model,
  the hub commit read where there is one, and the LR x seed grid in words (`words.lr_grid`).
One model's evaluation only: a study's report, over many models and with figures, is
`study/reportpage.py`'s.
"""

from __future__ import annotations

from pathlib import Path

from encoderlab.atomic import json_text, write_text_atomic
from encoderlab.config import to_dict
from encoderlab.eval.spec import FAMILY_NAMES
from encoderlab.eval.stats import Estimate
from encoderlab.eval.summary import ModelSummary
from encoderlab.eval.tasks.splits import cut_validation_note, from_other_split_notes, skipped_answers_note
from encoderlab.words import count_of, estimate_text, lr_grid, lr_text

SUMMARY_JSON, SUMMARY_MD = "summary.json", "summary.md"


def _fmt(s: Estimate | None) -> str:
    if s is None:
        return "-"
    return f"{estimate_text(s.mean, s.half_width)} (n={s.n})"  # to the digits of its interval, as a study's report


def summary_markdown(summary: ModelSummary) -> str:
    # a hub id's commit: which weights the name held when read (an export's card says so too)
    commit = summary.start_model.get("commit")
    lines = [
        f"# Evaluation of {summary.source or summary.model}" + (f" at commit `{commit}`" if commit else ""),
        "",
        f"Model fingerprint `{summary.model}`; {lr_grid(summary.lrs, summary.seeds)}. "
        "Test = mean ± 95% t-interval over seeds at the LR with the best validation mean.",
        "",
        "| task | family | metric | best LR | validation | test | other test splits |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, t in summary.tasks.items():
        others = ", ".join(f"{k}: {v.mean:.2f}" for k, v in t.test_splits.items() if k != "test")
        flag = " (degenerate)" if t.degenerate else ""
        lines.append(
            f"| {name} | {t.family} | {t.metric} | {lr_text(t.best_lr)} | {_fmt(t.val)} | {_fmt(t.test)}{flag} | {others or '-'} |"
        )
    flagged = {name: t.degenerate for name, t in summary.tasks.items() if t.degenerate}
    if flagged:
        lines += ["", "**Degenerate predictions** (one output for every test example, at the best LR):", ""]
        lines += [f"- {name}: {count_of(d.runs, d.of, 'seed')}; {d.why}" for name, d in flagged.items()]
    across = {
        n: notes for n, t in summary.tasks.items() if (notes := from_other_split_notes(t.counts, t.family))
    }
    if across:  # a score called test on the data's validation split, or an LR picked on its test split
        lines += ["", "**Validation or test read from the data's other split**:", ""]
        lines += [f"- {name}: {note}" for name, notes in across.items() for note in notes]
    noted = {
        n: note
        for n, t in summary.tasks.items()
        if (note := cut_validation_note(t.counts, t.family, summary.lrs))
    }
    if noted:  # the LR was picked on a validation cut from train too small to tell LRs apart
        lines += ["", "**Small validation** (the best LR above was picked on it):", ""]
        lines += [f"- {name}: {note}" for name, note in noted.items()]
    skipped = {n: note for n, t in summary.tasks.items() if (note := skipped_answers_note(t.counts))}
    if skipped:  # trained on part of its questions: `eval` says so beside the score, and so does its file
        lines += ["", "**Skipped training answers**:", ""]
        lines += [f"- {name}: {note}" for name, note in skipped.items()]
    lines += ["", "| family | tasks | test (mean over tasks, per seed) |", "|---|---|---|"]
    for family, f in summary.families.items():
        lines.append(f"| {FAMILY_NAMES[family]} | {', '.join(f.tasks)} | {_fmt(f.test)} |")
    lines += ["", "Score vs LR (test mean per LR, for the stability analysis):", ""]
    for name, t in summary.tasks.items():
        lines.append(f"- {name}: " + ", ".join(f"{lr_text(c.lr)}: {c.test.mean:.2f}" for c in t.curve))
    return "\n".join(lines) + "\n"


def write_summary(summary: ModelSummary, out: Path) -> None:
    write_text_atomic(out / SUMMARY_JSON, json_text(to_dict(summary), indent=2))
    write_text_atomic(out / SUMMARY_MD, summary_markdown(summary))
