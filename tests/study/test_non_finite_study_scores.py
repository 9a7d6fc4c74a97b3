"""A finished eval node whose node.json holds a NaN score (edited by hand: evaluation never writes one) is
refused when the study is read, naming the file and the rerun that redoes it; read, the NaN made the
claims' paired tests depend on the order of the fine-tuning seeds."""

from __future__ import annotations

import json

import pytest
from fake_study import backend, small_spec

from encoderlab.errors import UserError
from encoderlab.study.data import load_study
from encoderlab.study.report import write_report
from encoderlab.study.runner import run_study


def test_a_nan_score_in_a_finished_eval_node_is_refused_naming_its_node_json(tmp_path):
    run_study(small_spec(), tmp_path, backend(), progress=False)
    marker = next(p for p in sorted(tmp_path.rglob("node.json")) if '"test_score"' in p.read_text())
    raw = json.loads(marker.read_text())
    raw["result"]["test_score"] = float("nan")
    marker.write_text(json.dumps(raw))  # json writes NaN, as a hand edit can
    report = (tmp_path / "report" / "report.md").read_text()
    for read in (lambda: load_study(tmp_path).evals, lambda: write_report(tmp_path, figures=False)):
        with pytest.raises(UserError) as err:
            read()
        assert str(err.value).startswith(
            f"{marker} is damaged (a score that is not a number, test_score is nan, which evaluation never "
            f"writes); delete {marker.parent} and run the study again, which redoes {raw['name']}"
        )
    assert (tmp_path / "report" / "report.md").read_text() == report  # refused before the report was touched
