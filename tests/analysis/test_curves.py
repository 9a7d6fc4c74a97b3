"""Curves: LR selection on validation, seed-wise family averages with t-intervals, and figures."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from analysis_helpers import eval_records
from scipy import stats

from encoderlab.analysis.curves import (
    CurveSource,
    curve_tables,
    load_input,
    lr_rows,
    model_summary,
    read_results,
    selected_rows,
)
from encoderlab.analysis.plots import plot_data_efficiency, plot_lr_sensitivity, plot_mask_ratio
from encoderlab.errors import UserError


def _write(path, records):
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


T1 = {1e-5: [(70, 60), (72, 62), (71, 61)], 5e-5: [(80, 75), (81, 77), (79, 73)]}
T2 = {1e-5: [(90, 88), (91, 86), (89, 87)], 5e-5: [(60, 50), (61, 52), (59, 51)]}


def _t_interval(values):
    values = np.asarray(values, dtype=float)
    return stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=stats.sem(values))


def _summary(path, source=None):
    return model_summary(read_results(path), source, path)


def test_lr_is_selected_on_validation_and_test_is_reported_at_it(tmp_path):
    summary = _summary(_write(tmp_path / "e", eval_records("tweets", T1)))
    (row,) = selected_rows(summary, "task")
    low, high = _t_interval([75, 77, 73])
    assert (
        row["name"] == "tweets"
        and row["best_lr"] == 5e-5
        and row["mean"] == pytest.approx(75)
        and row["n"] == 3
    )
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high))
    curve = {r["lr"]: r["mean"] for r in lr_rows(summary)}
    assert curve == pytest.approx({1e-5: 61, 5e-5: 75})


def test_family_average_is_seed_by_seed_over_each_tasks_selected_lr(tmp_path):
    summary = _summary(
        _write(
            tmp_path / "e",
            eval_records("tweets", T1) + eval_records("boolq", T2) + eval_records("brown-pos", T2),
        )
    )
    rows = {r["name"]: r for r in selected_rows(summary, "family")}
    per_seed = [(75 + 88) / 2, (77 + 86) / 2, (73 + 87) / 2]  # tweets at 5e-5, boolq at 1e-5
    assert set(rows) == {"sc", "tc"} and rows["sc"]["mean"] == pytest.approx(np.mean(per_seed))
    assert (rows["sc"]["ci_low"], rows["sc"]["ci_high"]) == pytest.approx(_t_interval(per_seed))
    assert rows["tc"]["mean"] == pytest.approx(87)


def test_family_average_uses_only_seeds_every_task_has(tmp_path):
    two_seeds = {lr: pairs[:2] for lr, pairs in T2.items()}
    summary = _summary(_write(tmp_path / "e", eval_records("tweets", T1) + eval_records("boolq", two_seeds)))
    (row,) = selected_rows(summary, "family")
    assert row["n"] == 2 and row["mean"] == pytest.approx(np.mean([(75 + 88) / 2, (77 + 86) / 2]))


def test_outdated_task_definitions_are_ignored_and_several_models_need_a_source(tmp_path):
    stale = [
        {**r, "task_signature": "old", "val_score": 99.0, "test_score": 0.0}
        for r in eval_records("tweets", T2)
    ]
    other = eval_records("tweets", T2, model="fp-2", source="m2")
    path = _write(tmp_path / "e", eval_records("tweets", T1) + stale + other)
    with pytest.raises(UserError, match="holds 2 models"):
        _summary(path)
    (row,) = selected_rows(_summary(path, "m1"), "task")
    assert row["best_lr"] == 5e-5 and row["mean"] == pytest.approx(75)
    assert selected_rows(_summary(path, "fp-2"), "task")[0]["best_lr"] == 1e-5
    with pytest.raises(UserError, match="no model 'm3'"):
        _summary(path, "m3")


def test_missing_or_broken_results_are_one_line_errors(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        read_results(tmp_path / "nowhere")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "results.jsonl").write_text('{"task": "tweets"}\n')
    with pytest.raises(UserError, match="not a result record"):
        read_results(tmp_path / "b")


def test_curve_tables_and_figures_from_a_yaml_input(tmp_path):
    for name, shift in (("mlm-5k", 0), ("mlm-10k", 5), ("clm-5k", 3)):
        _write(
            tmp_path / name,
            eval_records("tweets", {lr: [(v + shift, t + shift) for v, t in p] for lr, p in T1.items()}),
        )
    (tmp_path / "curves.yaml").write_text(
        "sources:\n"
        "  - {results: mlm-5k, model: MLM-40, step: 5000, mask_ratio: 0.4}\n"
        "  - {results: mlm-10k, model: MLM-40, step: 10000}\n"
        "  - {results: clm-5k, model: CLM, step: 5000}\n"
    )
    spec = load_input(tmp_path / "curves.yaml")
    assert spec.sources[0] == CurveSource(results=Path("mlm-5k"), model="MLM-40", step=5000, mask_ratio=0.4)
    tables = curve_tables(spec, base=tmp_path, level="task")
    eff = {(r["model"], r["step"]): r["mean"] for r in tables["data_efficiency"]}
    assert eff == pytest.approx({("MLM-40", 5000): 75, ("MLM-40", 10000): 80, ("CLM", 5000): 78})
    assert [r["mask_ratio"] for r in tables["mask_ratio"]] == [0.4]
    assert {r["model"] for r in tables["lr_sensitivity"]} == {
        "MLM-40 @ step 5000 (mask 0.4)",
        "MLM-40 @ step 10000",
        "CLM @ step 5000",
    }
    for plot, name in (
        (plot_data_efficiency, "data_efficiency"),
        (plot_lr_sensitivity, "lr_sensitivity"),
        (plot_mask_ratio, "mask_ratio"),
    ):
        png = plot(tables[name], tmp_path / "fig" / name)
        assert png.stat().st_size > 5000 and png.read_bytes()[:4] == b"\x89PNG"
        with open(png.with_suffix(".csv")) as f:
            assert len(list(csv.DictReader(f))) == len(tables[name])
        assert json.loads(png.with_suffix(".json").read_text())[0]["model"] == tables[name][0]["model"]


def test_bad_curves_inputs_are_one_line_errors(tmp_path):
    (tmp_path / "bad.yaml").write_text("sources:\n  - {results: x, model: M, mask_ratio: 40}\n")
    with pytest.raises(UserError, match="must be a fraction"):
        load_input(tmp_path / "bad.yaml")
    (tmp_path / "typo.yaml").write_text("sources:\n  - {results: x, modle: M}\n")
    with pytest.raises(UserError, match="unknown field"):
        load_input(tmp_path / "typo.yaml")


def test_a_negative_step_or_one_point_given_twice_is_refused(tmp_path):
    """Both were drawn: a point at step -5, and two points at one step of a line (the same checkpoint's
    results given twice, or two folders placed at one step), with two LR lines of one label."""
    for sources, line in [
        ("{results: a, model: M, step: -5}", r"step -5 of 'M' must be a pretraining step >= 0$"),
        (
            "{results: a, model: M, step: 100}, {results: b, model: M, step: 100}",
            r"sources 1 and 2 are both M @ step 100, one point of the curves; give each point once",
        ),
        (
            "{results: a, model: M}, {results: b, model: N}, {results: a, model: M}",
            r"sources 1 and 3 are both M, one point",
        ),
    ]:
        (tmp_path / "c.yaml").write_text(f"sources: [{sources}]\n")
        with pytest.raises(UserError, match=rf"^{tmp_path / 'c.yaml'}: {line}"):
            load_input(tmp_path / "c.yaml")


def test_two_sources_of_one_model_at_one_x_of_a_curve_are_refused(tmp_path):
    """Their labels differ (other step or ratio), so they passed, and one line of one curve got two points
    at one x: two checkpoints of M with `mask_ratio: 0.4` on the mask-ratio curve (analysis.md's example
    did this), two ratios of M at one step on the data-efficiency curve."""
    a, b = "{results: a, model: M, ", "{results: b, model: M, "
    for sources, line in [
        (
            f"{a}step: 5000, mask_ratio: 0.4}}, {b}step: 10000, mask_ratio: 0.4}}",
            r"sources 1 and 2 are both 'M' at mask_ratio 0.4, two points at one x of its mask-ratio curve",
        ),
        (
            f"{a}step: 42000, mask_ratio: 0.2}}, {b}step: 42000, mask_ratio: 0.4}}",
            r"sources 1 and 2 are both 'M' at step 42000, two points at one x of its data-efficiency curve",
        ),
    ]:
        (tmp_path / "c.yaml").write_text(f"sources: [{sources}]\n")
        with pytest.raises(UserError, match=rf"^{tmp_path / 'c.yaml'}: {line}"):
            load_input(tmp_path / "c.yaml")
    (tmp_path / "c.yaml").write_text(f"sources: [{a}step: 5000}}, {b}step: 10000, mask_ratio: 0.4}}]\n")
    assert len(load_input(tmp_path / "c.yaml").sources) == 2  # one point on each curve: accepted


def test_runs_of_a_task_of_ones_own_are_drawn_when_the_curves_file_names_its_task_file(tmp_path, monkeypatch):
    # was: "unknown task 'mine'; valid: <the built-in tasks>", whatever the curves file said
    import datasets

    from encoderlab.eval import load_task_files
    from encoderlab.eval.tasks import TASKS

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    for split, numbers in (("train", range(30)), ("test", range(30, 40))):
        lines = [json.dumps({"text": f"the red code {i}", "label": "ab"[i % 2]}) for i in numbers]
        (tmp_path / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    spec = "name: mine\nfamily: sc\ndata: {train: train.jsonl, test: test.jsonl}\n"
    (tmp_path / "mine.yaml").write_text(spec)
    load_task_files([tmp_path / "mine.yaml"])  # as `encoderlab eval --task-file` did
    _write(tmp_path / "e", eval_records("mine", T1))
    del TASKS["mine"]  # `analyze curves` runs in a process of its own
    sources = "sources:\n  - {results: e, model: M, step: 5000}\n"
    (tmp_path / "bare.yaml").write_text(sources)
    with pytest.raises(
        UserError, match=r"e holds runs of task 'mine', which is not a built-in task; add the task file"
    ):
        curve_tables(load_input(tmp_path / "bare.yaml"), base=tmp_path, level="task")
    (tmp_path / "curves.yaml").write_text("task_files: [mine.yaml]\n" + sources)
    tables = curve_tables(load_input(tmp_path / "curves.yaml"), base=tmp_path, level="task")
    (row,) = tables["data_efficiency"]
    assert row["name"] == "mine" and row["best_lr"] == 5e-5 and row["mean"] == pytest.approx(75)


def test_a_source_whose_every_run_is_outdated_is_refused(tmp_path):
    # was: drawn as nothing, so a curves file of such sources wrote an empty --out and exited 0
    stale = [{**r, "task_signature": "old"} for r in eval_records("tweets", T1)]
    with pytest.raises(UserError, match=r"no run of m1 is of its task's current definition \(tweets changed"):
        _summary(_write(tmp_path / "e", stale))
