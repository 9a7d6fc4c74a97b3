"""`encoderlab bench data`: prepare throughput and peak memory against `datasets.map`.

Two pipelines on the same corpus and tokenizer, each run in a fresh subprocess (`bench/measure.py`,
the child's side; this module is the parent's: work folder, corpus copies, lock, comparison) so peak RSS
(the measuring process's ru_maxrss, and the sampled private memory, USS, of it plus all its
workers) belongs to that run alone, and timed from a cold start (imports and tokenizer loading included on both sides).
Wall time and CPU time (user + system, the process and its workers) are both reported: on a
shared machine wall time depends on the load, tokens per CPU-second much less.
  * encoderlab: `prepare` (decontamination off, so both sides do the same work);
  * datasets:   `load_dataset("json")` + `Dataset.map(tokenizer, batched=True, num_proc=W)`,
                the usual Hugging Face recipe, with a fresh cache directory;
  * datasets_1proc: the same with `num_proc=None` (the default), where the Rust tokenizer's own
                thread pool parallelises each batch.
A fourth run, tokenizer_floor, times `tokenizers` alone (one thread, texts in memory): no pipeline
built on it, as `datasets.map` is, can use less CPU than that. `prepare` can, on byte-level BPE
tokenizers, which it encodes through tiktoken with the same ids (`data/fastbpe.py`). Each runs on the corpus (1x) and on the corpus repeated `scale` times, which shows whether memory
stays flat and gives the steady-state speed once start-up costs are amortised. Both sides wrap each
document as `prepare` does (bos and eos; one separator where they are one token), so they produce
the same number of tokens (checked): `datasets.map` through the tokenizer's own special tokens where
they are that wrap, else around its plain encoding (GPT-2's and SmolLM2's add none, Llama 3's a BOS only).
The result is one JSON object (printed, and written to --out when given).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tyro

from encoderlab.atomic import json_text, print_json
from encoderlab.bench.measure import no_room_reported
from encoderlab.data.hub import import_datasets
from encoderlab.data.sources import SourceConfig, describe, iter_documents, parse_source
from encoderlab.errors import NO_ROOM, DiskFull, UserError
from encoderlab.locks import folder_lock, is_lock_file, refuse_live_holder
from encoderlab.outdir import check_output_file, json_result_with

KINDS = ("encoderlab", "datasets", "datasets_1proc")
FLOOR = "tokenizer_floor"


def _run_isolated(kind: str, corpus: Path, tokenizer: Path, workers: int, work: Path) -> dict:
    """One measurement in a fresh `python -m` process (`bench/measure.py`), run in its own `work` folder:
    `-m` puts the working folder first on the path (the Python API, without PYTHONSAFEPATH), so a `json.py`
    or an `encoderlab/` in the user's was imported, its code run. The package's own source folder, where it
    was found there (`cd src`), is given on PYTHONPATH instead. A write that found no room in the child is
    `DiskFull`, one line (exit 3); any other failure shows the child's traceback."""
    work.mkdir(parents=True, exist_ok=True)
    given = [str(p.resolve()) if p.exists() else str(p) for p in (corpus, tokenizer)]  # a name stays
    cmd = [sys.executable, "-m", "encoderlab.bench.measure", kind, *given, str(workers), str(work.resolve())]
    env = dict(os.environ)
    own = Path(__file__).resolve().parents[2]  # the folder `encoderlab` was found in
    if own == Path.cwd().resolve():
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(own), env.get("PYTHONPATH"))))
    # One tokenizer thread per process, except in the single-process datasets baseline, which
    # keeps the Rust tokenizer's own thread pool as a default user would.
    if kind == "datasets_1proc":
        env.pop("TOKENIZERS_PARALLELISM", None)
    else:
        env["TOKENIZERS_PARALLELISM"] = "false"
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=work)
    room = no_room_reported(proc.returncode, proc.stdout)
    if room is not None:  # was this RuntimeError, a traceback holding the child's
        said, fix = NO_ROOM[room.errno]
        named = f" ({room.filename})" if room.filename else ""  # a Rust library's error names no file
        raise DiskFull(
            f"{said} while measuring {kind} in {work}{named}; the run's files were removed: {fix} "
            "(or choose a --work on another disk) and rerun"
        )
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark run {kind} failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["tokens_per_s"] = round(result["tokens"] / result["seconds"])
    result["tokens_per_cpu_s"] = round(result["tokens"] / result["cpu_s"])
    result["seconds"], result["cpu_s"] = round(result["seconds"], 3), round(result["cpu_s"], 3)
    return result


