"""A task file's size for a study's cost estimate (`evalcost.task_size`), counted from its loaded rows.

Split from `evalcost.py` (its tables and formulas) to keep that file under the size limit: a task of one's
own has no cited size, so its rows, read when the study's graph was built, are counted here at their mean
characters / `plan.CHARS_PER_TOKEN` per example [D: no tokenizer is loaded for a plan].
"""

from __future__ import annotations

from encoderlab.eval.spec import NEGATIVE
from encoderlab.study.evalcost import TaskSize


def counted(task) -> TaskSize:
    """A task file's size from its loaded rows (read when the study's graph was built), at their mean
    characters / `CHARS_PER_TOKEN`, plus two special tokens per text encoded, per example: a retrieval
    row encodes its query, its document and, in a file of triplets, its hard negative, each on its own."""
    data = task.loader()
    val = _texts(data.val)
    tests = [c for split in data.tests.values() for c in _texts(split)]
    texts = _train_texts(task, data.train)
    return TaskSize(
        train=len(data.train),
        tokens=_tokens([_chars(x) for x in data.train], texts),
        val=len(val),
        test=len(tests),
        eval_tokens=_tokens(val + tests),
        texts=texts,
    )


def _train_texts(task, rows: list[dict]) -> int:
    """Texts one training row encodes: retrieval's query and document, and its `negative` where the file
    has the column (every row then holds one: `custom_rows.ir_negatives`, as `families.Retrieval` reads
    it); 1 for the other families, which encode a row's texts together."""
    if task.family != "ir":
        return 1
    return 3 if rows and NEGATIVE in rows[0] else 2


def _texts(split) -> list[int]:
    """Characters of each text one scoring of `split` encodes (retrieval: its queries and corpus)."""
    from encoderlab.eval.spec import IRSplit

    if isinstance(split, IRSplit):
        return [len(t) for t in (*split.queries.values(), *split.corpus.values())]
    return [_chars(x) for x in split]


def _chars(example: dict) -> int:
    """Characters of an example's texts: its string fields (not ids) and lists of words."""
    total = 0
    for key, value in example.items():
        if isinstance(value, str) and not key.endswith("id"):
            total += len(value)
        elif isinstance(value, list) and value and all(isinstance(w, str) for w in value):
            total += sum(map(len, value)) + len(value)
    return total


def _tokens(chars: list[int], texts: int = 1) -> float:
    """Mean tokens of an example of `chars` characters, encoded as `texts` texts of two special tokens each."""
    from encoderlab.study.plan import CHARS_PER_TOKEN

    return (sum(chars) / len(chars) / CHARS_PER_TOKEN if chars else 0.0) + 2 * texts
