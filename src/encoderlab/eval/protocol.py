"""The evaluation protocol of paper 1: an LR grid x seeds per task, the best LR chosen on the
validation mean, the test score reported at that LR with a t-interval over seeds.

Caching and resume. Every finished node (model fingerprint, task, task signature, LR, seed) is
one JSON line in `results.jsonl`, appended, flushed and fsynced before the next node starts, so an
interrupted evaluation loses at most the node in flight and a rerun skips everything finished. The
fingerprint hashes the model's weights and tokenizer (not its path), so a moved folder still hits
the cache and a retrained one never does; the task signature changes whenever a task setting does.
A torn last line (a crash mid-write) is cut off when the file is reopened.

Outputs: `results.jsonl` (one `summary.EvalRecord` per node: validation and all test scores, the
test splits whose predictions were all the same in `degenerate`, and the path of its saved test
predictions in `predictions`, see `eval/predictions.py`), `summary.json` (a `summary.ModelSummary`:
per task the score-vs-LR curve with mean/sd/CI and the per-seed scores per LR, the best LR (ties to
the smaller LR) and the test score there, OOD test splits included, and how many runs there were
degenerate; per family the mean over its tasks per seed, summarised the same way) and `summary.md`
(the same as tables). Summaries cover every task of this model cached in the folder (within the
requested LRs and seeds), so tasks evaluated by separate calls add up. What is computed from the
records (LR selection, family means, paired tests) lives in `eval/summary.py`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm.auto import tqdm

from encoderlab.atomic import write_text_atomic
from encoderlab.config import from_dict, to_dict
from encoderlab.errors import UserError
from encoderlab.eval.finetune import prepare, run_one
from encoderlab.eval.predictions import predictions_path, write_predictions
from encoderlab.eval.spec import FAMILY_NAMES
from encoderlab.eval.stats import Estimate
from encoderlab.eval.suites import SUITE_GRIDS, require_assets, suite_tasks
from encoderlab.eval.summary import EvalRecord, ModelSummary, summarize_results
from encoderlab.eval.tasks import TASKS, get_task, load_task
from encoderlab.model.fingerprint import fingerprint

DEFAULT_LRS = (1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4)
DEFAULT_SEEDS = (0, 1, 2, 3, 4)
RESULTS, SUMMARY_JSON, SUMMARY_MD = "results.jsonl", "summary.json", "summary.md"


@dataclass
class EvalModel:
    """A model ready for evaluation: weights, tokenizer and the fingerprint that keys the cache."""

    model: torch.nn.Module
    tokenizer: object
    source: str
    fingerprint: str


def load_eval_model(source: str) -> EvalModel:
    """Load any source `load_pretrained` accepts; a model without a tokenizer is a UserError."""
    from encoderlab.model.hub import load_pretrained

    pre = load_pretrained(source)
    if pre.tokenizer is None:
        raise UserError(
            f"{source} has no tokenizer files; save the tokenizer into the model folder (fine-tuning needs it)"
        )
    return EvalModel(pre.model, pre.tokenizer, str(source), fingerprint(pre.model, pre.tokenizer))


class ResultsStore:
    """results.jsonl: one finished node per line, appended atomically (flush + fsync)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.records: dict[tuple, EvalRecord] = {}
        if self.path.exists():
            self._read()

    @staticmethod
    def key(model: str, task: str, signature: str, lr: float, seed: int) -> tuple:
        return (model, task, signature, float(lr), int(seed))

    def _read(self) -> None:
        raw = self.path.read_bytes()
        complete = raw[: raw.rfind(b"\n") + 1]
        for n, line in enumerate(complete.decode("utf-8", errors="replace").splitlines(), 1):
            try:
                rec = from_dict(EvalRecord, json.loads(line))
            except (json.JSONDecodeError, UserError, AttributeError) as exc:
                why = str(exc) if isinstance(exc, UserError) else "not a JSON object"
                raise UserError(
                    f"{self.path} line {n} is not a result record ({why}); move the file away or fix that line"
                ) from None
            self.records[self.key(rec.model, rec.task, rec.task_signature, rec.lr, rec.seed)] = rec
        # Only a file of ours loses its torn last line (a crash mid-write): every line was checked first.
        if len(complete) != len(raw):
            with open(self.path, "r+b") as f:
                f.truncate(len(complete))

    def get(self, model: str, task: str, signature: str, lr: float, seed: int) -> EvalRecord | None:
        return self.records.get(self.key(model, task, signature, lr, seed))

    def add(self, rec: EvalRecord) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(to_dict(rec), sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.records[self.key(rec.model, rec.task, rec.task_signature, rec.lr, rec.seed)] = rec


def resolve_grid(
    suite: str | None, lrs: Sequence[float] | None, seeds: Sequence[int] | None
) -> tuple[Sequence[float], Sequence[int]]:
    """The (LRs, seeds) grid: the given ones, else the suite's protocol, else paper 1's; checked."""
    grid_lrs, grid_seeds = SUITE_GRIDS.get(suite, (DEFAULT_LRS, DEFAULT_SEEDS))
    lrs = grid_lrs if lrs is None else lrs
    seeds = grid_seeds if seeds is None else seeds
    _check_grid(lrs, seeds)
    return lrs, seeds


def _check_grid(lrs: Sequence[float], seeds: Sequence[int]) -> None:
    if not lrs or any(not math.isfinite(lr) or lr <= 0 for lr in lrs):
        raise UserError(
            f"learning rates must be a non-empty list of finite positive numbers, got {list(lrs)}"
        )
    if not seeds or any(s < 0 for s in seeds):
        raise UserError(f"seeds must be a non-empty list of non-negative integers, got {list(seeds)}")


def _device(device: str | None) -> torch.device:
    return torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))


