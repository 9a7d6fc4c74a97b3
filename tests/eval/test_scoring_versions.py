"""Scoring versions (`eval.signature.SCORING_VERSIONS`): scores cached by older scoring code are not
reused, and a change of a scoring path's scores without a bump of its version fails here.

The guard runs a path's real code (the family's `prepare`, `predict` and `metrics`) on fixed sentences,
a fixed tokenizer and a fixed stand-in for a fine-tuned model, and compares the scores with the ones
saved at the path's current version. It is cheap and catches a change of encoding, word mapping,
decoding or metric on these inputs; a change that these inputs do not exercise goes unseen, so a
scoring change still needs its own thought about a bump. QA runs both heads (span windows with a stride,
answer tagging) and SQuAD v2's no-answer scoring.
"""

from __future__ import annotations

import dataclasses
import typing

import pytest
import torch
from tests.eval.conftest import FILLER, NAMES, TOPICS, encoderlab_bpe_tokenizer
from torch import nn

from encoderlab.eval.families import family_ops
from encoderlab.eval.protocol import ResultsStore
from encoderlab.eval.signature import SCORING_VERSIONS, scoring_path
from encoderlab.eval.spec import Family, IRSplit, SCOptions, TaskData, TCOptions
from encoderlab.eval.summary import EvalRecord
from encoderlab.eval.tasks import TASKS
from encoderlab.eval.tasks.splits import qa_example

# Signatures that the code of 780bec2 through 9705571 (2026-12-02) gave these tasks, computed by that
# code; 9705571 changed how their words map to tokens (`features.token_words`) and kept the signatures.
SIGNATURES_BEFORE_TOKEN_WORDS_FIX = {"wnut16": "6e4db8e99766b334", "brown-pos": "987dda8de04e71ee"}


def _cached_under(tmp_path, signatures: dict[str, str]) -> ResultsStore:
    """A results store holding one record of each task under its old signature, read back."""
    store = ResultsStore(tmp_path / "results.jsonl")
    for name, old in signatures.items():
        task = TASKS[name]
        store.add(
            EvalRecord(
                model="m", task=name, family=task.family, task_signature=old, metric=task.metric, lr=1e-4,
                seed=0, val={task.metric: 50.0}, test={"test": {task.metric: 50.0}}, val_score=50.0,
                test_score=50.0,
            )
        )  # fmt: skip
    return ResultsStore(tmp_path / "results.jsonl")


def test_tc_scores_cached_before_the_word_mapping_fix_are_not_reused(tmp_path):
    again = _cached_under(tmp_path, SIGNATURES_BEFORE_TOKEN_WORDS_FIX)
    for name in SIGNATURES_BEFORE_TOKEN_WORDS_FIX:
        assert again.get("m", name, SIGNATURES_BEFORE_TOKEN_WORDS_FIX[name], 1e-4, 0) is not None
        assert again.get("m", name, TASKS[name].signature(), 1e-4, 0) is None


# Signatures that the code of efa158b through a75fce8 (2026-12-02 to 2026-12-06) gave the built-in QA
# tasks, computed by that code; efa158b changed which answers and questions their scored splits keep.
SIGNATURES_BEFORE_SCORED_QA_ANSWERS = {
    "squad": "982c7ea8ab330d57",
    "paper-squad": "251e8db8d1fefa79",
    "paper-squad-v2": "41723459f5e264c0",
    "paper-record": "97618ceeb75e3ad2",
}


def test_qa_scores_cached_before_scored_splits_kept_every_answer_are_not_reused(tmp_path):
    assert {n for n, t in TASKS.items() if t.family == "qa"} == set(SIGNATURES_BEFORE_SCORED_QA_ANSWERS)
    again = _cached_under(tmp_path, SIGNATURES_BEFORE_SCORED_QA_ANSWERS)
    for name in SIGNATURES_BEFORE_SCORED_QA_ANSWERS:
        assert again.get("m", name, SIGNATURES_BEFORE_SCORED_QA_ANSWERS[name], 1e-4, 0) is not None
        assert again.get("m", name, TASKS[name].signature(), 1e-4, 0) is None


