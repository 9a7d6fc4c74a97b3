"""Extractive QA as token tagging: EncodEval's QA protocol, which paper 1's QA column reports.

EncodEval (hgissbkh/EncodEval, `QuestionAnsweringEval`) does not predict a start and an end: a token
classifier with two labels tags every token of the input as outside (0) or inside (1) the answer.
  * Input: one window, the question segment (`QAOptions.question_template`, paper 1:
    `Question: {question}\\nContext: `) then the context, the context truncated (no stride: an answer
    past the window is trained and scored as no answer). With `inputs: tokenizer` the two are the
    tokenizer's pair, and its `token_type_ids` (BERT's) reach a model with a segment table.
  * Labels: the tokens from the one holding the first gold answer's first character to the first
    one reaching its last character are 1, every other token is 0, question tokens included (only
    padding is ignored). A question without an answer, or whose answer lies outside the window, is
    all 0s. EncodEval's last token falls one past a window that cuts an answer in two, making its
    labels one longer than the input, which its `DataCollatorForTokenClassification` refuses
    (ValueError): it cannot run such a question; here the span is cut at the window's end.
  * Score: `metrics.encodeval.position_f1` between the positions tagged 1 and the gold positions,
    per question, averaged; no text is decoded.
Predictions are read on real tokens only; EncodEval reads padding positions too (their predictions
count as false positives when 1), which depends on how questions were batched.

A prepared split holds its features compactly (`compact_encode`: ids, gold positions and segment ids as
`tokenids` int32 columns, the question ids a plain list, the labels rebuilt from the gold positions on
read: `TaggerFeatures`), tokenised `tokenids.CHUNK` questions at a
time with the room checked once on the whole split: a question's window depends on it alone, so each
feature reads back as the dict `encode` gives and the scores are unchanged. Trade-off: a feature's lists
are rebuilt on every read.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn

from encoderlab.errors import UserError
from encoderlab.eval import tokenids
from encoderlab.eval.batching import Prepared, predict_rows, segments, token_loss
from encoderlab.eval.features import end_token_id
from encoderlab.eval.heads import TokenClassifier
from encoderlab.eval.metrics import position_f1
from encoderlab.eval.qa import longest_question
from encoderlab.eval.spec import Task, TaskData
from encoderlab.eval.tokenids import CompactFeatures, stacked

Offsets = list[tuple[int, int]]


def answer_positions(offsets: Offsets, first: int, answer: dict | None) -> list[int]:
    """Positions of the answer's tokens, `offsets` being the context's tokens starting at position
    `first`; [] for no answer or an answer outside them."""
    if answer is None or not offsets:
        return []
    start_char = answer["answer_start"]
    end_char = start_char + len(answer["text"])
    if offsets[0][0] > end_char or offsets[-1][1] < start_char:
        return []
    start = (
        max(i for i, (s, _) in enumerate(offsets) if s <= start_char) if offsets[0][0] <= start_char else 0
    )
    end = next((i for i, (_, e) in enumerate(offsets) if e >= end_char), len(offsets) - 1)
    return [first + i for i in range(start, end + 1)]


def check_tagger_room(task: Task, tokenizer, questions: Sequence[str]) -> None:
    """Refuse windows that the longest question (in its template, with the special tokens) fills: the
    tokenizer raised "Sequence to truncate too short", a traceback. `eval --check` calls it on each
    split, as `encode` does; with `inputs: eos` the question is cut instead, so nothing is refused."""
    if task.inputs != "tokenizer":
        return
    longest = longest_question(tokenizer, [task.options.first_segment(q) for q in questions])
    if longest >= task.max_length:
        raise UserError(
            f"task {task.name}: QA windows of {task.max_length} tokens leave no context token after the "
            f"longest question ({longest} tokens with the question template and the special tokens); "
            f"raise max_length above {longest}"
        )


def _windows(
    task: Task, tokenizer, examples: Sequence[dict], check: bool = True
) -> list[tuple[list[int], int, Offsets, list[int] | None]]:
    """(ids, position of the first context token, context token offsets, segment ids) of each example's
    window; segment ids are the tokenizer's `token_type_ids` of the pair (`inputs: tokenizer` with a
    tokenizer that gives them, BERT's), else None. `check=False`: the room was checked on the whole split."""
    firsts = [task.options.first_segment(e["question"]) for e in examples]
    contexts = [e["context"] for e in examples]
    if task.inputs == "tokenizer":
        if check:
            check_tagger_room(task, tokenizer, [e["question"] for e in examples])
        enc = tokenizer(
            firsts,
            contexts,
            truncation="only_second",
            max_length=task.max_length,
            return_offsets_mapping=True,
        )
        types = enc.get("token_type_ids")
        out = []
        for i, ids in enumerate(enc["input_ids"]):
            context = [p for p, s in enumerate(enc.sequence_ids(i)) if s == 1]
            offsets = [tuple(enc["offset_mapping"][i][p]) for p in context]
            out.append(
                (ids, context[0] if context else len(ids), offsets, None if types is None else types[i])
            )
        return out
    questions = tokenizer(firsts, add_special_tokens=False)["input_ids"]
    enc = tokenizer(contexts, add_special_tokens=False, return_offsets_mapping=True)
    end = end_token_id(tokenizer)
    out = []
    for q, ids, offsets in zip(questions, enc["input_ids"], enc["offset_mapping"]):
        room = max(task.max_length - len(q), 0)
        out.append(((q + ids + [end])[: task.max_length], len(q), [tuple(o) for o in offsets[:room]], None))
    return out