def evaluate(
    model_source: str | EvalModel,
    suite: str | None = "pocket",
    tasks: Sequence[str] | None = None,
    lrs: Sequence[float] | None = None,
    seeds: Sequence[int] | None = None,
    out: Path | str = "eval",
    device: str | None = None,
    progress: bool = True,
) -> ModelSummary:
    """Run (or resume) the grid of `tasks` (default: the whole suite) and write the summaries.

    `model_source` is anything `load_pretrained` accepts, or an `EvalModel` already in memory.
    With `suite=None`, `tasks` may name any registered task. `lrs` and `seeds` default to the
    suite's protocol (`suites.SUITE_GRIDS`: paper 2's single LR and seeds 42-46 for `biomed`),
    else paper 1's grid. Returns the summary.
    """
    names = suite_tasks(suite, tasks)
    lrs, seeds = resolve_grid(suite, lrs, seeds)
    require_assets(names)
    em = model_source if isinstance(model_source, EvalModel) else load_eval_model(model_source)
    out = Path(out)
    store = ResultsStore(out / RESULTS)
    dev = _device(device)
    grid = [(lr, seed) for lr in lrs for seed in seeds]
    with tqdm(total=len(names) * len(grid), desc="eval", unit="run", disable=not progress) as bar:
        for name in names:
            task = get_task(name)
            signature = task.signature()
            todo = [(lr, s) for lr, s in grid if store.get(em.fingerprint, name, signature, lr, s) is None]
            bar.update(len(grid) - len(todo))
            if not todo:
                continue
            bar.set_postfix_str(f"{name}: loading")
            loaded, counts, prepared = _prepared_task(task, em)
            for lr, seed in todo:
                bar.set_postfix_str(f"{name} lr={lr:g} seed={seed}")
                store.add(_run_node(em, loaded, signature, prepared, counts, lr, seed, dev, out))
                bar.update()
    # Tasks evaluated earlier into the same folder stay in the summary.
    earlier = {r.task for r in store.records.values() if r.model == em.fingerprint and r.task in TASKS}
    shown = names + sorted(earlier - set(names))
    summary = summarize_results(list(store.records.values()), em.fingerprint, shown, lrs, seeds)
    summary = dataclasses.replace(summary, source=em.source)
    write_summary(summary, out)
    return summary


def _run_node(
    em: EvalModel, task, signature: str, prepared, counts: dict, lr: float, seed: int, device, out: Path
) -> EvalRecord:
    start = time.time()
    result = run_one(task, em.model, em.tokenizer, prepared, lr, seed, device)
    tests = result["test"]
    predictions = predictions_path(task.name, em.fingerprint, signature, lr, seed)
    write_predictions(out, predictions, result["predictions"])
    return EvalRecord(
        model=em.fingerprint,
        source=em.source,
        task=task.name,
        family=task.family,
        task_signature=signature,
        metric=task.metric,
        lr=float(lr),
        seed=int(seed),
        val=result["val"],
        test=tests,
        val_score=result["val"][task.metric],
        test_score=tests["test"][task.metric],
        steps=result["steps"],
        final_loss=result["final_loss"],
        counts=counts,
        n_train=len(prepared.train),
        seconds=round(time.time() - start, 2),
        device=str(device),
        degenerate=result["degenerate"],
        predictions=predictions.as_posix(),
        best_epoch=result.get("best_epoch"),
        val_by_epoch=result.get("val_by_epoch", []),
    )


