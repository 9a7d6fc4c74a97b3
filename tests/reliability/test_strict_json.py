"""Every JSON and JSON-lines file encoderlab writes is strict JSON: a non-finite number is null, never
the bare `NaN` / `Infinity` Python's json writes by default, which jq, JavaScript and strict readers
refuse. Each kind of writer is fed NaN and infinities and its output parsed by a strict parser; the
readers take null where they used to get NaN, and still read an old file's bare NaN."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from encoderlab.atomic import print_json, write_json_atomic
from encoderlab.eval.protocol import ResultsStore
from encoderlab.eval.summary import EvalRecord

NAN, INF = float("nan"), float("inf")
VALUE = {"loss": NAN, "ratio": [1.5, INF, -INF], "nested": {"p": NAN, "ok": 2}}
NULLED = {"loss": None, "ratio": [1.5, None, None], "nested": {"p": None, "ok": 2}}


def _refuse(token: str):
    raise ValueError(f"not strict JSON: bare {token}")


def strict(text: str):
    """`text` parsed as strict JSON (NaN, Infinity and -Infinity refused)."""
    return json.loads(text, parse_constant=_refuse)


def strict_lines(path: Path) -> list:
    return [strict(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write_json_atomic(path: Path) -> list:
    write_json_atomic(path, VALUE)  # results.json, advice.json, node.json, validation.json, ...
    return [strict(path.read_text())]


def _print_json(path: Path) -> list:
    print_json(VALUE, path)  # the bench outputs
    return [strict(path.read_text())]


def _plots_json(path: Path) -> list:
    from encoderlab.analysis.plots import write_json

    write_json(VALUE, path)  # the numbers behind a figure, cka_report.json
    return [strict(path.read_text())]


def _compute_jsonl(path: Path) -> list:
    from encoderlab.study.runner import _write_compute

    _write_compute(path.parent, [VALUE, VALUE])
    return strict_lines(path.parent / "compute.jsonl")


def _predictions(path: Path) -> list:
    from encoderlab.eval.predictions import write_predictions

    write_predictions(path.parent, Path("p.jsonl"), {"test": [VALUE]})
    rows = strict_lines(path.parent / "p.jsonl")
    return [{k: v for k, v in row.items() if k != "split"} for row in rows]


def _asset_records(path: Path) -> list:
    from encoderlab.data.assets.jsonl import write_jsonl

    write_jsonl([{"id": "a", "text": "t", "meta": VALUE}], path)
    return [row["meta"] for row in strict_lines(path)]


@pytest.mark.parametrize(
    "write",
    [_write_json_atomic, _print_json, _plots_json, _compute_jsonl, _predictions, _asset_records],
    ids=lambda f: f.__name__.lstrip("_"),
)
def test_each_writer_writes_non_finite_numbers_as_null(write, tmp_path, capsys):
    assert all(row == NULLED for row in write(tmp_path / "out.json"))
    printed = capsys.readouterr().out
    if printed:  # print_json: stdout is the same strict JSON
        assert strict(printed) == NULLED


def test_json_text_refuses_what_json_safe_cannot_reach():
    """allow_nan=False: a non-finite number json_safe does not see (inside an object json.dumps turns into
    data through `default`) fails loudly instead of writing a bare NaN."""
    from encoderlab.atomic import json_text

    class Holder:
        pass

    with pytest.raises(ValueError, match="not JSON compliant"):
        json_text(Holder(), default=lambda o: {"x": NAN})


def _record(**scores) -> EvalRecord:
    base = dict(model="m" * 64, task="t", family="sc", task_signature="s", metric="acc", lr=1e-5, seed=0)
    return EvalRecord(**base, val_score=80.0, test_score=70.0, **scores)


def test_eval_results_are_strict_and_read_back_with_null(tmp_path):
    rec = _record(
        val={"acc": 80.0, "f1": NAN},
        test={"test": {"acc": 70.0, "f1": INF}},
        final_loss=NAN,
        val_by_epoch=[NAN, 80.0],
    )
    ResultsStore(tmp_path / "results.jsonl").add(rec)
    [line] = strict_lines(tmp_path / "results.jsonl")
    assert (line["final_loss"], line["val"]["f1"], line["test"]["test"]["f1"]) == (None, None, None)
    [back] = ResultsStore(tmp_path / "results.jsonl").records.values()
    assert back.final_loss is None and back.val_by_epoch == [None, 80.0] and back.val["f1"] is None


def test_an_old_results_file_with_a_bare_nan_still_reads(tmp_path):
    line = json.dumps(dict(vars(_record(val={}, test={}, final_loss=NAN)), val_by_epoch=[NAN, 80.0]))
    assert "NaN" in line  # as encoderlab wrote it before
    (tmp_path / "results.jsonl").write_text(line + "\n")
    [back] = ResultsStore(tmp_path / "results.jsonl").records.values()
    assert math.isnan(back.final_loss) and math.isnan(back.val_by_epoch[0])


def test_bench_table_shows_a_null_mfu_as_a_dash():
    from encoderlab.bench.table import table_row

    config = dict(size="nano", objective="mlm", batch=8, seq_len=128, precision="bf16", attn_impl="sdpa")
    row = table_row(
        "r", {"config": {**config, "compile": False}, "encoderlab": {"tokens_per_s": 10.0, "mfu": None}}
    )
    assert "| 10 | - | - | - | - |" in row


@pytest.mark.parametrize("value", [{"folder": Path("runs/a")}, {"scores": {0.5, 0.7}}])
def test_the_numbers_behind_a_figure_refuse_what_is_not_json(tmp_path, value):
    """`plots.write_json` wrote anything that is not JSON as its str (`default=str`): a caller's bug (a Path
    left in a row, a set of scores) became a string in cka.json or a table's .json instead of failing."""
    from encoderlab.analysis.plots import write_json

    with pytest.raises(TypeError, match="not JSON serializable"):
        write_json(value, tmp_path / "numbers.json")
    assert not (tmp_path / "numbers.json").exists()
