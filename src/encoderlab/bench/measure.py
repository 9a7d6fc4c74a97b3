"""One `bench data` measurement, the side that runs in its own process: `python -m encoderlab.bench.measure
KIND CORPUS TOKENIZER WORKERS WORK`.

`bench/data.py` starts one such process per measurement (`data._run_isolated`) so that peak memory and
CPU time belong to that run alone and every pipeline starts cold; this module is all that process runs.
Split from `data.py` so the parent's side (the work folder, the corpus copies, the lock, the comparison)
and the child's side (the timed pipelines) are read apart, and the child imports nothing of the parent's.

The child answers on stdout, one JSON object as its last line: the measurement (`measured`), or, when a
write found no room (a full disk, a spent quota, a file past the size limit: `errors.no_room`, also where a
library wrapped it, as `prepare` does in `errors.DiskFull`), `{"no_room": {"errno", "filename"}}` with exit
`NO_ROOM_EXIT`, which the parent turns into its one line (`no_room_reported`). Any other failure is the
child's traceback on stderr, which the parent shows as it always did: a JSON protocol for every refusal
would move the child's own messages across the boundary for cases the parent already refuses up front
(a tokenizer that cannot load, a source that cannot be read).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from pathlib import Path

from encoderlab.atomic import json_text
from encoderlab.data.sources import SourceConfig
from encoderlab.errors import no_room

NO_ROOM_EXIT = 3
"""The measuring process's exit status when a write found no room (as the CLI's for a full disk)."""


class _TreeRss(threading.Thread):
    """Samples the summed USS (private memory) of this process and all its descendants every 50 ms.

    `ru_maxrss` cannot give this: RUSAGE_CHILDREN reports the largest single child, and a child
    forked from a large parent inherits the parent's high-water mark."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak_kb, self._done = 0, threading.Event()

    @staticmethod
    def _tree_kb(pid: int) -> int:
        total, stack = 0, [pid]
        while stack:
            p = stack.pop()
            try:
                # USS (private pages): pages shared with a forking parent or with other programs'
                # copies of the same libraries are not counted, so the sum is not inflated
                rollup = Path(f"/proc/{p}/smaps_rollup").read_text()
                total += sum(
                    int(rollup.split(f"\n{k}:")[1].split()[0]) for k in ("Private_Clean", "Private_Dirty")
                )
                for task in os.listdir(f"/proc/{p}/task"):
                    stack.extend(int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split())
            except (OSError, ValueError, IndexError):  # a process that just exited
                continue
        return total

    def run(self) -> None:
        while not self._done.wait(0.05):
            self.peak_kb = max(self.peak_kb, self._tree_kb(os.getpid()))

    def stop(self) -> float:
        self._done.set()
        self.join()
        return round(self.peak_kb / 1024, 1)


def measured(fn) -> dict:
    """Run `fn() -> tokens`; wall seconds, CPU seconds (process + workers), peak memory (main RSS,
    and the private memory (USS) of the whole process tree)."""
    sampler = _TreeRss()
    sampler.start()
    start = time.perf_counter()
    tokens = fn()
    seconds = time.perf_counter() - start
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "seconds": seconds,
        "tokens": tokens,
        "cpu_s": own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime,
        "peak_rss_main_mb": round(own.ru_maxrss / 1024, 1),
        "peak_uss_tree_mb": sampler.stop(),
    }


def measure_encoderlab(corpus: str, tokenizer: str, workers: int, work: str) -> dict:
    from encoderlab.data.prepare import PrepareConfig, prepare, read_meta

    cfg = PrepareConfig(sources=(SourceConfig(location=corpus),), tokenizer=tokenizer, decontaminate=())

    def run() -> int:
        out = prepare(cfg, Path(work) / "prepared", workers=workers, progress=False)
        return sum(s["tokens"] for s in read_meta(out)["splits"].values())

    return measured(run)


def _wrap(tok) -> tuple[list[int], list[int]]:
    """The ids `prepare` puts before and after each document (`data.prepare.wrap_ids`)."""
    from encoderlab.data.prepare import wrap_ids
    from encoderlab.data.tokenizer import spec_fields

    bos, eos = wrap_ids(spec_fields(tok))
    return [bos] if bos is not None else [], [eos] if eos is not None else []


