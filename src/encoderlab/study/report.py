"""The study report: one self-contained HTML page and the same content as Markdown.

`write_report(study_dir)` reads only the study folder, so it runs as the last node of a study and
again at any time (`encoderlab study report DIR`), also on a study that is partly finished
(missing numbers are said to be missing). It writes `report/report.html` (figures embedded as
base64 PNG, no external file or script, so it can be mailed or archived), `report/report.md`,
and `report/figures/NAME.png` each with `NAME.csv` holding the numbers drawn, plus
`report/results.json` with the table and claims as data.

Sections: configuration, compute spent (per node kind and per pretraining run), the results table
(mean ± 95% t-interval over fine-tuning seeds at the LR chosen on validation, and the paired
difference against the baseline with its p-value), the paper's claims with a generated verdict,
and every figure with its numbers. Nothing in it depends on the time it was written, so the same
folder always gives the same report. Writers of one folder's report take turns (`locks.one_at_a_time`
on the study folder), each reading the folder once its turn comes, so the last report written is of
the folder's latest state: the study's own report node and a `study report` run meanwhile cannot leave
the finished study with the partial one. Files are each replaced atomically, so a reader sees whole files;
figure files that no figure of this report drew (an earlier version's) are deleted, since report/ is one
folder for every version of the study.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from encoderlab.atomic import write_json_atomic, write_text_atomic
from encoderlab.config import to_dict
from encoderlab.configforms import flow
from encoderlab.eval.degenerate import TAGGER_RULE
from encoderlab.eval.stats import p_text
from encoderlab.locks import one_at_a_time
from encoderlab.study.compute import ComputeSummary, compute_summary
from encoderlab.study.data import StudyData, load_study, split_id
from encoderlab.study.fidelity import departures, named_tasks, setup_text
from encoderlab.study.marker import markers_read_once
from encoderlab.study.nodeconfig import PretrainNode
from encoderlab.study.plantext import NOT_FINE_TUNED, evaluation_text, fine_tunes, model_size_text
from encoderlab.study.reach import ceiling_text, reach_text, untested_text
from encoderlab.study.reported import FAMILIES, SOURCE, reported_rows
from encoderlab.study.reportpage import html_page, markdown_page, md_text
from encoderlab.study.results import ClaimResult, check_claims
from encoderlab.study.runbases import base_marks
from encoderlab.study.spec import RunSpec, StudySpec
from encoderlab.study.table import Cell, ResultsTable, results_table
from encoderlab.words import count, count_of, decimals, estimate_text, lr_text, noun, number_text

if TYPE_CHECKING:
    from encoderlab.study.figures import Figure  # drawing loads matplotlib: imported when figures are drawn


def write_report(study_dir: Path, figures: bool = True) -> Path:
    """Write the report of the study in `study_dir`; returns the path of report.html.

    `figures=False` skips drawing (tests of the graph machinery that only need the numbers)."""
    study_dir = Path(study_dir)
    # One report writer at a time, reading the folder inside: `study report` mid-study read it before the
    # study's report node finished and wrote after it, so the finished study kept a partial report.
    with one_at_a_time(study_dir):
        return _write_report(study_dir, load_study(study_dir), figures)


def _write_report(study_dir: Path, data: StudyData, figures: bool) -> Path:
    out = study_dir / "report"
    (out / "figures").mkdir(parents=True, exist_ok=True)
    table = results_table(data)
    claims = check_claims(data)
    if figures:
        from encoderlab.study.figures import figures as draw

        drawn = draw(data, table, study_dir, out / "figures")
        _drop_undrawn(out / "figures", drawn)
    else:
        drawn = []
    compute = compute_summary(data, study_dir)
    sections = _sections(data, table, claims, compute, drawn)
    write_text_atomic(out / "report.md", markdown_page(data.spec, sections))
    write_text_atomic(out / "report.html", html_page(data.spec, sections))
    write_json_atomic(
        out / "results.json",
        {
            "table": to_dict({m: table.cells[m] for m in table.models}),
            "runs": to_dict(table.runs),
            "claims": [claim_json(c) for c in claims],
            "compute": compute.to_json(),
            "departures": to_dict(list(departures(data.spec))),
        },
    )
    return out / "report.html"


FIGURE_FILES = (".png", ".csv", ".json")
"""What a figure writes into report/figures/: its PNG and the numbers drawn."""


def _drop_undrawn(folder: Path, drawn: list[Figure]) -> None:
    """Delete the figure files that no figure of this report wrote: report/ is one folder for every version
    of the study, so a figure of an earlier version (a run's checkpoints, a CKA, since removed) stayed
    beside the report with its numbers, which the report no longer shows. Only figure files go."""
    kept = {f.png.stem for f in drawn}
    for path in folder.iterdir():
        if path.suffix in FIGURE_FILES and path.stem not in kept and path.is_file():
            path.unlink(missing_ok=True)


def claim_json(result: ClaimResult) -> dict:
    """A claim's result as results.json holds it: the claim's fields, then what the study says."""
    return {**to_dict(result.claim), **{k: v for k, v in to_dict(result).items() if k != "claim"}}


# --------------------------------------------------------------------------- content


def _result_columns(table: ResultsTable) -> tuple[list[str], list[str]]:
    """Columns of the results table and their headers: families, then the tasks of families with more
    than one task. A family of one task is headed by it ("SC: tweets"), and Avg is left out when there is
    one family, so no column repeats another."""
    shared = {t for f in table.families if len(tasks := table.family_tasks(f)) > 1 for t in tasks}
    cols, headers = [], []
    for f in table.shown_families:
        cols.append(f)
        headers.append(table.family_heading(f))
    for t in table.tasks:
        if t in shared:
            cols.append(t)
            headers.append(t)
    return cols, headers


def _cell(cell: Cell | None, baseline: bool) -> str:
    if not cell:
        return "–"
    text = estimate_text(cell.mean, cell.half_width)
    vs = cell.vs_baseline
    if vs is not None:  # the difference at the digits its own interval allows
        diff = number_text(vs.mean, decimals(vs.half_width), sign=True)
        text += f" ({diff}, {p_text(vs.p_value)}{'*' if vs.excludes_zero else ''})"
    elif baseline:
        text += " (baseline)"
    return text


def _task_list(spec: StudySpec, table: ResultsTable) -> str:
    """The evaluated tasks: those the spec or its runs name (as "What this scale is" says them; runs that
    each name theirs read "all (...)", though the suite has more), else the whole suite's, as far as
    results show them."""
    if named := spec.eval.tasks or named_tasks(spec):
        return ", ".join(named)
    return "all" + (f" ({', '.join(table.tasks)})" if table.tasks else "")


def _run_steps(run: RunSpec, data: StudyData) -> str:
    """A run's pretraining steps as resolved (the first pretraining seed's node); none for a start model
    evaluated as is."""
    if run.recipe is None:
        return "0 (as is)"
    node = next(n for n in data.nodes if n.kind == "pretrain" and n.name.split("/")[1] == run.name)
    return f"{PretrainNode.of(node).steps:,}"


def _settings(run: RunSpec) -> str:
    """A run's recipe parameters and RunConfig overrides, as the Runs table shows them: each value as a
    study file writes it (`phases=[{objective: {type: clm}, steps: 10, ...}]`), where Python's repr of the
    checked value (`phases=(Phase(objective=CLM(), steps=10, ...),)`) named classes the file never holds."""
    return " ".join(f"{k}={flow(to_dict(v))}" for k, v in {**run.params, **run.overrides}.items()) or "–"


def _config_rows(data: StudyData, table: ResultsTable) -> list[list[str]]:
    spec = data.spec
    finished = len([n for n in data.nodes if n.kind != "report" and n.name in data.markers])
    shape = (spec.steps, spec.seq_len, spec.micro_batch, spec.grad_accum)
    data_rows = "; ".join(
        f"{d.name}: {'+'.join(d.corpus)}, tokenizer {data.tokenizer_text(d)}, {_max_docs(d.max_docs)}, seed {d.seed}"
        for d in spec.data
    )
    return [
        ["study", spec.name],
        ["scale", _scale_text(spec)],
        ["model size", model_size_text(spec, data.nodes)],
        ["steps / seq len / micro-batch / grad accum", _shape_text(data, shape)],
        ["pretraining seeds", _seed_text(spec)],
        ["data", data_rows],
        *([["hub inputs", hub]] if (hub := data.hub_inputs_text()) else []),
        ["evaluation", evaluation_text(spec, _task_list(spec, table))],
        ["nodes finished", f"{finished} of {len(data.nodes) - 1} (besides this report)"],
    ]


def _scale_text(spec) -> str:
    """The scale and the hardware its expected time is for, e.g. `demo (2 CPU cores)`; a study of one's
    own names none (`custom`, which read `custom ()`)."""
    return f"{spec.scale} ({spec.hardware})" if spec.hardware else spec.scale


def _shape_text(data: StudyData, shape: tuple) -> str:
    """The scale's batch shape, and the steps the runs train as resolved where they differ from the
    scale's (a paper 2 recipe adds its decay: "40" beside a Runs table of 44 read as a contradiction)."""
    text = " / ".join(str(v or "recipe default") for v in shape)
    trained = sorted({PretrainNode.of(n).steps for n in data.nodes if n.kind == "pretrain"})
    if shape[0] is not None and trained and trained != [shape[0]]:
        steps = ", ".join(f"{s:,}" for s in trained)
        text += f" (the scale's settings; as resolved, the runs train {steps} steps: Runs table)"
    return text


