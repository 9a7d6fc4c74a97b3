"""Paper 1's reported category averages, set beside a study that runs paper 1's setup.

A study at a scale that is paper 1's setup (`fidelity.departures` finds nothing) fine-tunes and scores
as EncodEval did, so its family averages are on the scale of paper 1's tables: the report prints each
run's average next to the number paper 1 reported for the same run and size, and the difference.

Trade-offs. The numbers are a recap of paper 1's appendix tables 2-17 by secondary sources (consistent
with a second summary and the abstract), not read from the paper's PDF; the authors' saved
`EncodEval/results/**/results.json` are the primary source to check them against. For the CPT rows they
are there (hgissbkh/EncodEval@7e03774 `results/610m-{clm,mlm40}-dec42k-mlm40-{44k,54k,64k}/`: bases 42k,
+2k/+12k/+22k), one file per (task, LR, seed) written by EncodEval's `main.py` as `{"validation": {"score",
"scores_i"}, "test": {"score", "scores_i"}}` (every instance's score; a ReCoRD file 240k to 260k
characters). No row is recomputed from them (checked 2026-12-06, docs/reproduce.md lists what was read):
EncodEval has no code that reads these files back, so the LR choice and seed average behind paper 1's
tables are its text's, which a recomputation would have to take as encoderlab's protocol does (LR by
validation mean, test mean over its seeds: `eval/protocol.py`) [U]. At +2k, +12k and +22k the file index
holds all 90 TC and all 90 IR runs of each arm's folder, but each folder's SC lacks one to three MNLI runs
at LR 5e-4 and its QA up to 5 of a task's 30 runs (mostly at 5e-4), so only TC and IR could be recomputed, and
that is 720 files at +12k and +22k read one page at a time, not done. A difference is not a
test: paper 1 trained one pretraining seed per run, so its numbers carry the pretraining and
fine-tuning noise this study measures (the interval beside ours). Only full rows of the recap are kept
(the masking-ratio and 22k-budget results are recapped as single best values), and a family is
compared only when the model has results for all of the suite's tasks of that family, the average
paper 1 reports. `clm25-mlm40` is, at these scales, paper 1's "10k CLM + 32k MLM" row: it switches at
10k as the released checkpoint does (`paper1.PAPER1_SWITCH`), not at 25% of 42k.

Digits. Our average is printed as every report prints a score (`words.estimate_text`: to the digits its
interval allows, two places without one); paper 1's as the recap gives it (`REPORTED_PLACES`); the
difference at our interval's digits but never finer than the recap's, since paper 1's number is known to
no more places than that (`71.2 ± 9.8 / 84.89 (-13.7)`, not `71.23 / 84.89 (-13.66)`).
"""

from __future__ import annotations

from collections.abc import Mapping

from encoderlab.eval.suites import suite_tasks
from encoderlab.eval.tasks import TASKS
from encoderlab.study.fidelity import departures
from encoderlab.study.spec import StudySpec
from encoderlab.study.table import Cell, ResultsTable
from encoderlab.words import decimals, estimate_text, number_text

FAMILIES = ("sc", "tc", "qa", "ir")

# (size, run) -> (SC, TC, QA, IR) as reported: SC accuracy, TC and QA F1, IR nDCG@10, in EncodEval's
# scores (docs/evaluation.md, the paper suite).
PAPER1: dict[tuple[str, str], tuple[float, float, float, float]] = {
    ("210m", "mlm40"): (84.89, 92.13, 49.43, 75.78),
    ("210m", "clm"): (82.80, 92.18, 39.26, 72.83),
    ("610m", "mlm40"): (87.00, 92.21, 62.77, 79.55),
    ("610m", "clm"): (83.58, 92.69, 42.09, 76.20),
    ("1b", "mlm40"): (88.23, 92.51, 70.28, 79.95),
    ("1b", "clm"): (82.68, 92.46, 44.48, 78.68),
    ("610m", "clm25-mlm40"): (87.85, 93.07, 67.77, 79.88),
    # paper1-cpt: from the decayed 42k bases, + MLM-40 steps
    ("610m", "mlm-base"): (87.00, 92.21, 62.77, 79.55),
    ("610m", "clm-base"): (83.58, 92.69, 42.09, 76.20),
    ("610m", "mlm-base+mlm-12k"): (87.61, 92.27, 66.57, 79.92),
    ("610m", "clm-base+mlm-12k"): (87.84, 92.77, 63.21, 80.27),
    ("610m", "mlm-base+mlm-22k"): (87.47, 92.11, 67.66, 80.45),
    ("610m", "clm-base+mlm-22k"): (88.40, 92.70, 66.62, 80.70),
}
REPORTED_PLACES = 2
"""The decimals the recap gives paper 1's averages to: its numbers are printed so, and a difference from one
is never printed finer."""
SOURCE = (
    "Paper 1's numbers are a secondary recap of its appendix tables 2-17 (not read from the PDF; the "
    "authors' EncodEval/results/**/results.json are the primary source). A difference is not a test: "
    "paper 1 trained one pretraining seed per run, so its numbers carry the noise this study's intervals "
    "measure. A family is compared only where this run has all of the suite's tasks of that family."
)


def _complete(table: ResultsTable, model: str, family: str, suite: str) -> bool:
    """Whether `model` has results for every task of `family` in `suite`: paper 1's average is over all."""
    wanted = {t for t in suite_tasks(suite) if TASKS[t].family == family}
    return bool(wanted) and wanted <= set(table.per_task.get(model, {}))


def reported_rows(spec: StudySpec, table: ResultsTable, first_model: Mapping[str, str]) -> list[list[str]]:
    """Rows [run, then per family 'ours / reported (difference)'] for the study's runs paper 1 reported
    at this size; empty unless the study runs paper 1's setup. `first_model`: run -> its model id at the
    first pretraining seed (a run over several seeds is read over them, from `table.runs`)."""
    if spec.paper != "paper1" or departures(spec) or spec.size is None:
        return []
    rows = []
    for run in spec.runs:
        reported = PAPER1.get((spec.size, run.name))
        model = first_model.get(run.name)
        if reported is None or model is None or model not in table.cells:
            continue
        ours = table.runs.get(run.name) or table.cells[model]
        cells = []
        for family, theirs in zip(FAMILIES, reported):
            cell = ours.get(family)
            complete = cell is not None and _complete(table, model, family, spec.eval.suite)
            cells.append(_beside(cell if complete else None, theirs))
        rows.append([run.display, *cells])
    return rows


def _beside(cell: Cell | None, theirs: float) -> str:
    """`ours / reported (difference)`, or `– / reported` where this run has no comparable average."""
    reported = number_text(theirs, REPORTED_PLACES)
    if cell is None:
        return f"– / {reported}"
    places = min(decimals(cell.half_width), REPORTED_PLACES)  # no finer than paper 1's own digits
    diff = number_text(cell.mean - theirs, places, sign=True)
    return f"{estimate_text(cell.mean, cell.half_width)} / {reported} ({diff})"
