"""A model's fingerprint is the same on every load (issue 20, item 7).

The `minilm` asset is a BERT saved without its MLM head; the head is built at load. Before the fix
it was initialised from the global RNG, so every load had another fingerprint and an interrupted
evaluation grid retrained everything. The asset may be absent in CI, so these tests build the same
layout: a tiny BERT saved by transformers as `BertModel` (no head), with a tokenizer.
"""

from __future__ import annotations

import json

import pytest
import torch
from tests.eval.conftest import make_tokenizer, vocabulary_texts
from tests.reliability.reliability_fixtures import quick_boolq, write_boolq

from encoderlab.eval import protocol
from encoderlab.eval.protocol import evaluate, fingerprint
from encoderlab.model.hub import load_pretrained


@pytest.fixture(scope="module")
def headless_bert(tmp_path_factory):
    from transformers import BertConfig, BertModel

    folder = tmp_path_factory.mktemp("headless") / "bert"
    tok = make_tokenizer(vocabulary_texts())
    config = BertConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder)  # a base model: no cls.* weights on disk
    tok.save_pretrained(folder)
    return folder


def test_two_loads_of_a_headless_checkpoint_have_one_fingerprint(headless_bert):
    first = load_pretrained(headless_bert)
    torch.rand(100)  # the global RNG moves on between loads, as in any real process
    second = load_pretrained(headless_bert)
    assert any("MLM head freshly initialised" in n for n in first.notes)
    assert fingerprint(first.model, first.tokenizer) == fingerprint(second.model, second.tokenizer)
    head_a, head_b = first.model.hf.cls.state_dict(), second.model.hf.cls.state_dict()
    assert all(torch.equal(head_a[k], head_b[k]) for k in head_a)
    # The head is initialised, not zeroed: transformers' own init ran, under a seed of our choosing.
    assert head_a["predictions.transform.dense.weight"].std() > 0


def test_a_checkpoint_without_its_untied_decoder_has_one_fingerprint(tmp_path):
    """An untied BERT saved without `cls.predictions.decoder.weight` (the rest of its head stored) is
    no base model, so the decoder transformers drew was unseeded, and unnoted: the class's tied-keys
    table names that decoder even when the config unties it."""
    from safetensors.torch import load_file, save_file
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(
        vocab_size=64,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        tie_word_embeddings=False,
    )
    BertForMaskedLM(config).save_pretrained(tmp_path)
    weights = load_file(tmp_path / "model.safetensors")
    del weights["cls.predictions.decoder.weight"]
    save_file(weights, tmp_path / "model.safetensors", metadata={"format": "pt"})
    first = load_pretrained(tmp_path)
    torch.rand(100)
    second = load_pretrained(tmp_path)
    assert any("cls.predictions.decoder.weight" in n for n in first.notes)
    decoder_a, decoder_b = (p.model.hf.cls.predictions.decoder.weight for p in (first, second))
    assert torch.equal(decoder_a, decoder_b) and decoder_a.std() > 0


def test_loading_leaves_the_global_rng_alone(headless_bert):
    torch.manual_seed(123)
    expected = torch.rand(4)
    torch.manual_seed(123)
    load_pretrained(headless_bert)
    assert torch.equal(torch.rand(4), expected)


def test_an_interrupted_grid_over_a_headless_checkpoint_resumes(headless_bert, tmp_path, monkeypatch):
    """Node 2 of 2 is interrupted; the rerun, with a fresh load, trains that node only."""
    write_boolq(tmp_path / "home")
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    quick_boolq()  # 12 fine-tuning steps per node (restored below)
    trained = []
    real = protocol.run_one

    def interrupt_second(task, model, *args):
        trained.append(args[2:4])  # (lr, seed)
        if len(trained) == 2:
            raise KeyboardInterrupt
        return real(task, model, *args)

    monkeypatch.setattr(protocol, "run_one", interrupt_second)
    grid = dict(suite=None, tasks=["boolq"], lrs=[1e-4], seeds=[0, 1], out=tmp_path / "eval", device="cpu")
    with pytest.raises(KeyboardInterrupt):
        evaluate(str(headless_bert), progress=False, **grid)
    torch.rand(100)
    trained.clear()
    monkeypatch.setattr(
        protocol, "run_one", lambda task, model, *args: trained.append(args[2:4]) or real(task, model, *args)
    )
    summary = evaluate(str(headless_bert), progress=False, **grid)
    assert trained == [(1e-4, 1)], "a finished node was trained again: the fingerprint changed between loads"
    records = [json.loads(line) for line in (tmp_path / "eval" / "results.jsonl").read_text().splitlines()]
    assert len(records) == 2 and {r["model"] for r in records} == {summary.model}


@pytest.fixture(autouse=True)
def _restore_tasks():
    from encoderlab.eval.tasks import TASKS

    saved = dict(TASKS)
    yield
    TASKS.clear()
    TASKS.update(saved)