def _max_docs(cap: int | None) -> str:
    """A dataset's document cap in words (None, no cap, read "max docs None")."""
    return "every document" if cap is None else f"max docs {cap:,}"


def _seed_text(spec) -> str:
    """The study's pretraining seeds, and the runs trained at other seeds (a run may name its own). When
    every run names its own, the study's seeds train none and are left out: "0 (mlm, clm: 3)" said seed 0
    of a study whose runs all trained at seed 3 (0 being only the default of `seeds`)."""
    text = ", ".join(map(str, spec.seeds))
    own: dict[tuple[int, ...], list[str]] = {}
    for run in spec.runs:
        seeds = spec.seeds_of(run)
        if run.seeds and seeds != spec.seeds:
            own.setdefault(seeds, []).append(run.name)
    extra = "; ".join(f"{', '.join(names)}: {', '.join(map(str, s))}" for s, names in own.items())
    if sum(map(len, own.values())) == len(spec.runs):  # the study's own seeds train no run
        return ", ".join(map(str, next(iter(own)))) if len(own) == 1 else extra
    return f"{text} ({extra})" if extra else text


def _run_rows(data: StudyData) -> list[list[str]]:
    return [
        [
            r.display,
            r.name,
            r.recipe or "(evaluated as is)",
            _settings(r),
            data.start_cell(r),
            r.group,
            _run_steps(r, data),
        ]
        for r in data.spec.runs
    ]


