"""`evalcost.TASK_SIZES` agrees with the sizes the code itself defines: EncodEval's 95/5 split of a hub
train split (`paper.encodeval_splits`) and the pocket tasks' caps (`registry.POCKET_SIZES`)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "name", ["paper-sst2", "paper-mnli", "paper-qqp", "paper-squad", "paper-squad-v2", "paper-record"]
)
def test_an_encodeval_task_is_counted_as_the_loader_splits_it(name):
    """The counted train and validation are what `encodeval_splits` makes of the hub's train rows (it
    was round(0.95 n): SST-2's 67,349 rows counted 63,982 train, the split gives 63,981)."""
    from datasets import Dataset, DatasetDict

    from encoderlab.eval.tasks.hubsource import HubSource
    from encoderlab.eval.tasks.paper import encodeval_splits
    from encoderlab.study.evalcost import ENCODEVAL_HUB, TASK_SIZES

    hub_train, test, _ = ENCODEVAL_HUB[name]
    ds = DatasetDict(
        {
            "train": Dataset.from_dict({"i": list(range(hub_train))}),
            "validation": Dataset.from_dict({"i": list(range(test))}),
        }
    )
    train, val, tested = encodeval_splits(name, ds, "validation", HubSource("x/y"))
    size = TASK_SIZES[name]
    assert (size.train, size.val, size.test) == (len(train), len(val), len(tested))


def test_a_pocket_task_is_counted_at_its_caps_or_the_counts_below_them():
    """Every pocket split is its cap in `POCKET_SIZES` unless a count below it is recorded (a split
    without a cap must have one): lowering a cap below a recorded count, or adding a task, fails here."""
    from encoderlab.eval.tasks.pocket import SQUAD_SHIFTS
    from encoderlab.eval.tasks.registry import POCKET_SIZES
    from encoderlab.study.evalcost import POCKET_CORPUS, POCKET_MEASURED, TASK_SIZES

    assert set(POCKET_MEASURED) <= set(POCKET_SIZES) and set(POCKET_CORPUS) <= set(POCKET_SIZES)
    for name, caps in POCKET_SIZES.items():
        counted = POCKET_MEASURED.get(name, {})
        n = {}
        for split in ("train", "val", "test"):
            if caps[split] is None:
                assert split in counted, f"{name} {split}: no cap and no count"
            else:
                assert counted.get(split, 0) < caps[split], f"{name} {split}: a count at or over its cap"
            n[split] = counted.get(split, caps[split])
        docs = POCKET_CORPUS.get(name, (0, 0))
        shifts = len(SQUAD_SHIFTS) * caps.get("shift", 0)
        size = TASK_SIZES[name]
        assert (size.train, size.val, size.test) == (
            n["train"],
            n["val"] + docs[0],
            n["test"] + docs[1] + shifts,
        )
        assert size.tokens is None  # counted at its max length


def test_nq_is_halved_as_the_loader_halves_it():
    """paper-nq's validation and test queries are `nq_halves` of BeIR/nq's test queries."""
    from encoderlab.eval.tasks.paper import nq_halves
    from encoderlab.study.evalcost import NQ_JUDGED, NQ_TEST_QUERIES, TASK_SIZES

    val, test = nq_halves({f"q{i}" for i in range(NQ_TEST_QUERIES)})
    size = TASK_SIZES["paper-nq"]
    assert (size.val, size.test) == (len(val) + NQ_JUDGED, len(test) + NQ_JUDGED)
