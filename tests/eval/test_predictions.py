"""Constant-output detection per family, and rescoring saved predictions (`eval/predictions.py`)."""

from __future__ import annotations

import math

import pytest

from encoderlab.eval.families import FAMILIES
from encoderlab.eval.predictions import predictions_path, read_predictions, rescore, write_predictions
from encoderlab.eval.spec import IROptions, QAOptions, Task, TCOptions


def test_constant_output_is_named_per_family():
    sc, tc, qa, ir = (FAMILIES[f].constant for f in ("sc", "tc", "qa", "ir"))
    assert sc([{"pred": "pos"}, {"pred": "pos"}]) == "predicts class 'pos' for all 2 examples"
    assert sc([{"pred": "pos"}, {"pred": "neg"}]) is None and sc([{"pred": "pos"}]) is None
    assert tc([{"pred": ["O", "O"]}, {"pred": ["O"]}]) == "predicts tag 'O' for every word of all 2 sentences"
    assert tc([{"pred": ["O", "B-PER"]}, {"pred": ["O"]}]) is None
    assert qa([{"pred": ""}, {"pred": ""}]) == "gives no answer to all 2 questions"
    assert qa([{"pred": "red"}, {"pred": "red"}]) == "answers 'red' to all 2 questions"
    same = [["d1", 0.5], ["d2", 0.5]]
    assert ir([{"ranking": same}, {"ranking": same}]) == "returns the same ranking for all 2 queries"
    assert ir([{"ranking": same}, {"ranking": same[::-1]}]) is None


def test_a_tagger_that_gives_one_tag_to_nearly_every_word_is_flagged_unless_the_gold_does_too():
    tc = FAMILIES["tc"].constant
    nn = [{"gold": ["nn", "vb"] * 50, "pred": ["nn"] * 100} for _ in range(9)]
    nn.append({"gold": ["nn", "vb"] * 50, "pred": ["nn"] * 95 + ["vb"] * 5})
    assert tc(nn) == "predicts tag 'nn' for 99.5% of 1,000 words (the gold has it for 50.0%)"
    assert tc(nn[:-1] + [{"gold": ["nn", "vb"] * 50, "pred": ["nn"] * 80 + ["vb"] * 20}]) is None  # 98%
    ner = [{"gold": ["O"] * 99 + ["B-PER"], "pred": ["O"] * 100} for _ in range(9)]
    ner.append({"gold": ["O"] * 99 + ["B-PER"], "pred": ["O"] * 99 + ["B-PER"]})
    assert tc(ner) is None  # the gold is 99% 'O': a mostly-'O' tagger is right


def test_a_tagger_of_one_tag_is_flagged_by_the_words_it_read_not_the_o_of_truncated_ones():
    # was: a tagger saying 'LOW' for every word it read went unflagged, since the 'O' that fills the
    # words lost to truncation made two tags (and a tag set without O scored those words wrong)
    tc = FAMILIES["tc"].constant
    cut = [{"gold": ["CAP", "LOW", "LOW", "CAP"], "pred": ["LOW", "LOW", "O", "O"], "unread": [2, 3]}] * 3
    assert tc(cut) == "predicts tag 'LOW' for every word it read (6 lost to truncation) of all 3 sentences"
    assert tc([{**p, "pred": ["CAP", "LOW", "O", "O"]} for p in cut]) is None
    near = [{"gold": ["CAP", "LOW"] * 50 + ["LOW"] * 100, "pred": ["LOW"] * 100 + ["O"] * 100}] * 9
    near.append({**near[0], "pred": ["CAP"] + ["LOW"] * 99 + ["O"] * 100})
    unread = [{**p, "unread": list(range(100, 200))} for p in near]
    assert tc(unread) == "predicts tag 'LOW' for 99.9% of 1,000 words (the gold has it for 50.0%)"
    assert tc(near) is None  # read as predicted, the filled 'O's made it half 'LOW'


def _task(options, metric):
    return Task(name="t", description="", options=options, metric=metric, loader=lambda: None)