def _compute_rows(data: StudyData, compute: ComputeSummary) -> tuple[list[list[str]], list[list[str]]]:
    """Rows per node kind, and per pretraining run."""
    by_kind = [
        [k, _num(v.tokens), _num(v.flops), f"{v.wall_s:.1f}", f"{v.cpu_s:.1f}", str(v.nodes)]
        for k, v in [*compute.by_kind.items(), ("total", compute.total)]
    ]
    by_run = [
        [
            data.label(r.run),
            _num(r.tokens),
            str(r.budget and _num(r.budget)),
            "?" if r.passes is None else f"{r.passes:.3g}",
            _num(r.flops),
            f"{r.wall_s:.1f}",
            r.note,
        ]
        for r in compute.runs
    ]
    return by_kind, by_run


_RESULTS_NOTE = (
    "Per checkpoint: mean ± 95% t-interval over fine-tuning seeds, test score at the learning rate chosen on "
    "validation per task; a family is the mean of its tasks. In parentheses: the paired difference to the "
    "baseline's checkpoint of the same pretraining seed over the same fine-tuning seeds (a family: over the "
    "tasks both have results for), and its p-value (* where "
    "the 95% interval of the difference excludes 0). Uncorrected: each cell is read alone, not as one of many "
    "tests; the claims below are the study's tests."
)
_RUNS_NOTE = (
    "Per run, over its pretraining seeds: the mean of each checkpoint's mean over fine-tuning seeds ± 95% "
    "t-interval over pretraining seeds (n = the seeds). In parentheses: the paired difference to the baseline over "
    "the pretraining seeds both have, and its p-value (* where its 95% interval excludes 0). Uncorrected, as above."
)


