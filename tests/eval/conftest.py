"""Tiny synthetic tasks in the real example schemas, a WordPiece tokenizer trained on them and a
small random `Encoder`: enough for each head to learn its task well above chance in seconds."""

from __future__ import annotations

import random

import pytest
import torch

from encoderlab.model import Encoder, ModelConfig

FILLER = [
    "a",
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "on",
    "with",
    "as",
    "by",
    "at",
    "from",
    "it",
    "that",
    "this",
    "an",
    "be",
    "or",
    "are",
]
NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"]
TOPICS = [
    "red",
    "blue",
    "green",
    "yellow",
    "purple",
    "orange",
    "black",
    "white",
    "brown",
    "pink",
    "gray",
    "gold",
    "silver",
    "violet",
    "cyan",
    "teal",
]
POSITIVE, NEGATIVE = ["good", "great", "fine"], ["bad", "awful", "poor"]


def filler(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(FILLER) for _ in range(n)]


def vocabulary_texts() -> list[str]:
    words = (
        FILLER
        + NAMES
        + TOPICS
        + POSITIVE
        + NEGATIVE
        + ["what", "code", "color", "about", "find", "document", "query", ":", "?", ".", "new", "york"]
    )
    return [" ".join(words)] * 20


def make_tokenizer(texts: list[str]):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[BOS]", "[EOS]", "[MASK]", "[UNK]"]
    # BPE, not WordPiece: tokenizers' WordPiece trainer gives another vocabulary in every process
    # (huggingface/tokenizers#1794), which made fine-tuning scores differ from run to run.
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(
        texts, trainers.BpeTrainer(vocab_size=300, special_tokens=specials, show_progress=False)
    )
    tok.post_processor = processors.TemplateProcessing(
        single="[BOS] $A [EOS]",
        pair="[BOS] $A [EOS] $B:1 [EOS]:1",
        special_tokens=[("[BOS]", 1), ("[EOS]", 2)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="[PAD]",
        bos_token="[BOS]",
        eos_token="[EOS]",
        mask_token="[MASK]",
        unk_token="[UNK]",
    )


def byte_level_tokenizer(words: list[str]):
    """A byte-level BPE tokenizer in Llama 3's layout (regex split, then ByteLevel, no prefix space:
    EuroBERT's and encoderlab's own), trained on random sentences of `words`; no post-processor."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    split = pre_tokenizers.Split(Regex(r"\s?\w+|\s?[^\w\s]+|\s+"), "isolated")
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [split, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=500,
        special_tokens=["<s>", "</s>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    rng = random.Random(0)
    tok.train_from_iterator([" ".join(rng.choices(words, k=12)) for _ in range(400)], trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>")


def encoderlab_bpe_tokenizer(words: list[str]):
    """encoderlab's own byte-level BPE (`data.tokenizer_training`: GPT-2's regex, offsets trimmed of
    spaces), trained on random sentences of `words`: a space whose merge it has not learned is a token of
    its own with empty offsets (start == end, not (0, 0))."""
    from transformers import PreTrainedTokenizerFast

    from encoderlab.data.tokenizer_training import DEFAULT_SPECIALS, _build

    tok, trainer = _build("bpe", DEFAULT_SPECIALS, 400, False, False)
    rng = random.Random(0)
    tok.train_from_iterator([" ".join(rng.choices(words, k=12)) for _ in range(400)], trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, **{f"{r}_token": t for r, t in DEFAULT_SPECIALS.items()}
    )


@pytest.fixture(autouse=True)
def _one_thread():
    """These models are so small that a second thread only adds synchronisation (and on a shared,
    loaded machine OpenMP barriers make 2 threads several times slower than 1)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def isolated_tasks(tmp_path, monkeypatch):
    """A private `datasets` cache, and the task registry put back after the test (task files register
    their tasks), for the modules that load task files (`pytestmark = pytest.mark.usefixtures(...)`)."""
    import datasets

    from encoderlab.eval.tasks import TASKS

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr("encoderlab.eval.tasks.registry.TASKS", TASKS)  # the same dict, restored below
    before = dict(TASKS)
    yield
    TASKS.clear()
    TASKS.update(before)


@pytest.fixture(scope="session")
def tokenizer():
    return make_tokenizer(vocabulary_texts())


