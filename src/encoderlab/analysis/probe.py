"""Linear probes per layer: how linearly decodable a task is from each block of a frozen model.

Design. The model runs once over the task's examples and every layer's features are kept (and
cached on disk by model weights, inputs and length, so adding a model to a figure re-encodes only
that model). Per layer, a multi-class ridge classifier is fitted in closed form: features are
standardised on the training split, one-hot targets are regressed with penalty lambda, and the
predicted class is the arg-max. One eigendecomposition of X^T X serves the whole lambda grid, so
choosing lambda on the validation split costs almost nothing; the test score is reported at that
lambda. Ridge rather than logistic regression: no learning rate, no epochs, deterministic, and on
CPU it is seconds per layer; the ranking of layers, which is what the figure shows, is what a
linear probe is for.

Tasks. Sequence-level: records with `meta.label` (tweets, bbc-news), one mean-pooled vector per
text. Token-level: records with `meta.tokens` and `meta.tags` (brown-pos, wnut16), one vector per
word (the mean of its sub-tokens), scored by word accuracy and macro-F1 over tags (not span F1: a
probe reads representations, it does not decode entities). Pair tasks (a question or claim with
the text) are refused: pooling both into one vector is not what a probe of one text measures.
Examples are split 60/20/20 train/validation/test by a seeded permutation; token tasks split by
sentence, so no sentence contributes words to two splits.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from torch import nn

from encoderlab.analysis.collapsed import collapsed_layers
from encoderlab.analysis.features import (
    DEFAULT_ENCODING,
    Encoding,
    check_finite,
    check_varies,
    pooled_features,
    texts_fingerprint,
    word_features,
)
from encoderlab.analysis.inputs import read_records
from encoderlab.atomic import cached_arrays
from encoderlab.errors import UserError
from encoderlab.eval.metrics import accuracy, macro_f1
from encoderlab.eval.tasks.custom_labels import label_name
from encoderlab.model.fingerprint import fingerprint
from encoderlab.train.freeze import format_layers
from encoderlab.words import noun

LAMBDAS = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0)
"""Ridge penalties tried per layer (relative to the number of training rows)."""
SPLIT = (0.6, 0.2, 0.2)
MIN_EXAMPLES = 10
"""Fewest examples a probe splits 60/20/20 (fewer leave a split empty or of one example)."""
_PAIR_FIELDS = ("question", "claim")


@dataclass
class ProbeTask:
    """Examples of one probing task: texts with one label each, or sentences with one tag per word."""

    name: str
    kind: Literal["sequence", "token"]
    inputs: list
    """Texts (sequence) or word lists (token)."""
    labels: list
    """One class id per text, or one list of class ids per sentence."""
    label_names: list[str]


def load_task(source: str, max_examples: int = 2000, seed: int = 0) -> ProbeTask:
    """A probing task from an asset name or JSONL file, subsampled to `max_examples` by `seed`."""
    records = read_records(source)
    if not records:  # was "has neither meta.label nor meta.tokens + meta.tags", of a file holding nothing
        raise UserError(
            f"{source} holds no record; give a probing task: JSONL records with meta.label (a class per text) "
            "or meta.tokens + meta.tags (a tag per word)"
        )
    meta = records[0]["meta"]
    if any(f in meta for f in _PAIR_FIELDS):
        raise UserError(
            f"{source} is a pair task (text + {[f for f in _PAIR_FIELDS if f in meta][0]}); probe a single-text "
            "task (tweets, bbc-news) or a word-tagging task (brown-pos, wnut16)"
        )
    _check_records(source, records, meta)
    if len(records) > max_examples:
        keep = np.sort(np.random.default_rng(seed).choice(len(records), max_examples, replace=False))
        records = [records[i] for i in keep]
    task = _task_from_records(source, records, meta)
    if len(records) < MIN_EXAMPLES:  # was refused by `split_rows` only after the models ran and wrote
        raise UserError(
            f"{source}: probing needs at least {MIN_EXAMPLES} examples to split 60/20/20, got {len(records)}; "
            "use a task with more examples, or a larger --max-examples"
        )
    if task.kind == "token" and not any(w.strip() for words in task.inputs for w in words):
        # no sentence had a word: "only one class (none)"; only blank words: a traceback after the models ran
        raise UserError(
            f"{source} has no word in the {len(records)} examples used (every entry of meta.tokens is empty or "
            "blank, so none has a sub-token to read); give sentences with words and their tags"
        )
    if len(task.label_names) < 2:  # every prediction would be right: a 100% that measures nothing
        raise UserError(
            f"{source} has only one class ({task.label_names[0]}) in the "
            f"{len(records)} examples used; a probe needs at least two classes: use a task with several labels"
        )
    return task


def _check_records(source: str, records: list[dict], meta: dict) -> None:
    """Every record holds what the first one says the task is: a record without `meta.label` was a
    KeyError traceback, and a sentence with more tokens than tags was accepted. Labels and tags are
    names or numbers of one JSON type across the task: a null, a list or a number among names was a
    TypeError traceback (tags), or silently another class (`1` beside `"pos"`, `true` beside `1`)."""
    token = "tokens" in meta and "tags" in meta
    field, noun = ("meta.tags", "tag") if token else ("meta.label", "label")
    first: tuple[int, object] | None = None  # the first label or tag: its type is every one's
    for i, r in enumerate(records, 1):
        m = r["meta"] if isinstance(r["meta"], dict) else {}
        values, problem = _labels_of(m, token, "label" in meta)
        if problem is not None:
            raise UserError(f"{source}: record {i} {problem}; fix or drop it")
        for value in values:
            if type(value) not in (str, int, float, bool):
                raise UserError(
                    f"{source}: record {i} has {json.dumps(value)} in {field}, where a name or a number "
                    "belongs; fix or drop it"
                )
            if first is not None and _form(value) != _form(first[1]):
                raise UserError(
                    f"{source}: record {i} has {json.dumps(value)} in {field} but record {first[0]} has "
                    f"{json.dumps(first[1])}; give every {noun} in one form: all names, all numbers or "
                    "all true/false"
                )
            first = first or (i, value)


def _form(value) -> str:
    """A label's form: a name, a number (1 and 1.0 are one class) or true/false."""
    return "bool" if isinstance(value, bool) else "number" if isinstance(value, (int, float)) else "name"