def test_saved_tc_qa_ir_predictions_rescore_as_a_direct_computation(tmp_path):
    from seqeval.metrics import f1_score
    from seqeval.scheme import IOB2

    predictions = {
        "test": [
            {"i": 0, "gold": ["B-PER", "I-PER", "O"], "pred": ["B-PER", "I-PER", "O"]},
            {"i": 1, "gold": ["B-LOC", "O"], "pred": ["I-LOC", "O"]},
        ]
    }
    rel = predictions_path("t", "f" * 20, "sig", 1e-4, 0)
    write_predictions(tmp_path, rel, predictions)
    assert rel.as_posix() == "predictions/t/ffffffffffff-sig-lr0.0001-s0.jsonl"
    tc = rescore(
        _task(TCOptions(labels=("O", "B-PER", "I-PER", "B-LOC", "I-LOC")), "entity_f1"), tmp_path / rel
    )
    gold = [p["gold"] for p in predictions["test"]]
    pred = [p["pred"] for p in predictions["test"]]
    assert tc["test"]["entity_f1"] == pytest.approx(100 * f1_score(gold, pred, mode="strict", scheme=IOB2))
    assert tc["test"]["accuracy"] == pytest.approx(100 * 4 / 5)

    write_predictions(
        tmp_path, rel, {"nyt": [{"id": "a", "gold": ["The cat"], "pred": "cat", "no_answer_score": -1.0}]}
    )
    assert rescore(_task(QAOptions(v2=True), "f1"), tmp_path / rel)["nyt"]["exact"] == 100.0

    # nDCG@10 with one relevant document at rank 2: 1 / log2(3).
    ranking = [["d1", 0.9], ["d2", 0.8], ["d3", 0.1]]
    write_predictions(tmp_path, rel, {"test": [{"qid": "q", "relevant": {"d2": 1}, "ranking": ranking}]})
    assert read_predictions(tmp_path / rel)["test"][0]["ranking"] == ranking
    ir = rescore(_task(IROptions(), "ndcg@10"), tmp_path / rel)["test"]
    assert ir["ndcg@10"] == pytest.approx(100 / math.log2(3))


@pytest.mark.parametrize(("lr", "shown"), [(1e-4, "0.0001"), (3e-5, "3e-05"), (1.0, "1")])
def test_each_learning_rate_has_its_own_predictions_file(lr, shown):
    # was: 1e-5 and 1.0000001e-5 (alike to `:g`'s 6 digits) wrote one file, the second run's over the
    # first's, so the first record's predictions were the second run's; an LR `:g` writes exactly keeps its name
    assert predictions_path("t", "f" * 20, "sig", lr, 0).name == f"ffffffffffff-sig-lr{shown}-s0.jsonl"
    near = 1.0000001e-5
    assert predictions_path("t", "f" * 20, "sig", near, 0) != predictions_path("t", "f" * 20, "sig", 1e-5, 0)
    assert predictions_path("t", "f" * 20, "sig", near, 0).name == f"ffffffffffff-sig-lr{near!r}-s0.jsonl"


def test_saved_predictions_of_encodevals_scores_rescore_as_a_direct_computation(tmp_path):
    rel = predictions_path("t", "f" * 20, "sig", 1e-4, 0)
    tags = [
        {"i": 0, "gold": ["O", "O"], "pred": ["O", "O"]},
        {"i": 1, "gold": ["B-PER", "O"], "pred": ["O", "O"]},
    ]
    write_predictions(tmp_path, rel, {"test": tags})
    tc = rescore(
        _task(TCOptions(labels=("O", "B-PER"), subword_labels="all"), "sentence_macro_f1"), tmp_path / rel
    )
    # sentence 1: 1.0; sentence 2: O 2/3, B-PER 0 -> 1/3
    assert tc["test"]["sentence_macro_f1"] == pytest.approx(100 * (1 + 1 / 3) / 2)
    assert tc["test"]["entity_f1"] == 0.0  # reported beside it for IOB2 tags

    write_predictions(tmp_path, rel, {"test": [{"id": "a", "gold": [4, 5], "pred": [5]}]})
    qa = rescore(_task(QAOptions(head="tagger"), "position_f1"), tmp_path / rel)["test"]
    assert qa["position_f1"] == pytest.approx(100 * 2 / 3) and qa["exact_positions"] == 0.0

    ranking = [["d1", 0.9], ["d2", 0.8], ["d3", 0.1]]
    write_predictions(
        tmp_path, rel, {"test": [{"qid": "q", "relevant": {"d2": 1, "d9": 1}, "ranking": ranking}]}
    )
    ir = rescore(_task(IROptions(), "ndcg@10_retrieved"), tmp_path / rel)["test"]
    # retrieved ideal: the one relevant document retrieved, at rank 1; trec_eval's ideal holds both
    assert ir["ndcg@10_retrieved"] == pytest.approx(100 / math.log2(3))
    assert ir["ndcg@10"] == pytest.approx(100 * (1 / math.log2(3)) / (1 + 1 / math.log2(3)))
