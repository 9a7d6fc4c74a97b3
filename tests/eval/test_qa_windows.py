"""Extractive QA over stride windows against the text itself: every window that holds the whole gold
answer is labelled with tokens spanning exactly its characters, and decoding logits that peak there
gives the answer text back, whichever window it is in (answers cut by one window are whole in the
next); with SQuAD v2's null the answer is "" only when the null beats every span."""

from __future__ import annotations

import random

import numpy as np
from tests.eval.conftest import FILLER, NAMES, TOPICS

from encoderlab.eval import qa


def _examples(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = [rng.choice(FILLER + NAMES + TOPICS) for _ in range(rng.randint(4, 60))]
        a = rng.randrange(len(words))
        b = min(len(words), a + rng.randint(1, 4))
        start = len(" ".join(words[:a])) + (1 if a else 0)
        context, text = " ".join(words), " ".join(words[a:b])
        out.append(
            {
                "id": str(i),
                "question": "what color ?",
                "context": context,
                "answers": [{"text": text, "answer_start": start}],
            }
        )
    return out


def test_every_window_holding_the_answer_is_labelled_and_decoded_back(tokenizer):
    examples = _examples(120, 0)
    windows, twice = 0, 0
    for ex in examples:
        train, features = (f(tokenizer, [ex], 24, 8, "qa") for f in (qa.train_features, qa.eval_features))
        text = ex["answers"][0]["text"]
        twice += sum(f["start"] > 0 for f in train) > 1  # the answer whole in two windows
        for k, (labelled, feature) in enumerate(zip(train, features)):
            if labelled["start"] == 0:
                continue
            offsets = feature["offsets"]
            assert ex["context"][offsets[labelled["start"]][0] : offsets[labelled["end"]][1]] == text
            starts = [np.full(len(f["input_ids"]), -5.0) for f in features]
            ends = [np.full(len(f["input_ids"]), -5.0) for f in features]
            starts[k][labelled["start"]], ends[k][labelled["end"]] = 5.0, 5.0
            answers, na = qa.decode([ex], features, starts, ends, allow_null=True)
            assert answers[ex["id"]] == text and na[ex["id"]] < 0
            starts[k][0], ends[k][0] = 6.0, 6.0  # the null now beats the span in one window
            answers, na = qa.decode([ex], features, starts, ends, allow_null=True)
            assert answers[ex["id"]] == ("" if len(features) == 1 else text)  # the null is the minimum
            windows += 1
    assert windows > 120 and twice > 10  # answers whole in two windows, cut in a third
