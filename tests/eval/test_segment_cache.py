"""Results cached before BERT-family QA was handed its pairs' segment ids are not taken for this run's.

Extractive QA encodes (question, context) as the tokenizer's pair; since segment ids reach a model with
a segment table (`test_qa_segments.py`), a BERT checkpoint's QA scores change, but a record in
results.jsonl is keyed by the model fingerprint and the task signature, neither of which changed. The
run now marks a pair task on a model that takes segment ids (`Task.resolve_segments`, through
`EvalModel.resolved`), so the old record is not found and the node runs again; every other task and
model keeps its signature, so nothing else reruns. The runs here are real: a tiny BERT fine-tuned for
two steps on the fixture's QA examples.
"""

from __future__ import annotations

import dataclasses

import pytest
from tests.eval.conftest import qa_examples
from tests.eval.qa_fixtures import qa_task, tiny_bert_adapter

from encoderlab.eval.pooling import ModelPooling
from encoderlab.eval.protocol import RESULTS, EvalModel, ResultsStore, adopt_record, eval_node, takes_segments
from encoderlab.eval.spec import QAOptions, SCOptions, TaskData
from encoderlab.eval.summary import task_records
from encoderlab.eval.tasks import TASKS

NAME, LR, SEED = "qa-segments", 1e-4, 0


@pytest.fixture
def registered(monkeypatch):
    data = TaskData(train=qa_examples(12, 0), val=qa_examples(6, 1), tests={"test": qa_examples(6, 2)})
    task = dataclasses.replace(qa_task(QAOptions(stride=8)), name=NAME, max_length=32, loader=lambda: data)
    task = dataclasses.replace(task, finetune=dataclasses.replace(task.finetune, max_steps=2))
    monkeypatch.setitem(TASKS, NAME, task)
    return task


def _bert_model(tokenizer, segments: bool) -> EvalModel:
    return EvalModel(
        tiny_bert_adapter(len(tokenizer)), tokenizer, "tiny-bert", "f" * 64, ModelPooling(), segments
    )


def test_only_pair_tasks_on_a_model_that_takes_segment_ids_are_marked(registered):
    qa = registered
    assert qa.resolve_segments(False) is qa and qa.resolve_segments(True).signature() != qa.signature()
    tagger = dataclasses.replace(qa, options=QAOptions(head="tagger"))
    assert tagger.resolve_segments(True).signature() != tagger.signature()  # the tokenizer's pair
    eos = dataclasses.replace(tagger, inputs="eos")  # one text built by the template: one segment
    sc = dataclasses.replace(qa, options=SCOptions(labels=("a", "b")), metric="accuracy")
    for task in (eos, sc):
        assert task.resolve_segments(True).signature() == task.signature()


def test_a_model_takes_segment_ids_with_a_table_and_a_tokenizer_giving_them(bert_tokenizer, tokenizer, model):
    assert takes_segments(tiny_bert_adapter(len(tokenizer)), bert_tokenizer)
    assert not takes_segments(tiny_bert_adapter(len(tokenizer)), tokenizer)  # no token_type_ids
    assert not takes_segments(model, bert_tokenizer)  # encoderlab's Encoder: no segment table


def test_a_record_from_before_segment_ids_is_run_again_and_read_no_more(registered, bert_tokenizer, tmp_path):
    em = _bert_model(bert_tokenizer, segments=True)
    task = registered
    first = eval_node(_bert_model(bert_tokenizer, segments=False), NAME, LR, SEED, out=tmp_path)
    assert first.task_signature == task.signature()  # what the old code wrote, with the same key
    again = eval_node(em, NAME, LR, SEED, out=tmp_path)
    assert again.task_signature == task.resolve_segments(True).signature() != first.task_signature
    records = list(ResultsStore(tmp_path / RESULTS).records.values())
    assert len(records) == 2
    # Read with the model (evaluate's summary) or without it (analyze curves): the new run only.
    for known in ({"pooling": ModelPooling(), "segments": True}, {}):
        assert task_records(records, em.fingerprint, NAME, [LR], [SEED], **known) == [again]
    # A node that takes the trainer's record (`trained_by`) takes the marked one.
    assert adopt_record(tmp_path, em.fingerprint, NAME, LR, SEED, tmp_path / "adopted") == again
    assert eval_node(em, NAME, LR, SEED, out=tmp_path) == again  # cached now
