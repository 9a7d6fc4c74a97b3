"""Scoring a fine-tuned model (validation after an epoch, the test splits, a retrieval corpus) runs with
autograd off: embedding a corpus with gradients on would keep every batch's activations alive until the
scores are read, the memory a study's eval node grows with the corpus. Guarded here because the
no-grad blocks sit in `finetune.py` (`BestEpoch.__call__`, `score_tuned`), not in the families' `predict`,
so a new caller of `families.score` could drop them unnoticed. Measured on 2026-12-06 for paper2-detour's
demo node (pubmedqa-retrieval on MiniLM): 12 contrastive steps took ~80% of its CPU time, scoring the
rest, so the guards are about memory, not a speed-up. The second guard: a finished run leaves no tensor
alive, as consecutive nodes in one process (`--jobs 1`) would otherwise add a model each (measured the
same day on that node: 110 live tensors, 87 MB, after each of 3 nodes; RSS between nodes grew 2.5 -> 2.9
GB, freed pages the allocator kept, while the peak stayed at 3.75 GB)."""

from __future__ import annotations

import gc
import random
from dataclasses import replace

import pytest
import torch
from tests.eval.conftest import TOPICS, filler, ir_pairs, sc_examples

from encoderlab.eval.finetune import prepare, run_one
from encoderlab.eval.spec import FinetuneConfig, IROptions, IRSplit, SCOptions, Task, TaskData

SHORT = FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=4, warmup_ratio=0.1)


def _forwards(model) -> list[tuple[bool, bool]]:
    """(module in training mode, autograd on) of every forward of `model` from now on."""
    seen: list[tuple[bool, bool]] = []
    model.register_forward_pre_hook(
        lambda module, args: seen.append((module.training, torch.is_grad_enabled()))
    )
    return seen


def _ir() -> tuple[Task, TaskData]:
    rng = random.Random(5)
    split = IRSplit(
        queries={f"q-{t}": f"about {t}" for t in TOPICS},
        corpus={f"doc-{t}": " ".join(filler(rng, 4) + [t] + filler(rng, 4)) for t in TOPICS},
        qrels={f"q-{t}": {f"doc-{t}": 1} for t in TOPICS},
    )
    task = Task(name="ir", description="", options=IROptions(), metric="ndcg@10", loader=lambda: None,
                finetune=SHORT, max_length=64)  # fmt: skip
    return task, TaskData(train=ir_pairs(64, 0), val=split, tests={"test": split})


def _sc_best_epoch() -> tuple[Task, TaskData]:
    """Best-epoch selection: validation is also scored inside the training loop, after each epoch."""
    cfg = replace(SHORT, max_steps=None, epochs=2.0, select="best_epoch")
    task = Task(name="sc", description="", options=SCOptions(labels=("neg", "pos")), metric="accuracy",
                loader=lambda: None, finetune=cfg, max_length=64)  # fmt: skip
    return task, TaskData(
        train=sc_examples(32, 0), val=sc_examples(16, 1), tests={"test": sc_examples(16, 2)}
    )


@pytest.mark.parametrize("make", [_ir, _sc_best_epoch], ids=["retrieval", "best-epoch"])
def test_scoring_runs_without_autograd(model, tokenizer, make):
    task, data = make()
    prepared = prepare(task, tokenizer, data)
    # fine_tune deep-copies the model, hooks included, so the copy that trains and scores reports here
    seen = _forwards(model)
    run_one(task, model, tokenizer, prepared, lr=1e-3, seed=0)
    scoring = [grad for training, grad in seen if not training]
    assert scoring, "the run scored nothing in eval mode"
    assert not any(scoring), f"{sum(scoring)} of {len(scoring)} scoring forwards ran with autograd on"
    assert all(grad for training, grad in seen if training)  # the premise: training forwards do track


def _live_tensors() -> int:
    gc.collect()
    return sum(issubclass(type(o), torch.Tensor) for o in gc.get_objects())


def test_a_finished_run_leaves_no_tensor_behind(model, tokenizer):
    """A study at `--jobs 1` runs its eval nodes one after another in one process: what a node's run
    held (its fine-tuned copy, AdamW's moments, the corpus's embeddings) must be freed when it returns,
    or each node adds a model's worth of memory. The first run is a warm-up (torch's own caches)."""
    task, data = _ir()
    prepared = prepare(task, tokenizer, data)
    run_one(task, model, tokenizer, prepared, lr=1e-3, seed=0)
    before = _live_tensors()
    kept = [run_one(task, model, tokenizer, prepared, lr=1e-3, seed=seed) for seed in (1, 2)]
    assert kept[0]["test"]["test"]["corpus"] == len(TOPICS)  # the premise: the runs scored a corpus
    assert _live_tensors() == before
