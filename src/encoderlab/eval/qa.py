"""Extractive QA features and answer decoding (the logic of Hugging Face's `utils_qa.py`).

Features: the question and the context are encoded as a pair with `truncation="only_second"`, so
a long context is split into overlapping windows (`stride` tokens shared between neighbours);
character offsets map tokens back to the context. A tokenizer that gives `token_type_ids` (BERT's: 0
on the question, 1 on the context) puts them in each feature as `segment_ids`, which reach a model
with a segment table (BERT was pretrained with them; left out, its windows ran as one segment). A
training window whose span does not contain the answer, and every window of an unanswerable question,
is labelled with position 0 (the "null" slot: BOS/CLS when the tokenizer adds one).

A prepared split holds them compactly (`compact_train_features`, `compact_eval_features`: `tokenids`'
int32 columns, the offsets as `tokenids.Spans`), tokenised `tokenids.CHUNK` questions at a time; a
question's windows depend on it alone and its window index is shifted by its chunk's first question, so
each feature reads back as the dict `train_features` / `eval_features` give for the whole split, and the
scores are unchanged. Trade-off: a feature's lists (and offset tuples) are rebuilt on every read.

Decoding: for every window, the `n_best` highest start and end logits are combined; a candidate
must lie inside the context, end at or after its start and span at most `max_answer_tokens`
tokens; its score is start + end logit and its text is cut from the context by offsets. Over all
windows the best candidate wins. SQuAD v2: the null score is the smallest start[0] + end[0] over
the windows; the answer is "" when the null score beats the best span score, and the difference
is returned as the no-answer score used by the official best-threshold search.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from encoderlab.errors import UserError
from encoderlab.eval import tokenids
from encoderlab.eval.tokenids import CompactFeatures, Spans, stacked


def _segments(enc, i: int) -> dict:
    """`segment_ids` of window `i`: the tokenizer's `token_type_ids` (BERT's: 1 on the context), or
    nothing for a tokenizer that gives none (Llama's, EuroBERT's); the head passes them to a model with
    a segment table (`heads._Head.hidden`), as Hugging Face's `run_qa.py` does."""
    return {"segment_ids": enc["token_type_ids"][i]} if "token_type_ids" in enc else {}


def _context_offsets(enc, i: int) -> list[tuple[int, int] | None]:
    seq_ids = enc.sequence_ids(i)
    return [tuple(o) if s == 1 else None for o, s in zip(enc["offset_mapping"][i], seq_ids)]


def longest_question(tokenizer, questions: Sequence[str]) -> int:
    """Tokens of the longest question paired with an empty context: with the special tokens of a pair."""
    return max(len(ids) for ids in tokenizer(list(questions), [""] * len(questions))["input_ids"])


def _encode(tokenizer, examples: Sequence[dict], max_length: int, stride: int, task: str):
    check_question_room(tokenizer, [e["question"] for e in examples], max_length, stride, task)
    return _windows(tokenizer, examples, max_length, stride)


def _windows(tokenizer, examples: Sequence[dict], max_length: int, stride: int):
    return tokenizer(
        [e["question"] for e in examples],
        [e["context"] for e in examples],
        truncation="only_second",
        max_length=max_length,
        stride=stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
    )


def _chunks(tokenizer, examples: Sequence[dict], max_length: int, stride: int, task: str):
    """(index of the chunk's first example, its examples, their windows) of `tokenids.CHUNK` examples at
    a time, the room checked once on every question (the refusal names the split's longest). A
    question's windows depend on it alone, so they are those of one call on the whole split."""
    check_question_room(tokenizer, [e["question"] for e in examples], max_length, stride, task)
    for first in range(0, len(examples), tokenids.CHUNK):
        chunk = examples[first : first + tokenids.CHUNK]
        yield first, chunk, _windows(tokenizer, chunk, max_length, stride)


def check_question_room(tokenizer, questions: Sequence[str], max_length: int, stride: int, task: str) -> None:
    """Refuse windows of `max_length` tokens that the longest of `questions` leaves no more context
    than `stride` in: the Rust tokenizer panics (not raises) when the context window is not longer than
    the stride. `eval --check` calls it on each split, as the run's features do; the line names `task`, as
    `answer_tagger.check_tagger_room`'s does."""
    longest = longest_question(tokenizer, questions)
    room = max_length - longest
    if room < 1:  # no stride can help: the question alone fills the window
        raise UserError(
            f"task {task}: QA windows of {max_length} tokens leave no context token after the longest question "
            f"({longest} tokens with the special tokens); raise max_length above {longest + stride} (the "
            f"question, then more context than the stride {stride})"
        )
    if room <= stride:
        raise UserError(
            f"task {task}: QA windows of {max_length} tokens leave {room} context tokens after the longest "
            f"question, not more than the stride {stride}; raise max_length, or lower the stride below "
            f"{room} (a task file's `options: {{stride: N}}`)"
        )


