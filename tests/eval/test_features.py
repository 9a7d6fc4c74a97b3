"""Model inputs (`eval/features.py`): `eos` inputs, and words tokenised as running text.

The word tests use a byte-level BPE tokenizer in Llama 3's layout (regex split, then ByteLevel, no
prefix space), the layout of EuroBERT's and of encoderlab's own tokenizers: fed pre-split words,
it encodes every word as if it began the text, which is how token classification used to encode.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
import torch
from tests.eval.conftest import (
    FILLER,
    NAMES,
    TOPICS,
    byte_level_tokenizer,
    encoderlab_bpe_tokenizer,
    make_tokenizer,
    vocabulary_texts,
)

from encoderlab.errors import UserError
from encoderlab.eval.families import TokenClassification, family_ops
from encoderlab.eval.features import IGNORE, encode_texts, encode_words
from encoderlab.eval.spec import IROptions, IRSplit, SCOptions, Task, TaskData, TCOptions

WORDS = FILLER + NAMES + TOPICS + ["U.S.", "don't", "co-op", "naïve", "3.5%", "(x)"]


@pytest.fixture(scope="module")
def byte_level():
    return byte_level_tokenizer(WORDS)


def _sentences(n: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [rng.choices(WORDS, k=rng.randint(1, 10)) for _ in range(n)]


def test_words_are_tokenised_as_running_text_not_one_by_one(byte_level):
    words = ["the", "red", "alice", "Paris"]
    (feature,) = encode_words(byte_level, [words], [[0, 1, 0, 2]], 64)
    assert feature["input_ids"] == byte_level(" ".join(words))["input_ids"]
    assert feature["words"] == [0, 1, 2, 3]
    tokens = byte_level.convert_ids_to_tokens(feature["input_ids"])
    firsts = [t for t, lab in zip(tokens, feature["labels"]) if lab != IGNORE]
    assert firsts[0] == "the" and all(t.startswith("Ġ") for t in firsts[1:])  # ' red', not 'red'
    assert byte_level.convert_ids_to_tokens(byte_level(["red"], is_split_into_words=True)["input_ids"]) == [
        "red"
    ]


def _encodeval_owners(offsets, words) -> list[int | None]:
    """A restatement of EncodEval's walk from subword offsets to word indices (TokenClassificationEval):
    move to the next word while the token starts at or past the end of the current one."""
    owners, word, char = [], 0, 0
    for start, end in offsets:
        if (start, end) == (0, 0):
            owners.append(None)
            continue
        while word < len(words) and start >= char + len(words[word]):
            char += len(words[word]) + 1
            word += 1
        owners.append(word if word < len(words) else None)
    return owners


@pytest.mark.parametrize("which", ["byte-level", "bert-like", "encoderlab-bpe"])
def test_subwords_map_to_words_as_encodevals_walk_maps_them(byte_level, which):
    tok = {
        "byte-level": lambda: byte_level,
        "bert-like": lambda: make_tokenizer(vocabulary_texts()),
        "encoderlab-bpe": lambda: encoderlab_bpe_tokenizer(WORDS),
    }[which]()
    sentences = _sentences(200, 1)
    if which == "encoderlab-bpe":  # unseen words: spaces it never merged are tokens of empty offsets
        sentences += [["the", "zq", "Ωx", "red"], ["½", "cat", "jjz"]]
    features = encode_words(tok, sentences, [[5] * len(s) for s in sentences], 512, all_subwords=True)
    for words, f in zip(sentences, features):
        enc = tok(" ".join(words), return_offsets_mapping=True)
        owners = _encodeval_owners(enc["offset_mapping"], words)
        assert f["words"] == [w for w in owners if w is not None]
        assert [lab != IGNORE for lab in f["labels"]] == [w is not None for w in owners]
        assert set(f["words"]) == set(range(len(words)))  # every word has a subword


def test_first_or_every_subword_is_labelled(byte_level):
    words, tags = ["naïve", "co-op", "U.S."], [1, 2, 3]
    first, every = (encode_words(byte_level, [words], [tags], 64, all_subwords=a)[0] for a in (False, True))
    assert [lab for lab in first["labels"] if lab != IGNORE] == tags
    assert len(every["words"]) == len(every["input_ids"]) > len(words)
    assert [tags[w] for w in every["words"]] == every["labels"]


def test_eos_inputs_append_the_end_token_without_other_specials(byte_level):
    bert_like = make_tokenizer(vocabulary_texts())
    ids = encode_texts(bert_like, ["the red cat", "a b"], 64, "eos")
    bare = bert_like(["the red cat", "a b"], add_special_tokens=False)["input_ids"]
    assert ids == [b + [bert_like.eos_token_id] for b in bare]
    assert encode_texts(bert_like, ["the red cat"], 64)[0][0] == bert_like.bos_token_id
    # truncation keeps the first tokens and loses the end token, as EncodEval's text + EOS does
    assert encode_texts(bert_like, ["the red cat"], len(bare[0]), "eos") == [bare[0]]
    (feature,) = encode_words(byte_level, [["the", "cat"]], [[1, 2]], 64, inputs="eos")
    assert feature["input_ids"][-1] == byte_level.eos_token_id and feature["labels"][-1] == IGNORE


def test_eos_inputs_use_sep_without_eos_and_refuse_a_tokenizer_with_neither():
    tok = make_tokenizer(vocabulary_texts())
    tok.eos_token = None
    tok.sep_token = "[EOS]"
    assert encode_texts(tok, ["a"], 8, "eos")[0][-1] == tok.convert_tokens_to_ids("[EOS]")
    tok.sep_token = None
    with pytest.raises(UserError, match="neither an EOS nor a SEP"):
        encode_texts(tok, ["a"], 8, "eos")


def _first_inputs(task: Task, tok, data: TaskData) -> list[list[int]]:
    prepared = family_ops(task).prepare(task, tok, data)
    if task.family == "ir":
        return [prepared.train[0]["query"], prepared.train[0]["doc"], *prepared.val["queries"]]
    return [prepared.train[0]["input_ids"], prepared.tests["test"][0]["input_ids"]]


@pytest.mark.parametrize(
    "options",
    [
        SCOptions(labels=("n", "p"), pooling="first"),
        SCOptions(regression=True, pooling="first"),  # regression encoded its texts without the start token
        IROptions(pooling="first"),
    ],
)
def test_eos_inputs_put_the_start_token_where_first_pooling_reads(options):
    # `pooling: first` read the text's first word with `eos` inputs (no BOS/CLS there); EncodEval puts
    # BOS first for its `bos` pooling.
    tok = make_tokenizer(vocabulary_texts())
    split = [{"text": "the red cat", "label": 0, "target": 0.5}]
    data = TaskData(split, split, {"test": split})
    if isinstance(options, IROptions):
        evaluation = IRSplit({"q": "the red cat"}, {"d": "a b"}, {"q": {"d": 1}})
        data = TaskData(
            [{"query": "the red cat", "document": "a b", "doc_id": "d"}], evaluation, {"test": evaluation}
        )
    task = Task(name="t", description="", options=options, metric="x", loader=lambda: data, inputs="eos")
    inputs = _first_inputs(task, tok, data)
    assert all(ids[0] == tok.bos_token_id and ids[-1] == tok.eos_token_id for ids in inputs)
    mean = dataclasses.replace(task, options=dataclasses.replace(options, pooling="mean"))
    assert all(ids[0] != tok.bos_token_id for ids in _first_inputs(mean, tok, data))  # unchanged
    tok.bos_token = tok.cls_token = None
    with pytest.raises(UserError, match="neither a BOS nor a CLS token"):
        family_ops(task).prepare(task, tok, data)


class _Fixed(torch.nn.Module):
    """A 'model' whose logits per position are given."""

    def __init__(self, logits: torch.Tensor):
        super().__init__()
        self.logits = torch.nn.Parameter(logits)

    def forward(self, ids, mask, segment_ids=None):  # a head's arguments (`batching.model_inputs`)
        return self.logits[None, : ids.shape[1]]


def test_a_word_takes_the_majority_tag_of_its_subwords_ties_to_the_lowest_id():
    task = Task(
        name="t",
        description="",
        options=TCOptions(labels=("O", "A", "B"), subword_labels="all"),
        metric="sentence_macro_f1",
        loader=lambda: None,
    )
    # word 0: subwords say B, A, B -> B; word 1: B, A -> tie -> A (id 1)
    feature = {"input_ids": [5] * 5, "labels": [0] * 5, "words": [0, 0, 0, 1, 1], "gold": [2, 1]}
    logits = torch.nn.functional.one_hot(torch.tensor([2, 1, 2, 2, 1]), 3).float()
    (row,) = TokenClassification.predict(task, _Fixed(logits), [feature])
    assert row["pred"] == ["B", "A"] and row["gold"] == ["B", "A"]


def test_words_lost_to_truncation_are_filled_with_o_and_listed_unread():
    # was: their 'O' read as the tagger's, so `constant` missed a tagger of one tag on the words it read
    task = Task(name="t", description="", options=TCOptions(labels=("CAP", "LOW")), metric="accuracy",
                loader=lambda: None)  # fmt: skip
    feature = {"input_ids": [5] * 2, "labels": [1, 1], "words": [0, 1], "gold": [1, 1, 0, 1]}
    logits = torch.nn.functional.one_hot(torch.tensor([1, 1]), 2).float()
    (row,) = TokenClassification.predict(task, _Fixed(logits), [feature])
    assert row["pred"] == ["LOW", "LOW", "O", "O"] and row["unread"] == [2, 3]
    whole = {**feature, "gold": [1, 1]}
    assert "unread" not in TokenClassification.predict(task, _Fixed(logits), [whole])[0]


def test_split_words_are_handed_over_pre_split_as_paper_2s_code_does(byte_level):
    words = ["the", "red", "alice"]
    (feature,) = encode_words(byte_level, [words], [[0, 1, 2]], 64, split_words=True)
    enc = byte_level(words, is_split_into_words=True)
    assert feature["input_ids"] == enc["input_ids"]
    assert byte_level.convert_ids_to_tokens(feature["input_ids"]) == ["the", "red", "alice"]  # no 'Ġred'
    assert feature["words"] == [0, 1, 2] and feature["labels"] == [0, 1, 2]
