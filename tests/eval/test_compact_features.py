"""Prepared sc, ir and tc splits hold their ids compactly (`eval/tokenids.py`) and train to the same bits.

Before, a prepared split was a list of dicts of Python lists of ints, about 40 bytes per token (300,000
synthetic msmarco-like pairs: see docs/benchmarks.md, `scripts/ir_prepare_memory.py`). The fine-tuning
results must not move: a tiny model fine-tuned on the compact splits and on the splits as the old code
built them (each split's texts tokenised in one call, each example a dict of lists) gives the same loss
at every step, the same scores and the same predictions, exactly. The chunk size is set small so the
compact side tokenises in several chunks, a last one short.
"""

from __future__ import annotations

import random

import pytest
from tests.eval.conftest import TOPICS, filler, held_bytes, ir_pairs, sc_examples, tc_examples

from encoderlab.eval import tokenids
from encoderlab.eval.batching import Prepared
from encoderlab.eval.families import input_text, text_ids
from encoderlab.eval.features import encode_words
from encoderlab.eval.finetune import prepare, run_one
from encoderlab.eval.heads import input_key
from encoderlab.eval.spec import (
    NEGATIVE,
    FinetuneConfig,
    IROptions,
    IRSplit,
    SCOptions,
    Task,
    TaskData,
    TCOptions,
)

CFG = FinetuneConfig(batch_size=8, micro_batch_size=4, max_steps=12, warmup_ratio=0.1)


def _task(**kw) -> Task:
    return Task(**{"description": "fixture", "loader": lambda: None, "finetune": CFG, "max_length": 12, **kw})


def _ir_data(n: int, negatives: bool) -> TaskData:
    rng = random.Random(5)
    split = IRSplit(
        queries={f"q-{t}": f"about {t}" for t in TOPICS},
        corpus={f"doc-{t}": " ".join(filler(rng, 4) + [t] + filler(rng, 9)) for t in TOPICS},
        qrels={f"q-{t}": {f"doc-{t}": 1} for t in TOPICS},
    )
    train = ir_pairs(n, 0)
    train[3] = {**train[3], "document": train[1]["document"]}  # a copy of a positive, masked by its key
    if negatives:
        train = [{**p, NEGATIVE: train[(i + 7) % n]["document"]} for i, p in enumerate(train)]
    return TaskData(train=train, val=split, tests={"test": split})


def _old_ir(task: Task, tokenizer, data: TaskData) -> Prepared:
    """The prepared splits as the code before `tokenids` built them."""
    opts = task.options

    def texts(prefix, items):
        return text_ids(task, tokenizer, [prefix + t for t in items])

    def enc(split: IRSplit) -> dict:
        return {
            "qids": list(split.queries),
            "dids": list(split.corpus),
            "queries": texts(opts.query_prefix, split.queries.values()),
            "docs": texts(opts.document_prefix, split.corpus.values()),
            "qrels": split.qrels,
            "ignore_identical_ids": split.ignore_identical_ids,
        }

    q = texts(opts.query_prefix, [p["query"] for p in data.train])
    d = texts(opts.document_prefix, [p["document"] for p in data.train])
    train = [
        {"query": a, "doc": b, "doc_id": p["doc_id"], "doc_key": input_key(b)}
        for a, b, p in zip(q, d, data.train)
    ]
    if NEGATIVE in data.train[0]:
        n = texts(opts.document_prefix, [p[NEGATIVE] for p in data.train])
        for f, neg in zip(train, n):
            f.update({NEGATIVE: neg, "negative_key": input_key(neg)})
    return Prepared(train, enc(data.val), {k: enc(v) for k, v in data.tests.items()})


def _old_sc(task: Task, tokenizer, data: TaskData) -> Prepared:
    def enc(split):
        ids = text_ids(task, tokenizer, [input_text(task, e) for e in split])
        return [{"input_ids": i, "label": e["label"]} for i, e in zip(ids, split)]

    return Prepared(enc(data.train), enc(data.val), {k: enc(v) for k, v in data.tests.items()})


