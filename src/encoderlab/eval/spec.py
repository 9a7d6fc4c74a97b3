"""What a task is: its family, data, metric and fine-tuning settings.

A `Task` is a frozen description plus a loader; `Task.signature()` hashes every setting that can
change a score (not the loader itself, so bump `data_version` when a loader's output changes).
The results cache keys runs by this signature, so editing a task never reuses stale scores.

Examples are plain dicts per family:
  * sc: {"text", "label": int}  (pair tasks are rendered into one text by a template)
  * tc: {"tokens": [str], "tags": [int]}
  * qa: {"id", "question", "context", "answers": [{"text", "answer_start"}]}  ([] = no answer)
  * ir: training pairs {"query", "document", "doc_id"}; evaluation splits are `IRSplit`s.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

Family = Literal["sc", "tc", "qa", "ir"]
FAMILY_NAMES = {
    "sc": "sequence classification",
    "tc": "token classification",
    "qa": "extractive QA",
    "ir": "retrieval",
}


@dataclass(frozen=True, kw_only=True)
class FinetuneConfig:
    """Optimiser and schedule of one fine-tuning run (paper 1 / EncodEval defaults)."""

    batch_size: int = 32
    """Examples per optimiser step."""
    micro_batch_size: int = 32
    """Examples per forward pass (gradient accumulation when smaller; IR ignores it)."""
    max_steps: int | None = 1000
    """Optimiser steps (data cycles as needed); None means `epochs` passes over the data."""
    epochs: float = 1.0
    """Passes over the training data when `max_steps` is None (token classification)."""
    warmup_ratio: float = 0.1
    """Share of steps with linear warmup, then linear decay to 0."""
    weight_decay: float = 0.1
    """Decoupled weight decay on matrices (not on biases and norm weights)."""
    betas: tuple[float, float] = (0.9, 0.95)
    """AdamW betas."""
    eps: float = 1e-5
    """AdamW epsilon."""
    grad_clip: float = 1.0
    """Gradient-norm clipping (Hugging Face Trainer's default)."""

    def total_steps(self, n_train: int) -> int:
        if self.max_steps is not None:
            return self.max_steps
        return max(1, math.ceil(self.epochs * n_train / self.batch_size))


@dataclass
class IRSplit:
    """A retrieval evaluation split: queries, the corpus they search and the judged pairs."""

    queries: dict[str, str]
    corpus: dict[str, str]
    qrels: dict[str, dict[str, int]]


@dataclass
class TaskData:
    """Loaded splits of a task; `tests` holds the in-domain test first, then out-of-domain ones."""

    train: list
    val: list | IRSplit
    tests: dict[str, list | IRSplit]
    counts: dict[str, int] = field(default_factory=dict)
    """Bookkeeping recorded with each result (e.g. skipped QA answers whose span is wrong)."""
    labels: tuple[str, ...] = ()
    """Label set read from the data, for tasks that do not fix one in advance."""


@dataclass(frozen=True, kw_only=True)
class Task:
    """One evaluation task."""

    name: str
    family: Family
    description: str
    loader: Callable[[], TaskData] = field(compare=False, repr=False)
    metric: str
    """Key of the score used for LR selection and reporting."""
    labels: tuple[str, ...] = ()
    """Label names of sc/tc tasks (index = class id)."""
    finetune: FinetuneConfig = FinetuneConfig()
    max_length: int = 512
    pooling: Literal["mean", "first"] = "mean"
    qa_v2: bool = False
    """Allow and score "no answer" (SQuAD v2)."""
    stride: int = 128
    """Tokens shared by neighbouring QA windows."""
    max_answer_tokens: int = 30
    query_prefix: str = "query: "
    document_prefix: str = "document: "
    data_version: str = "1"
    """Bump when the loader's output changes."""

    def signature(self) -> str:
        """Hash of every score-relevant setting (the loader is represented by data_version)."""
        data = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("loader", "description")
        }
        data["finetune"] = dataclasses.asdict(self.finetune)
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]