def _labels_of(m: dict, token: bool, labelled: bool) -> tuple[list, str | None]:
    """A record's labels (its one label, or its sentence's tags) and what is wrong with its shape."""
    if token:
        tokens, tags = m.get("tokens"), m.get("tags")
        if not (isinstance(tokens, list) and isinstance(tags, list) and len(tokens) == len(tags)):
            return (
                [],
                "does not hold meta.tokens and meta.tags lists of one length, as a word-tagging task needs",
            )
        if words := [t for t in tokens if not isinstance(t, str)]:  # a null or 0 is not a word either
            return [], f"has {json.dumps(words[0])} in meta.tokens, where a word (a string) belongs"
        return tags, None
    if not labelled:
        return [], None
    if "label" not in m:
        return [], "has no meta.label, which the first record has"
    if m["label"] is None:  # said "has no meta.label, which the first record has" of the first record too
        return [], "has null in meta.label, where a name or a number belongs"
    return [m["label"]], None


def _task_from_records(source: str, records: list[dict], meta: dict) -> ProbeTask:
    if "tokens" in meta and "tags" in meta:
        names = sorted({t for r in records for t in r["meta"]["tags"]})
        ids = {t: i for i, t in enumerate(names)}
        sentences = [r["meta"]["tokens"] for r in records]
        labels = [[ids[t] for t in r["meta"]["tags"]] for r in records]
        return ProbeTask(
            name=Path(source).stem, kind="token", inputs=sentences, labels=labels, label_names=names
        )
    if "label" in meta:
        names = sorted({label_name(r["meta"]["label"]) for r in records})
        ids = {t: i for i, t in enumerate(names)}
        labels = [ids[label_name(r["meta"]["label"])] for r in records]
        texts = [r["text"] for r in records]
        return ProbeTask(
            name=Path(source).stem, kind="sequence", inputs=texts, labels=labels, label_names=names
        )
    # said only "it is not a probing task": a task file's JSONL (`label` beside `text`) read so, no fix named
    raise UserError(
        f"{source} has neither meta.label nor meta.tokens + meta.tags; it is not a probing task: give JSONL "
        'records with the label under meta, {"text": "...", "meta": {"label": "..."}} (a class per text), '
        "or meta.tokens + meta.tags (a tag per word)"
    )


