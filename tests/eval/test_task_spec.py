"""Task signatures (the results-cache key) and the per-family options."""

from __future__ import annotations

import dataclasses
import math

import pytest

from encoderlab.eval.families import input_text
from encoderlab.eval.spec import FinetuneConfig, PairSCOptions, QAOptions, SCOptions, Task
from encoderlab.eval.tasks import TASKS

# Signatures computed by encoderlab 0.1.0 (flat `Task`), before the per-family options. Results
# cached under them must stay valid: the refactor may not change what a signature hashes. Token
# classification tasks left this table when their words came to be tokenised joined (CHANGELOG):
# their scores changed for byte-level tokenizers, so their old results must not be reused; `squad`
# left it when its scored splits came to keep every answer (`SCORING_VERSIONS["qa"]` 1); the retrieval
# tasks when fine-tuning came to mask in-batch copies by the truncated input (`SCORING_VERSIONS["ir"]` 1).
SIGNATURES_0_1_0 = {
    "tweets": "db7f4a1f6929d7dd",
}
IR_SIGNATURES_0_1_0 = {
    "squad-retrieval": "9f98af6613037fb7",
    "boolq-retrieval": "e5715a93a92a84f2",
    "pubmedqa-retrieval": "28cca3a314225b56",
    "code-retrieval": "3589a9123b531287",
}


def test_unchanged_tasks_keep_their_0_1_0_signatures():
    assert {name: TASKS[name].signature() for name in SIGNATURES_0_1_0} == SIGNATURES_0_1_0


def test_retrieval_signatures_moved_with_the_ir_scoring_version():
    # their scores may differ from 0.1.0's (copies masked by input), so their old results are not reused
    assert all(TASKS[name].signature() != old for name, old in IR_SIGNATURES_0_1_0.items())


def test_token_classification_signatures_moved_with_the_joined_word_encoding():
    assert TASKS["wnut16"].signature() != "8fe5f52cde8437e8"
    assert TASKS["brown-pos"].signature() != "4b0f7b22bdf966f4"
    # pre-split words are 0.1.0's encoding: such a task keeps 0.1.0's signature (paper 2's NER tasks)
    split = TASKS["wnut16"].options.__class__(labels=TASKS["wnut16"].labels, words="split")
    assert dataclasses.replace(TASKS["wnut16"], options=split).signature() == "8fe5f52cde8437e8"
    biomed_ner = [t for n, t in TASKS.items() if n.startswith("biomed-") and t.family == "tc"]
    assert {(t.options.words, t.metric) for t in biomed_ner} == {("split", "conlleval_f1")}


def _task(**kw) -> Task:
    base = {"name": "t", "description": "", "options": SCOptions(labels=("a", "b")), "metric": "accuracy"}
    return Task(**{**base, "loader": lambda: None, **kw})


def test_every_score_relevant_setting_changes_the_signature():
    base = _task()
    variants = [
        _task(options=SCOptions(labels=("b", "a"))),
        _task(options=SCOptions(labels=("a", "b"), pooling="first")),
        _task(options=PairSCOptions(labels=("a", "b"))),
        _task(options=PairSCOptions(labels=("a", "b"), template="Q: {a} P: {b}")),
        _task(metric="macro_f1"),
        _task(max_length=64),
        _task(data_version="2"),
        _task(finetune=FinetuneConfig(max_steps=10)),
        _task(finetune=FinetuneConfig(betas=(0.9, 0.98))),
        _task(inputs="eos"),
    ]
    signatures = {base.signature(), *(v.signature() for v in variants)}
    assert len(signatures) == len(variants) + 1
    # The description is not score-relevant.
    assert _task(description="other words").signature() == base.signature()


def test_qa_options_map_onto_the_0_1_0_fields():
    qa = _task(options=QAOptions(v2=True, stride=64), metric="f1")
    assert qa.family == "qa" and qa.labels == ()
    assert qa.signature() != _task(options=QAOptions(stride=64), metric="f1").signature()


def test_the_qa_head_and_question_template_change_the_signature_and_the_template_is_checked():
    span = _task(options=QAOptions(), metric="f1")
    tagger = _task(options=QAOptions(head="tagger"), metric="position_f1")
    templated = _task(
        options=QAOptions(head="tagger", question_template="Q: {question}"), metric="position_f1"
    )
    assert len({span.signature(), tagger.signature(), templated.signature()}) == 3
    assert templated.options.first_segment("why?") == "Q: why?"
    for bad in ("{q}", "{question} {other}", "no field"):
        with pytest.raises(ValueError, match="exactly the field"):
            QAOptions(question_template=bad)


def test_pair_template_renders_the_two_texts_and_refuses_other_fields():
    task = _task(options=PairSCOptions(labels=("a", "b"), template="Premise: {a}\nHypothesis: {b}"))
    assert (
        input_text(task, {"text": "x {b}", "text_pair": "y", "label": 0}) == "Premise: x {b}\nHypothesis: y"
    )
    assert input_text(_task(), {"text": "x", "label": 0}) == "x"
    for bad in ("{a}", "{a} {b} {c}", "{a.__class__} {b}"):
        with pytest.raises(ValueError, match="exactly the fields"):
            PairSCOptions(template=bad)


def test_labels_can_be_filled_in_from_the_data():
    task = _task(options=SCOptions())
    filled = task.with_labels(("x", "y"))
    assert filled.labels == ("x", "y") and dataclasses.replace(filled).options == SCOptions(labels=("x", "y"))


def test_finetune_and_qa_numbers_that_fail_mid_run_are_refused():
    # was: AdamW's IndexError once fine-tuning started (one beta); the tokenizer's OverflowError (a
    # negative stride); no span ever decoded, every answer "" (max_answer_tokens 0)
    from encoderlab.errors import UserError

    with pytest.raises(UserError, match=r"^task file t: finetune: betas must be two numbers in \[0, 1\)"):
        FinetuneConfig(betas=(0.9,)).check("task file t")
    FinetuneConfig(betas=(0.9, 0.95)).check("task file t")
    for eps in (math.inf, 1e300):  # inf in float32: every update 0, silently
        with pytest.raises(UserError, match=r"^task file t: finetune: eps must be > 0 and finite in float32"):
            FinetuneConfig(eps=eps).check("task file t")
    for bad in ({"stride": -1}, {"max_answer_tokens": 0}):
        with pytest.raises(ValueError, match=r"stride must be >= 0 and max_answer_tokens >= 1"):
            QAOptions(**bad)
    QAOptions(stride=0, max_answer_tokens=1)


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda t: PairSCOptions(template=t), "pair template"),
        (
            lambda t: QAOptions(head="tagger", question_template=t.replace("{a} {b}", "{question}")),
            "question template",
        ),
    ],
)
def test_a_template_str_format_cannot_read_names_the_template_and_the_escape(make, what):
    # was: "Single '{' encountered in format string", naming no template
    with pytest.raises(
        ValueError, match=rf"^the {what} '.*' is not a format string \(Single '\{{' .*\{{\{{ or \}}\}}$"
    ):
        make("{a} {b} {")
    make("{a} {b} {{braces}}")
