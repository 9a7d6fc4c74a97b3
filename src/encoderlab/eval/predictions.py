"""Saved test predictions: one JSON-lines file per run, beside results.jsonl, so that every score
can be recomputed outside encoderlab (or with `rescore`).

Layout: `OUT/predictions/<task>/<model fingerprint[:12]>-<task signature>-lr<lr>-s<seed>.jsonl`,
named by the result record's `predictions` field. One line per example and test split
(`"split"` = "test" or an out-of-domain split), in the family's own shape:

  * sc: {"split", "i", "gold": class name, "pred": class name} (multi-label: lists of names)
  * tc: {"split", "i", "gold": [tag per word], "pred": [tag per word]}, and "unread": [word index]
    where words got no token (truncation; their "pred" is the fill "O")
  * qa: {"split", "id", "gold": [answer texts] ([] = unanswerable), "pred": text ("" = no answer),
    "no_answer_score" (SQuAD v2: null score minus the best span score)}; the tagger head (`answer_tagger`):
    {"split", "id", "gold": [token positions], "pred": [token positions]} ([] = no answer)
  * ir: {"split", "qid", "relevant": {doc id: grade}, "ranking": [[doc id, cosine], ...]} (top 100)

The file is written atomically before its record is appended, so a record never names a
missing or half-written file.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from encoderlab import jsonlines
from encoderlab.atomic import json_text, write_text_atomic
from encoderlab.eval.families import family_ops
from encoderlab.eval.spec import Task
from encoderlab.words import lr_text

PREDICTIONS_DIR = "predictions"


def predictions_path(task: str, model: str, signature: str, lr: float, seed: int) -> Path:
    """The file of one run, relative to the output folder. The LR is written by `words.lr_text` (`1e-05`,
    `0.0001`, in full where `:g` would round it): two LRs alike to 6 digits (`1e-5` and `1.0000001e-5`,
    in one grid or in two calls onto one --out) wrote one file, the later run's over the earlier's, so
    the earlier record's predictions (and `rescore`) were the other run's."""
    return Path(PREDICTIONS_DIR) / task / f"{model[:12]}-{signature}-lr{lr_text(lr)}-s{seed}.jsonl"


def write_predictions(out: Path, relative: Path, predictions: dict[str, list[dict]]) -> None:
    lines = [json_text({"split": split, **p}) for split, rows in predictions.items() for p in rows]
    path = Path(out) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, "".join(line + "\n" for line in lines))


def read_predictions(path: Path | str) -> dict[str, list[dict]]:
    """{split: [prediction, ...]} of one saved file."""
    splits: dict[str, list[dict]] = defaultdict(list)
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = jsonlines.loads(line)
            splits[row.pop("split")].append(row)
    return dict(splits)


def rescore(task: Task, path: Path | str) -> dict[str, dict]:
    """The scores of every split of a saved file, by the same metrics as the run itself."""
    family = family_ops(task)
    return {split: family.metrics(task, rows) for split, rows in read_predictions(path).items()}