def train_features(
    tokenizer, examples: Sequence[dict], max_length: int, stride: int, task: str
) -> list[dict]:
    """One feature per window with the start/end token of the (first) gold answer or 0/0."""
    return _train_rows(_encode(tokenizer, examples, max_length, stride, task), examples)


def _train_rows(enc, examples: Sequence[dict]) -> list[dict]:
    out = []
    for i, ids in enumerate(enc["input_ids"]):
        example = examples[enc["overflow_to_sample_mapping"][i]]
        start = end = 0
        if example["answers"]:
            answer = example["answers"][0]
            a0 = answer["answer_start"]
            a1 = a0 + len(answer["text"])
            offsets = _context_offsets(enc, i)
            inside = [j for j, o in enumerate(offsets) if o is not None]
            if inside and offsets[inside[0]][0] <= a0 and offsets[inside[-1]][1] >= a1:
                start = next(j for j in inside if offsets[j][1] > a0)
                end = next(j for j in reversed(inside) if offsets[j][0] < a1)
        out.append({"input_ids": ids, "start": start, "end": end, **_segments(enc, i)})
    return out


def eval_features(tokenizer, examples: Sequence[dict], max_length: int, stride: int, task: str) -> list[dict]:
    """One feature per window with its example index and context offsets (None outside the context)."""
    return _eval_rows(_encode(tokenizer, examples, max_length, stride, task))


def _eval_rows(enc, first: int = 0) -> list[dict]:
    """`first`: the index of the encoding's first example in the split."""
    return [
        {
            "input_ids": ids,
            "example": first + enc["overflow_to_sample_mapping"][i],
            "offsets": _context_offsets(enc, i),
            **_segments(enc, i),
        }
        for i, ids in enumerate(enc["input_ids"])
    ]


def compact_train_features(
    tokenizer, examples: Sequence[dict], max_length: int, stride: int, task: str
) -> CompactFeatures:
    """`train_features`, held compactly (`tokenids.stacked`): each feature reads back as the same dict."""
    ids, numbers = stacked(
        _train_rows(enc, chunk) for _, chunk, enc in _chunks(tokenizer, examples, max_length, stride, task)
    )
    return CompactFeatures(ids, numbers)


def compact_eval_features(
    tokenizer, examples: Sequence[dict], max_length: int, stride: int, task: str
) -> CompactFeatures:
    """`eval_features`, held compactly: the context offsets as `tokenids.Spans`, the rest as in
    `compact_train_features`; each feature reads back as the same dict."""

    def rows():
        for first, _, enc in _chunks(tokenizer, examples, max_length, stride, task):
            yield [{**f, "offsets": Spans.flat(f["offsets"])} for f in _eval_rows(enc, first)]

    ids, numbers = stacked(rows(), signed=("offsets",))
    return CompactFeatures(ids, {**numbers, "offsets": Spans(ids.pop("offsets"))})


def decode(
    examples: Sequence[dict],
    features: Sequence[dict],
    starts: Sequence[np.ndarray],
    ends: Sequence[np.ndarray],
    *,
    n_best: int = 20,
    max_answer_tokens: int = 30,
    allow_null: bool = False,
) -> tuple[dict[str, str], dict[str, float]]:
    """Best answer text per example id, and its no-answer score (null - best span; -inf for v1)."""
    best: dict[int, tuple[float, str]] = {}
    null: dict[int, float] = {}
    for feature, start, end in zip(features, starts, ends):
        ex, offsets = feature["example"], feature["offsets"]
        null[ex] = min(null.get(ex, np.inf), float(start[0] + end[0]))
        in_context = np.array([o is not None for o in offsets])
        s_idx, e_idx = np.meshgrid(
            np.argsort(start)[::-1][:n_best], np.argsort(end)[::-1][:n_best], indexing="ij"
        )
        length = e_idx - s_idx + 1
        valid = in_context[s_idx] & in_context[e_idx] & (length >= 1) & (length <= max_answer_tokens)
        if not valid.any():
            continue
        scores = np.where(valid, start[s_idx] + end[e_idx], -np.inf)
        i = int(np.argmax(scores))
        score, s, e = float(scores.flat[i]), int(s_idx.flat[i]), int(e_idx.flat[i])
        if ex not in best or score > best[ex][0]:
            best[ex] = (score, examples[ex]["context"][offsets[s][0] : offsets[e][1]])
    answers, na_scores = {}, {}
    for ex, example in enumerate(examples):
        score, text = best.get(ex, (-np.inf, ""))
        na = null.get(ex, np.inf) - score if allow_null else -np.inf
        answers[example["id"]] = "" if allow_null and na > 0 else text
        na_scores[example["id"]] = float(na)
    return answers, na_scores