def _metrics_note(table: ResultsTable) -> str:
    """What each task's number is: its test metric (the tables named none, so "99.27" had no unit)."""
    metric = {t: s.metric for per in table.per_task.values() for t, s in per.items()}
    if not metric:
        return ""
    said = md_text("; ".join(f"{t}: {metric[t]}" for t in sorted(metric)))  # a task's name: free text
    return f" Scores are each task's test metric in percent, higher is better ({said})."


def _claims_note(claims: list[ClaimResult]) -> str:
    """How the claims were tested, counting exactly which enter Holm's correction: until 2026-12-04 it said
    "the study's N claims with a p-value", though claims at one pretraining seed show a p outside the family."""
    tested = sum(c.numbers.get("p_holm") is not None for c in claims)
    one_seed = sum("checkpoint_p" in c.numbers for c in claims)
    family = {
        0: "No claim of the study enters Holm's correction, so there is no family of tests to correct",
        1: "1 claim of the study enters Holm's correction, a family of one: its Holm-adjusted p (Holm 1979) is "
        "its p, and it is significant when that p < 0.05",
    }.get(
        tested,
        f"{tested} claims of the study enter Holm's correction as one family of tests: each p is shown with its "
        "Holm-adjusted value (Holm 1979), and a claim is significant when the adjusted p < 0.05",
    )  # "The study's 1 claims ... are one family" read as a typo, and 0 as a family of none
    if one_seed:
        family += (
            f"; {count(one_seed, 'claim')} at one pretraining seed {noun(one_seed, 'gives', 'give')} a direction "
            f"only, {noun(one_seed, 'its', 'their')} checkpoint-level p outside the family"
        )
    if bases := sum("one_seed_bases" in c.numbers for c in claims):  # `results.one_seed_bases`
        family += (
            f"; {count(bases, 'claim')} whose runs continue different base checkpoints trained at one pretraining "
            f"seed {noun(bases, 'gives', 'give')} a direction only, {noun(bases, 'its', 'their')} p outside the family"
        )
    return (
        f"{family}; intervals are "
        "the unadjusted 95% intervals of the differences. A claim is tested over pretraining seeds (each "
        "the mean over its fine-tuning seeds) when both runs were trained at two or more, paired over the seeds "
        "both have, or by Welch's test when they share fewer than two; against a run trained at one, by Welch's "
        f"test against that checkpoint's fine-tuning scores{_one_score_clause(claims)}; with one each, over the "
        "fine-tuning seeds of one checkpoint each, which "
        "compares two checkpoints rather than two objectives: such a claim gives a direction only, and its p "
        "(checkpoint-level) is left out of the family."
        + _DETECTABLE
        * any("detectable" in c.numbers for c in claims)
    )


_DETECTABLE = (
    ' A tested claim\'s "detects a difference of X or more" is what its scale can show: an undecided claim whose X '
    "is larger than the effect in question had less than an 80% chance of showing that effect here at Holm's "
    "strictest threshold (an effect of three quarters of X about 60%, at 3 seeds), so it is weak evidence against "
    "it, not a finding of no effect."
)
"""Said under the claims when one gives `numbers.detectable` (`results._detectable_phrase`)."""