def _corpus_jsonl(source: SourceConfig, work: Path, repeat: int) -> tuple[Path, int, int]:
    """The source as one JSONL file of {"id", "text"} repeated `repeat` times; (path, docs, bytes)."""
    path = work / f"corpus_x{repeat}.jsonl"
    docs = 0
    with open(path, "w", encoding="utf-8") as f:
        for r in range(repeat):
            for doc in iter_documents(source, on_error="refuse"):
                f.write(json_text({"id": f"{doc.id}#{r}", "text": doc.text}) + "\n")
                docs += 1
    if not docs:  # was found by the tokenizer's training, which named the copy in the work folder
        raise UserError(f"--source {source.location} has no non-empty document; check --source")
    return path, docs, path.stat().st_size


@dataclass(frozen=True)
class DataBench:
    """What `bench data` measures: one corpus and tokenizer, prepared by every pipeline."""

    source: str = "wiki-leads"
    """Corpus to tokenize: an asset name or file, with `data prepare --source`'s options (`c.jsonl#text_field=body`)."""
    tokenizer: str | None = None
    """Tokenizer folder; default: a BPE of --vocab-size trained on the corpus (not timed)."""
    workers: int = 0
    """Processes on both sides (0 = all cores)."""
    scale: int = 10
    """Size factor of the large corpus used for the flat-memory check."""
    vocab_size: int = 32_768
    """Vocab of the tokenizer trained when --tokenizer is not given."""
    work: Path | None = None
    """Empty folder for the corpora and outputs (default: a new temporary folder)."""
    repeats: int = 1
    """Runs per measurement; the fastest is kept (shared machines are noisy)."""


LOCK = ".lock"
"""The lock a `bench data` holds in its --work folder while it measures (`locks.folder_lock`)."""


is_data_result = json_result_with("runs", "corpus_1x", "speedup_vs_datasets")
"""True for a file holding a `bench data` result, which `--out` may replace."""


WORK_KIND = "bench data"
"""The output kind of a `--work` folder (`outdir` marker)."""


def _work_folder(work: Path | None, sources: list[str]) -> Path:
    """--work through `outdir` (a file, a looping symlink, a folder that overlaps the corpus or the
    tokenizer, or someone else's folder: one line, nothing touched), and empty but for the marker:
    every pipeline writes its output there, and an earlier run's outputs would turn `prepare` into a
    no-op that measures nothing. Without --work: a new temporary folder."""
    if work is None:
        return Path(tempfile.mkdtemp(prefix="encoderlab-bench-"))
    from encoderlab.outdir import MARKER, check_output, create_output

    root = check_output(work, WORK_KIND, sources=sources, flag="--work")
    refuse_live_holder(root / LOCK, root)  # another `bench data` on it now: not "an earlier run's files"
    if root.is_dir() and any(p.name != MARKER and not is_lock_file(p.name, LOCK) for p in root.iterdir()):
        raise UserError(
            f"--work {root} holds an earlier `bench data` run's files; pass a new or empty --work folder"
        )
    return create_output(root, WORK_KIND)


def _undo_work(root: Path, ours: bool, parents: list[Path], marked: bool) -> None:
    """After a refusal, Ctrl-C or a failed measurement: remove the work folder this call made (a
    temporary one, or a new --work, was left behind holding copies of the corpus), or empty an existing
    --work again (it was empty, or held only the marker when `marked`; a rerun refused it as an earlier
    run's)."""
    from encoderlab.outdir import MARKER, remove_folders

    if ours:
        shutil.rmtree(root, ignore_errors=True)
        remove_folders(parents)
        return
    for p in root.iterdir():
        if (p.name == MARKER and marked) or is_lock_file(p.name, LOCK):  # the lock: `folder_lock` removes it
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink()


@contextmanager
def _held(root: Path, given: bool, made: list[Path], marked: bool) -> Iterator[None]:
    """`root` undone if the block fails (`_undo_work`), and a --work (`given`) locked meanwhile (`LOCK`): two `bench
    data` on one --work both found it empty, then wrote the same corpus copies and outputs."""
    with folder_lock(root / LOCK, "bench data", use=root, other_out=False) if given else nullcontext():
        try:
            yield
        except BaseException:
            _undo_work(root, not given or bool(made), made[1:], marked)
            raise


