"""Deterministic splits, the registry and code-retrieval extraction (paper tasks: test_paper_tasks.py)."""

from __future__ import annotations

from encoderlab.eval.suites import SUITES
from encoderlab.eval.tasks import TASKS, docstring_functions, split_groups, subsample


def test_splits_keep_groups_together_and_are_stable():
    items = [{"id": i, "group": i // 5} for i in range(500)]
    train, val, test = split_groups(items, lambda r: r["group"], "salt", (0.6, 0.1, 0.3))
    assert len(train) + len(val) + len(test) == 500
    groups = [{r["group"] for r in part} for part in (train, val, test)]
    assert not (groups[0] & groups[1] or groups[0] & groups[2] or groups[1] & groups[2])
    # adding items never moves existing ones
    again = split_groups(items + [{"id": 999, "group": 999}], lambda r: r["group"], "salt", (0.6, 0.1, 0.3))
    assert [r for r in again[0] if r["id"] != 999] == train
    assert subsample(list(range(100)), 10) == subsample(list(range(100)), 10) and subsample([1, 2], 5) == [
        1,
        2,
    ]


def test_every_suite_task_is_registered_with_a_metric():
    for suite, names in SUITES.items():
        for name in names:
            assert TASKS[name].metric and TASKS[name].family in ("sc", "tc", "qa", "ir"), (suite, name)
    assert len(SUITES["paper"]) == 12


SOURCE = '''
def add(a, b):
    """Add two numbers and return the sum.

    More details here.
    """
    return a + b


class K:
    def method(self):
        """Too short"""
        return 1

    def undocumented(self):
        return 2
'''


def test_docstring_functions_remove_the_docstring_from_the_document():
    [rec] = docstring_functions(SOURCE, "mod.py")
    assert rec["query"] == "Add two numbers and return the sum."
    assert rec["doc"] == "def add(a, b):\n    return a + b" and rec["did"] == "mod.py:add:2"


def test_a_task_named_twice_is_refused():
    """`eval --tasks boolq boolq` dropped the repeat without a word; `analyze probe` refuses one."""
    import pytest

    from encoderlab.errors import UserError
    from encoderlab.eval.suites import suite_tasks

    with pytest.raises(UserError, match=r"^task boolq given twice; give each once$"):
        suite_tasks("pocket", ["boolq", "tweets", "boolq"])
    assert suite_tasks("pocket", ["boolq", "tweets"]) == ["boolq", "tweets"]
