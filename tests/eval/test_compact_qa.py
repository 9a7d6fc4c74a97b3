"""Prepared extractive-QA splits (span head) hold their features compactly and train to the same bits.

Before, `ExtractiveQA.prepare` kept `qa.train_features` and `qa.eval_features` as they come: one dict of
Python lists per window (ids, segment ids, and for evaluation the context offsets as tuples or None).
Now the ids are `tokenids.TokenIds`, the offsets `tokenids.Spans`, tokenised `tokenids.CHUNK` questions
at a time. Every window must read back as the dict the old code held, and a tiny model fine-tuned on
either layout must give the same losses, scores and predictions, exactly: with and without segment ids
(a BERT-style tokenizer's), SQuAD v1 and v2 (unanswerable questions). The chunk size is set small so
the compact side tokenises in several chunks, a last one short, and a question's windows straddle none.
"""

from __future__ import annotations

import dataclasses

import pytest
from tests.eval.conftest import held_bytes, qa_examples
from tests.eval.qa_fixtures import assert_fine_tunes_alike, qa_task

from encoderlab.errors import UserError
from encoderlab.eval import qa, tokenids
from encoderlab.eval.batching import Prepared
from encoderlab.eval.finetune import prepare
from encoderlab.eval.spec import FinetuneConfig, QAOptions, Task, TaskData

CFG = FinetuneConfig(batch_size=8, micro_batch_size=4, max_steps=10, warmup_ratio=0.1)
MAX_LENGTH, STRIDE = 24, 8


def _task(v2: bool) -> Task:
    task = qa_task(QAOptions(stride=STRIDE, v2=v2))
    return dataclasses.replace(task, max_length=MAX_LENGTH, finetune=CFG)


def _data(unanswerable: float) -> TaskData:
    return TaskData(
        train=qa_examples(30, 0, unanswerable),
        val=qa_examples(9, 1, unanswerable),
        tests={"test": qa_examples(15, 2, unanswerable)},
    )


def _old(task: Task, tokenizer, data: TaskData) -> Prepared:
    """The prepared splits as the code before this change built them: each split's lists, one call."""
    args = (task.max_length, task.options.stride, task.name)

    def enc(split):
        return split, qa.eval_features(tokenizer, split, *args)

    train = qa.train_features(tokenizer, data.train, *args)
    return Prepared(train, enc(data.val), {k: enc(v) for k, v in data.tests.items()})


def _rows(features) -> list[dict]:
    return [features[i] for i in range(len(features))]


@pytest.mark.parametrize("typed", [False, True])
@pytest.mark.parametrize("v2", [False, True])
def test_qa_fine_tuning_on_compact_splits_is_bit_identical(
    model, tokenizer, bert_tokenizer, monkeypatch, typed, v2
):
    task, data = _task(v2), _data(0.3 if v2 else 0.0)
    tok = bert_tokenizer if typed else tokenizer
    old = _old(task, tok, data)
    monkeypatch.setattr(tokenids, "CHUNK", 7)
    new = prepare(task, tok, data)
    assert isinstance(new.train, tokenids.CompactFeatures)
    assert isinstance(new.val[1], tokenids.CompactFeatures)
    assert len(new.train) > len(data.train)  # stride windows, some questions split in several
    assert _rows(new.train) == old.train
    assert _rows(new.val[1]) == old.val[1] and _rows(new.tests["test"][1]) == old.tests["test"][1]
    assert ("segment_ids" in new.train[0]) is typed
    assert any(o is None for o in new.val[1][0]["offsets"])  # the question's, read back as None
    assert_fine_tunes_alike(task, model, tok, old, new, typed)


def test_a_compact_split_refuses_as_the_lists_did_naming_the_longest_question(tokenizer, monkeypatch):
    """The room is checked once on the whole split: a long question in a later chunk is refused with
    the figure the one-call code gave, before any chunk is tokenised."""
    monkeypatch.setattr(tokenids, "CHUNK", 4)
    examples = qa_examples(9, 0)
    examples[7] = {**examples[7], "question": " ".join(["what"] * 30) + " ?"}
    args = (tokenizer, examples, MAX_LENGTH, STRIDE, "qa")
    with pytest.raises(UserError) as old:
        qa.train_features(*args)
    for build in (qa.compact_train_features, qa.compact_eval_features):
        with pytest.raises(UserError) as new:
            build(*args)
        assert str(new.value) == str(old.value)


def test_spans_read_back_the_offsets_stored():
    spans = [[None, (0, 3), (4, 4), None], [], [(2**31 - 2, 2**31 - 1)]]
    stored = tokenids.Spans(tokenids.TokenIds.of([[tokenids.Spans.flat(s) for s in spans]], signed=True))
    assert len(stored) == 3 and _rows(stored) == spans and stored[1:] == spans[1:]
    assert all(type(x) is int for x in stored[0][1])


def test_prepared_qa_splits_hold_a_fraction_of_the_lists_memory(tokenizer):
    """The compact training and evaluation windows of a few hundred questions hold less than half the
    memory of the old lists (their ids are all under 256, ints Python caches: a real vocabulary's cost
    the lists more; CHANGELOG gives the figure for 20,000 SQuAD-like questions)."""
    task, data = _task(False), _data(0.0)
    data = dataclasses.replace(data, train=qa_examples(400, 3), val=qa_examples(400, 4))
    prepare(task, tokenizer, data)  # the tokenizer's and modules' first-call allocations, in neither figure
    compact = held_bytes(lambda: (lambda p: (p.train, p.val))(prepare(task, tokenizer, data)))
    lists = held_bytes(lambda: (lambda p: (p.train, p.val))(_old(task, tokenizer, data)))
    assert compact * 2 < lists, (compact, lists)