def _tidy_temporary(root: Path, keep_tokenizer: bool) -> Path | None:
    """A finished run's temporary folder, emptied of its corpus copies, prepared outputs and datasets
    cache (hundreds of MB at --scale 10, left in /tmp by every run); the BPE it trained is kept when
    there is one, since the result names it and a rerun may pass it as --tokenizer. Returns the folder,
    or None when nothing was kept (then it is gone). `--work` keeps everything."""
    for child in root.iterdir():
        if keep_tokenizer and child.name == "tokenizer":
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    if keep_tokenizer:
        return root
    root.rmdir()
    return None


def _trained_tokenizer(corpus: Path, vocab_size: int, root: Path) -> str:
    """Not timed: a BPE trained on (a sample of) the benchmark's own corpus."""
    from encoderlab.data.tokenizer import train_tokenizer

    config = SourceConfig(location=str(corpus))
    return str(
        train_tokenizer(config, vocab_size, root / "tokenizer", max_docs=5000, progress=False).name_or_path
    )


def _measure_all(corpora: dict[str, Path], tokenizer: str, workers: int, root: Path, repeats: int) -> dict:
    """Every pipeline and the tokenizer floor on each corpus (`{kind}_{label}`), the fastest of `repeats`
    runs each; the pipelines must count the same tokens."""
    runs = {}
    for label, path in corpora.items():
        for kind in (*KINDS, FLOOR):
            best = None
            for r in range(repeats):  # a shared machine is noisy: keep the fastest repeat
                run = _run_isolated(kind, path, Path(tokenizer), workers, root / f"{kind}_{label}_{r}")
                best = run if best is None or run["seconds"] < best["seconds"] else best
            runs[f"{kind}_{label}"] = best
        if len({runs[f"{kind}_{label}"]["tokens"] for kind in (*KINDS, FLOOR)}) != 1:
            raise RuntimeError(f"token counts differ at {label}: {runs}")
    return runs


def _comparisons(runs: dict, scale: int) -> dict:
    """encoderlab's speedup over each other pipeline, each pipeline's memory growth from 1x to the large
    corpus, and how close each is to the tokenizer alone (floor CPU seconds / pipeline CPU seconds)."""
    labels = ("1x", f"{scale}x")
    ratio = {
        f"{kind}_{label}_{per}": round(runs[f"encoderlab_{label}"][per] / runs[f"{kind}_{label}"][per], 2)
        for kind in KINDS[1:]
        for label in labels
        for per in ("tokens_per_s", "tokens_per_cpu_s")
    }
    rss = {
        kind: round(runs[f"{kind}_{scale}x"]["peak_uss_tree_mb"] / runs[f"{kind}_1x"]["peak_uss_tree_mb"], 2)
        for kind in KINDS
    }
    floor_share = {
        f"{kind}_{label}": round(runs[f"{FLOOR}_{label}"]["cpu_s"] / runs[f"{kind}_{label}"]["cpu_s"], 2)
        for kind in KINDS
        for label in labels
    }
    return {
        "speedup_vs_datasets": ratio,
        f"tree_uss_ratio_{scale}x_vs_1x": rss,
        "tokenizer_floor_share_of_cpu": floor_share,
    }


