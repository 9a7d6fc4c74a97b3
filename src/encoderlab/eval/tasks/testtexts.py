"""A task file's test split as a decontamination set: the texts a study's own corpus must not hold.

A study cleans its corpus against the test split of each of its own task files (`study.needs
.decontamination_sets` names them `task-test:PATH`; `study.nodes` reads them here when it prepares). The data
layer knows no tasks (docs/architecture.md, "Layers"), so this module reads the texts and hands them down as
a `data.decontaminate.TextSet`: the test inputs as the evaluation reads them (sc text and pair, QA question
and context, tc tokens joined by spaces, a retrieval split's queries and the documents judged relevant to
them, not the whole collection they search: `_judged_relevant` says why), with the digest of those texts
(`decontaminate.texts_digest`) as its version, so an edited test split is hashed again and an unchanged one
is read from the decontamination cache; the study's prepare node key holds the same digest (`study.needs
.keyed_sets`), so a test split edited after the study prepared its data prepares it again. The digest is of
the test texts alone: an edit of a task's train split, labels or protocol re-keys its evaluations (its
`Task.data_version`), not the cleaned corpus, which depends on the test texts only.

Trade-offs: the task file is loaded whole (every split) to read its test split and hash it, as a study's
graph does anyway to key its evaluations; a study loads it once when it builds its graph (the prepare key's
digest, then its tasks: `custom.read_once`, as it loaded it twice) and once more when its prepare node runs
(which checks the texts against that digest), each from its local files or, for a hub dataset, as
`hub.load_hub` reads it (offline, the hub cache). `data prepare --decontaminate` takes no `task-test:` set: the data
command would have to import evaluation to read one; a study is the route (docs/data.md, "Decontamination").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from encoderlab.data.decontaminate import TASK_TEST

if TYPE_CHECKING:
    from encoderlab.data.decontaminate import TextSet

__all__ = ["TASK_TEST", "task_test_name", "task_test_set"]


def task_test_name(task_file: str) -> str:
    """The name a task file's test split goes by in a study's plan, node key and meta.json."""
    return f"{TASK_TEST}{task_file}"


def task_test_set(name: str) -> TextSet:
    """The test texts of the task file (or folder) that set `name` (`task_test_name`) names, checked as
    `--task-file` checks it (one line if missing or not a task file)."""
    from encoderlab.data.decontaminate import TextSet, texts_digest
    from encoderlab.eval.spec import IRSplit
    from encoderlab.eval.tasks.custom import task_from_file
    from encoderlab.eval.tasks.localfiles import task_files

    texts: list[str] = []
    for task in (task_from_file(p) for p in task_files([name.removeprefix(TASK_TEST)])):
        test = task.loader().tests["test"]
        if isinstance(test, IRSplit):
            texts += [*test.queries.values(), *_judged_relevant(test)]
        else:
            texts += [t for example in test for t in _example_texts(example)]
    return TextSet(name=name, version=texts_digest(texts), texts=tuple(texts))


def _judged_relevant(test) -> list[str]:
    """The documents a test query is judged relevant to (grade above 0), not the whole collection: the
    rest are distractors, often a public corpus (Wikipedia, PubMed) a pretraining corpus rightly holds, and
    dropping every document of theirs would cut that corpus for no leak; a query with its answer is one."""
    ids = {d for grades in test.qrels.values() for d, g in grades.items() if g > 0}
    return [test.corpus[d] for d in sorted(ids) if d in test.corpus]


def _example_texts(example: dict) -> list[str]:
    """An evaluation example's input texts: sc/pair-sc text (and pair), QA question and context, tc tokens
    (a retrieval test split is an `IRSplit`, read by `task_test_set`)."""
    if "tokens" in example:
        return [" ".join(example["tokens"])]
    return [
        example[k] for k in ("text", "text_pair", "question", "context") if isinstance(example.get(k), str)
    ]
