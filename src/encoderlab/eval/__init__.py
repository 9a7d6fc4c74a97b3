"""Evaluation by fine-tuning: four task families, suites of tasks, paper 1's LR x seed protocol.

Layout: `spec` (what a task is), `tasks/` (the registry, the offline, hub (paper 1, paper 2) and
file-task loaders), `suites`, `features` and `qa` (tokenisation and answer decoding), `heads`,
`families` (per-family prepare/loss/predict/metrics), `predictions` (saved test predictions),
`finetune` (the shared loop), `metrics/`, `stats`, `summary` (the result record, LR selection,
family means, paired comparison), `protocol` (grid, cache, summary files) and `commands` (the `encoderlab eval` command). See docs/evaluation.md.
"""

from encoderlab.eval.protocol import (
    DEFAULT_LRS,
    DEFAULT_SEEDS,
    EvalModel,
    eval_node,
    evaluate,
    load_eval_model,
)
from encoderlab.eval.suites import SUITES
from encoderlab.eval.summary import EvalRecord, compare
from encoderlab.eval.tasks import TASKS
from encoderlab.eval.tasks.custom import load_task_files

__all__ = [
    "DEFAULT_LRS",
    "DEFAULT_SEEDS",
    "SUITES",
    "TASKS",
    "EvalModel",
    "EvalRecord",
    "compare",
    "eval_node",
    "evaluate",
    "load_eval_model",
    "load_task_files",
]