def _machine() -> dict:
    from encoderlab.data.prepare import default_workers

    return {
        "cpus": os.cpu_count(),
        "usable_cpus": default_workers(),
        "load_average_1min": round(os.getloadavg()[0], 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


MAX_REPEATS = 100
"""Most runs per measurement: the fastest of a few is already the machine's best; each repeat runs all
eight measurements again and keeps its outputs in the work folder."""


def _check(b: DataBench) -> None:
    """Numbers the measurements cannot use, refused before the work folder is made (a temporary one
    was left behind by every refusal, and --repeats 0 was a TypeError traceback). --workers past the
    CPUs and --repeats past `MAX_REPEATS` were accepted at any size (99999999999999999999)."""
    from encoderlab.data.tokenizer_training import min_vocab_size

    cpus = os.cpu_count() or 1
    for flag, value, least, most, why in (
        ("--repeats", b.repeats, 1, MAX_REPEATS, "the fastest is kept; a few suffice"),
        ("--scale", b.scale, 1, None, ""),
        ("--workers", b.workers, 0, cpus, "the CPUs of this machine; 0 uses all cores"),
    ):
        if value < least:
            raise UserError(
                f"{flag} must be >= {least}, got {value}" + ("; 0 uses all cores" if least == 0 else "")
            )
        if most is not None and value > most:
            raise UserError(f"{flag} must be <= {most} ({why}), got {value}")
    if b.tokenizer is None and b.vocab_size < min_vocab_size():
        raise UserError(
            f"--vocab-size must be >= {min_vocab_size()} for the byte-level BPE trained, got {b.vocab_size}"
        )


def _check_disk(b: DataBench, source: SourceConfig) -> None:
    """--scale whose corpus copies (the corpus once and `scale` times, `_corpus_jsonl`) cannot fit the free
    space of the work folder's disk, refused before anything is written: any --scale was accepted, and
    99999999999999999999 wrote until the disk was full. Counted from the corpus as it is copied; the
    measurements' outputs need more besides, which a full disk still refuses on its own."""
    size = sum(
        len(json_text({"id": f"{d.id}#0", "text": d.text}).encode()) + 1
        for d in iter_documents(source, on_error="refuse")
    )
    where = Path(b.work).absolute() if b.work is not None else Path(tempfile.gettempdir())
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    if size and size * (b.scale + 1) > free:
        most = free // size - 1
        named = f"--work {b.work}" if b.work is not None else f"the temporary folder {where}"
        fix = f"at most --scale {most} fits" if most >= 1 else "free space"
        raise UserError(
            f"--scale {b.scale} copies the corpus ({size} bytes) {b.scale + 1} times, more than the {free} bytes "
            f"free on the disk of {named}; {fix}, or choose a --work on a larger disk"
        )


def bench_data(b: DataBench = DataBench()) -> dict:
    """Run the measurements (module docstring) and return the result as a dict."""
    from encoderlab.data.prepare import default_workers

    _check(b)
    source = parse_source(b.source)  # the syntax of `data prepare --source`, which its fixes suggest
    describe(source)
    if b.tokenizer is not None:
        from encoderlab.data.tokenizer import load_tokenizer

        # loaded here too (not timed) so that a missing or damaged tokenizer is one line before the work
        # folder is made: in the first measuring subprocess it was a RuntimeError traceback after the copies
        load_tokenizer(b.tokenizer)
    _check_disk(b, source)
    workers = b.workers or default_workers()
    from encoderlab.outdir import MARKER, missing_folders

    made = missing_folders(b.work) if b.work is not None else []
    marked = b.work is not None and (Path(b.work) / MARKER).exists()
    root = _work_folder(b.work, [source.location, *([b.tokenizer] if b.tokenizer else [])])
    with _held(root, b.work is not None, made, marked):
        corpus, docs, size = _corpus_jsonl(source, root, 1)
        big, big_docs, big_size = _corpus_jsonl(source, root, b.scale)
        tokenizer = b.tokenizer if b.tokenizer is not None else _trained_tokenizer(corpus, b.vocab_size, root)
        runs = _measure_all({"1x": corpus, f"{b.scale}x": big}, tokenizer, workers, root, b.repeats)
    kept = _tidy_temporary(root, keep_tokenizer=b.tokenizer is None) if b.work is None else root
    return {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": _machine(),
        "source": b.source,
        "tokenizer": tokenizer,
        "workers": workers,
        "repeats": b.repeats,
        "corpus_1x": {"docs": docs, "bytes": size},
        f"corpus_{b.scale}x": {"docs": big_docs, "bytes": big_size},
        "runs": runs,
        **_comparisons(runs, b.scale),
        "work": str(kept) if kept is not None else None,
    }


def bench_data_command(bench: Annotated[DataBench, tyro.conf.arg(name="")], out: Path | None = None) -> None:
    """Benchmark `data prepare` (tokens/s, peak RSS) against datasets.map on the same corpus; JSON out.

    Args:
        out: Also write the JSON result to this file.
    """
    import_datasets()  # the other side of the comparison: missing, it failed after the first measurement
    if out is not None:  # before minutes of measuring, not after
        check_output_file(out, is_data_result, what="a `bench data` result")
    print_json(bench_data(bench), out)
