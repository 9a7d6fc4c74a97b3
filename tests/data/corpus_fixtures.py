"""Tiny corpora and a tiny tokenizer made in the test, shared by the data tests."""

from __future__ import annotations

import json
import random
import sys
import types
from pathlib import Path

import pytest

from encoderlab.data.sources import SourceConfig
from encoderlab.data.tokenizer import train_tokenizer

WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "a",
    "is",
    "was",
    "for",
    "on",
    "as",
    "with",
    "by",
    "he",
    "at",
    "from",
    "his",
    "an",
    "were",
    "are",
    "which",
    "this",
    "be",
    "or",
    "has",
    "had",
    "not",
    "first",
    "one",
    "their",
    "its",
    "new",
    "after",
    "who",
    "they",
    "have",
    "her",
    "she",
    "two",
    "been",
    "other",
    "when",
    "there",
    "all",
    "during",
    "into",
    "school",
    "also",
    "time",
    "may",
    "year",
    "city",
    "some",
    "three",
    "only",
    "over",
    "such",
    "most",
    "would",
    "more",
    "state",
    "river",
    "club",
    "under",
    "between",
]


def sentence(i: int, n: int = 12) -> str:
    """A deterministic pseudo-English sentence, distinct for each i."""
    return " ".join(WORDS[(i * 7 + k * (i % 5 + 1)) % len(WORDS)] for k in range(n)) + f" {i}."


def random_words(seed: int, n: int) -> str:
    """n words drawn at random: two such texts share no long n-gram by chance."""
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n))


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def corpus_records(n: int = 120, prefix: str = "doc") -> list[dict]:
    """Documents of 1-8 sentences, so some span several rows and some share a row."""
    return [
        {"id": f"{prefix}{i}", "text": " ".join(sentence(i * 11 + j) for j in range(1 + i % 8))}
        for i in range(n)
    ]


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory) -> Path:
    """A byte-level BPE tokenizer (vocab 512) trained on a generated corpus."""
    root = tmp_path_factory.mktemp("tok")
    src = write_jsonl(root / "train.jsonl", corpus_records(200) + [{"id": "u", "text": "café 漢字 🙂"}])
    out = root / "bpe"
    train_tokenizer(SourceConfig(location=str(src)), 512, out, progress=False)
    return out


@pytest.fixture
def fake_assets(monkeypatch, tmp_path):
    """Install an asset registry holding JSONL files made in the test: `fake_assets({name: records})`."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))  # caches stay inside the test

    def install(assets: dict[str, list[dict]]) -> None:
        paths = {
            name: write_jsonl(tmp_path / "assets" / name / "data.jsonl", recs)
            for name, recs in assets.items()
        }
        module = types.ModuleType("encoderlab.data.assets")
        module.ASSETS = dict.fromkeys(paths)
        module.asset_jsonl = lambda name: paths[name]
        module.asset_dir = lambda name: paths[name].parent
        monkeypatch.setitem(sys.modules, "encoderlab.data.assets", module)

    return install


@pytest.fixture(scope="module")
def wordpiece_with_call_settings(tmp_path_factory):
    """A WordPiece tokenizer whose tokenizer.json keeps truncation at 8 and padding to 12, as a
    sentence-transformers model's does (all-MiniLM-L6-v2: 128 and 128): settings of its last call,
    not of the vocabulary. WordPiece keeps `data prepare` on the `tokenizers` path (not tiktoken)."""
    root = tmp_path_factory.mktemp("wp")
    src = write_jsonl(root / "train.jsonl", corpus_records(200))
    out = root / "wordpiece"
    train_tokenizer(SourceConfig(location=str(src)), 400, out, kind="wordpiece", progress=False)
    spec = json.loads((out / "tokenizer.json").read_text())
    pad = spec["model"]["vocab"].get("[PAD]", 0)
    spec["truncation"] = {"direction": "Right", "max_length": 8, "strategy": "LongestFirst", "stride": 0}
    spec["padding"] = {
        "strategy": {"Fixed": 12}, "direction": "Right", "pad_to_multiple_of": None,
        "pad_id": pad, "pad_type_id": 0, "pad_token": "[PAD]",
    }  # fmt: skip
    (out / "tokenizer.json").write_text(json.dumps(spec))
    return out
