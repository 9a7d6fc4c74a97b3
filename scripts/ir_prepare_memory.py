"""Memory of tokenising an IR task's training pairs (`finetune.prepare`, the step a grid's nodes share).

docs/benchmarks.md quotes this measurement; it is how to take it again:

    OMP_NUM_THREADS=1 python scripts/ir_prepare_memory.py [PAIRS] [--tracemalloc]

It builds PAIRS (default 300,000) synthetic query/passage pairs shaped like msmarco-pairs (paper 1's IR
training set: a question of 4-12 words, a passage of 30-80), a byte-level BPE tokenizer of 8,000 tokens
trained on the same words, and prepares paper 1's `paper-msmarco` task on them (EncodEval's `eos` inputs,
a ModernBERT-length `max_length`). It prints the token count, the process's resident memory added by the
prepared splits once done (RSS after minus RSS before) and its peak above the loaded pairs while
preparing (`ru_maxrss` minus RSS before). The pairs' texts are held by the caller either way and are not
in these figures. `--tracemalloc` also prints the bytes of Python objects and numpy arrays the splits
hold and the traced peak; it keeps a trace per allocated block, so on the old layout (one int object
per token) it used about 7 GB and ran several times slower: use it on a few thousand pairs there.
"""

import random
import resource
import sys
import time
import tracemalloc

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from encoderlab.eval.finetune import prepare
from encoderlab.eval.spec import IRSplit, TaskData
from encoderlab.eval.tasks import TASKS

WORDS = 5000
SPECIALS = {"pad": "<pad>", "bos": "<s>", "eos": "</s>", "unk": "<unk>"}


def _words(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(WORDS)]


def _tokenizer(words: list[str], rng: random.Random) -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE(unk_token=SPECIALS["unk"]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=8000,
        special_tokens=list(SPECIALS.values()),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator((" ".join(rng.choices(words, k=60)) for _ in range(5000)), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, **{f"{r}_token": t for r, t in SPECIALS.items()})


def _data(n: int, words: list[str], rng: random.Random) -> TaskData:
    def text(lo: int, hi: int) -> str:
        return " ".join(rng.choices(words, k=rng.randint(lo, hi)))

    train = [{"query": text(4, 12), "document": text(30, 80), "doc_id": f"d{i}"} for i in range(n)]
    small = IRSplit(
        queries={f"q{i}": text(4, 12) for i in range(50)},
        corpus={f"c{i}": text(30, 80) for i in range(200)},
        qrels={f"q{i}": {f"c{i}": 1} for i in range(50)},
    )
    return TaskData(train=train, val=small, tests={"test": small})


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--tracemalloc"]
    traced = "--tracemalloc" in sys.argv[1:]
    n = int(args[0]) if args else 300_000
    rng = random.Random(0)
    words = _words(rng)
    tokenizer = _tokenizer(words, rng)
    data = _data(n, words, rng)
    task = TASKS["paper-msmarco"].resolve_pooling("mean").for_model(8192)
    if traced:
        tracemalloc.start()
    before, rss = tracemalloc.get_traced_memory()[0], _rss()
    start = time.perf_counter()
    prepared = prepare(task, tokenizer, data)
    seconds = time.perf_counter() - start
    held, peak = tracemalloc.get_traced_memory()
    rss_held, rss_peak = _rss() - rss, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss
    tokens = sum(len(f["query"]) + len(f["doc"]) for f in prepared.train)
    mib = 1 << 20
    print(
        f"{n:,} pairs, {tokens:,} training tokens ({tokens / n:.1f} per pair): prepared splits hold "
        f"{rss_held / mib:,.0f} MiB of RSS ({rss_held / tokens:.1f} bytes per token), peak "
        f"{rss_peak / mib:,.0f} MiB above the loaded pairs; {seconds:.0f} s"
    )
    if traced:
        print(
            f"tracemalloc: {(held - before) / mib:,.0f} MiB held ({(held - before) / tokens:.1f} bytes per "
            f"token), peak {(peak - before) / mib:,.0f} MiB"
        )


if __name__ == "__main__":
    main()
