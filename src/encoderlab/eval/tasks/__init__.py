"""Evaluation tasks: the registry and the loaders behind it.

Layout: `splits` (deterministic splits, label and example checks shared by every loader),
`pocket` (the offline suites' loaders, from labelled assets) and `domain` (its code-retrieval task, from
the stdlib), `paper` (paper 1's 12 datasets), `biomed` (paper 2's English biomedical tasks), `registry`
(the declarative task tables, `TASKS`, `get_task`, `load_task`) and `testtexts` (a task file's test
split, the texts a study's corpus is decontaminated against).
Hub datasets, for both papers' suites and task files: `hub` (read from the hub or a local mirror by one
call), `hubsource` (what a source is and where it is read from), `hubsnapshot`, `hubcomplete` and
`hubtree` (the local hub cache's snapshot of a repository, and whether it holds every file), `hubexport`
(a parquet export's config), `hubmirror` (the options a local copy is loaded with), `huboffline` (the
refusal of what the cache lacks offline), `hublayout` (a loaded dataset's splits and columns checked) and
`hubcommits` (the commit each evaluation read).
Task files: `custom` (a YAML task spec turned into a `Task`), `custom_family`, `custom_data` (the
`data:` section and its three splits), `localfiles` (local data files and `--task-file` folders),
`custom_examples`, `custom_labels` and `custom_rows` (rows into examples, each cell checked), `hiddenlabels` (a dataset's
unpublished labels, -1),
`rowplaces` (where a refused row is), `nestedcolumns` (a column named by a dotted path into a nested
field), `beir` and `irpairs` (retrieval data in BEIR's layout, and a
pairs file to train on). What a task is (`Task`, the per-family options) lives in `encoderlab.eval.spec`.
"""

from encoderlab.eval.tasks.domain import docstring_functions
from encoderlab.eval.tasks.registry import TASKS, get_task, load_task, register
from encoderlab.eval.tasks.splits import split_groups, subsample

__all__ = ["TASKS", "docstring_functions", "get_task", "load_task", "register", "split_groups", "subsample"]
