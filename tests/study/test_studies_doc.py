"""docs/studies.md's scales table quotes, for the gpu scales, the expected times `study list` prints.
Those are estimates from the studies' own code (`catalog.estimate_minutes`), so a change to a study, a
scale or the cost model moves them; the doc's numbers must move too. The demo and cpu cells are
measured wall times, which no code computes, so they are left out."""

from __future__ import annotations

import re
from pathlib import Path

from encoderlab.study.catalog import estimate_minutes, get_study
from encoderlab.study.cli import expected_time

DOC = Path(__file__).resolve().parents[2] / "docs" / "studies.md"
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
