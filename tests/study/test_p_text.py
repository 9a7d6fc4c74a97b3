"""A p-value reads alike wherever the study report prints it (`eval.stats.p_text`).

Until 2026-12-06 the results table wrote a cell's p to 2 significant digits (`p=0.066`) and a claim's
sentence the same p to 3 (`p = 0.0665`), so the one test read as two.
"""

from __future__ import annotations

import json
import math
import re

from fake_study import backend, small_spec

from encoderlab.eval.stats import p_text
from encoderlab.study.runner import run_study


def test_p_text_rounds_to_three_digits_with_a_floor_and_never_across_alpha():
    assert p_text(0.0665) == "p = 0.0665"
    assert p_text(0.2) == "p = 0.2" and p_text(1.0) == "p = 1"
    assert p_text(6.67e-06) == "p < 0.001"  # no precision the seeds cannot give
    shown = p_text(0.04996)  # 3 digits would print a significant p as "0.05"
    assert float(shown.removeprefix("p = ")) < 0.05
    assert p_text(math.nan) == "p = n/a"


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_a_claims_p_reads_as_the_results_tables_p_of_the_same_test(tmp_path):
    """The fake study's one-seed claims compare a run with the baseline checkpoint on one family: their
    checkpoint-level p is the p the results table gives that run's cell, and both print it alike."""
    run_study(small_spec(), tmp_path, backend(), progress=False)
    report = tmp_path / "report"
    md = (report / "report.md").read_text()
    table, claims_md = _section(md, "Results"), _section(md, "Claims of the study at this scale")
    claims = json.loads((report / "results.json").read_text())["claims"]
    above_floor = [c for c in claims if c["numbers"].get("checkpoint_p", 0) >= 0.001]
    assert above_floor, "the fake study has no one-seed claim whose p is above the floor"
    for c in above_floor:
        p = c["numbers"]["checkpoint_p"]
        said = re.search(r"checkpoint-level paired (p [=<] [0-9.e+-]+)", c["sentence"]).group(1)
        assert said == p_text(p) and said in claims_md
        assert f", {said}" in table, f"{said} of claim {c['id']} is not the results table's"