@pytest.fixture(scope="session")
def bert_tokenizer(tokenizer):
    """The fixture tokenizer giving `token_type_ids`, as BERT's does (QA pairs' segment ids)."""
    import copy

    typed = copy.deepcopy(tokenizer)
    typed.model_input_names = ["input_ids", "token_type_ids", "attention_mask"]
    return typed


def tiny_model(vocab_size: int, seed: int = 0) -> Encoder:
    torch.manual_seed(seed)
    cfg = ModelConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        n_layers=2,
        n_heads=4,
        n_kv_heads=2,
        head_dim=16,
        intermediate_size=128,
        max_seq_len=256,
    )
    return Encoder(cfg)


@pytest.fixture
def model(tokenizer):
    return tiny_model(len(tokenizer))


def sc_examples(n: int, seed: int) -> list[dict]:
    """Sentiment: the label is whether the one sentiment word is positive (single) ."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        label = rng.randrange(2)
        words = filler(rng, 6)
        words.insert(rng.randrange(7), rng.choice(POSITIVE if label else NEGATIVE))
        out.append({"text": " ".join(words), "label": label})
    return out


def tc_examples(n: int, seed: int) -> list[dict]:
    """NER: names are B-PER, "new york" is B-LOC I-LOC, everything else O (tag ids: O=0, B-PER=1, B-LOC=2, I-LOC=3)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        tokens, tags = [], []
        for _ in range(8):
            r = rng.random()
            if r < 0.2:
                tokens.append(rng.choice(NAMES))
                tags.append(1)
            elif r < 0.3:
                tokens += ["new", "york"]
                tags += [2, 3]
            else:
                tokens.append(rng.choice(FILLER))
                tags.append(0)
        out.append({"tokens": tokens, "tags": tags})
    return out


def qa_examples(n: int, seed: int, unanswerable: float = 0.0) -> list[dict]:
    """The answer is the word after "code is"; unanswerable contexts have no code."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = filler(rng, rng.randrange(4, 20))
        answers = []
        if rng.random() >= unanswerable:
            pos = rng.randrange(len(words) + 1)
            answer = rng.choice(TOPICS)
            words[pos:pos] = ["code", "is", answer]
            context = " ".join(words)
            start = len(" ".join(words[: pos + 2])) + 1
            answers = [{"text": answer, "answer_start": start}]
        else:
            context = " ".join(words)
        out.append(
            {"id": f"q{seed}-{i}", "question": "what is the code ?", "context": context, "answers": answers}
        )
    return out


def ir_pairs(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        topic = rng.choice(TOPICS)
        doc = filler(rng, 8)
        doc.insert(rng.randrange(9), topic)
        out.append({"query": f"about {topic}", "document": " ".join(doc), "doc_id": f"d{seed}-{i}"})
    return out


def flipped_validation(task, model, tokenizer, cfg):
    """Task data whose validation labels are flipped (the better the model learns, the worse validation
    gets, so the first epoch is the best while the correctly labelled test keeps improving), prepared,
    and a run by hand over `cfg`'s epochs: (prepared, [(val, test) accuracy after each epoch])."""
    import copy

    from encoderlab.eval.families import family_ops, score
    from encoderlab.eval.finetune import prepare, train
    from encoderlab.eval.spec import TaskData

    flipped = [{**e, "label": 1 - e["label"]} for e in sc_examples(64, 1)]
    data = TaskData(train=sc_examples(128, 0), val=flipped, tests={"test": sc_examples(64, 2)})
    prepared = prepare(task, tokenizer, data)
    torch.manual_seed(0)
    head = family_ops(task).build(task, copy.deepcopy(model))
    by_epoch = []

    def record(module, epoch):
        with torch.no_grad():
            val, test = (
                score(task, module, s)[0]["accuracy"] for s in (prepared.val, prepared.tests["test"])
            )
        by_epoch.append((val, test))

    train(head, family_ops(task).loss, prepared.train, lr=2e-3, seed=0, cfg=cfg, micro_batch_size=16,
          device=torch.device("cpu"), on_epoch_end=record)  # fmt: skip
    return prepared, by_epoch


def held_bytes(build) -> int:
    """Bytes of the Python heap that what `build()` returns holds while it is kept (tracemalloc)."""
    import tracemalloc

    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = build()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del kept
    return held