def _hf_encoder(tok):
    """The `Dataset.map` function: the tokenizer's own call where its special tokens are `prepare`'s
    wrap (BERT's, the BPEs `data tokenizer` trains), else the plain encoding wrapped as `prepare`
    wraps it (GPT-style tokenizers add nothing and get one separator; Llama 3's add only a BOS)."""
    head, tail = _wrap(tok)
    probe = "a b"
    if tok(probe)["input_ids"] == head + tok(probe, add_special_tokens=False)["input_ids"] + tail:
        return lambda b: tok(b["text"], return_attention_mask=False)

    def wrapped(b):
        ids = tok(b["text"], add_special_tokens=False, return_attention_mask=False)["input_ids"]
        return {"input_ids": [head + x + tail for x in ids]}

    return wrapped


def measure_datasets(corpus: str, tokenizer: str, work: str, num_proc: int | None) -> dict:
    os.environ["HF_DATASETS_CACHE"] = str(Path(work) / "hf_cache")
    import datasets
    import pyarrow.compute as pc

    from encoderlab.data.tokenizer import load_tokenizer

    datasets.disable_progress_bars()

    def run() -> int:
        tok = load_tokenizer(tokenizer)
        ds = datasets.load_dataset("json", data_files=corpus, split="train")
        mapped = ds.map(
            _hf_encoder(tok),
            batched=True,
            num_proc=num_proc,
            remove_columns=ds.column_names,
        )
        return int(pc.sum(pc.list_value_length(mapped.data.column("input_ids"))).as_py())

    return measured(run)


def measure_floor(corpus: str, tokenizer: str) -> dict:
    """`tokenizers` alone: one thread, texts already in memory, no I/O (the CPU floor of pipelines on it)."""
    from tokenizers import Tokenizer

    from encoderlab.data.encode import whole_documents
    from encoderlab.data.tokenizer import load_tokenizer

    tok = load_tokenizer(tokenizer)
    wrap = sum(map(len, _wrap(tok)))
    backend = whole_documents(Tokenizer.from_str(tok.backend_tokenizer.to_str()))  # as `data prepare`
    with open(corpus, encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f]
    n_docs = len(texts)

    def run() -> int:
        start = time.process_time()
        n = sum(
            len(e.ids)
            for i in range(0, n_docs, 1000)
            for e in backend.encode_batch_fast(texts[i : i + 1000], add_special_tokens=False)
        )
        run.cpu = time.process_time() - start
        return n + wrap * n_docs  # the same bos/eos the pipelines add

    result = measured(run)
    result["cpu_s"] = run.cpu  # the tokenizer's CPU only, not reading the corpus
    return result


def measure(kind: str, corpus: str, tokenizer: str, workers: int, work: str) -> dict:
    """The measurement `kind` (`data.KINDS`, `data.FLOOR`) of `corpus` with `tokenizer`, writing in `work`."""
    if kind == "encoderlab":
        return measure_encoderlab(corpus, tokenizer, workers, work)
    if kind == "datasets":
        return measure_datasets(corpus, tokenizer, work, num_proc=workers if workers > 1 else None)
    if kind == "datasets_1proc":
        return measure_datasets(corpus, tokenizer, work, num_proc=None)
    if kind == "tokenizer_floor":
        return measure_floor(corpus, tokenizer)
    raise KeyError(kind)


def _room_in(exc: BaseException) -> OSError | None:
    """The no-room write behind `exc` or the exceptions it was raised from or during (`prepare` says a full
    disk as `errors.DiskFull` raised `from None`, which keeps the `OSError` as its context); else None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        room = no_room(exc)
        if room is not None:
            return room
        exc = exc.__cause__ or exc.__context__
    return None


def no_room_reported(returncode: int, stdout: str) -> OSError | None:
    """The no-room write a finished measuring process reported (`NO_ROOM_EXIT`), else None: the parent's
    side of `main`'s answer."""
    lines = stdout.strip().splitlines()
    if returncode != NO_ROOM_EXIT or not lines:
        return None
    try:
        said = json.loads(lines[-1])["no_room"]
        return OSError(int(said["errno"]), os.strerror(int(said["errno"])), said["filename"])
    except (ValueError, KeyError, TypeError):  # not our answer: the traceback says what happened
        return None


def main(argv: list[str]) -> int:
    """`KIND CORPUS TOKENIZER WORKERS WORK`: print the measurement as JSON; exit status."""
    kind, corpus, tokenizer, workers, work = argv
    try:
        result = measure(kind, corpus, tokenizer, int(workers), work)
    except Exception as exc:
        room = _room_in(exc)
        if room is None:
            raise  # the traceback on stderr, shown by the parent
        print(json_text({"no_room": {"errno": room.errno, "filename": room.filename}}))
        return NO_ROOM_EXIT
    print(json_text(result))
    return 0


if __name__ == "__main__":  # one isolated measurement, run by `data._run_isolated`
    sys.exit(main(sys.argv[1:6]))
