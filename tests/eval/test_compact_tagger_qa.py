"""Prepared extractive-QA splits of the tagger head hold their features compactly and train to the same bits.

Before, `AnswerTagger.prepare` kept `answer_tagger.encode`'s features as they come: one dict of Python
lists per question (ids, 0/1 labels on every token, gold positions, and segment ids with a BERT-style
tokenizer), where the span head's, sc's, tc's and ir's were `tokenids` columns. Now they are too,
tokenised `tokenids.CHUNK` questions at a time. Every feature must read back as the dict the old code
held, and a tiny model fine-tuned on either layout must give the same losses, scores and predictions,
exactly: with `inputs: eos` and `inputs: tokenizer`, with and without segment ids. The chunk size is set
small so the compact side tokenises in several chunks, a last one short.
"""

from __future__ import annotations

import dataclasses

import pytest
from tests.eval.conftest import held_bytes, qa_examples
from tests.eval.qa_fixtures import assert_fine_tunes_alike, qa_task

from encoderlab.errors import UserError
from encoderlab.eval import answer_tagger, tokenids
from encoderlab.eval.batching import Prepared
from encoderlab.eval.finetune import prepare
from encoderlab.eval.spec import FinetuneConfig, QAOptions, Task, TaskData

CFG = FinetuneConfig(batch_size=8, micro_batch_size=4, max_steps=10, warmup_ratio=0.1)


def _task(inputs: str, max_length: int = 32) -> Task:
    task = qa_task(QAOptions(head="tagger", question_template="Question: {question}\nContext: "))
    return dataclasses.replace(task, max_length=max_length, finetune=CFG, inputs=inputs, metric="position_f1")


def _data() -> TaskData:
    return TaskData(
        train=qa_examples(30, 0, 0.2), val=qa_examples(9, 1, 0.2), tests={"test": qa_examples(15, 2, 0.2)}
    )


def _old(task: Task, tokenizer, data: TaskData) -> Prepared:
    """The prepared splits as the code before this change built them: each split's lists, one call."""

    def enc(split):
        return answer_tagger.encode(task, tokenizer, split)

    return Prepared(enc(data.train), enc(data.val), {k: enc(v) for k, v in data.tests.items()})


def _rows(features) -> list[dict]:
    return [features[i] for i in range(len(features))]


@pytest.mark.parametrize(("inputs", "typed"), [("eos", False), ("tokenizer", False), ("tokenizer", True)])
def test_tagger_fine_tuning_on_compact_splits_is_bit_identical(
    model, tokenizer, bert_tokenizer, monkeypatch, inputs, typed
):
    task, data = _task(inputs), _data()
    tok = bert_tokenizer if typed else tokenizer
    old = _old(task, tok, data)
    monkeypatch.setattr(tokenids, "CHUNK", 7)
    new = prepare(task, tok, data)
    for split in (new.train, new.val, new.tests["test"]):
        assert isinstance(split, tokenids.CompactFeatures)
    assert _rows(new.train) == old.train
    assert _rows(new.val) == old.val and _rows(new.tests["test"]) == old.tests["test"]
    assert ("segment_ids" in new.train[0]) is typed
    assert any(f["gold"] for f in old.train) and any(not f["gold"] for f in old.train)
    assert_fine_tunes_alike(task, model, tok, old, new, typed)


def test_a_compact_tagger_split_refuses_as_the_lists_did_naming_the_longest_question(tokenizer, monkeypatch):
    """The room is checked once on the whole split: a long question in a later chunk is refused with
    the figure the one-call code gave, before any chunk is tokenised."""
    monkeypatch.setattr(tokenids, "CHUNK", 4)
    task = _task("tokenizer", max_length=24)
    examples = qa_examples(9, 0)
    examples[7] = {**examples[7], "question": " ".join(["what"] * 30) + " ?"}
    examples[2] = {**examples[2], "question": " ".join(["what"] * 25) + " ?"}  # a shorter long one first
    with pytest.raises(UserError) as old:
        answer_tagger.encode(task, tokenizer, examples)
    with pytest.raises(UserError) as new:
        answer_tagger.compact_encode(task, tokenizer, examples)
    assert str(new.value) == str(old.value)


def test_prepared_tagger_splits_hold_a_fraction_of_the_lists_memory(tokenizer):
    """The compact features of a few hundred questions hold less than half the memory of the old lists
    (their ids are all under 256, ints Python caches: a real vocabulary costs the lists more; CHANGELOG
    gives the figure for 20,000 SQuAD-like questions)."""
    task = _task("eos", max_length=64)
    data = TaskData(train=qa_examples(400, 3), val=qa_examples(400, 4), tests={})
    prepare(task, tokenizer, data)  # the tokenizer's and modules' first-call allocations, in neither figure
    compact = held_bytes(lambda: (lambda p: (p.train, p.val))(prepare(task, tokenizer, data)))
    lists = held_bytes(lambda: (lambda p: (p.train, p.val))(_old(task, tokenizer, data)))
    assert compact * 2 < lists, (compact, lists)
