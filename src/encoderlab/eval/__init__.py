"""Evaluation by fine-tuning: four task families, suites of tasks, paper 1's LR x seed protocol.

Layout: `spec` (what a task is), `signature` (the hash of a task's settings that keys the cache),
`tasks/` (the registry, the offline, hub (paper 1, paper 2) and file-task loaders), `suites`,
`features`, `degenerate` (when a tagger's predictions are near-constant), `tokenids` (tokenised splits held as flat arrays) and `qa` (tokenisation and answer
decoding), `answer_tagger` (EncodEval's QA as token tagging), `pooling` (the pooling a model's
config.json declares), `heads`, `families` (per-family prepare/loss/predict/metrics), `batching`
(padded, length-sorted prediction), `predictions` (saved test predictions), `finetune` (the shared
loop), `metrics/`, `stats`, `summary` (the result record, LR selection, family means, paired
comparison), `summarypage` (summary.json and summary.md), `taskruns` (a task capped at a study's steps,
the LRs its weight decay allows), `protocol` (grid, cache, the model's summary), `preflight`
(`eval --check`) and `commands` (the `encoderlab eval` command). See docs/evaluation.md.

The names below are imported when first read (PEP 562): importing `encoderlab.eval.summary` or
`encoderlab.eval.spec`, as `study list` and `study plan` do, runs this file, and `evaluate` brings the
fine-tuning loop, its heads, metrics and task loaders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from encoderlab.lazy import lazy_names

if TYPE_CHECKING:
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

_HOMES = {
    "DEFAULT_LRS": "protocol",
    "DEFAULT_SEEDS": "protocol",
    "EvalModel": "protocol",
    "eval_node": "protocol",
    "evaluate": "protocol",
    "load_eval_model": "protocol",
    "SUITES": "suites",
    "EvalRecord": "summary",
    "compare": "summary",
    "TASKS": "tasks",
    "load_task_files": "tasks.custom",
}
"""Each public name and the module of this package that defines it."""

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


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals(), __all__)
