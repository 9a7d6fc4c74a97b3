"""The one fine-tuning loop every family shares, and `run_one` = fine-tune + score one node.

The loop is Hugging Face Trainer's recipe as EncodEval configures it: AdamW (betas 0.9/0.95,
eps 1e-5) with weight decay on matrices only, linear warmup over 10% of the steps then linear
decay to 0, gradient clipping at 1.0, `batch_size` examples per step split into micro-batches
(gradient accumulation), the data reshuffled every epoch and cycled until `max_steps`. Nothing is
checkpointed: the model after the last step is the one scored, as in paper 1, and validation is
scored once at the end for LR selection; or, with `FinetuneConfig.select="best_epoch"` (paper 2),
validation is scored after every epoch and the best epoch's weights are the ones tested
(`BestEpoch`), the run ending early after `FinetuneConfig.patience` epochs without a better score when
that is set. The run seed fixes the head initialisation and the data
order; everything else (splits, subsamples) is fixed by the task.

bf16 autocast is used on CUDA; CPU runs are fp32.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

import torch
from torch import nn

from encoderlab.eval.families import family_ops, micro_batch_size, score
from encoderlab.eval.spec import FinetuneConfig, Task, TaskData
from encoderlab.model.eageroptim import AdamW

LossFn = Callable[[nn.Module, Sequence[dict]], torch.Tensor]


def make_optimizer(module: nn.Module, lr: float, cfg: FinetuneConfig) -> AdamW:
    """AdamW with decay on >=2-D weights only (biases and norm weights are not decayed): torch's update,
    without the guards that import `torch._dynamo` (`model/eageroptim.py`)."""
    params = [p for p in module.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": cfg.weight_decay},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
    ]
    return AdamW(groups, lr=lr, betas=cfg.betas, eps=cfg.eps)


def linear_warmup_decay(steps: int, warmup_ratio: float) -> Callable[[int], float]:
    """LR multiplier of `transformers.get_linear_schedule_with_warmup` with ceil(ratio * steps) warmup."""
    warmup = math.ceil(warmup_ratio * steps)

    def factor(step: int) -> float:
        if step < warmup:
            return step / max(1, warmup)
        return max(0.0, (steps - step) / max(1, steps - warmup))

    return factor


def batches(n: int, batch_size: int, seed: int) -> Iterator[list[int]]:
    """Endless shuffled index batches; each epoch is a fresh permutation (last batch may be short)."""
    gen = torch.Generator().manual_seed(seed)
    while True:
        order = torch.randperm(n, generator=gen).tolist()
        for i in range(0, n, batch_size):
            yield order[i : i + batch_size]


def autocast(device: torch.device):
    return torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else nullcontext()


def train(
    module: nn.Module,
    loss_fn: LossFn,
    features: Sequence[dict],
    *,
    lr: float,
    seed: int,
    cfg: FinetuneConfig,
    micro_batch_size: int,
    device: torch.device,
    on_epoch_end: Callable[[nn.Module, int], bool | None] | None = None,
) -> list[float]:
    """Run the schedule; returns the loss of every step. `on_epoch_end(module, epoch)` is called
    after every full pass over the data and after the last step (epoch numbers from 1); when it
    returns True the run stops there (early stopping; the LR schedule stays the full run's)."""
    if not features:
        raise ValueError("no training features")
    steps = cfg.total_steps(len(features))
    per_epoch = math.ceil(len(features) / cfg.batch_size)
    opt = make_optimizer(module, lr, cfg)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, linear_warmup_decay(steps, cfg.warmup_ratio))
    module.train()
    losses = []
    order = batches(len(features), cfg.batch_size, seed)
    for _ in range(steps):
        idx = next(order)
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for i in range(0, len(idx), micro_batch_size):
            micro = [features[j] for j in idx[i : i + micro_batch_size]]
            with autocast(device):
                loss = loss_fn(module, micro) * len(micro) / len(idx)
            loss.backward()
            total += float(loss.detach())
        torch.nn.utils.clip_grad_norm_(module.parameters(), cfg.grad_clip)
        opt.step()
        sched.step()
        losses.append(total)
        done = len(losses)
        if on_epoch_end is not None and (done % per_epoch == 0 or done == steps):
            module.eval()
            if on_epoch_end(module, math.ceil(done / per_epoch)):
                break
            module.train()
    module.eval()
    return losses


