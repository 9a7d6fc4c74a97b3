"""Fine-tuning's AdamW is `model/eageroptim.py`'s: torch's update without the guards that import
`torch._dynamo` (about 3 CPU-s of every fresh `eval` process and study worker running an eval node)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from tests.eval.conftest import sc_examples
from tests.eval.fixtures import boolq_records, model_folder, write_asset

from encoderlab.eval import finetune
from encoderlab.eval.finetune import fine_tune, prepare
from encoderlab.eval.spec import FinetuneConfig, SCOptions, Task, TaskData

UNUSED_BY_EVAL = ("torch._dynamo", "torch.distributed.fsdp", "torch.distributed.tensor")
"""Modules an `eval` on the CPU never uses, each about a third of torch's own import or more."""


def _tuned(model, tokenizer, weights: str) -> tuple[list[float], dict[str, torch.Tensor]]:
    """Six steps of fine-tuning (warmup, decay, clipping, two micro-batches a step): losses and weights."""
    cfg = FinetuneConfig(batch_size=8, micro_batch_size=4, max_steps=6, warmup_ratio=0.3, weights=weights)
    task = Task(
        name="sc",
        description="fixture",
        loader=lambda: None,
        finetune=cfg,
        max_length=64,
        options=SCOptions(labels=("neg", "pos")),
        metric="accuracy",
    )
    data = TaskData(train=sc_examples(24, 0), val=sc_examples(8, 1), tests={"test": sc_examples(8, 2)})
    tuned = fine_tune(task, model, prepare(task, tokenizer, data), lr=3e-3, seed=0)
    return tuned.losses, {k: v.detach().clone() for k, v in tuned.head.named_parameters()}


@pytest.mark.parametrize("weights", ["fp32", "bf16"])
def test_fine_tuning_steps_as_torch_adamw_bit_for_bit(model, tokenizer, monkeypatch, weights):
    """The same losses and weights, bit for bit, as torch's own AdamW over the same groups."""
    ours = finetune.make_optimizer
    probe = ours(torch.nn.Linear(2, 2), 1e-3, FinetuneConfig())
    assert type(probe) is not torch.optim.AdamW  # the comparison below compares two optimizers
    losses, weights_ours = _tuned(model, tokenizer, weights)

    def torch_adamw(module, lr, cfg):
        groups = [
            {"params": g["params"], "weight_decay": g["weight_decay"]}
            for g in ours(module, lr, cfg).param_groups
        ]
        return torch.optim.AdamW(groups, lr=lr, betas=cfg.betas, eps=cfg.eps)

    monkeypatch.setattr(finetune, "make_optimizer", torch_adamw)
    torch_losses, weights_torch = _tuned(model, tokenizer, weights)
    assert losses == torch_losses
    assert weights_ours.keys() == weights_torch.keys()
    start = {f"model.{k}": v for k, v in model.named_parameters()}
    moved = [k for k in start if not torch.equal(weights_ours[k], start[k].to(weights_ours[k].dtype))]
    assert moved  # it trained
    for name, value in weights_ours.items():
        assert torch.equal(value, weights_torch[name]), name


def test_an_eval_process_imports_no_dynamo(tmp_path):
    """A fresh `encoderlab eval` fine-tunes and scores a task without importing `torch._dynamo` (torch's
    optimizers' guards), FSDP2 or DTensor."""
    home = tmp_path / "home"
    write_asset(home, "boolq", boolq_records(60))
    model = model_folder(tmp_path / "m")
    out = tmp_path / "e"
    argv = ["eval", str(model), "--tasks", "boolq", "--lrs", "2e-3", "--seeds", "0", "--out", str(out)]
    script = (
        "import sys; from dataclasses import replace; from encoderlab.cli import main; "
        "from encoderlab.eval.spec import FinetuneConfig; from encoderlab.eval.tasks import TASKS; "
        "TASKS['boolq'] = replace(TASKS['boolq'], finetune=FinetuneConfig(batch_size=16, max_steps=3)); "
        f"main({argv!r}); "
        f"print([m for m in {UNUSED_BY_EVAL!r} if m in sys.modules])"
    )
    env = {**os.environ, "ENCODERLAB_HOME": str(home)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env)
    assert (out / "results.jsonl").is_file()
    assert done.stdout.splitlines()[-1] == "[]"