def encode(task: Task, tokenizer, examples: Sequence[dict], check: bool = True) -> list[dict]:
    """One feature per question: ids, 0/1 labels on every token and the gold answer positions (and the
    window's `segment_ids` when the tokenizer gives them)."""
    out = []
    for e, (ids, first, offsets, segs) in zip(examples, _windows(task, tokenizer, examples, check)):
        gold = answer_positions(offsets, first, e["answers"][0] if e["answers"] else None)
        inside = set(gold)
        labels = [int(p in inside) for p in range(len(ids))]
        feature = {"id": e["id"], "input_ids": ids, "labels": labels, "gold": gold}
        out.append(feature if segs is None else {**feature, "segment_ids": segs})
    return out


def compact_encode(task: Task, tokenizer, examples: Sequence[dict]) -> CompactFeatures:
    """`encode`, held compactly: the int lists as `tokenids` columns, tokenised `tokenids.CHUNK` questions
    at a time, the room checked once on every question (the refusal names the split's longest, as one call
    did); the question ids (strings, shared with the examples) a plain column. Each feature reads back as
    the dict `encode` gives."""
    if task.inputs == "tokenizer":
        check_tagger_room(task, tokenizer, [e["question"] for e in examples])

    def chunks():
        for first in range(0, len(examples), tokenids.CHUNK):
            rows = encode(task, tokenizer, examples[first : first + tokenids.CHUNK], check=False)
            yield [{k: v for k, v in row.items() if k not in ("id", "labels")} for row in rows]

    ids, numbers = stacked(chunks())
    assert not numbers, f"tagger features hold int lists only, got {sorted(numbers)}"
    return TaggerFeatures(ids, {"id": [e["id"] for e in examples]})


class TaggerFeatures(CompactFeatures):
    """`compact_encode`'s split: a feature's `labels` are not stored but rebuilt on read from its gold
    positions and its length, as `encode` builds them (1 at a gold position, else 0): they would be as
    many int32s as its ids, half the held bytes, for what the gold positions already say."""

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        row = super().__getitem__(i)
        inside = set(row["gold"])
        return {**row, "labels": [int(p in inside) for p in range(len(row["input_ids"]))]}


class AnswerTagger:
    """The QA family's operations with `QAOptions.head == "tagger"` (`families.family_ops`)."""

    @staticmethod
    def prepare(task: Task, tokenizer, data: TaskData) -> Prepared:
        def enc(split):
            return compact_encode(task, tokenizer, split)  # held compactly (`tokenids`)

        return Prepared(enc(data.train), enc(data.val), {k: enc(v) for k, v in data.tests.items()})

    @staticmethod
    def build(task: Task, model: nn.Module) -> nn.Module:
        return TokenClassifier(model, 2)

    loss = staticmethod(token_loss)

    @staticmethod
    def predict(task: Task, module: nn.Module, split: list[dict]) -> list[dict]:
        inside = predict_rows(
            module,
            [f["input_ids"] for f in split],
            lambda out, r, n: out[r, :n].argmax(-1).nonzero().flatten().tolist(),
            segments(split),
        )
        return [{"id": f["id"], "gold": f["gold"], "pred": p} for f, p in zip(split, inside)]

    @staticmethod
    def metrics(task: Task, predictions: list[dict]) -> dict:
        gold, pred = [p["gold"] for p in predictions], [p["pred"] for p in predictions]
        exact = sum(set(g) == set(p) for g, p in zip(gold, pred))
        return {
            "position_f1": position_f1(gold, pred),
            "exact_positions": 100.0 * exact / len(predictions) if predictions else 0.0,
            "n": len(predictions),
        }

    @staticmethod
    def constant(predictions: list[dict]) -> str | None:
        if len(predictions) > 1 and not any(p["pred"] for p in predictions):
            return f"tags no token as answer in all {len(predictions)} questions"
        return None
