"""docs/studies.md's scales table quotes, for the gpu scales, the expected times `study list` prints, and
it and docs/reproduce.md the passes the study guard refuses paper 2 at 50B tokens with, and its
`$ encoderlab study plan ...` example is what that command prints (lines elided with `...` aside).
Those are estimates from the studies' own code (`catalog.estimate_minutes`), so a change to a study, a
scale or the cost model moves them; the doc's numbers must move too. The demo and cpu cells are
measured wall times, which no code computes, so they are left out."""

from __future__ import annotations

import re
from pathlib import Path

from encoderlab.cli import main
from encoderlab.study.catalog import estimate_minutes, get_study
from encoderlab.study.cli import expected_time
from encoderlab.study.plan import passes_text, plan_study

DOC = Path(__file__).resolve().parents[2] / "docs" / "studies.md"
REPRODUCE = DOC.parent / "reproduce.md"
STUDY_COLUMNS = ("paper1-pfs", "paper1-cpt", "paper2-detour")
ESTIMATE = re.compile(r"~(\d+ (?:h|min))\b")


def quoted_estimates(text: str) -> dict[tuple[str, str], str]:
    """(study, scale) -> the `~N h` a gpu row of the scales table opens its study's cell with."""
    table = text.split("## Scales and commands", 1)[1].split("\n\n", 2)[1]
    header = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
    found = {}
    for row in table.splitlines()[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        scale = cells[0].strip("`")
        if not scale.startswith("gpu-"):
            continue
        for study in STUDY_COLUMNS:
            if match := ESTIMATE.match(cells[header.index(study)]):
                found[study, scale] = match.group(1)
    return found


def test_the_gpu_scales_estimates_in_studies_md_are_study_lists():
    quoted = quoted_estimates(DOC.read_text())
    assert len(quoted) == 3 * len(STUDY_COLUMNS), f"expected a ~N h in every gpu cell: {quoted}"
    stale = {
        key: (doc, expected_time(estimate_minutes(get_study(*key))))
        for key, doc in quoted.items()
        if doc != expected_time(estimate_minutes(get_study(*key)))
    }
    assert not stale, f"docs/studies.md's scales table is stale, (doc, study list): {stale}"


def test_the_table_reader_sees_a_stale_estimate():
    text = (
        "## Scales and commands\n\n| scale | x | paper1-pfs | paper1-cpt | paper2-detour |\n|---|---|---|---|---|\n"
        "| `demo` | a | 5 min | 9 min | 7 min |\n| `gpu-1b` | b | ~790 h | ~253 h (est.) | ~68 h, but refused |\n\n"
    )
    assert quoted_estimates(text) == {
        ("paper1-pfs", "gpu-1b"): "790 h",
        ("paper1-cpt", "gpu-1b"): "253 h",
        ("paper2-detour", "gpu-1b"): "68 h",
    }


def test_the_docs_quote_the_passes_that_refuse_paper2_at_gpu_1b():
    """`study list`, `study plan` and the refusal show paper2-detour gpu-1b's lower bound as `>=1.75`;
    the docs said "1.75" where `study list` showed ">=1.8" (a lower bound rounded up)."""
    plan = plan_study(get_study("paper2-detour", "gpu-1b"))
    most = passes_text(max(plan.runs, key=lambda r: r.passes or 0), 3).removeprefix(">=")
    for doc in (DOC, REPRODUCE):
        quoted = re.findall(
            r"Biomed-Enriched at least ([\d.]+) times|read it at least ([\d.]+) times", doc.read_text()
        )
        assert quoted, f"{doc.name} no longer quotes paper2-detour gpu-1b's passes"
        assert {a or b for a, b in quoted} == {most}, f"{doc.name} quotes {quoted}, the plan shows >={most}"


def shown_sessions(text: str) -> list[tuple[list[str], list[str]]]:
    """(argv, output lines) of every code block in `text` that opens with `$ encoderlab ...`; `...` lines
    (elided output) are left out."""
    sessions = []
    for block in re.findall(r"```\n\$ encoderlab (.*?)\n(.*?)```", text, flags=re.S):
        argv, output = block
        sessions.append((argv.split(), [x for x in output.splitlines() if x.strip() != "..."]))
    return sessions


def test_the_study_plan_shown_in_studies_md_is_what_it_prints(capsys):
    sessions = shown_sessions(DOC.read_text())
    assert sessions, "docs/studies.md no longer shows a `$ encoderlab study plan` session"
    for argv, shown in sessions:
        main(argv)
        printed = capsys.readouterr().out.splitlines()
        stale = [line for line in shown if line not in printed]
        assert not stale, f"docs/studies.md shows lines `encoderlab {' '.join(argv)}` does not print: {stale}"
