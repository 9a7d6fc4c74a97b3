"""QA by in/out-of-answer tagging (`eval/answer_tagger.py`), against a restatement of EncodEval's
labelling (`QuestionAnsweringEval.tokenize`) and by hand."""

from __future__ import annotations

import random

import pytest
from tests.eval.conftest import FILLER, TOPICS, byte_level_tokenizer, make_tokenizer, vocabulary_texts

from encoderlab.eval.answer_tagger import AnswerTagger, answer_positions, encode
from encoderlab.eval.spec import QAOptions, Task

PAPER_TEMPLATE = "Question: {question}\nContext: "


def _task(max_length: int = 256, inputs: str = "eos") -> Task:
    return Task(
        name="qa",
        description="",
        options=QAOptions(head="tagger", question_template=PAPER_TEMPLATE),
        metric="position_f1",
        loader=lambda: None,
        max_length=max_length,
        inputs=inputs,
    )


def _examples(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = rng.choices(FILLER + TOPICS, k=rng.randint(3, 30))
        k = rng.randrange(len(words))
        span = words[k : k + rng.randint(1, 3)]
        start = len(" ".join(words[:k])) + (1 if k else 0)
        answers = [{"text": " ".join(span), "answer_start": start}] if rng.random() < 0.8 else []
        out.append({"id": str(i), "question": "what is it ?", "context": " ".join(words), "answers": answers})
    return out


def _encodeval_labels(tokenizer, example: dict, max_length: int) -> list[int]:
    """A restatement of EncodEval's QA labels: the question segment and the context + EOS encoded as a
    pair without special tokens, the context truncated; the start is the last context token starting at
    or before the answer, the end the first one (walking back from the last) ending before the answer's
    end, plus one; 1s from start to end."""
    enc = tokenizer(
        PAPER_TEMPLATE.format(question=example["question"]),
        example["context"] + tokenizer.eos_token,
        max_length=max_length,
        truncation="only_second",
        return_offsets_mapping=True,
        add_special_tokens=False,
    )
    n, offsets, seq = len(enc["input_ids"]), enc["offset_mapping"], enc.sequence_ids()
    if not example["answers"]:
        return [0] * n
    a = example["answers"][0]
    start_char, end_char = a["answer_start"], a["answer_start"] + len(a["text"])
    first = seq.index(1)
    last = max(i for i, s in enumerate(seq) if s == 1)
    if offsets[first][0] > end_char or offsets[last][1] < start_char:
        return [0] * n
    i = first
    while i <= last and offsets[i][0] <= start_char:
        i += 1
    start = i - 1
    i = last
    while i >= first and offsets[i][1] >= end_char:
        i -= 1
    end = i + 1
    return [int(start <= p <= end) for p in range(n)]


@pytest.mark.parametrize("which", ["byte-level", "bert-like"])
def test_labels_are_encodevals(which):
    tok = (
        byte_level_tokenizer(FILLER + TOPICS) if which == "byte-level" else make_tokenizer(vocabulary_texts())
    )
    examples = _examples(300, 0)
    for e, f in zip(examples, encode(_task(), tok, examples)):
        assert f["labels"] == _encodeval_labels(tok, e, 256)
        assert f["gold"] == [p for p, lab in enumerate(f["labels"]) if lab]
        assert f["input_ids"][-1] == tok.eos_token_id
        if e["answers"]:  # the tagged tokens spell the answer
            assert tok.decode([f["input_ids"][p] for p in f["gold"]]).strip() == e["answers"][0]["text"]


def test_an_answer_past_the_window_is_no_answer_and_one_cut_in_two_ends_at_the_window():
    tok = make_tokenizer(vocabulary_texts())
    context = " ".join(["the"] * 40 + ["red", "blue"])
    example = {"id": "x", "question": "what ?", "context": context, "answers": []}
    past = {**example, "answers": [{"text": "red blue", "answer_start": context.index("red")}]}
    (f,) = encode(_task(max_length=30), tok, [past])
    assert f["gold"] == [] and len(f["input_ids"]) == 30
    cut = {**past, "context": " ".join(["the"] * 10 + ["red", "blue", "the"])}
    cut["answers"] = [{"text": "red blue", "answer_start": cut["context"].index("red")}]
    n_question = len(tok(PAPER_TEMPLATE.format(question="what ?"), add_special_tokens=False)["input_ids"])
    (f,) = encode(_task(max_length=n_question + 11), tok, [cut])
    assert tok.convert_ids_to_tokens([f["input_ids"][p] for p in f["gold"]]) == ["red"]


def test_answer_positions_by_hand():
    offsets = [(0, 3), (4, 7), (7, 9), (10, 14)]  # 'the' 'cod' 'es' 'here'
    assert answer_positions(offsets, 5, {"text": "codes", "answer_start": 4}) == [6, 7]
    assert answer_positions(offsets, 5, {"text": "odes", "answer_start": 5}) == [6, 7]  # inside a token
    assert answer_positions(offsets, 5, {"text": "x", "answer_start": 20}) == []
    assert (
        answer_positions(offsets, 5, None) == []
        and answer_positions([], 5, {"text": "a", "answer_start": 0}) == []
    )


def test_tokenizer_inputs_keep_the_special_tokens_and_tag_only_context_tokens():
    tok = make_tokenizer(vocabulary_texts())
    examples = [e for e in _examples(50, 1) if e["answers"]]
    for e, f in zip(examples, encode(_task(inputs="tokenizer"), tok, examples)):
        assert f["input_ids"][0] == tok.bos_token_id
        assert tok.decode([f["input_ids"][p] for p in f["gold"]]).strip() == e["answers"][0]["text"]


def test_metrics_and_constant_output():
    predictions = [{"id": "a", "gold": [5, 6], "pred": [5, 6]}, {"id": "b", "gold": [], "pred": [3]}]
    out = AnswerTagger.metrics(_task(), predictions)
    assert out == {"position_f1": 50.0, "exact_positions": 50.0, "n": 2}
    assert AnswerTagger.constant([{"pred": []}, {"pred": []}]) == "tags no token as answer in all 2 questions"
    assert AnswerTagger.constant(predictions) is None
