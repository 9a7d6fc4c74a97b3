"""A results.jsonl whose score is NaN (or infinite) is refused when read, naming the file, line and fix.

Metrics never give a non-finite score, so such a line was edited or damaged. Read, it made the paired
tests depend on the order of the seeds: [1, nan, 1] against a baseline gave p = 0.25 and a NaN mean,
[nan, 1, 1] a NaN p that Holm's correction refused with a traceback.
"""

from __future__ import annotations

import json

import pytest

from encoderlab.errors import UserError
from encoderlab.eval.protocol import ResultsStore


def _record(seed: int, score: float, split_score: float | None = None) -> dict:
    test = {"test": {"accuracy": score if split_score is None else split_score}}
    return {
        "model": "m", "task": "t", "family": "sc", "task_signature": "s", "metric": "accuracy", "lr": 1e-4,
        "seed": seed, "val": {"accuracy": 50.0}, "test": test, "val_score": 50.0, "test_score": score,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("scores", "line", "said"),
    [
        ([1.0, float("nan"), 1.0], 2, "test_score is nan"),
        (
            [float("nan"), 1.0, 1.0],
            1,
            "test_score is nan",
        ),  # the same file in another order: the same refusal
        ([1.0, 1.0, float("inf")], 3, "test_score is inf"),
    ],
)
def test_a_non_finite_score_is_refused_naming_the_file_line_and_fix(tmp_path, scores, line, said):
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(_record(seed, s)) + "\n" for seed, s in enumerate(scores)) + '{"torn')
    _refused_both_ways(
        path, f"{path} line {line} holds a score that is not a number ({said}), which evaluation never writes"
    )


def test_a_non_finite_score_of_a_test_split_is_refused_too(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(_record(0, 50.0, split_score=float("nan"))) + "\n")
    with pytest.raises(
        UserError, match=r"line 1 holds a score that is not a number \(test\.test\.accuracy is nan\)"
    ):
        ResultsStore(path)


def test_finite_scores_and_a_diverged_runs_nan_loss_are_read(tmp_path):
    path = tmp_path / "results.jsonl"
    rec = _record(0, 50.0) | {"final_loss": float("nan")}  # a diverged fine-tuning run's loss: not a score
    path.write_text(json.dumps(rec) + "\n")
    assert len(ResultsStore(path).records) == 1


@pytest.mark.parametrize(
    ("split", "said"),
    [
        ({"accuracy": None}, "test.ood.accuracy is null"),  # a NaN as the strict JSON writer writes it
        ({}, "test.ood.accuracy is missing"),
    ],
)
def test_a_split_score_that_is_null_or_missing_is_refused_too(tmp_path, split, said):
    """Read, the summary's interval over the seeds of split `ood` was a TypeError (null) or KeyError
    (missing) traceback."""
    path = tmp_path / "results.jsonl"
    records = [_record(0, 50.0), _record(1, 51.0)]
    records[0]["test"]["ood"] = {"accuracy": 40.0}
    records[1]["test"]["ood"] = split
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(UserError) as err:
        ResultsStore(path)
    assert str(err.value).startswith(f"{path} line 2 holds a score that is not a number ({said}), ")


def test_a_test_split_dropped_from_one_seeds_line_is_refused_naming_the_line_and_split(tmp_path):
    """Read, the summary's interval over the seeds of split `ood` was a KeyError traceback in `select_lr`
    (a hand edit that dropped the split from one seed's line, which the other seeds have)."""
    path = tmp_path / "results.jsonl"
    records = [_record(seed, 50.0 + seed) for seed in range(3)]
    for r in records:
        r["test"]["ood"] = {"accuracy": 40.0}
    del records[1]["test"]["ood"]
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"torn')
    _refused_both_ways(
        path,
        f"{path} line 2 has no test split ood, which the other runs of task t have and evaluation always writes",
    )


def _refused_both_ways(path, problem: str) -> None:
    """`ResultsStore` refuses `path` with `problem` and the fix, by eval's cache (repair) and by `analyze
    curves` reading an input alike, before the torn last line is cut."""
    before = path.read_bytes()
    for repair in (True, False):
        with pytest.raises(UserError) as err:
            ResultsStore(path, repair=repair)
        fix = "restore that line from a copy, or delete it (`encoderlab eval` then runs it again)"
        assert str(err.value) == f"{problem}; {fix}"
    assert path.read_bytes() == before
