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
    assert _peak(lambda: repr_sha256(pairs)) * 20 < text


def _one_shot_data_hash(data) -> str:
    """`splits.data_hash` as it was: each part one JSON text, its IR splits through `_hashed`."""
    import json

    from encoderlab.eval.tasks.splits import _hashed

    whole = hashlib.sha256()
    for part in (data.train, data.val, data.tests, data.labels):
        whole.update(json.dumps(part, sort_keys=True, default=_hashed).encode())
    return whole.hexdigest()[:16]


def _corpus_split(n: int, **kw) -> IRSplit:
    corpus = {
        f"d{(i * 7919) % n} ü": f"passage “{i}” " + "words " * 30 for i in range(n)
    }  # keys out of order
    queries = {f"q{i}": f"what {i}" for i in range(min(n, 300))}
    return IRSplit(queries, corpus, {q: {f"d{i} ü": 1, "x": 0} for i, q in enumerate(queries)}, **kw)


@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 1000])
def test_the_data_hash_of_ir_splits_is_the_one_shot_json_texts(n):
    from encoderlab.eval.spec import TaskData
    from encoderlab.eval.tasks.splits import data_hash

    split, beir = _corpus_split(n), _corpus_split(n, ignore_identical_ids=True)
    pairs = [{"query": "q", "document": "d", NEGATIVE: "n"}, {"query": "q2", "document": "d2"}]
    data = TaskData(pairs, split, {"test": beir, "ood": split, "nested": [[1, (2, 3)], {"k": [None, 1.5]}]})
    assert data_hash(data) == _one_shot_data_hash(data)
    data = TaskData([], [], {"test": [{"text": "a", "label": 1}] * n}, labels=("b", "a"))
    assert data_hash(data) == _one_shot_data_hash(data)


def test_the_data_hash_of_a_large_corpus_never_holds_its_json_text_whole():
    # was: an IR split (its corpus) was one JSON text, then its bytes, and `dataclasses.asdict` copied it
    # first: for 1M documents of 320 characters about 1 GiB at once, per split
    from encoderlab.eval.spec import TaskData
    from encoderlab.eval.tasks.splits import data_hash

    split = _corpus_split(20_000)
    text = sum(len(k) + len(v) for k, v in split.corpus.items())
    data = TaskData([], split, {"test": split})
    assert _peak(lambda: data_hash(data)) * 5 < text


def _peak(call) -> int:
    """Bytes the Python heap's peak rose by while `call()` ran (tracemalloc)."""
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    call()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak


def _mixed(n: int) -> list:
    """Scalars, short examples and long containers, in runs that cross `splits.RUN`'s batches."""
    out: list = []
    for i in range(n):
        out.append(
            [f"t{i}", i, i / 7, i % 2 == 0, None][i % 5]
            if i % 97 not in (0, 1)
            else {"query": f"q{i}", "doc": [1, (2, 3)]}
            if i % 97 == 0
            else list(range(70))  # past `_small`'s 64: written through `chunks`
        )
    return out


@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 600])
def test_batches_of_scalars_and_mixed_ones_give_the_one_shot_texts(n):
    """`_runs` takes `RUN` elements at a time, a batch of scalars alone as one run: the digests are the
    one-shot texts' whatever the mix (a long element first, last, at a batch's edge; dict values too)."""
    from encoderlab.eval.spec import TaskData
    from encoderlab.eval.tasks.splits import data_hash

    mixed = _mixed(n)
    as_dict = {f"k{i:04}": v for i, v in enumerate(mixed)}
    for obj in (mixed, as_dict, (mixed, as_dict), [list(range(70)), *mixed], [*mixed, list(range(70))]):
        assert repr_sha256(obj) == hashlib.sha256(repr(obj).encode()).hexdigest()
    data = TaskData(mixed, as_dict, {"test": mixed[::-1]})
    assert data_hash(data) == _one_shot_data_hash(data)


def test_a_corpus_of_texts_is_digested_without_a_python_check_per_document(monkeypatch):
    """A corpus's texts (1M documents for a BEIR task) were each checked by `_small`, a Python call per
    document (about a tenth of the time); a batch of scalars is now checked by one C-level pass over its
    types. The digest is unchanged (the one-shot text's)."""
    from encoderlab.eval.tasks import splits

    checked_values = []
    checked = splits._small
    monkeypatch.setattr(splits, "_small", lambda value: checked_values.append(value) or checked(value))
    split = _corpus_split(1000)
    assert repr_sha256(split) == hashlib.sha256(repr(split).encode()).hexdigest()
    assert checked_values  # the queries' judgements, dicts, are still checked one by one
    assert not set(split.corpus.values()) & {v for v in checked_values if type(v) is str}
