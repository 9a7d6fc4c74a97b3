"""Fine-tuning's step count and LR schedule against Hugging Face's Trainer, paper 1's (EncodEval) and paper
2's (BioClinical-ModernBERT) fine-tuning loop. An epoch-based schedule has the Trainer's step count: each
epoch is one pass of a DataLoader (its short last batch a step), `ceil(num_train_epochs * len(dataloader))`
in all (transformers' `Trainer.set_initial_training_values`); paper 2's protocol trains and validates by
epochs, so a short count dropped whole epochs of the ones it picks from. The schedule is transformers'
`get_linear_schedule_with_warmup` with the warmup its `TrainingArguments` derive."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

from encoderlab.eval.finetune import train
from encoderlab.eval.spec import FinetuneConfig
from encoderlab.eval.tasks import TASKS

EPOCHS = FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=None, epochs=10.0, warmup_ratio=0.0)


def trainer_steps(n_train: int, batch_size: int, epochs: float) -> int:
    """What the Trainer runs with no gradient accumulation: epochs x the DataLoader's batches, rounded up."""
    return math.ceil(epochs * len(DataLoader(range(n_train), batch_size=batch_size)))


@pytest.mark.parametrize("n_train", [1, 15, 16, 17, 100, 4261])
@pytest.mark.parametrize("epochs", [1.0, 1.5, 10.0, 20.0])
def test_epochs_run_the_trainers_steps(n_train, epochs):
    # was ceil(epochs * n / batch): 10 epochs of 100 examples ran 63 steps, not 70
    cfg = replace(EPOCHS, epochs=epochs)
    assert cfg.total_steps(n_train) == trainer_steps(n_train, 16, epochs)


def test_every_epoch_ends_once_and_the_last_at_the_last_step():
    # 100 examples in batches of 16: 7 steps an epoch; before, the 10th epoch was never run or validated
    features = [{"x": float(i)} for i in range(100)]
    weight = nn.Linear(1, 1)
    ends: list[int] = []

    def loss(module, micro):
        return module(torch.tensor([[f["x"]] for f in micro])).pow(2).mean()

    losses = train(
        weight, loss, features, lr=1e-3, seed=0, cfg=EPOCHS, micro_batch_size=16, device=torch.device("cpu"),
        on_epoch_end=lambda module, epoch: ends.append(epoch),
    )  # fmt: skip
    assert len(losses) == 70
    assert ends == list(range(1, 11))


def test_only_multi_epoch_schedules_change_their_signature():
    # cached scores of 10- and 20-epoch runs had fewer steps and are not reused; one epoch (paper 1's
    # CoNLL-2003 and UNER, pocket's NER) ran the same steps and keeps its results (hashes before this change,
    # then moved by the `tc words: text` scoring bump, eval.signature.SCORING_VERSIONS; 19d4d..., 6e4db...)
    assert TASKS["paper-conll2003"].signature() == "a378f7f4fed310d8"
    assert TASKS["wnut16"].signature() == "06083b3a8d0cd4fb"
    assert TASKS["biomed-gad"].signature() != "b5be468a04f8e6a5"


@pytest.mark.parametrize("steps", [1, 7, 10, 31, 439, 1000])
@pytest.mark.parametrize("ratio", [0.0, 0.1, 0.25])
def test_the_lr_schedule_is_transformers_linear_schedule_with_the_trainers_warmup(steps, ratio, tmp_path):
    # the reference: transformers' own scheduler, with the warmup steps its TrainingArguments derive
    from transformers import TrainingArguments, get_linear_schedule_with_warmup

    from encoderlab.eval.finetune import linear_warmup_decay

    warmup = TrainingArguments(output_dir=str(tmp_path), warmup_steps=ratio, report_to=[]).get_warmup_steps(
        steps
    )
    param = nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=1.0)
    schedule = get_linear_schedule_with_warmup(opt, warmup, steps)
    expected = []
    for _ in range(steps):
        expected.append(opt.param_groups[0]["lr"])
        opt.step()
        schedule.step()
    ours = linear_warmup_decay(steps, ratio)
    assert [ours(step) for step in range(steps)] == pytest.approx(expected, abs=1e-12)
