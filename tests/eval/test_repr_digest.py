"""The cache key of a task's prepared splits (`protocol._prepared_task`) hashes the repr of its examples
in pieces (`splits.repr_sha256`): the same digest as the one-shot text, so no cache key or shared-run check
moves, without holding that text and its bytes (for 300,000 training pairs, two more copies of their texts).
"""

from __future__ import annotations

import hashlib
import tracemalloc

import pytest

from encoderlab.eval.spec import NEGATIVE, IRSplit
from encoderlab.eval.tasks.splits import repr_sha256

PAIRS = [
    {"query": f"q {i} é", "document": f"d {i} 'x' \"y\"", "doc_id": f"d{i}", NEGATIVE: "n"} for i in range(5)
]
SPLIT = IRSplit({"q1": "what"}, {"d1": "that", "d2": "ü"}, {"q1": {"d1": 1}}, ignore_identical_ids=True)


@pytest.mark.parametrize(
    "obj",
    [
        PAIRS,
        [],
        (),
        ("one",),
        ("a" * 64, PAIRS, {"test": SPLIT, "ood": PAIRS[:2]}),
        ("a" * 64, SPLIT, {}),
        [(1,), (1, 2), [None, 1.5, True], {1: {"x": [2]}}],
        IRSplit({}, {}, {}),
    ],
)
def test_the_digest_is_the_one_shot_reprs(obj):
    assert repr_sha256(obj) == hashlib.sha256(repr(obj).encode()).hexdigest()


def test_the_repr_of_many_pairs_is_never_held_whole():
    pairs = [
        {"query": f"question {i}", "document": "passage words " * 20 + str(i), "doc_id": f"d{i}"}
        for i in range(20_000)
    ]
    text = len(repr(pairs))
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    repr_sha256(pairs)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    assert peak * 20 < text