# Signatures that the code before `sc multi-label` 1 (2026-12-07) gave these tasks, computed by that code.
SIGNATURES_BEFORE_MULTILABEL_MACRO = {"biomed-hoc": "d7586a5cbf64243e"}
SINGLE_LABEL_SC_SIGNATURES = {"tweets": "db7f4a1f6929d7dd"}


def test_multilabel_scores_cached_before_macro_over_every_label_are_not_reused(tmp_path):
    again = _cached_under(tmp_path, SIGNATURES_BEFORE_MULTILABEL_MACRO)
    for name in SIGNATURES_BEFORE_MULTILABEL_MACRO:
        assert again.get("m", name, SIGNATURES_BEFORE_MULTILABEL_MACRO[name], 1e-4, 0) is not None
        assert again.get("m", name, TASKS[name].signature(), 1e-4, 0) is None
    assert {n: TASKS[n].signature() for n in SINGLE_LABEL_SC_SIGNATURES} == SINGLE_LABEL_SC_SIGNATURES


def test_only_the_bumped_path_changes_its_tasks_signatures():
    # pre-split words kept their scoring code: paper 2's NER tasks keep their signatures and results
    split = [t for t in TASKS.values() if t.family == "tc" and t.options.words == "split"]
    assert split and all(SCORING_VERSIONS[scoring_path(t)] == 0 for t in split)
    text = TASKS["wnut16"]
    as_split = dataclasses.replace(text, options=dataclasses.replace(text.options, words="split"))
    assert scoring_path(text) != scoring_path(as_split)


def test_every_family_and_word_encoding_has_a_scoring_version():
    paths = {f for f in typing.get_args(Family) if f != "tc"}
    paths |= {f"tc words: {w}" for w in typing.get_args(typing.get_type_hints(TCOptions)["words"])}
    assert set(SCORING_VERSIONS) == paths | {"sc multi-label"}


# --------------------------------------------------------------------------- the guard

TAGS = ("O", "B-X", "I-X", "B-Y", "I-Y")
WORDS = FILLER + NAMES + TOPICS + ["U.S.", "don't", "co-op"]
# Words the tokenizer never saw: their spaces stay tokens of their own, with empty offsets.
SENTENCES = [
    ["the", "zq", "Ωx", "red", "alice"],
    ["½", "cat", "jjz", "of", "bob", "U.S."],
    ["carol", "and", "dave", "don't", "co-op", "qqv", "blue"],
    ["a", "naïve", "grace", "is", "at", "the", "xy-z", "green"],
]
GOLD = [[0, 1, 2, 0, 3], [0, 0, 1, 0, 3, 4], [3, 0, 1, 2, 0, 0, 1], [0, 0, 3, 0, 0, 0, 1, 2]]


TEXTS = [" ".join(s) for s in SENTENCES]


class _Fixed(nn.Module):
    """A stand-in for a fine-tuned model: its outputs are a fixed function of the token ids (and, per
    token, their positions), so a change of encoding, decoding or metric moves the scores. Per token:
    one-hot tags; else a fixed projection of the bag of ids (class logits, or a retrieval embedding)."""

    def __init__(self, outputs: int, per_token: bool = False):
        super().__init__()
        self.anchor = nn.Parameter(torch.zeros(()))  # `model_inputs` reads the device of a parameter
        self.outputs, self.per_token = outputs, per_token

    def forward(self, ids, mask, segments=None):
        if self.per_token:
            tag = (ids * 7 + torch.arange(ids.shape[1]).expand_as(ids) * 3) % self.outputs
            return torch.nn.functional.one_hot(tag, self.outputs).float() + self.anchor
        bag = (torch.nn.functional.one_hot(ids % 16, 16) * mask[..., None]).sum(1).double()
        grid = torch.arange(1, 17, dtype=torch.double)[:, None] * torch.arange(1, self.outputs + 1)
        return (bag @ torch.cos(grid)).float() + self.anchor


