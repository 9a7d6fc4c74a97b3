"""Each family's head, trained by the shared loop, learns a tiny task far above chance."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest
import torch
from tests.eval.conftest import TOPICS, filler, ir_pairs, qa_examples, sc_examples, tc_examples

from encoderlab.eval.finetune import fine_tune, prepare, run_one
from encoderlab.eval.heads import first_token_pool, info_nce, mean_pool
from encoderlab.eval.spec import (
    FinetuneConfig,
    IROptions,
    IRSplit,
    QAOptions,
    SCOptions,
    Task,
    TaskData,
    TCOptions,
)

FAST = FinetuneConfig(batch_size=16, micro_batch_size=8, max_steps=40, warmup_ratio=0.1)
"""40 steps: every head below but answer tagging scores 99-100 on its test set at 30 already (its
threshold is 80-90, chance 30-50), so 40 keeps the margin at half the 80 steps they ran."""

SLOW = dataclasses.replace(FAST, max_steps=80, micro_batch_size=16)
"""Answer tagging still scores 14 at 50 steps and 86-98 at 60 (threshold 80): it keeps its 80. One
micro-batch a step (FAST's two of 8 cost ~40% more CPU here): over seeds 0-4, both inputs, every run
scored 100 at 80 steps either way, and at 70 both ways failed the same one seed (tokenizer, seed 4)."""


def _run(task: Task, data: TaskData, model, tokenizer, lr=2e-3, seed=0) -> dict:
    return run_one(task, model, tokenizer, prepare(task, tokenizer, data), lr=lr, seed=seed)


def _task(**kw) -> Task:
    return Task(
        **{"description": "fixture", "loader": lambda: None, "finetune": FAST, "max_length": 64, **kw}
    )


@pytest.mark.parametrize("pooling", ["mean", "first"])
def test_sequence_classification_learns(model, tokenizer, pooling):
    task = _task(name="sc", options=SCOptions(labels=("neg", "pos"), pooling=pooling), metric="accuracy")
    data = TaskData(train=sc_examples(256, 0), val=sc_examples(64, 1), tests={"test": sc_examples(128, 2)})
    out = _run(task, data, model, tokenizer)
    assert out["test"]["test"]["accuracy"] > 90  # chance is 50
    assert out["steps"] == FAST.max_steps


def test_token_classification_learns(model, tokenizer):
    task = _task(name="tc", options=TCOptions(labels=("O", "B-PER", "B-LOC", "I-LOC")), metric="entity_f1")
    data = TaskData(train=tc_examples(256, 0), val=tc_examples(32, 1), tests={"test": tc_examples(64, 2)})
    test = _run(task, data, model, tokenizer)["test"]["test"]
    assert test["entity_f1"] > 85 and test["seqeval"]["mode"] == "strict"


@pytest.mark.parametrize("inputs", ["tokenizer", "eos"])
def test_token_classification_on_every_subword_learns(model, tokenizer, inputs):
    task = _task(
        name="tc-all",
        options=TCOptions(labels=("O", "B-PER", "B-LOC", "I-LOC"), subword_labels="all"),
        metric="sentence_macro_f1",
        inputs=inputs,
    )
    data = TaskData(train=tc_examples(256, 0), val=tc_examples(32, 1), tests={"test": tc_examples(64, 2)})
    test = _run(task, data, model, tokenizer)["test"]["test"]
    # an all-O tagger scores about 45 here (1 on all-O sentences, 1/k on the others)
    assert test["sentence_macro_f1"] > 85 and test["entity_f1"] > 85


@pytest.mark.parametrize("inputs", ["tokenizer", "eos"])
def test_qa_by_answer_tagging_learns(model, tokenizer, inputs):
    # (with paper 1's longer `Question: ...\nContext: ` segment the tiny model needs 3x the steps)
    options = QAOptions(head="tagger")
    task = _task(
        name="qa-tag", options=options, metric="position_f1", max_length=48, inputs=inputs, finetune=SLOW
    )
    data = TaskData(
        train=qa_examples(256, 0, 0.2), val=qa_examples(32, 1, 0.2), tests={"test": qa_examples(64, 2, 0.2)}
    )
    test = _run(task, data, model, tokenizer)["test"]["test"]
    # tagging nothing scores only the unanswerable fifth
    assert test["position_f1"] > 80 and test["exact_positions"] > 60


def test_extractive_qa_learns(model, tokenizer):
    task = _task(name="qa", options=QAOptions(stride=8), metric="f1", max_length=24)
    data = TaskData(train=qa_examples(256, 0), val=qa_examples(32, 1), tests={"test": qa_examples(64, 2)})
    test = _run(task, data, model, tokenizer)["test"]["test"]
    # 16 candidate answers and ~20 positions: guessing scores a few percent.
    assert test["f1"] > 80


def test_extractive_qa_v2_predicts_no_answer(model, tokenizer):
    task = _task(name="qa2", options=QAOptions(v2=True, stride=16), metric="f1")
    data = TaskData(
        train=qa_examples(256, 0, unanswerable=0.4),
        val=qa_examples(32, 1, 0.4),
        tests={"test": qa_examples(96, 2, 0.4)},
    )
    test = _run(task, data, model, tokenizer)["test"]["test"]
    assert test["NoAns_f1"] > 80 and test["HasAns_f1"] > 60


def test_retrieval_learns(model, tokenizer):
    rng = random.Random(5)
    corpus = {f"doc-{t}": " ".join(filler(rng, 4) + [t] + filler(rng, 4)) for t in TOPICS}
    split = IRSplit(
        queries={f"q-{t}": f"about {t}" for t in TOPICS},
        corpus=corpus,
        qrels={f"q-{t}": {f"doc-{t}": 1} for t in TOPICS},
    )
    task = _task(name="ir", options=IROptions(), metric="ndcg@10")
    data = TaskData(train=ir_pairs(512, 0), val=split, tests={"test": split})
    test = _run(task, data, model, tokenizer)["test"]["test"]
    assert test["ndcg@10"] > 80 and test["corpus"] == len(TOPICS)  # random ranking: about 30


def test_pooling_ignores_padding():
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])
    mask = torch.tensor([[True, True, False]])
    assert torch.equal(mean_pool(hidden, mask), torch.tensor([[2.0, 3.0]]))
    assert torch.equal(first_token_pool(hidden, mask), torch.tensor([[1.0, 2.0]]))


def test_info_nce_matches_cross_entropy_and_masks_duplicate_positives():
    torch.manual_seed(0)
    q = torch.nn.functional.normalize(torch.randn(3, 4), dim=-1)
    d = torch.nn.functional.normalize(torch.randn(3, 4), dim=-1)
    expected = torch.nn.functional.cross_entropy(20 * q @ d.T, torch.arange(3))
    assert torch.allclose(info_nce(q, d, ["a", "b", "c"]), expected)
    # Row 0 and row 2 share a document: neither counts as the other's negative.
    logits = 20 * q @ d.T
    manual = torch.stack(
        [
            -torch.log_softmax(logits[0, [0, 1]], 0)[0],
            -torch.log_softmax(logits[1], 0)[1],
            -torch.log_softmax(logits[2, [1, 2]], 0)[1],
        ]
    ).mean()
    assert torch.allclose(info_nce(q, d, ["a", "b", "a"]), manual)


def test_qa_decoding_respects_context_length_and_null():
    import numpy as np

    from encoderlab.eval.qa import decode

    example = {"id": "q", "context": "abc def ghi"}
    # tokens: 0 = null/BOS, 1 = question (outside the context), 2..4 = the three context words
    offsets = [None, None, (0, 3), (4, 7), (8, 11)]
    feature = {"example": 0, "offsets": offsets}
    start = np.array([0.0, 9.0, 1.0, 5.0, 0.0])  # the best start (the question token) is not in the context
    end = np.array([0.0, 9.0, 0.0, 1.0, 4.0])
    answers, na = decode([example], [feature], [start], [end])
    assert answers == {"q": "def ghi"} and na["q"] == -np.inf  # 5 + 4 beats 5 + 1
    answers, _ = decode([example], [feature], [start], [end], max_answer_tokens=1)
    assert answers == {"q": "def"}
    start[0] = end[0] = 6.0  # null score 12 > best span 9: SQuAD v2 answers nothing
    answers, na = decode([example], [feature], [start], [end], allow_null=True)
    assert answers == {"q": ""} and na["q"] == 3.0


@pytest.mark.parametrize("pooling", ["late", "mean", "first"])
def test_the_dense_head_is_eurobert_sequence_classification(tmp_path, model, tokenizer, pooling):
    from transformers import EuroBertForSequenceClassification

    from encoderlab.eval.heads import SequenceClassifier
    from encoderlab.model.export import export_hf

    export_hf(model, tokenizer, tmp_path / "hf")
    hf_pooling = "bos" if pooling == "first" else pooling
    ref = EuroBertForSequenceClassification.from_pretrained(
        str(tmp_path / "hf"), num_labels=3, classifier_pooling=hf_pooling
    ).eval()
    head = SequenceClassifier(model, 3, pooling, head="eurobert").eval()
    with torch.no_grad():
        head.dense[0].load_state_dict(ref.dense.state_dict())
        head.classifier.load_state_dict(ref.classifier.state_dict())
        ids = torch.randint(5, len(tokenizer), (3, 12), generator=torch.Generator().manual_seed(0))
        mask = torch.ones_like(ids, dtype=torch.bool)
        mask[1, 7:] = False  # a padded row
        mask[2, 3:] = False
        want = ref(input_ids=ids, attention_mask=mask.long()).logits
        assert (head(ids, mask) - want).abs().max() <= 1e-4


def test_late_pooling_needs_the_eurobert_head():
    for head in ("linear", "modernbert"):
        with pytest.raises(ValueError, match="needs head 'eurobert'"):
            SCOptions(pooling="late", head=head)
    assert SCOptions(pooling="late", head="eurobert").head == "eurobert"


class _HFBackbone(torch.nn.Module):
    """A transformers encoder behind the LanguageModel call the heads make."""

    def __init__(self, hf):
        super().__init__()
        self.hf, self.config = hf, type("Config", (), {"hidden_size": hf.config.hidden_size})()

    def forward(self, ids, padding_mask=None, attention_mode="bidirectional"):
        out = self.hf(input_ids=ids, attention_mask=padding_mask.long())
        return type("Out", (), {"last_hidden_state": out.last_hidden_state})()


@pytest.mark.parametrize("pooling", ["mean", "first"])
def test_the_modernbert_head_is_modernbert_sequence_classification(pooling):
    from transformers import ModernBertConfig, ModernBertForSequenceClassification

    from encoderlab.eval.heads import SequenceClassifier

    torch.manual_seed(0)
    config = ModernBertConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=2,
        pad_token_id=0,
        num_labels=3,
        classifier_pooling="cls" if pooling == "first" else "mean",
        attn_implementation="eager",
    )
    ref = ModernBertForSequenceClassification(config).eval()
    head = SequenceClassifier(_HFBackbone(ref.model), 3, pooling, head="modernbert").eval()
    with torch.no_grad():
        head.dense[0].load_state_dict(ref.head.dense.state_dict())
        head.dense[2].load_state_dict(ref.head.norm.state_dict())
        head.classifier.load_state_dict(ref.classifier.state_dict())
        ids = torch.randint(5, 64, (3, 10), generator=torch.Generator().manual_seed(1))
        mask = torch.ones_like(ids, dtype=torch.bool)
        mask[1, 6:] = False
        want = ref(input_ids=ids, attention_mask=mask.long()).logits
        assert (head(ids, mask) - want).abs().max() <= 1e-5


def test_a_seed_fixes_the_run_and_another_seed_changes_head_and_data_order(model, tokenizer):
    """The run seed fixes the head initialisation and the data order (the only randomness of a run), so
    a node reruns to the same scores and the seeds of the grid are replicates, not copies."""
    from encoderlab.eval.finetune import batches, fine_tune

    quick = FinetuneConfig(batch_size=8, micro_batch_size=4, max_steps=6)
    task = _task(name="sc", options=SCOptions(labels=("neg", "pos")), metric="accuracy", finetune=quick)
    data = TaskData(train=sc_examples(32, 0), val=sc_examples(8, 1), tests={"test": sc_examples(16, 2)})
    prepared = prepare(task, tokenizer, data)
    runs = [run_one(task, model, tokenizer, prepared, lr=1e-3, seed=s) for s in (0, 0, 1)]
    assert runs[0]["final_loss"] == runs[1]["final_loss"] and runs[0]["predictions"] == runs[1]["predictions"]
    assert runs[0]["final_loss"] != runs[2]["final_loss"]
    heads = [fine_tune(task, model, prepared, lr=0.0, seed=s).head.classifier.weight for s in (0, 0, 1)]
    assert torch.equal(heads[0], heads[1]) and not torch.equal(heads[0], heads[2])
    first = [next(batches(32, 8, s)) for s in (0, 0, 1)]
    assert first[0] == first[1] != first[2]


def test_bf16_weights_lose_the_updates_below_their_spacing_as_encodevals_cast_does(model, tokenizer):
    """`weights: bf16` trains a bf16 copy (weights and AdamW moments), as EncodEval's `model.to(bf16)`:
    at LR 1e-5 an update (about the LR) is below half the bf16 spacing of a weight of 0.02 (1.2e-4),
    so most matrix weights keep their value, while most fp32 weights move."""
    from encoderlab.eval.finetune import fine_tune

    data = TaskData(train=sc_examples(32, 0), val=sc_examples(8, 1), tests={"test": sc_examples(16, 2)})
    kept = {}
    for weights in ("fp32", "bf16"):
        quick = FinetuneConfig(
            batch_size=8, micro_batch_size=8, max_steps=4, warmup_ratio=0.0, weights=weights
        )
        task = _task(name="sc", options=SCOptions(labels=("neg", "pos")), metric="accuracy", finetune=quick)
        head = fine_tune(task, model, prepare(task, tokenizer, data), lr=1e-5, seed=0).head
        start = dict(model.named_parameters())
        trained = {k.removeprefix("model."): v for k, v in head.named_parameters()}
        assert {p.dtype for p in trained.values()} == {
            getattr(torch, {"fp32": "float32", "bf16": "bfloat16"}[weights])
        }
        big = [k for k, p in start.items() if p.ndim == 2 and k in trained]
        same = sum(int((trained[k].float() == start[k].to(trained[k].dtype).float()).sum()) for k in big)
        kept[weights] = same / sum(start[k].numel() for k in big)
    assert kept["fp32"] < 0.25 and kept["bf16"] > 0.75, kept


def test_qa_windows_shorter_than_the_stride_are_refused_naming_where_to_set_it(tokenizer):
    """The line said "lower stride" without saying where a task file sets it, or to what."""
    from encoderlab.errors import UserError
    from encoderlab.eval.qa import _encode

    examples = qa_examples(4, 0)
    with pytest.raises(
        UserError,
        match=r"not more than the stride 128; raise max_length, or lower the stride below (\d+) \(a task file's `options: \{stride: N\}`\)$",
    ) as refused:
        _encode(tokenizer, examples, 64, 128, "span")
    below = int(refused.value.args[0].rsplit("below ", 1)[1].split()[0])
    _encode(tokenizer, examples, 64, below - 1, "span")  # the stride it names works


def test_a_micro_batch_without_a_labelled_word_keeps_the_weights_finite(model, tokenizer):
    # was: cross-entropy's mean over no labelled position is NaN, and its gradient made every weight NaN
    # (a sentence of words that tokenise to nothing, here a zero-width space, in a micro-batch of one)
    task = _task(
        name="tc-empty",
        options=TCOptions(labels=("O", "B-PER", "B-LOC", "I-LOC")),
        metric="entity_f1",
        finetune=FinetuneConfig(batch_size=2, micro_batch_size=1, max_steps=6, warmup_ratio=0.0),
    )
    train = [{"tokens": ["\u200b"], "tags": [0]}] * 4 + tc_examples(8, 0)
    data = TaskData(train=train, val=tc_examples(4, 1), tests={"test": tc_examples(4, 2)})
    prepared = prepare(task, tokenizer, data)
    assert all(label == -100 for label in prepared.train[0]["labels"])
    tuned = fine_tune(task, model, prepared, lr=1e-3, seed=0)
    assert all(math.isfinite(loss) for loss in tuned.losses)
    assert all(torch.isfinite(p).all() for p in tuned.head.parameters())


def test_qa_windows_the_question_fills_name_the_max_length_that_works(tokenizer):
    # was: "leave -9 context tokens ... lower the stride below -9", a stride no window can have
    from encoderlab.errors import UserError
    from encoderlab.eval.qa import _encode, longest_question

    examples = qa_examples(4, 0)
    longest = longest_question(tokenizer, [e["question"] for e in examples])
    with pytest.raises(
        UserError, match=rf"^task span: QA windows .* raise max_length above {longest + 8} \(the question"
    ) as refused:
        _encode(tokenizer, examples, longest - 1, 8, "span")
    assert "lower the stride" not in str(refused.value)
    _encode(tokenizer, examples, longest + 9, 8, "span")  # the max_length it names works


def test_a_tagger_window_the_question_fills_is_one_line(tokenizer):
    # was: the tokenizer's "Truncation error: Sequence to truncate too short", a traceback
    from encoderlab.errors import UserError
    from encoderlab.eval.answer_tagger import encode

    options = QAOptions(head="tagger", question_template="Question: {question}\nContext: ")
    task = _task(name="tagger", options=options, metric="position_f1", max_length=6)
    with pytest.raises(UserError, match=r"^task tagger: QA windows of 6 tokens leave no context token after"):
        encode(task, tokenizer, qa_examples(4, 0))


@pytest.mark.parametrize("family", ["sc", "tc", "ir"])
@pytest.mark.parametrize("max_length", [1, 2])
def test_a_max_length_the_special_tokens_fill_is_one_line(tokenizer, family, max_length):
    # was: at 2 (BOS and EOS) every input held no text; at 1 the tokenizer truncated nothing at all
    from encoderlab.errors import UserError

    assert tokenizer.num_special_tokens_to_add() == 2
    options = {
        "sc": SCOptions(labels=("neg", "pos")),
        "tc": TCOptions(labels=("O", "B-PER", "B-LOC", "I-LOC")),
    }
    examples = {"sc": sc_examples, "tc": tc_examples}
    if family == "ir":
        val = IRSplit({"q": "what red"}, {"d": "red"}, {"q": {"d": 1}})
        data = TaskData(train=ir_pairs(8, 0), val=val, tests={"test": val})
        task = _task(name="x", options=IROptions(), metric="ndcg@10", max_length=max_length)
    else:
        ex = examples[family]
        data = TaskData(train=ex(8, 0), val=ex(4, 1), tests={"test": ex(4, 2)})
        task = _task(name="x", options=options[family], metric="accuracy", max_length=max_length)
    with pytest.raises(UserError, match=rf"^task x: max_length {max_length} leaves no room for text after"):
        prepare(task, tokenizer, data)
    prepare(dataclasses.replace(task, inputs="eos"), tokenizer, data)  # no special tokens to fill it
