"""The LR a task's summary reports is chosen on validation over the same seeds at every LR
(`summary.select_lr`), also when the grid is partial (read while it runs, or after a failed run)."""

from __future__ import annotations

from dataclasses import replace

from encoderlab.eval.summary import EvalRecord, select_lr


def _rows(grid: dict[float, dict[int, float]]) -> list[EvalRecord]:
    return [
        EvalRecord(
            model="m", task="t", family="sc", task_signature="x", metric="accuracy", lr=lr, seed=s,
            val={"accuracy": val}, test={"test": {"accuracy": val}}, val_score=val, test_score=val,
        )
        for lr, seeds in grid.items()
        for s, val in seeds.items()
    ]  # fmt: skip


def test_a_partial_grid_compares_lrs_on_the_seeds_they_share():
    # 1e-4 scores 60 on seed 0 but its seed 2 drags its own mean to 50; 2e-4 has run seed 0 only (55).
    # Compared on seed 0, the one both have, 1e-4 is better; their own means would pick 2e-4.
    summary = select_lr(_rows({1e-4: {0: 60.0, 1: 60.0, 2: 30.0}, 2e-4: {0: 55.0}}))
    assert summary.best_lr == 1e-4
    assert summary.val.n == 3 and summary.val.mean == 50.0  # the chosen LR is reported over all its seeds


def test_a_full_grid_is_chosen_on_each_lrs_own_mean():
    summary = select_lr(_rows({1e-4: {0: 60.0, 1: 40.0}, 2e-4: {0: 52.0, 1: 52.0}}))
    assert summary.best_lr == 2e-4


def test_lrs_with_no_seed_in_common_fall_back_to_their_own_means():
    summary = select_lr(_rows({1e-4: {0: 60.0}, 2e-4: {1: 70.0}}))
    assert summary.best_lr == 2e-4


def test_degenerate_seeds_that_predicted_different_classes_are_each_named():
    """Before, "2 of 2 seeds; predicts class 'pos' for all 100 examples" where seed 1 predicted 'neg'
    everywhere: the first run's reason read as every run's."""
    rows = [
        replace(r, degenerate={"test": f"predicts class '{c}' for all 100 examples"})
        for r, c in zip(_rows({1e-4: {0: 52.0, 1: 48.0}}), ("pos", "neg"))
    ]
    flag = select_lr(rows).degenerate
    assert (flag.runs, flag.of) == (2, 2)
    assert flag.why == (
        "seed 0: predicts class 'pos' for all 100 examples; seed 1: predicts class 'neg' for all 100 examples"
    )
    same = [replace(r, degenerate={"test": "predicts class 'pos' for all 100 examples"}) for r in rows]
    assert select_lr(same).degenerate.why == "predicts class 'pos' for all 100 examples"