def _tc(words: str, subwords: str, inputs: str, metric: str):
    options = TCOptions(labels=TAGS, words=words, subword_labels=subwords)
    task = dataclasses.replace(TASKS["wnut16"], options=options, inputs=inputs, metric=metric, max_length=64)
    split = [{"tokens": s, "tags": g} for s, g in zip(SENTENCES, GOLD)]
    return task, TaskData(split, split, {"test": split}), _Fixed(len(TAGS), per_token=True)


def _sc(multilabel: bool):
    # multi-label: "d" predicted only, "e" neither gold nor predicted (macro-F1 counts it since version 1)
    labels = ("a", "b", "c", "d", "e") if multilabel else ("a", "b", "c")
    options = SCOptions(labels=labels, multilabel=multilabel)
    metric = "weighted_f1" if multilabel else "accuracy"
    task = dataclasses.replace(TASKS["tweets"], options=options, metric=metric)
    golds = [[0], [1, 2], [], [0, 2]] if multilabel else [[0], [1], [2], [1]]
    split = [{"text": t, **({"labels": g} if multilabel else {"label": g[0]})} for t, g in zip(TEXTS, golds)]
    return task, TaskData(split, split, {"test": split}), _Fixed(len(labels))


def _ir():
    task = TASKS["squad-retrieval"]
    queries = {"q0": "alice red", "q1": "bob cat", "q2": "grace green"}
    corpus = {f"d{i}": t for i, t in enumerate(TEXTS)}
    split = IRSplit(queries, corpus, {"q0": {"d0": 1}, "q1": {"d1": 2, "d2": 1}, "q2": {"d3": 1}})
    train = [{"query": "alice red", "document": TEXTS[0], "doc_id": "d0"}]
    return task, TaskData(train, split, {"test": split}), _Fixed(8)


class _Span(nn.Module):
    """A stand-in for a fine-tuned span extractor: start and end logits a fixed function of the token ids
    and positions."""

    def __init__(self):
        super().__init__()
        self.anchor = nn.Parameter(torch.zeros(()), requires_grad=False)  # numpy() reads the logits

    def forward(self, ids, mask, segments=None):
        pos = torch.arange(ids.shape[1]).expand_as(ids)
        return ((ids * 5 + pos * 3) % 11).float() + self.anchor, (
            (ids * 3 + pos * 7) % 13
        ).float() + self.anchor


def _qa_rows(v2: bool, scored: bool) -> list[dict]:
    """Questions over the fixed sentences, the third word the answer. The last sentence's answer has a span
    that does not match its context (its offset one character off), as data with mismatched spans has: a
    scored split keeps the question (efa158b), training drops it. A v2 task adds a question with no
    answer."""
    rows = []
    for i, words in enumerate(SENTENCES):
        context, answer = " ".join(words), words[2]
        start = context.index(answer) - (i == len(SENTENCES) - 1)
        answers = [{"text": answer, "answer_start": start}]
        rows.append(qa_example(f"q{i}", context, f"what is {words[1]}", answers, {}, scored=scored))
    if v2:
        rows.append(qa_example("none", TEXTS[0], "what is nothing", [], {}, scored=scored))
    return [r for r in rows if r is not None]


def _qa(name: str, v2: bool, scored: bool = True):
    """A QA task over `_qa_rows`; windows of 48 tokens with a stride of 8, so a context spans several.
    `scored=False` scores the questions as training keeps them (the code before efa158b's)."""
    val = _qa_rows(v2, scored)
    options = dataclasses.replace(TASKS[name].options, v2=v2, stride=8)
    task = dataclasses.replace(TASKS[name], max_length=48, options=options)
    module = _Fixed(2, per_token=True) if options.head == "tagger" else _Span()
    return task, TaskData(_qa_rows(v2, False), val, {"test": val}), module


