"""A task's signature: the hash of every setting that can change its scores, which keys the results cache.

The hash is taken over the flat layout of encoderlab 0.1.0's `Task` (every family's option, with its
default where a task's family has none), so tasks unchanged since keep their hash and their cached
scores; a setting added since enters the hash only when it differs from its default, and a change of
what a setting computes adds a marker (`WORD_ENCODING`, `START_AND_EOS`, `EPOCH_STEPS`) to the tasks it
changes, so their old scores are not reused. The cost: the layout of 0.1.0 is kept here forever, and a
new marker is needed whenever a setting's meaning changes without its value changing. The loader itself
is not hashed: a loader whose output changes bumps the task's `data_version`.

The code that turns a task's examples and a model's outputs into its scores (encoding, decoding,
metrics) is not hashed either: each scoring path (`scoring_path`: a family, or a family's variant that
runs other code) has a version in `SCORING_VERSIONS`, bumped when that code changes what a score is,
and a version above 0 enters the hash of that path's tasks only. So a change reaches exactly the tasks
it changes, and paths never bumped keep their hashes. The cost: a bump is by hand;
tests/eval/test_scoring_versions.py pins every path's scores (tc, sc, qa with both heads, ir) on fixed
inputs at their versions, so a change of those scores without a bump fails there; a change those inputs
do not exercise still rests on the author's thought. A family's variants that share a path (pair and regression sc) share
its version: a bump of one re-scores both, the safe side.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import TYPE_CHECKING

from encoderlab.eval.spec import PairSCOptions

if TYPE_CHECKING:
    from encoderlab.eval.spec import Task

# The flat layout of 0.1.0's Task: the options of every family, with these defaults when a task's
# family does not have them. `task_signature` rebuilds it so that unchanged tasks keep their hash.
_LEGACY_OPTIONS = {
    "labels": (),
    "pooling": "mean",
    "qa_v2": False,
    "stride": 128,
    "max_answer_tokens": 30,
    "query_prefix": "query: ",
    "document_prefix": "document: ",
}
_LEGACY_FINETUNE = (
    "batch_size",
    "micro_batch_size",
    "max_steps",
    "epochs",
    "warmup_ratio",
    "weight_decay",
    "betas",
    "eps",
    "grad_clip",
)
_RENAMED = {"v2": "qa_v2"}
WORD_ENCODING = "joined"
"""In the signature of token classification with `words: text` (the words joined by spaces, tokens
mapped back by offsets), so scores made by 0.1.0's pre-split encoding (now `words: split`, whose
signature is 0.1.0's) are not reused for it."""
START_AND_EOS = "start+eos"
"""In the signature of a task with `eos` inputs that pools the `first` token, whose inputs begin with the
start token (BOS/CLS) since this change: scores made when that position held the first word are not reused."""
EPOCH_STEPS = "ceil per epoch"
"""In the signature of a task that trains for `epochs` (no `max_steps`) other than one: its step count is
Hugging Face's, each epoch's short last batch a step (`FinetuneConfig.total_steps`), since this change;
scores made with fewer steps are not reused. One epoch has the same steps as before and keeps its hash."""

SCORING_VERSIONS: dict[str, int] = {
    "sc": 0,
    "sc multi-label": 1,
    "tc words: text": 1,
    "tc words: split": 0,
    "qa": 1,
    "ir": 1,
}
"""The version of each scoring path's code (`scoring_path`), in the signature of its tasks when above 0.
Bump a path's version when its encoding, decoding or metric code changes what a score is, so cached
scores made by the old code are not reused. Bumps:
- `tc words: text` 1 (2026-12-06): a token of empty offsets inside the text (a space encoderlab's
  byte-level BPE left alone) belongs to the next word (`features.token_words`, since 2026-12-02); TC
  scores cached before that, under the same signature, are not reused.
- `qa` 1 (2026-12-06): validation and test questions keep every gold answer, those whose span does not
  match the context included (`tasks.splits.qa_example`, since efa158b, 2026-12-02); QA scores cached
  before that, under the same signature, are not reused.
- `ir` 1 (2026-12-07): fine-tuning masks a query's in-batch copies of its positive and hard negatives by
  the token ids fed, after truncation (`heads.input_key`; by doc id only before 2026-12-06): a batch holding
  two documents equal up to `max_length` trained them apart as negatives of themselves. IR scores cached
  before that, under the same signature, are not reused.
- `sc multi-label` 1 (2026-12-07, a path of its own from then: single-label sc keeps version 0 and its
  hashes): macro-F1 averages over every label of the task, scikit-learn's `f1_score(average="macro",
  zero_division=0)` on the task's indicator matrix (`metrics.classification`), not over the labels gold or
  predicted in the split; micro-F1 of a split without any label is 0, not 100."""


def scoring_path(task: Task) -> str:
    """The key of `task`'s scoring code in `SCORING_VERSIONS`: its family, for token classification how
    its words reach the tokenizer (running text and pre-split words map tokens to words apart), and for
    sequence classification whether it is multi-label (label sets, scored by their own metrics)."""
    if task.family == "tc":
        return f"tc words: {task.options.words}"
    if task.multilabel:
        return "sc multi-label"
    return task.family


def _non_default(obj) -> dict:
    return {
        f.name: getattr(obj, f.name)
        for f in dataclasses.fields(obj)
        if f.default is not dataclasses.MISSING and getattr(obj, f.name) != f.default
    }


def task_signature(task: Task) -> str:
    """Hash of every score-relevant setting of `task` (16 hex digits)."""
    data: dict = {
        "name": task.name,
        "family": task.family,
        "metric": task.metric,
        "max_length": task.max_length,
        "data_version": task.data_version,
        **_LEGACY_OPTIONS,
    }
    options = dataclasses.asdict(task.options)
    new_options = _non_default(task.options)
    words = options.pop("words", None)  # below: 0.1.0's encoding, `split`, keeps 0.1.0's hash
    for key, value in options.items():
        legacy = _RENAMED.get(key, key)
        if legacy in _LEGACY_OPTIONS:
            data[legacy] = value
        elif key in new_options:
            data.setdefault("options", {})[key] = value
    data["finetune"] = {k: getattr(task.finetune, k) for k in _LEGACY_FINETUNE}
    data["finetune"].update(
        {k: v for k, v in _non_default(task.finetune).items() if k not in _LEGACY_FINETUNE}
    )
    if task.finetune.max_steps is None and task.finetune.epochs != 1:
        data["finetune"]["steps"] = EPOCH_STEPS
    if isinstance(task.options, PairSCOptions):
        data["pair"] = True
    if task.inputs != "tokenizer":
        data["inputs"] = task.inputs
        if task.pools_first:
            data["inputs"] = START_AND_EOS
    if words == "text":
        data["words"] = WORD_ENCODING
    if task.segments:
        data["segments"] = True
    if version := SCORING_VERSIONS[scoring_path(task)]:
        data["scoring"] = version
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]