_PREPARED: OrderedDict[tuple[str, str, str], tuple] = OrderedDict()
"""(task signature, tokenizer hash, data hash) -> (task, counts, tokenised splits): later nodes of the
same task skip tokenising (the costly part) in this process; bounded to a few tasks' splits."""


def _prepared_task(task, em: EvalModel) -> tuple:
    from encoderlab.data.tokenizer import tokenizer_hash

    tokenizer = em.tokenizer
    loaded, data = load_task(task)
    loaded = loaded.for_model(em.model.config.max_seq_len)  # a concrete max_length, in the key below
    # The examples themselves are in the key: the same task name can hold other data (another cache
    # folder, a re-fetched asset), and a stale hit would score the wrong examples.
    examples = hashlib.sha256(repr((data.train, data.val, data.tests)).encode()).hexdigest()
    key = (loaded.signature(), tokenizer_hash(tokenizer), examples)
    if key not in _PREPARED:
        if len(_PREPARED) >= 4:
            _PREPARED.popitem(last=False)
        _PREPARED[key] = (loaded, data.counts, prepare(loaded, tokenizer, data))
    return _PREPARED[key]


def capped_task(name: str, max_steps: int | None = None):
    """The task `name`, with fine-tuning capped at `max_steps` (its signature then differs)."""
    spec = get_task(name)
    if max_steps is None:
        return spec
    return dataclasses.replace(spec, finetune=dataclasses.replace(spec.finetune, max_steps=max_steps))


def eval_node(
    model_source: str | EvalModel,
    task: str,
    lr: float,
    seed: int,
    out: Path | str,
    device: str | None = None,
    max_steps: int | None = None,
) -> EvalRecord:
    """One (task, lr, seed) node, cached in `out/results.jsonl`: the study runner's unit of work.

    `max_steps` caps fine-tuning below the task's protocol (small study scales); the capped task has
    its own signature, so its results never mix with full-protocol ones.
    """
    em = model_source if isinstance(model_source, EvalModel) else load_eval_model(model_source)
    spec = capped_task(task, max_steps)
    store = ResultsStore(Path(out) / RESULTS)
    signature = spec.signature()
    record = store.get(em.fingerprint, task, signature, lr, seed)
    if record is None:
        _check_grid([lr], [seed])
        require_assets([task])
        loaded, counts, prepared = _prepared_task(spec, em)
        record = _run_node(em, loaded, signature, prepared, counts, lr, seed, _device(device), Path(out))
        store.add(record)
    return record


# ----------------------------------------------------------------------------- summaries


def _fmt(s: Estimate | None) -> str:
    if s is None:
        return "-"
    if s.half_width is None:
        return f"{s.mean:.2f} (n=1)"
    return f"{s.mean:.2f} ± {s.half_width:.2f} (n={s.n})"


def summary_markdown(summary: ModelSummary) -> str:
    lines = [
        f"# Evaluation of {summary.source or summary.model}",
        "",
        f"Model fingerprint `{summary.model}`; LRs {summary.lrs}; seeds {summary.seeds}. "
        "Test = mean ± 95% t-interval over seeds at the LR with the best validation mean.",
        "",
        "| task | family | metric | best LR | validation | test | other test splits |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, t in summary.tasks.items():
        others = ", ".join(f"{k}: {v.mean:.2f}" for k, v in t.test_splits.items() if k != "test")
        flag = " (degenerate)" if t.degenerate else ""
        lines.append(
            f"| {name} | {t.family} | {t.metric} | {t.best_lr:g} | {_fmt(t.val)} | {_fmt(t.test)}{flag} | {others or '-'} |"
        )
    flagged = {name: t.degenerate for name, t in summary.tasks.items() if t.degenerate}
    if flagged:
        lines += ["", "**Degenerate predictions** (one output for every test example, at the best LR):", ""]
        lines += [f"- {name}: {d.runs} of {d.of} seeds; {d.why}" for name, d in flagged.items()]
    lines += ["", "| family | tasks | test (mean over tasks, per seed) |", "|---|---|---|"]
    for family, f in summary.families.items():
        lines.append(f"| {FAMILY_NAMES[family]} | {', '.join(f.tasks)} | {_fmt(f.test)} |")
    lines += ["", "Score vs LR (test mean per LR, for the stability analysis):", ""]
    for name, t in summary.tasks.items():
        lines.append(f"- {name}: " + ", ".join(f"{c.lr:g}: {c.test.mean:.2f}" for c in t.curve))
    return "\n".join(lines) + "\n"


def write_summary(summary: ModelSummary, out: Path) -> None:
    write_text_atomic(out / SUMMARY_JSON, json.dumps(to_dict(summary), indent=2))
    write_text_atomic(out / SUMMARY_MD, summary_markdown(summary))
