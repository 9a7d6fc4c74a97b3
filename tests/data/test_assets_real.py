"""The real assets, when they are in the cache (`encoderlab assets fetch NAME`; CI fetches wiki-leads).

Expected numbers were counted independently of this code (with the packages opened by hand), so
these tests check the normalisers against the sources.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from encoderlab.data.assets import ASSETS, asset_dir, asset_jsonl, is_fetched, read_jsonl, read_manifest

pytestmark = pytest.mark.assets


def _records(name: str) -> list[dict]:
    if not is_fetched(name):
        pytest.skip(f"{name} is not fetched (encoderlab assets fetch {name})")
    return list(read_jsonl(asset_jsonl(name)))


def test_wiki_leads():
    recs = _records("wiki-leads")
    assert len(recs) == 10_033 and len({r["id"] for r in recs}) == 10_033
    topics = Counter(r["meta"]["topic"] for r in recs)
    assert len(topics) == 12 and topics["People"] == 1_828 and topics["Uncategorized"] == 1_000
    assert all(r["meta"]["source"] == "wiki-leads" and r["text"] for r in recs)
    manifest = read_manifest("wiki-leads")
    assert (
        manifest["documents"] == 10_033 and manifest["source"]["sha256"] == ASSETS["wiki-leads"].source.sha256
    )


@pytest.mark.parametrize(
    "name,count,field,labels",
    [
        ("vitaminc", 54_668, "label", {"true": 27_242, "false": 20_169, "neither": 7_257}),
        ("boolq", 12_697, "label", {True: 7_907, False: 4_790}),
        ("bbc-news", 2_225, "label", {"business": 510, "entertainment": 386, "politics": 417, "sports": 511, "tech": 401}),
        ("pubmedqa", 1_000, "label", None),
        ("squad-v1-dev", 10_565, None, None),
        ("squad-shifts-new-wiki", 7_936, None, None),
        ("squad-shifts-nyt", 10_056, None, None),
        ("squad-shifts-reddit", 9_767, None, None),
        ("squad-shifts-amazon", 9_877, None, None),
    ],
)  # fmt: skip
def test_labelled_counts_match_the_sources(name, count, field, labels):
    recs = _records(name)
    assert len(recs) == count
    if labels:
        assert Counter(r["meta"][field] for r in recs) == labels


def test_squad_answers_are_spans_of_their_context():
    recs = _records("squad-v1-dev")
    assert len({r["meta"]["paragraph"] for r in recs}) == 2_067
    for r in recs:
        for a in r["meta"]["answers"]:
            assert r["text"][a["answer_start"] : a["answer_start"] + len(a["text"])] == a["text"]


def test_wnut16_tokens_and_entities():
    recs = _records("wnut16")
    assert len(recs) == 2_394 and sum(len(r["meta"]["tokens"]) for r in recs) == 46_469
    b_tags = Counter(t for r in recs for t in r["meta"]["tags"] if t.startswith("B-"))
    assert sum(b_tags.values()) == 1_496 and b_tags["B-person"] == 449 and len(b_tags) == 10


def test_brown_pos_has_every_token():
    recs = _records("brown-pos")
    assert sum(len(r["meta"]["tokens"]) for r in recs) == 1_161_192
    assert len({r["meta"]["doc"] for r in recs}) == 500 and len({r["meta"]["genre"] for r in recs}) == 15


def test_model_folders_have_the_documented_shapes():
    for name, expected in {
        "minilm": {"num_hidden_layers": 6, "hidden_size": 384, "vocab_size": 30_522},
        "smollm2-135m": {"num_hidden_layers": 30, "hidden_size": 576, "vocab_size": 49_152},
    }.items():
        if not is_fetched(name):
            continue
        folder = asset_dir(name)
        config = json.loads((folder / "config.json").read_text())
        assert {k: config[k] for k in expected} == expected
        assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()
    if is_fetched("smollm2-135m"):
        assert read_manifest("smollm2-135m")["details"]["max_abs_logit_diff_vs_gguf"] == 0.0