def _one_score_clause(claims: list[ClaimResult]) -> str:
    """What a reference checkpoint scored at one fine-tuning seed was tested with, where a claim had one
    (`Nested.borrowed_df`: 0 when there was no variance to borrow): the note said "(scored at one fine-tuning
    seed, ...)" of every one-checkpoint reference, also those scored at several."""
    df = [c.numbers["borrowed_df"] for c in claims if c.numbers.get("borrowed_df") is not None]
    said = [
        f"{count(n, 'claim')} whose checkpoint was scored at one fine-tuning seed {verb}"
        for n, verb in (
            (sum(d > 0 for d in df), "borrowed the other run's pooled fine-tuning variance as its noise"),
            (df.count(0), "had no such variance to borrow, and no test"),
        )
        if n
    ]
    return f" ({'; '.join(said)})" if said else ""


def _degenerate(data: StudyData, table: ResultsTable) -> list[tuple]:
    """A warning for every final model and task whose runs at the chosen LR predicted one output for
    everything (evaluation's `degenerate` flag): such a score measures the label prior, not the model."""
    flagged = [  # free text (a label, a predicted class): shown as written (`md_text`)
        md_text(
            f"{data.label(m)} on {task}: {count_of(d.runs, d.of, 'fine-tuning seed')} at LR {lr_text(s.best_lr)}; {d.why}"
        )
        for m in table.models
        for task, s in table.per_task[m].items()
        if (d := s.degenerate)
    ]
    if not flagged:
        return []
    note = (
        "These runs predicted one output for every test example, or for a tagging task "
        f"{TAGGER_RULE} (their test predictions are saved in each eval node's folder, `predictions/`): their score "
        "is the label prior's, not a sign that the model learned the task."
    )
    return [("Degenerate predictions", "list", flagged), ("", "text", note)]


def _skipped_answers(table: ResultsTable) -> list[tuple]:
    """The note for every QA task whose fine-tuning skipped training answers not at their `answer_start`
    (`tasks.splits.skipped_answers_note`, from the counts the eval records hold, as `eval` and summary.md say
    it): its scores are of models trained on part of its questions. Once a task: the skip reads the task's
    data alone (`qa_example`), so every model's records count the same."""
    from encoderlab.eval.tasks.splits import skipped_answers_note

    noted = dict.fromkeys(  # a task name is free text (`md_text`)
        md_text(f"{task}: {note}")
        for task in table.tasks
        for m in table.models
        if (s := table.per_task[m].get(task)) is not None and (note := skipped_answers_note(s.counts))
    )
    return [("Skipped training answers", "list", list(noted))] if noted else []


def _corpora_note(compute: ComputeSummary) -> str:
    parts = [  # `how` names corpus entries and folders, free text: a glob's `**` turned bold on (`md_text`)
        md_text(f"{name}: {_num(c.unique_tokens)} unique tokens ({c.how})")
        for name, c in compute.corpora.items()
    ]
    return (
        "Passes over the corpus: the tokens of the data stream a run reads up to, over the unique tokens of its "
        "dataset's train split (above 1, the run sees text again). " + "; ".join(parts) + "."
    )


def _sections(
    data: StudyData,
    table: ResultsTable,
    claims: list[ClaimResult],
    compute: ComputeSummary,
    figures: list[Figure],
) -> list[tuple]:
    """(title, kind, payload) blocks shared by the HTML and Markdown renderers."""
    cols, headers = _result_columns(table)
    result_rows = [
        [data.label(m)] + [_cell(table.cells[m].get(c), split_id(m)[0] == data.spec.baseline) for c in cols]
        for m in table.models  # every baseline checkpoint: each is the reference of its pretraining seed's rows
    ]
    by_kind, by_run = _compute_rows(data, compute)
    return [
        ("What this scale is", "text", setup_text(data.spec)),
        *_reach(data, table),
        ("Configuration", "table", (["setting", "value"], _config_rows(data, table))),
        (
            "Runs",
            "table",
            (["label", "id", "recipe", "settings", "start", "group", "steps"], _run_rows(data)),
        ),
        ("Compute spent", "table", (["node kind", "tokens", "FLOPs", "wall s", "CPU s", "nodes"], by_kind)),
        (
            "Compute per pretraining run",
            "table",
            (
                ["run", "tokens trained", "token budget", "passes over corpus", "FLOPs", "wall s", "note"],
                by_run,
            ),
        ),
        ("", "text", _corpora_note(compute)),
        (
            "",
            "text",
            f"FLOPs: {compute.flops_method}. CPU s counts every thread of the process (and finished child "
            "processes): on a shared machine it says more than the wall time about how long a node takes alone.",
        ),
        *_results((["model", *headers], result_rows), _RESULTS_NOTE + _metrics_note(table), data.spec),
        *_degenerate(data, table),
        *_skipped_answers(table),
        *_over_runs(data, table, cols, headers),
        *_reported(data, table),
        (
            "Claims of the papers at this scale" if data.spec.paper else "Claims of the study at this scale",
            "list",
            [f"**{md_text(c.claim.text)}.** {md_text(c.sentence)}" for c in claims],
        ),
        *(
            [("", "text", _claims_note(claims))] if claims else []
        ),  # no claims: no note on how they were tested
        ("Figures", "figures", figures),
    ]


