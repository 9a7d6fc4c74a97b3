"""docs/reproduce.md states, per study and scale, how the scale departs from its paper: the tables are
`study.fidelity.scale_table`, the code every report and `study list` use, so docs and code agree."""

from __future__ import annotations

from pathlib import Path

from encoderlab.study.catalog import STUDIES, get_study, scales_of
from encoderlab.study.fidelity import ASPECTS, departures, scale_table, update_tables

DOC = Path(__file__).resolve().parents[2] / "docs" / "reproduce.md"


def test_the_departure_tables_in_reproduce_md_are_current():
    text = DOC.read_text()
    assert update_tables(text) == text, (
        "docs/reproduce.md's tables are stale: run python -m encoderlab.study.fidelity docs/reproduce.md"
    )
    for study in STUDIES:  # every built-in study has its table
        assert f"<!-- fidelity:{study} -->\n{scale_table(study)}\n<!-- /fidelity -->" in text


def test_a_table_names_every_departure_and_calls_no_departing_scale_the_papers():
    for study in STUDIES:
        rows = {r.split(" | ")[0].strip("| "): r.split(" | ")[2:] for r in scale_table(study).splitlines()}
        for i, scale in enumerate(scales_of(study)):
            gone = {d.aspect: d.here for d in departures(get_study(study, scale))}
            for aspect in ASPECTS:
                assert rows[aspect][i].strip(" |") == gone.get(aspect, "as the paper")
            verdict = rows["verdict"][i]
            assert ("NOT" in verdict) == bool(gone), (study, scale, verdict)
