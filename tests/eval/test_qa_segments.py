"""Extractive QA hands a BERT-family model the segment ids its tokenizer gives a (question, context)
pair, as Hugging Face's `run_qa.py` does: the features keep the tokenizer's `token_type_ids` (1 on the
context), and the span and tagger heads pass them, padded, to a model with a segment table. A tokenizer
that gives none (Llama's, EuroBERT's) adds none, and a model without a table (encoderlab's `Encoder`)
is never handed them.

The BERT-style tokenizer is the eval fixture's (`[BOS] $A [EOS] $B:1 [EOS]:1`) with `token_type_ids`
among its outputs, as `BertTokenizerFast` has them; the fixture itself, like Llama's and EuroBERT's
tokenizers (transformers' `PreTrainedTokenizerFast` default), gives none. What the model saw is read
by a hook on BERT's token-type embedding.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from tests.eval.conftest import qa_examples
from tests.eval.qa_fixtures import qa_task, tiny_bert_adapter

from encoderlab.eval import qa
from encoderlab.eval.answer_tagger import AnswerTagger
from encoderlab.eval.families import ExtractiveQA
from encoderlab.eval.features import pad_batch
from encoderlab.eval.spec import QAOptions, TaskData
from encoderlab.model.hf_adapters import BertAdapter

MAX_LENGTH, STRIDE = 24, 8


def _seen_segments(model: BertAdapter) -> list[torch.Tensor]:
    seen: list[torch.Tensor] = []
    embedding = model.hf.bert.embeddings.token_type_embeddings
    embedding.register_forward_hook(lambda module, args, out: seen.append(args[0].clone()))
    return seen


def test_qa_features_carry_segment_1_on_the_context(bert_tokenizer):
    tokenizer = bert_tokenizer
    examples = qa_examples(20, 0)
    enc = tokenizer(examples[0]["question"], examples[0]["context"])
    assert "token_type_ids" in enc  # the fixture is a BERT-style tokenizer
    train = qa.train_features(tokenizer, examples, MAX_LENGTH, STRIDE, "qa")
    features = qa.eval_features(tokenizer, examples, MAX_LENGTH, STRIDE, "qa")
    assert len(train) == len(features) > len(examples)  # stride windows
    for labelled, feature in zip(train, features):
        segments = feature["segment_ids"]
        assert labelled["segment_ids"] == segments and len(segments) == len(feature["input_ids"])
        context = [p for p, o in enumerate(feature["offsets"]) if o is not None]
        assert context and all(segments[p] == 1 for p in context)
        assert segments[: context[0]] == [0] * context[0]  # [BOS], the question, its [EOS]


def test_a_tokenizer_without_token_types_adds_no_segment_ids(tokenizer):
    plain = tokenizer
    assert "token_type_ids" not in plain("what ?", "red")
    examples = qa_examples(8, 0)
    features = qa.train_features(plain, examples, MAX_LENGTH, STRIDE, "qa") + qa.eval_features(
        plain, examples, MAX_LENGTH, STRIDE, "qa"
    )
    assert features and not any("segment_ids" in f for f in features)


def test_the_span_head_passes_the_segment_ids_to_bert_in_training_and_prediction(bert_tokenizer):
    tokenizer = bert_tokenizer
    model = tiny_bert_adapter(len(tokenizer))
    seen = _seen_segments(model)
    task = qa_task(QAOptions(stride=STRIDE))
    examples = qa_examples(6, 0)
    train = qa.train_features(tokenizer, examples, MAX_LENGTH, STRIDE, "qa")
    module = ExtractiveQA.build(task, model)
    with torch.no_grad():
        ExtractiveQA.loss(module, train)
        assert torch.equal(seen[-1], pad_batch([f["segment_ids"] for f in train])[0])
        split = (examples, qa.eval_features(tokenizer, examples, MAX_LENGTH, STRIDE, "qa"))
        ExtractiveQA.predict(task.for_model(64), module, split)
    assert len(seen) == 2 and int(seen[-1].sum()) > 0


def test_the_tagger_head_passes_the_segment_ids_of_a_tokenizer_pair(bert_tokenizer):
    tokenizer = bert_tokenizer
    model = tiny_bert_adapter(len(tokenizer))
    seen = _seen_segments(model)
    task = dataclasses.replace(qa_task(QAOptions(head="tagger")), max_length=48, inputs="tokenizer")
    prepared = AnswerTagger.prepare(task, tokenizer, _data(qa_examples(6, 0)))
    module = AnswerTagger.build(task, model)
    with torch.no_grad():
        AnswerTagger.loss(module, prepared.train)
        assert torch.equal(seen[-1], pad_batch([f["segment_ids"] for f in prepared.train])[0])
        AnswerTagger.predict(task, module, prepared.val)
    assert len(seen) == 2 and int(seen[-1].sum()) > 0


@pytest.mark.parametrize("with_types", [True, False])
def test_segment_ids_reach_only_a_model_with_a_segment_table(tokenizer, bert_tokenizer, model, with_types):
    """The fixture's `Encoder` has none: the BERT-style tokenizer's ids are not handed to it (it would
    refuse them), and BERT given a tokenizer without token types sees segment 0 everywhere."""
    tok = bert_tokenizer if with_types else tokenizer
    train = qa.train_features(tok, qa_examples(6, 0), MAX_LENGTH, STRIDE, "qa")
    task = qa_task(QAOptions(stride=STRIDE))
    with torch.no_grad():
        assert torch.isfinite(ExtractiveQA.loss(ExtractiveQA.build(task, model), train))
        bert = tiny_bert_adapter(len(tokenizer))
        seen = _seen_segments(bert)
        ExtractiveQA.loss(ExtractiveQA.build(task, bert), train)
    assert int(seen[-1].sum()) > 0 if with_types else not seen[-1].any()


def _data(examples: list[dict]) -> TaskData:
    return TaskData(train=examples, val=examples, tests={})