def _over_runs(data: StudyData, table: ResultsTable, cols: list[str], headers: list[str]) -> list[tuple]:
    """The results per run over pretraining seeds and their note (none without such a run); a run continuing a
    base trained at one pretraining seed is marked, and the note says what its numbers cover (`runbases`)."""
    marks, bases_note = base_marks(data, table.runs)
    rows = [
        [data.label(r) + marks.get(r, "")] + [_cell(cells.get(c), r == data.spec.baseline) for c in cols]
        for r, cells in table.runs.items()
    ]
    note = _RUNS_NOTE + (f" {md_text(bases_note)}" if bases_note else "")
    title = "Results per run, over pretraining seeds"
    return [(title, "table", (["run", *headers], rows)), ("", "text", note)] if rows else []


def _results(table: tuple, note: str, spec: StudySpec) -> list[tuple]:
    """The results table and its note; without a finished fine-tuning run, one line (was a bare header)."""
    none = "No fine-tuning run has finished yet (`encoderlab study status` lists them)."
    none = none if fine_tunes(spec) else f"N{NOT_FINE_TUNED[1:]}."
    return [("Results", "table", table), ("", "text", note)] if table[1] else [("Results", "text", none)]


def _reach(data: StudyData, table: ResultsTable) -> list[tuple]:
    """What the scale can and cannot show (`reach`), when there is anything to say."""
    # each names runs by label (the reach the compared run's, the ceiling and the untested claims theirs),
    # free text: escaped as the tables' cells are (`md_text`)
    said = (reach_text(data.spec), ceiling_text(data, table), untested_text(data.spec))
    text = " ".join(md_text(t) for t in said if t)
    return [("What this scale can and cannot show", "text", text)] if text else []


def _reported(data: StudyData, table: ResultsTable) -> list[tuple]:
    """Paper 1's reported averages beside this study's, at a scale that is paper 1's setup."""
    first = {r.name: ids[min(ids)] for r in data.spec.runs if (ids := data.model_ids(r.name))}
    rows = reported_rows(data.spec, table, first)
    if not rows:
        return []
    head = ["run", *(f"{f.upper()}: ours / paper 1" for f in FAMILIES)]
    return [("Paper 1's reported numbers", "table", (head, rows)), ("", "text", SOURCE)]


def _num(x) -> str:
    """A count with thousands separators; any other number (FLOPs) to 3 significant digits with their
    trailing zeros, so a column reads at one precision: "2.00e+12" beside "2.67e+12" (it read "2e+12")."""
    if x is None:
        return "–"
    return f"{x:,}" if isinstance(x, int) else f"{x:#.3g}".rstrip(".")  # "100." is 100


def report_node(ctx, figures: bool = True) -> dict:
    """The graph's last node: write the report of the study folder. Every other node has finished (it
    reads them all), so no marker changes while it runs: each is read once (the table and the compute
    summary each read them all)."""
    with markers_read_once():
        path = write_report(ctx.study_dir, figures=figures)
    return {"path": str(path.relative_to(ctx.study_dir))}