CONFIGS = {
    "qa span": lambda: _qa("squad", False),
    "qa span, v2": lambda: _qa("squad", True),
    "qa tagger, v2": lambda: _qa("paper-squad-v2", True),
    "tc text, all subwords, eos inputs": lambda: _tc("text", "all", "eos", "sentence_macro_f1"),
    "tc text, first subword": lambda: _tc("text", "first", "tokenizer", "entity_f1"),
    "tc split, first subword": lambda: _tc("split", "first", "tokenizer", "conlleval_f1"),
    "sc one label": lambda: _sc(False),
    "sc multi-label": lambda: _sc(True),
    "ir": _ir,
}


def _scores(config: str) -> dict:
    return _scores_of(*CONFIGS[config]())


def _scores_of(task, data: TaskData, module: nn.Module) -> dict:
    ops = family_ops(task)
    prepared = ops.prepare(task, encoderlab_bpe_tokenizer(WORDS), data)
    scores = ops.metrics(task, ops.predict(task, module, prepared.val))
    return {k: round(v, 6) for k, v in scores.items() if isinstance(v, float)}


# (path, version) -> configurations and their scores at that version. A failure here means the scores
# of a path changed: bump its version in SCORING_VERSIONS (cached scores are then not reused), state
# the bump in CHANGELOG (node keys change) and put the new version and scores here.
GOLDEN = {
    ("tc words: text", 1): {
        "tc text, all subwords, eos inputs": {
            "accuracy": 34.615385,
            "entity_f1": 33.333333,
            "sentence_macro_f1": 25.583333,
        },
        "tc text, first subword": {"accuracy": 19.230769, "entity_f1": 0.0},
    },
    ("tc words: split", 0): {
        "tc split, first subword": {"accuracy": 30.769231, "entity_f1": 35.294118, "conlleval_f1": 24.0},
    },
    ("sc", 0): {
        "sc one label": {"accuracy": 50.0, "macro_f1": 38.888889},
    },
    ("sc multi-label", 1): {
        "sc multi-label": {
            "macro_f1": 26.666667,
            "micro_f1": 42.857143,
            "weighted_f1": 40.0,
            "accuracy": 25.0,
        },
    },
    ("qa", 1): {
        "qa span": {"exact_match": 0.0, "f1": 16.666667},
        "qa span, v2": {
            "exact": 0.0,
            "f1": 13.333333,
            "total": 5.0,
            "HasAns_exact": 0.0,
            "HasAns_f1": 16.666667,
            "HasAns_total": 4.0,
            "NoAns_exact": 0.0,
            "NoAns_f1": 0.0,
            "NoAns_total": 1.0,
            "best_exact": 20.0,
            "best_exact_thresh": 0.0,
            "best_f1": 33.333333,
            "best_f1_thresh": -14.0,
        },
        "qa tagger, v2": {"position_f1": 13.628571, "exact_positions": 0.0},
    },
    ("ir", 1): {
        "ir": {"ndcg@10": 66.183044, "recall@10": 100.0, "recall@100": 100.0, "ndcg@10_retrieved": 64.627388},
    },
}


QA_CONFIGS = {
    "qa span": ("squad", False),
    "qa span, v2": ("squad", True),
    "qa tagger, v2": ("paper-squad-v2", True),
}


def test_the_qa_pin_exercises_a_question_whose_span_does_not_match():
    # scored as training keeps its questions (as every split was before efa158b), each pinned QA score
    # differs: a change of which mismatched answers a scored split keeps moves the pinned scores
    assert set(QA_CONFIGS) == {c for c in CONFIGS if c.startswith("qa")}
    for config, (name, v2) in QA_CONFIGS.items():
        assert _scores_of(*_qa(name, v2, scored=False)) != _scores(config), config


@pytest.mark.parametrize("path, version", sorted(GOLDEN))
def test_a_scoring_paths_scores_are_the_ones_of_its_version(path, version):
    assert SCORING_VERSIONS[path] == version, f"{path}'s version moved: save its scores here at the new one"
    got = {config: _scores(config) for config in GOLDEN[path, version]}
    assert got == GOLDEN[path, version], (
        f"{path}'s scores changed on fixed inputs: bump SCORING_VERSIONS[{path!r}] (eval/signature.py), "
        "say so in CHANGELOG, and save the new scores here"
    )
