"""The QA-segment tests' task and model (test_qa_segments.py, test_segment_cache.py): a QA task of given
options and the model tests' tiny BERT, whose two token-type rows make segment ids matter. Apart from
fixtures.py, which many tests import, so that they do not load transformers' BERT."""

from __future__ import annotations

import torch
from tests.model.model_fixtures import bert_config

from encoderlab.eval.spec import QAOptions, Task
from encoderlab.model.hf_adapters import BertAdapter


def qa_task(options: QAOptions) -> Task:
    """An extractive QA task of `options` (no loader: the tests hand it its data)."""
    return Task(name="qa", description="fixture", loader=lambda: None, options=options, metric="f1")


def tiny_bert_adapter(vocab_size: int) -> BertAdapter:
    """The model tests' tiny BERT (two token-type rows) over the fixture tokenizer's vocabulary."""
    from transformers import BertForMaskedLM

    config = bert_config(vocab_size=vocab_size)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return BertAdapter(BertForMaskedLM(config).eval())


def assert_fine_tunes_alike(task: Task, model, tok, old, new, typed: bool) -> None:
    """Fine-tuning on the old (lists) and new (compact) prepared splits gives every loss-derived figure, score
    and prediction bit for bit; `typed`: on the tiny BERT with segment ids instead of `model`."""
    from encoderlab.eval.finetune import run_one

    net = tiny_bert_adapter(len(tok)) if typed else model
    runs = [run_one(task, net, tok, p, lr=2e-3, seed=3) for p in (old, new)]
    assert runs[0]["final_loss"] > 0
    assert runs[1] == runs[0]
