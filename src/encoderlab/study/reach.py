"""What a study's scale can and cannot show, said beside "What this scale is" in its report.

`fidelity.departures` lists how a scale differs from its paper; a reader still has to judge whether
the scale could show the paper's effect at all. Two things decide that here, both derived every time:
- from the resolved study (`reach_text`): the tokens the compared run trains as resolved
  (`fidelity.compared_chain`, the runs' own resolution) against the shortest run the paper trains
  (`PaperSetup.shortest_tokens`; for a run from scratch, the shortest the paper trains
  from scratch, `shortest_scratch_tokens`), and whether the claims' runs have more than one pretraining seed;
- from the results (`ceiling_text`): a model evaluated as it is (the start of continued runs) whose
  interval on a task reaches the metric's maximum, which leaves continued pretraining no room to gain.
Paper 2's demo (MiniLM, 44 steps, pubmedqa-retrieval at 99.3) shows the pipeline, not the detour's
effect, and its report used to say "does not hold (significant)" without saying so.
"""

from __future__ import annotations

from encoderlab.study.data import StudyData, split_id
from encoderlab.study.fidelity import PAPERS, compared_chain, compared_run
from encoderlab.study.resolve import tokens
from encoderlab.study.spec import StudySpec
from encoderlab.study.table import ResultsTable
from encoderlab.words import decimals, estimate_text, number_text

MAX_SCORE = 100.0
"""The best score of every task's metric as the tables show it (percent)."""


def _share(part: int, whole: int) -> str:
    pct = 100 * part / whole
    return f"{pct:.2g}%" if pct >= 1e-4 else "less than 0.0001%"


def _billions(n: int) -> str:
    return f"{n / 1e9:.3g}B"


def reach_text(spec: StudySpec) -> str:
    """What the scale can and cannot show about its paper's findings (empty: no paper, or the compared
    run trains at least the paper's shortest run)."""
    paper = PAPERS.get(spec.paper)
    if paper is None or not any(r.recipe for r in spec.runs):
        return ""
    cfg = compared_chain(spec)[-1]
    trained, what = tokens(cfg), "continued pretraining" if cfg.model.init else "pretraining"
    # a from-scratch run against the paper's from-scratch runs: against its +2k continued run (4.72B tokens),
    # paper 1's demo read 0.0087% of the way there, where its shortest run from scratch puts it at 0.0014%
    scratch = not cfg.model.init and paper.shortest_scratch_tokens is not None
    shortest = paper.shortest_scratch_tokens if scratch else paper.shortest_tokens
    if trained >= shortest:
        return ""
    names = {n for c in spec.claims for n in (c.a, c.b)}
    runs = [r for r in spec.runs if r.name in names and r.recipe]
    one_seed = bool(runs) and all(len(spec.seeds_of(r)) == 1 for r in runs)
    seeds = (
        " Each run the claims compare is trained at one pretraining seed, so a claim compares two checkpoints, "
        "not two objectives, and gives a direction only."
        if one_seed
        else ""
    )
    return (
        f"It can show that the study runs end to end and how these models compare after {trained:,} tokens of "
        f"{what} each. It cannot show whether {paper.short}'s findings hold: the run the claims compare "
        f"against ({compared_run(spec).display}) trains {trained:,} tokens, {_share(trained, shortest)} of the "
        f"shortest run {paper.short} trains{' from scratch' * scratch} ({_billions(shortest)} tokens), and an effect the paper "
        f"measured at its scale need not appear, or may reverse, this far from it.{seeds}"
    )


def untested_text(spec: StudySpec) -> str:
    """The paper's findings this report says nothing about: the claims the same built-in study tests at other
    scales only (paper 2's freezing claims, from `cpu` up: the demo's report named neither them nor their
    absence), and the paper's experiments no study runs (`PaperSetup.not_studied`). Empty: none."""
    from encoderlab.study.catalog import STUDIES, get_study, scales_of  # the catalogue builds every study

    paper = PAPERS.get(spec.paper)
    if paper is None:
        return ""
    have, elsewhere = {c.id for c in spec.claims}, {}
    for scale in scales_of(spec.name) if spec.name in STUDIES else ():
        for c in get_study(spec.name, scale).claims:
            if c.id not in have:
                elsewhere.setdefault(c.id, (c.text, []))[1].append(scale)
    said = [f"{text} (at {', '.join(scales)})" for text, scales in elsewhere.values()]
    parts = [f"Claims the study tests at other scales only, not here: {'; '.join(said)}."] if said else []
    if paper.not_studied:
        parts.append(
            f"No study runs {paper.not_studied} (docs/reproduce.md says which encoderlab can run, and how), so "
            "this report says nothing about them."
        )
    return " ".join(parts)


def ceiling_text(data: StudyData, table: ResultsTable) -> str:
    """A sentence per model evaluated as it is whose test interval on a task reaches the maximum score:
    continued runs from it cannot show a gain there (empty: none)."""
    starts = {r.name for r in data.spec.runs if r.recipe is None}
    out = []
    for m in table.models:
        if split_id(m)[0] not in starts:
            continue
        for task, s in table.per_task[m].items():
            if s.test.ci_high is not None and s.test.ci_high >= MAX_SCORE:
                room = number_text(MAX_SCORE - s.test.mean, decimals(s.test.half_width))
                out.append(
                    f"Evaluated as it is, {data.label(m)} already scores {estimate_text(s.test.mean, s.test.half_width)} "
                    f"on {task}, an interval that reaches the maximum of {MAX_SCORE:g}: no run continued from it can "
                    f"gain more than {room} points there, so a difference between such runs on {task} says "
                    "which lost less of the start's score, not which objective adapts a model better."
                )
    return " ".join(out)
