"""A finished eval node whose node.json holds a NaN score (edited by hand: evaluation never writes one) is
refused when the study is read, naming the file and the rerun that redoes it; read, the NaN made the
claims' paired tests depend on the order of the fine-tuning seeds. The studies are `pair_spec` (half
`small_spec`'s nodes) but for the CKA node's test, which needs `small_spec`'s CKA."""

from __future__ import annotations

import json

import pytest
from fake_study import backend, pair_spec, small_spec

from encoderlab.errors import UserError
from encoderlab.study.data import load_study
from encoderlab.study.report import write_report
from encoderlab.study.runner import run_study


def test_a_nan_score_in_a_finished_eval_node_is_refused_naming_its_node_json(tmp_path):
    run_study(pair_spec(), tmp_path, backend(), progress=False)
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


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda r: r["ratio"].__setitem__(1, float("inf")), "ratio[1] is inf"),
        (lambda r: r["low_layers"].__setitem__("low_ratio", float("nan")), "low_layers.low_ratio is nan"),
    ],
)
def test_a_non_finite_number_in_a_finished_cka_node_is_refused_naming_its_node_json(tmp_path, edit, said):
    """A CKA node writes null where a ratio is infinite or undefined (`json_safe`); NaN or inf in its node.json
    was edited in, and read, it went on into the report's results.json and figures as if measured."""
    run_study(small_spec(), tmp_path, backend(), progress=False)
    marker = next(p for p in sorted(tmp_path.rglob("node.json")) if '"noise_divergence"' in p.read_text())
    raw = json.loads(marker.read_text())
    edit(raw["result"])
    marker.write_text(json.dumps(raw))
    report = (tmp_path / "report" / "report.md").read_text()
    for read in (lambda: load_study(tmp_path).cka, lambda: write_report(tmp_path, figures=False)):
        with pytest.raises(UserError) as err:
            read()
        assert str(err.value) == (
            f"{marker} is damaged (a number that is not finite, {said}, which a CKA node never writes); delete "
            f"{marker.parent} and run the study again, which redoes {raw['name']}"
        )
    assert (tmp_path / "report" / "report.md").read_text() == report  # refused before the report was touched


@pytest.mark.parametrize(("field", "value"), [("flops", float("nan")), ("tokens", float("inf"))])
def test_a_non_finite_compute_count_is_refused_naming_its_node_json(tmp_path, field, value):
    """A finished node's compute record (node.json `compute`, which compute.jsonl copies) holding NaN FLOPs
    was read unchecked: the report's compute table printed "nan" as what the study spent."""
    run_study(pair_spec(), tmp_path, backend(), progress=False)
    marker = next(p for p in sorted(tmp_path.rglob("node.json")) if '"kind": "pretrain"' in p.read_text())
    raw = json.loads(marker.read_text())
    raw["compute"][field] = value
    marker.write_text(json.dumps(raw))
    report = (tmp_path / "report" / "report.md").read_text()
    with pytest.raises(UserError) as err:
        write_report(tmp_path, figures=False)
    assert str(err.value) == (
        f"{marker} is damaged (a number that is not finite, compute.{field} is {value}, which a finished node "
        f"never records); delete {marker.parent} and run the study again, which redoes {raw['name']}"
    )
    assert (tmp_path / "report" / "report.md").read_text() == report  # refused before the report was touched


def test_a_test_split_dropped_from_a_finished_eval_node_is_refused_naming_its_node_json(tmp_path):
    """Read, the summary's interval over the seeds of that split was a KeyError traceback in `select_lr`."""
    run_study(pair_spec(), tmp_path, backend(), progress=False)
    marker = next(p for p in sorted(tmp_path.rglob("node.json")) if '"test_score"' in p.read_text())
    raw = json.loads(marker.read_text())
    split = sorted(raw["result"]["test"])[0]
    del raw["result"]["test"][split]
    marker.write_text(json.dumps(raw))
    report = (tmp_path / "report" / "report.md").read_text()
    for read in (lambda: load_study(tmp_path).evals, lambda: write_report(tmp_path, figures=False)):
        with pytest.raises(UserError) as err:
            read()
        assert str(err.value) == (
            f"{marker} is damaged (no test split {split}, which the other runs of task {raw['result']['task']} "
            f"have and evaluation always writes); delete {marker.parent} and run the study again, which redoes "
            f"{raw['name']}"
        )
    assert (tmp_path / "report" / "report.md").read_text() == report  # refused before the report was touched