def _old_tc(task: Task, tokenizer, data: TaskData) -> Prepared:
    """The prepared tc splits as the code before they were compact built them: dicts of lists."""

    def enc(split):
        feats = encode_words(
            tokenizer, [e["tokens"] for e in split], [e["tags"] for e in split], task.max_length
        )
        return [{**f, "gold": e["tags"]} for f, e in zip(feats, split)]

    return Prepared(enc(data.train), enc(data.val), {k: enc(v) for k, v in data.tests.items()})


def _same_run(task, model, tokenizer, data, old: Prepared, monkeypatch) -> None:
    monkeypatch.setattr(tokenids, "CHUNK", 7)
    new = prepare(task, tokenizer, data)
    assert isinstance(new.train, tokenids.CompactFeatures)
    assert [new.train[i] for i in range(len(new.train))] == old.train
    runs = [run_one(task, model, tokenizer, p, lr=2e-3, seed=3) for p in (old, new)]
    assert runs[0]["final_loss"] > 0
    assert runs[1] == runs[0]  # every loss-derived figure, score and prediction, bit for bit


@pytest.mark.parametrize("negatives", [False, True])
def test_ir_fine_tuning_on_compact_splits_is_bit_identical(model, tokenizer, monkeypatch, negatives):
    task = _task(name="ir", options=IROptions(), metric="ndcg@10")
    data = _ir_data(40, negatives)
    _same_run(task, model, tokenizer, data, _old_ir(task, tokenizer, data), monkeypatch)


def test_sc_fine_tuning_on_compact_splits_is_bit_identical(model, tokenizer, monkeypatch):
    task = _task(name="sc", options=SCOptions(labels=("neg", "pos")), metric="accuracy")
    data = TaskData(train=sc_examples(40, 0), val=sc_examples(9, 1), tests={"test": sc_examples(15, 2)})
    _same_run(task, model, tokenizer, data, _old_sc(task, tokenizer, data), monkeypatch)


def test_tc_fine_tuning_on_compact_splits_is_bit_identical(model, tokenizer, monkeypatch):
    labels = ("O", "B-PER", "B-LOC", "I-LOC")  # conftest's tc_examples
    task = _task(name="tc", options=TCOptions(labels=labels), metric="accuracy", max_length=16)
    data = TaskData(train=tc_examples(40, 0), val=tc_examples(9, 1), tests={"test": tc_examples(15, 2)})
    _same_run(task, model, tokenizer, data, _old_tc(task, tokenizer, data), monkeypatch)


def test_token_ids_read_back_as_the_lists_stored():
    lists = [[5, 6, 7], [], [2**31 - 1], [0, 1]]
    ids = tokenids.TokenIds.of([lists[:3], lists[3:]])
    assert len(ids) == 4 and [ids[i] for i in range(4)] == lists and ids[-1] == [0, 1]
    assert all(type(t) is int for t in ids[0]) and ids[1:3] == lists[1:3]
    with pytest.raises(IndexError):
        ids[4]
    assert len(tokenids.TokenIds.of([])) == 0


def test_prepared_ir_training_pairs_hold_a_fraction_of_the_lists_memory(tokenizer):
    """The figure that motivated the change, on a few hundred pairs: the compact training split holds
    less than half the memory of the lists of the same ids. Here every id is under 256, an int Python
    caches, so a list holds 8 bytes per token, not the 36 of a real vocabulary's ids; at msmarco's scale
    the compact split holds about a tenth (docs/benchmarks.md)."""
    task = _task(name="ir", options=IROptions(), metric="ndcg@10", max_length=64)
    data = _ir_data(600, negatives=False)
    prepare(task, tokenizer, data)  # the tokenizer's and modules' first-call allocations, in neither figure
    compact = held_bytes(lambda: prepare(task, tokenizer, data).train)
    lists = held_bytes(lambda: _old_ir(task, tokenizer, data).train)
    assert compact * 2 < lists, (compact, lists)