class BestEpoch:
    """Paper 2's checkpoint selection, as BioClinical-ModernBERT's Trainer does it
    (`eval_strategy="epoch"`, `load_best_model_at_end=True`): validation is scored after every
    epoch, the weights of the best epoch (by `FinetuneConfig.select_metric`, else the task's metric) are
    kept and restored before the
    test. A tie keeps the earlier epoch (the Trainer replaces its best only on a strictly better
    score). With `FinetuneConfig.patience`, calling it returns True once that many validations in a row
    were not strictly better than the best (Hugging Face's `EarlyStoppingCallback` with threshold 0,
    which counts the same way and stops the Trainer at that evaluation). The kept copy lives on the CPU."""

    def __init__(self, task: Task, val):
        self.task, self.val = task, val
        self.key = task.finetune.select_metric or task.metric
        self.scores: list[float] = []
        self.best: tuple[int, dict, dict] | None = None  # (epoch, val scores, state)
        self.stale = 0  # validations in a row not better than the best

    def __call__(self, module: nn.Module, epoch: int) -> bool:
        with torch.no_grad(), autocast(next(module.parameters()).device):
            val, _ = score(self.task, module, self.val)
        self.scores.append(val[self.key])
        if self.best is None or val[self.key] > self.best[1][self.key]:
            state = {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items()}
            self.best = (epoch, val, state)
            self.stale = 0
        else:
            self.stale += 1
        patience = self.task.finetune.patience
        return patience is not None and self.stale >= patience

    def restore(self, module: nn.Module) -> dict:
        """Load the best epoch's weights into `module`; returns its validation scores."""
        epoch, val, state = self.best
        module.load_state_dict(state)
        return val


@dataclass
class Tuned:
    """A fine-tuned model and how its run went: what the tasks sharing the run are scored with."""

    head: nn.Module
    losses: list[float]
    best: BestEpoch | None
    """Paper 2's best-epoch selection, when the task uses it (its validation then chose the weights)."""


def fine_tune(
    task: Task, model: nn.Module, prepared, lr: float, seed: int, device: torch.device | str = "cpu"
) -> Tuned:
    """Fine-tune a copy of `model` on `prepared.train` at (lr, seed) with `task`'s schedule and head."""
    family = family_ops(task)
    device = torch.device(device)
    torch.manual_seed(seed)
    head = family.build(task, copy.deepcopy(model)).to(device)
    if task.finetune.weights == "bf16":  # EncodEval's cast: weights, and so AdamW's moments, in bf16
        head = head.to(torch.bfloat16)
    best = BestEpoch(task, prepared.val) if task.finetune.select == "best_epoch" else None
    losses = train(
        head,
        family.loss,
        prepared.train,
        lr=lr,
        seed=seed,
        cfg=task.finetune,
        micro_batch_size=micro_batch_size(task),
        device=device,
        on_epoch_end=best,
    )
    return Tuned(head, losses, best)


def score_tuned(task: Task, tuned: Tuned, prepared, device: torch.device | str = "cpu") -> dict:
    """Score validation and every test split of `task` with a fine-tuned model: the task's own run, or
    the run of the task it `trains_as`.

    Returns {"val": {...}, "test": {split: {...}}, "steps", "final_loss", "predictions": {split: [...]},
    "degenerate": {split: why}} where `predictions` holds every test split's predictions
    (`families.score`) and `degenerate` the test splits whose predictions are all the same.
    """
    family, head, best = family_ops(task), tuned.head, tuned.best
    with torch.no_grad(), autocast(torch.device(device)):
        val = best.restore(head) if best else score(task, head, prepared.val)[0]
        scored = {name: score(task, head, split) for name, split in prepared.tests.items()}
    predictions = {name: p for name, (_, p) in scored.items()}
    degenerate = {name: family.constant(p) for name, p in predictions.items()}
    return {
        "val": val,
        "test": {name: s for name, (s, _) in scored.items()},
        "steps": len(tuned.losses),
        "final_loss": tuned.losses[-1],
        "predictions": predictions,
        "degenerate": {name: why for name, why in degenerate.items() if why},
        **({"best_epoch": best.best[0], "val_by_epoch": best.scores} if best else {}),
    }


def run_one(
    task: Task,
    model: nn.Module,
    tokenizer,
    prepared,
    lr: float,
    seed: int,
    device: torch.device | str = "cpu",
    shared: Sequence[tuple[Task, object]] = (),
) -> dict:
    """Fine-tune a copy of `model` on `task` at (lr, seed) and score it (`score_tuned`'s result).

    `prepared` comes from `prepare(task, tokenizer, data)`, so tokenisation is shared by the
    nodes of a grid. `shared` holds (task, prepared) of tasks that `trains_as` this run: each is
    scored with the same fine-tuned model, its result under `result["shared"][name]`; one training
    serves them all (the caller checks that they train on the same examples, `eval/protocol.py`).
    """
    tuned = fine_tune(task, model, prepared, lr, seed, device)
    result = score_tuned(task, tuned, prepared, device)
    if shared:
        result["shared"] = {t.name: score_tuned(t, tuned, p, device) for t, p in shared}
    return result


def prepare(task: Task, tokenizer, data: TaskData):
    """Tokenise a task's splits once for all nodes of its grid."""
    return family_ops(task).prepare(task, tokenizer, data)
