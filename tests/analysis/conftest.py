"""The analysis tests' shared fixtures: a word-level tokenizer, and tiny model folders with texts and
probing tasks beside them (`folders`, built once per test module that asks for it)."""

from __future__ import annotations

import json
import random

import pytest
from analysis_helpers import WORDS, make_model, make_texts, make_tokenizer

from encoderlab.model.io import save_model_folder


@pytest.fixture(scope="session")
def tokenizer():
    return make_tokenizer()


@pytest.fixture(scope="module")
def folders(tmp_path_factory):

    root = tmp_path_factory.mktemp("models")
    tok = make_tokenizer()
    paths = {}
    for name, seed, overrides in (
        ("a", 0, {}),
        ("b", 1, {}),
        ("b2", 2, {}),
        ("wide", 3, {"hidden_size": 64}),
    ):
        paths[name] = str(save_model_folder(make_model(seed, **overrides), root / name, tokenizer=tok))
    (root / "texts.txt").write_text("\n".join(make_texts(60)) + "\n")
    rng = random.Random(0)
    topics = [WORDS[:30], WORDS[30:]]
    seq = [
        {"id": str(i), "text": " ".join(rng.choices(topics[i % 2], k=5)), "meta": {"label": str(i % 2)}}
        for i in range(40)
    ]
    (root / "seq.jsonl").write_text("\n".join(json.dumps(r) for r in seq))
    tok_recs = []
    for i in range(30):
        words = rng.choices(WORDS, k=5)
        tok_recs.append(
            {"id": str(i), "text": " ".join(words), "meta": {"tokens": words, "tags": [w[-1] for w in words]}}
        )
    (root / "tok.jsonl").write_text("\n".join(json.dumps(r) for r in tok_recs))
    paths["root"] = root
    return paths