def split_rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Train, validation and test example indices (60/20/20, seeded)."""
    if n < MIN_EXAMPLES:
        raise UserError(f"probing needs at least {MIN_EXAMPLES} examples to split 60/20/20, got {n}")
    order = np.random.default_rng(seed).permutation(n)
    a, b = int(SPLIT[0] * n), int((SPLIT[0] + SPLIT[1]) * n)
    return order[:a], order[a:b], order[b:]


class RidgeProbe:
    """Multi-class ridge classifier on standardised features, solved for a grid of penalties."""

    def __init__(self, x: np.ndarray, y: np.ndarray, n_classes: int):
        x = np.asarray(x, dtype=np.float64)
        self.mean = x.mean(0)
        self.scale = x.std(0)
        self.scale[self.scale == 0] = 1.0
        z = (x - self.mean) / self.scale
        targets = np.eye(n_classes)[y]
        self.bias = targets.mean(0)
        self.n = len(x)
        self.evals, self.evecs = np.linalg.eigh(z.T @ z)
        self.projected = self.evecs.T @ (z.T @ (targets - self.bias))

    def weights(self, lam: float) -> np.ndarray:
        """(d, classes) solution of min ||Z W - (T - mean T)||^2 + lam * n * ||W||^2."""
        return self.evecs @ (self.projected / (self.evals + lam * self.n)[:, None])

    def predict(self, x: np.ndarray, weights: np.ndarray) -> np.ndarray:
        z = (np.asarray(x, dtype=np.float64) - self.mean) / self.scale
        return np.argmax(z @ weights + self.bias, axis=1)


@dataclass
class ProbeLayer:
    layer: int
    accuracy: float
    macro_f1: float
    val_accuracy: float
    lam: float
    n_test: int = 0
    """Test rows scored (texts, or words of a token task): one of them is 100 / n_test points."""


def probe_features(
    x: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    splits: tuple[np.ndarray, np.ndarray, np.ndarray],
    layer: int = 0,
) -> ProbeLayer:
    """Fit on train, pick lambda on validation accuracy, score test (percent); `layer` labels the row."""
    train, val, test = splits
    probe = RidgeProbe(x[train], y[train], n_classes)
    scored = []
    for lam in LAMBDAS:
        w = probe.weights(lam)
        scored.append((accuracy(y[val].tolist(), probe.predict(x[val], w).tolist()), lam, w))
    # ties go to the stronger penalty (the larger lambda): keyed on -lambda, they went to the weakest
    val_acc, lam, w = max(scored, key=lambda item: item[:2])
    pred = probe.predict(x[test], w).tolist()
    gold = y[test].tolist()
    return ProbeLayer(
        layer=layer,
        accuracy=accuracy(gold, pred),
        macro_f1=macro_f1(gold, pred),
        val_accuracy=val_acc,
        lam=lam,
        n_test=len(test),
    )


def task_features(
    model: nn.Module,
    tokenizer,
    task: ProbeTask,
    encoding: Encoding = DEFAULT_ENCODING,
    *,
    cache_dir: Path | None = None,
    label: str = "the model",
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Per-layer feature rows, their labels and the example each row belongs to (cached); `label` names the
    model in a refusal of its features."""
    # The batch size changes no feature; length and attention mode do.
    setting = f"{encoding.max_length}-{encoding.attention_mode}"
    key = f"{fingerprint(model, tokenizer)}-{texts_fingerprint(task.inputs)}-{setting}"
    path = None if cache_dir is None else Path(cache_dir) / f"{task.kind}-{key}.npz"

    def compute() -> dict[str, np.ndarray]:
        kwargs = dict(desc=f"probe {task.name}", dtype=torch.float32)
        if task.kind == "sequence":
            feats = pooled_features(model, tokenizer, task.inputs, encoding, **kwargs)
            index = np.stack([np.arange(len(task.inputs)), np.zeros(len(task.inputs), dtype=np.int64)], 1)
        else:
            feats, index = word_features(model, tokenizer, task.inputs, encoding, **kwargs)
        return {"index": index, **{f"layer_{i}": f.numpy() for i, f in enumerate(feats)}}

    def usable(arrays: dict[str, np.ndarray]) -> None:  # NaN or constant rows were fitted and scored silently
        layers = [arrays[f"layer_{i}"] for i in range(len(arrays) - 1)]
        check_finite(layers, label)
        what = f"{len(arrays['index'])} {'texts' if task.kind == 'sequence' else 'words'} of {task.name}"
        fix = "give a task in the model's language and script"
        check_varies(layers, label, what, "a probe can only predict the most frequent class", fix)

    # checked read or computed (before it is cached): a cache of an older version held NaN unchecked
    arrays = cached_arrays(path, compute, "feature cache", check=usable)
    index = arrays["index"]
    n_layers = len(arrays) - 1
    if task.kind == "sequence":
        labels = np.asarray(task.labels)[index[:, 0]]
    else:
        labels = np.asarray([task.labels[s][w] for s, w in index], dtype=np.int64)
    return [arrays[f"layer_{i}"] for i in range(n_layers)], labels, index[:, 0]


