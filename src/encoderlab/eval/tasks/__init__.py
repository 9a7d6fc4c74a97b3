"""Evaluation tasks: the registry and the loaders behind it.

Layout: `splits` (deterministic splits, label and example checks shared by every loader),
`pocket` and `domain` (the offline suites, from labelled assets and the stdlib), `paper`
(paper 1's 12 datasets), `biomed` (paper 2's English biomedical tasks), `hub` (hub datasets or
their local mirrors, for both), `custom` (tasks from a YAML file) and `registry` (the declarative
task tables, `TASKS`, `get_task`, `load_task`). What a task is (`Task`, the per-family options) lives in `encoderlab.eval.spec`.
"""

from encoderlab.eval.tasks.domain import docstring_functions
from encoderlab.eval.tasks.registry import TASKS, get_task, load_task, register
from encoderlab.eval.tasks.splits import split_groups, subsample

__all__ = ["TASKS", "docstring_functions", "get_task", "load_task", "register", "split_groups", "subsample"]