def probe_model(
    model: nn.Module,
    tokenizer,
    task: ProbeTask,
    encoding: Encoding = DEFAULT_ENCODING,
    *,
    seed: int = 0,
    cache_dir: Path | None = None,
    layers: Sequence[int] | None = None,
    label: str = "the model",
) -> list[ProbeLayer]:
    """A probe per layer (all layers unless `layers` is given), scored on held-out examples; `label` names
    the model in a refusal."""
    feats, labels, example = task_features(model, tokenizer, task, encoding, cache_dir=cache_dir, label=label)
    train, val, test = split_rows(len(task.inputs), seed)
    # Rows follow their example into its split (whole sentences for token tasks).
    splits = tuple(np.flatnonzero(np.isin(example, part)) for part in (train, val, test))
    if empty := [name for name, rows in zip(("training", "validation", "test"), splits) if not len(rows)]:
        # a word with no sub-token (blank) or cut off is dropped: an empty split was a ValueError traceback
        raise UserError(
            f"{task.name}: the {empty[0]} split (seed {seed}) has no word that {label} reads: its sentences' "
            f"words are blank or cut off at --max-length {encoding.max_length}; give more sentences with words"
        )
    wanted = list(layers) if layers is not None else list(range(len(feats)))
    for layer in wanted:
        if not 0 <= layer < len(feats):
            raise UserError(
                f"layer {layer} is out of range: the model has {len(feats)} layers (0-{len(feats) - 1})"
            )
    undefined = set(_collapsed(model, tokenizer, task, encoding, feats, wanted, label))
    return [
        undefined_row(layer, len(splits[2]))
        if layer in undefined
        else probe_features(feats[layer], labels, len(task.label_names), splits, layer)
        for layer in wanted
    ]


def undefined_row(layer: int, n_test: int) -> ProbeLayer:
    """The row of a layer constant across the examples: no probe of it measures anything (it predicts the
    training split's most frequent class, or, standardising rounding noise, the examples' lengths)."""
    return ProbeLayer(layer, math.nan, math.nan, math.nan, math.nan, n_test)


def _collapsed(model, tokenizer, task: ProbeTask, encoding: Encoding, feats, among, label: str) -> list[int]:
    """The layers of `among` constant across the task's examples in exact arithmetic (`collapsed`), named in
    one `encoderlab: note:` line: their float32 features vary only by rounding that depends on an example's
    length, which a probe standardised to unit scale and fitted (a number where none is defined)."""

    def exact(m: nn.Module) -> list[torch.Tensor]:
        if task.kind == "sequence":
            return pooled_features(
                m, tokenizer, task.inputs, encoding, desc=f"probe {task.name} float64 recheck"
            )
        return word_features(m, tokenizer, task.inputs, encoding, desc=f"probe {task.name} float64 recheck")[
            0
        ]

    found = collapsed_layers(model, feats, exact, stored=torch.float32, among=among)
    if found:
        print(
            f"encoderlab: note: {label} is constant across the examples of {task.name} in "
            f"{noun(len(found), 'layer')} {format_layers(found)} (in float64; in its precision they vary only "
            "by rounding, which depends on an example's length), so no probe of them is defined",
            file=sys.stderr,
        )
    return found


def as_rows(model_label: str, task: ProbeTask, layers: list[ProbeLayer]) -> list[dict]:
    """Flat table rows (model, task, layer, scores) for CSV/JSON and the figure."""
    return [{"model": model_label, "task": task.name, "kind": task.kind, **asdict(row)} for row in layers]
