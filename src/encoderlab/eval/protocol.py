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
(the same as tables; both written by `eval/summarypage.py`). Summaries cover every task of this model
cached in the folder (within the requested LRs and seeds), so tasks evaluated by separate calls add
up. What is computed from the records (LR selection, family means, paired tests) lives in
`eval/summary.py`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm.auto import tqdm

from encoderlab import jsonlines
from encoderlab.atomic import json_text, write_text_atomic
from encoderlab.config import from_dict, to_dict
from encoderlab.errors import UserError
from encoderlab.eval.finetune import prepare, run_one
from encoderlab.eval.pooling import ModelPooling, declared_pooling
from encoderlab.eval.predictions import predictions_path, write_predictions
from encoderlab.eval.spec import Task, training_groups
from encoderlab.eval.suites import SUITE_GRIDS, require_assets, suite_tasks
from encoderlab.eval.summary import EvalRecord, HubRead, ModelSummary, missing_split, summarize_results
from encoderlab.eval.summarypage import write_summary
from encoderlab.eval.taskruns import STUDY_FILE, capped_task, check_decay, check_grid, check_positions
from encoderlab.eval.tasks import TASKS, get_task, load_task
from encoderlab.eval.tasks.hubcommits import commits_read
from encoderlab.eval.tasks.splits import repr_sha256
from encoderlab.model.fingerprint import fingerprint
from encoderlab.words import count, lr_text, noun

DEFAULT_LRS = (1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4)
DEFAULT_SEEDS = (0, 1, 2, 3, 4)
RESULTS = "results.jsonl"


@dataclass
class EvalModel:
    """A model ready for evaluation: weights, tokenizer and the fingerprint that keys the cache."""

    model: torch.nn.Module
    tokenizer: object
    source: str
    fingerprint: str
    pooling: ModelPooling = ModelPooling()
    """The poolings its config.json declares, which resolve tasks with `pooling: model` (`resolved`)."""
    segments: bool = False
    """Whether it takes segment ids: a segment table (`LanguageModel.segment_types`) and a tokenizer
    giving `token_type_ids` (BERT's); tasks of text pairs run, and are cached, marked so (`resolved`)."""
    start_model: dict[str, str | None] = dataclasses.field(default_factory=dict)
    """The hub id and commit read, where `source` is a hub id (`EvalRecord.start_model`)."""

    @property
    def positions(self) -> int:
        """The longest input it takes (its config's `max_seq_len`): a task's `max_length` at most."""
        return self.model.config.max_seq_len

    def resolved(self, task: Task) -> Task:
        """`task` as it runs on this model: `model` pooling replaced by what the model declares, and
        marked where the model is handed its pairs' segment ids (`Task.resolve_segments`)."""
        return task.resolve_pooling(self.pooling.of(task.family)).resolve_segments(self.segments)


def load_eval_model(source: str) -> EvalModel:
    """Load any source `load_pretrained` accepts; a model without a tokenizer is a UserError."""
    from encoderlab.model.hub import load_pretrained
    from encoderlab.model.runlayout import pruned_while_read, start_model_record

    # a running pretrain may delete a checkpoint being read: a file gone, or its tokenizer read as absent
    with pruned_while_read(str(source)):
        pre = load_pretrained(source)
        require_tokenizer(source, pre.tokenizer)
    pooling = declared_pooling(pre.config, f"{source} (config.json)")
    segments = takes_segments(pre.model, pre.tokenizer)
    start = start_model_record(str(source)).get("start_model", {})  # after the load: the commit it read
    return EvalModel(
        pre.model, pre.tokenizer, str(source), fingerprint(pre.model, pre.tokenizer), pooling, segments, start
    )


def takes_segments(model, tokenizer) -> bool:
    """Whether `model` is handed the segment ids `tokenizer` gives a text pair (`EvalModel.segments`)."""
    given = "token_type_ids" in getattr(tokenizer, "model_input_names", ())
    return given and getattr(model, "segment_types", 1) > 1


def require_tokenizer(source: str, tokenizer) -> None:
    """Refuse a model without a tokenizer (`load_eval_model`, `eval --check`)."""
    if tokenizer is None:
        from encoderlab.model.sources import tokenizer_home

        raise UserError(
            f"{source} has no tokenizer files; save the tokenizer into {tokenizer_home(source)} (fine-tuning "
            "needs it)"
        )


class ResultsStore:
    """results.jsonl: one finished node per line, appended atomically (flush + fsync)."""

    def __init__(self, path: Path, *, repair: bool = True):
        """`repair=False` reads only: `analyze curves` cut an unterminated last line of any file named as
        results, which emptied a file without a newline (no complete line was there to check)."""
        self.path = Path(path)  # its folder is made by the first `add`: a refused run leaves none
        self.records: dict[tuple, EvalRecord] = {}
        if self.path.exists():
            self._read(repair)

    @staticmethod
    def key(model: str, task: str, signature: str, lr: float, seed: int) -> tuple:
        return (model, task, signature, float(lr), int(seed))

    def _read(self, repair: bool) -> None:
        raw = self.path.read_bytes()
        complete = raw[: raw.rfind(b"\n") + 1]
        lines: list[tuple[int, EvalRecord]] = []
        for n, line in enumerate(complete.decode("utf-8", errors="replace").splitlines(), 1):
            try:
                rec = from_dict(EvalRecord, jsonlines.loads(line))
            except (json.JSONDecodeError, UserError, AttributeError) as exc:
                why = str(exc) if isinstance(exc, UserError) else "not a JSON object"
                raise UserError(
                    f"{self.path} line {n} is not a result record ({why}); move the file away or fix that line"
                ) from None
            if (bad := rec.non_finite()) is not None:  # evaluation never writes one: edited or damaged
                raise UserError(
                    f"{self.path} line {n} holds a score that is not a number ({bad}), which evaluation never "
                    "writes; restore that line from a copy, or delete it (`encoderlab eval` then runs it again)"
                )
            self.records[self.key(rec.model, rec.task, rec.task_signature, rec.lr, rec.seed)] = rec
            lines.append((n, rec))
        if (
            gap := missing_split([rec for _, rec in lines])
        ) is not None:  # edited or damaged: every split is written
            raise UserError(
                f"{self.path} line {lines[gap[0]][0]} has no test split {gap[1]}, which the other runs of task "
                f"{lines[gap[0]][1].task} have and evaluation always writes; restore that line from a copy, or "
                "delete it (`encoderlab eval` then runs it again)"
            )
        # Only a file of ours loses its torn last line (a crash mid-write): every line was checked first.
        if repair and len(complete) != len(raw):
            with open(self.path, "r+b") as f:
                f.truncate(len(complete))

    def get(self, model: str, task: str, signature: str, lr: float, seed: int) -> EvalRecord | None:
        return self.records.get(self.key(model, task, signature, lr, seed))

    def has_result(self, model: str, task: Task, lr: float, seed: int) -> bool:
        """Whether `task` (as resolved for `model`: its signature is part of the key) has its run at `lr`
        and `seed` here: the one test of "already run" that `evaluate`, `eval_node` and `eval --check`
        share, so that a check's count of reused and to-train runs is the run's own."""
        return self.get(model, task.name, task.signature(), lr, seed) is not None

    def add(self, rec: EvalRecord) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json_text(to_dict(rec), sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.records[self.key(rec.model, rec.task, rec.task_signature, rec.lr, rec.seed)] = rec


def require_own_results(store: ResultsStore, em: EvalModel) -> None:
    """Refuse an `--out` whose results are another model's: summary.json and summary.md are one model's
    (`ModelSummary`, which `export`'s card reads), so a second model's call replaced the first's
    summaries without a word while results.jsonl kept both. A folder already holding this model's runs
    beside another's (written so by an older version) is not refused: `export --eval` says to rerun this
    model's evaluation into it, which then only rewrites the summary. Called before the folder is written to."""
    others = {r.model: r.source for r in store.records.values() if r.model != em.fingerprint}
    if others and len(others) == len({r.model for r in store.records.values()}):
        model, source = next(iter(others.items()))
        raise UserError(
            f"{store.path.parent} holds another model's evaluation ({source or 'source not recorded'}, "
            f"fingerprint {model[:12]}) and its summaries are one model's; give {em.source} a new --out (one per model)"
        )


def resolve_grid(
    suite: str | None, lrs: Sequence[float] | None, seeds: Sequence[int] | None, tasks: Sequence[str] = ()
) -> tuple[Sequence[float], Sequence[int]]:
    """The (LRs, seeds) grid: the given ones, else the suite's protocol, else paper 1's; checked, and
    against the weight decay of each of `tasks` (`check_decay`)."""
    grid_lrs, grid_seeds = SUITE_GRIDS.get(suite, (DEFAULT_LRS, DEFAULT_SEEDS))
    lrs = grid_lrs if lrs is None else lrs
    seeds = grid_seeds if seeds is None else seeds
    check_grid(lrs, seeds)
    check_decay(((get_task(t), lr) for t in tasks for lr in lrs), "lower --lrs")
    return lrs, seeds


def resolve_device(device: str | None) -> torch.device:
    """`--device` of `eval` and the analyses: CUDA when visible by default. A name torch does not parse,
    another kind than cpu or cuda, or a GPU that is not visible is refused in one line before anything
    loads (it was torch's parser error or "Torch not compiled with CUDA enabled" as a traceback)."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError:
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda"):
        raise UserError(f"--device {device!r} is not a device encoderlab runs on; use cpu, cuda or cuda:N")
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if dev.type == "cuda" and (dev.index or 0) >= visible:
        raise UserError(
            f"--device {device}, but {count(visible, 'CUDA device')} {noun(visible, 'is', 'are')} visible; use --device cpu"
        )
    return dev


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
    lrs, seeds = resolve_grid(suite, lrs, seeds, names)
    require_assets(names)
    em = model_source if isinstance(model_source, EvalModel) else load_eval_model(model_source)
    out = Path(out)
    # read only, then refused: opening to repair cut another model's torn last line before its refusal
    require_own_results(ResultsStore(out / RESULTS, repair=False), em)
    store = ResultsStore(out / RESULTS)
    dev = resolve_device(device)
    grid = [(lr, seed) for lr in lrs for seed in seeds]
    for name in names:  # every task, before the first runs (`_prepared_task` checks each at its turn)
        check_positions(get_task(name), em.positions)
    groups = training_groups([em.resolved(get_task(name)) for name in names])
    shared = [_load_shared(em, group, grid, store) for group in groups]  # checked before any run
    with tqdm(total=len(names) * len(grid), desc="eval", unit="run", disable=not progress) as bar:
        for group, loaded in zip(groups, shared, strict=True):
            _evaluate_group(em, group, grid, store, bar, dev, out, loaded)
    # Tasks evaluated earlier into the same folder stay in the summary.
    earlier = {r.task for r in store.records.values() if r.model == em.fingerprint and r.task in TASKS}
    shown = names + sorted(earlier - set(names))
    records = list(store.records.values())
    summary = summarize_results(records, em.fingerprint, shown, lrs, seeds, em.pooling, em.segments)
    summary = dataclasses.replace(summary, source=em.source, start_model=em.start_model)
    write_summary(summary, out)
    return summary


def _load_shared(em: EvalModel, group: list, grid: list, store: ResultsStore) -> dict[int, LoadedTask]:
    """The tasks of a group that share one fine-tuning run (`spec.training_groups`) with a node still to
    run, loaded and checked to train on the same examples (`check_shared_training`), so that a broken
    promise is refused before the grid starts, not after some of its runs; {} for a task alone."""
    if len(group) < 2:
        return {}
    todo = [
        i
        for i, t in enumerate(group)
        if not all(store.has_result(em.fingerprint, t, lr, seed) for lr, seed in grid)
    ]
    loaded = {i: _prepared_task(group[i], em) for i in todo}
    check_shared_training(list(loaded.values()))
    return loaded


def check_shared_training(members: Sequence[LoadedTask]) -> None:
    """Tasks that `trains_as` one run must train on the same examples: the registry promises it, the
    data must keep it (another download of one task's data breaks it). Checked by every entry point
    that builds shared runs (`evaluate`, `eval_node`) before it fine-tunes anything."""
    for m in members[1:]:
        if m.train_digest != members[0].train_digest:
            raise UserError(
                f"task {m.task.name} trains as {members[0].task.name} but its training examples differ; "
                "download both tasks' data again (the hub mirror or assets), or evaluate them in separate calls"
            )


def _evaluate_group(
    em: EvalModel, group: list, grid: list, store: ResultsStore, bar, dev, out: Path, loaded: dict
) -> None:
    """The grid of tasks that share one fine-tuning run per (LR, seed) (`spec.training_groups`): each
    run trains once and scores every task of the group not cached yet. `loaded`: the group's tasks
    already loaded (`_load_shared`); the others are loaded when first needed."""
    for lr, seed in grid:
        todo = [i for i, t in enumerate(group) if not store.has_result(em.fingerprint, t, lr, seed)]
        bar.update(len(group) - len(todo))
        for i in (i for i in todo if i not in loaded):
            bar.set_postfix_str(f"{group[i].name}: loading")
            loaded[i] = _prepared_task(group[i], em)
        if todo:
            bar.set_postfix_str(f"{'+'.join(group[i].name for i in todo)} lr={lr_text(lr)} seed={seed}")
            for rec in _run_nodes(em, [loaded[i] for i in todo], lr, seed, dev, out):
                store.add(rec)
                bar.update()


def _run_nodes(
    em: EvalModel, members: Sequence[LoadedTask], lr: float, seed: int, device, out: Path
) -> list[EvalRecord]:
    """Fine-tune once on the first task's examples and score every task of `members` with that model
    (one task, or tasks that `trains_as` one run, checked by `check_shared_training`); a record per task."""
    first, rest = members[0], members[1:]
    start = time.time()
    shared = {"shared": [(m.task, m.prepared) for m in rest]} if rest else {}
    result = run_one(first.task, em.model, em.tokenizer, first.prepared, lr, seed, device, **shared)
    seconds = round(time.time() - start, 2)
    results = [result, *(result["shared"][m.task.name] for m in rest)]
    return [_record(em, m, r, lr, seed, device, out, seconds) for m, r in zip(members, results)]


def _record(
    em: EvalModel, m: LoadedTask, result: dict, lr: float, seed: int, device, out: Path, seconds: float
) -> EvalRecord:
    """A task's result as its `EvalRecord`, its test predictions saved beside the results."""
    task, tests = m.task, result["test"]
    predictions = predictions_path(task.name, em.fingerprint, m.signature, lr, seed)
    write_predictions(out, predictions, result["predictions"])
    return EvalRecord(
        model=em.fingerprint,
        source=em.source,
        task=task.name,
        family=task.family,
        task_signature=m.signature,
        metric=task.metric,
        lr=float(lr),
        seed=int(seed),
        val=result["val"],
        test=tests,
        val_score=result["val"][task.metric],
        test_score=tests["test"][task.metric],
        steps=result["steps"],
        final_loss=result["final_loss"],
        counts=m.counts,
        n_train=len(m.prepared.train),
        seconds=seconds,
        device=str(device),
        degenerate=result["degenerate"],
        predictions=predictions.as_posix(),
        best_epoch=result.get("best_epoch"),
        val_by_epoch=result.get("val_by_epoch", []),
        pooling=getattr(task.options, "pooling", ""),
        start_model=em.start_model,
        hub_datasets=m.hub_datasets,
    )


@dataclass(frozen=True)
class LoadedTask:
    """A task ready to run: its labels filled in and a concrete `max_length`, tokenised splits."""

    task: Task
    signature: str
    """The task's signature as it runs on the model (its `model` pooling resolved, `EvalModel.resolved`),
    before labels and lengths are filled in: the cache key."""
    counts: dict
    """The loader's bookkeeping (`TaskData.counts`), recorded with each result."""
    prepared: object
    """Its tokenised splits (`finetune.prepare`)."""
    train_digest: str
    """A hash of its training examples: tasks sharing a run must train on the same ones."""
    hub_datasets: tuple[HubRead, ...] = ()
    """The hub datasets its data was read from, with the commit read (`EvalRecord.hub_datasets`)."""


_PREPARED: OrderedDict[tuple[str, str, str], tuple] = OrderedDict()
"""(task signature, tokenizer hash, data hash) -> (task, counts, tokenised splits, training examples'
hash): later nodes of the same task skip tokenising (the costly part) in this process; bounded to a
few tasks' splits."""


def _prepared_task(spec: Task, em: EvalModel) -> LoadedTask:
    from encoderlab.data.tokenizer import tokenizer_hash

    tokenizer = em.tokenizer
    loaded, data = load_task(spec)
    check_positions(loaded, em.positions)  # a study's eval node: before it trains
    loaded = loaded.for_model(em.positions)  # a concrete max_length, in the key below
    # The examples themselves are in the key: the same task name can hold other data (another cache
    # folder, a re-fetched asset), and a stale hit would score the wrong examples.
    train = repr_sha256(data.train)  # the one-shot repr's digest, taken in pieces
    examples = repr_sha256((train, data.val, data.tests))
    key = (loaded.signature(), tokenizer_hash(tokenizer), examples)
    if key not in _PREPARED:
        if len(_PREPARED) >= 4:
            _PREPARED.popitem(last=False)
        _PREPARED[key] = (loaded, data.counts, prepare(loaded, tokenizer, data), train)
    task, counts, prepared, train = _PREPARED[key]
    return LoadedTask(task, spec.signature(), counts, prepared, train, commits_read(spec.hub_repos))


def eval_node(
    model_source: str | EvalModel,
    task: str,
    lr: float,
    seed: int,
    out: Path | str,
    device: str | None = None,
    max_steps: int | None = None,
    also: Sequence[str] = (),
) -> EvalRecord:
    """One (task, lr, seed) node, cached in `out/results.jsonl`: the study runner's unit of work.

    `max_steps` caps fine-tuning below the task's protocol (small study scales); the capped task has
    its own signature, so its results never mix with full-protocol ones. `also` names tasks that
    `trains_as` this one: the same fine-tuned model scores them, their records cached beside it
    (`adopt_record` hands each to its own node).
    """
    em = model_source if isinstance(model_source, EvalModel) else load_eval_model(model_source)
    specs = [em.resolved(capped_task(name, max_steps)) for name in (task, *also)]
    if len(training_groups(specs)) != 1:
        raise ValueError(f"tasks {', '.join(also)} do not share {task}'s fine-tuning run")
    # No `require_own_results` here, though `out` can hold another model's record: a pretrain node run
    # again keeps its key, so its eval nodes rerun in their old folders (runner._to_run) with other
    # weights. That refusal guards summaries, which a node writes none of; records and predictions are
    # keyed by fingerprint, so the old model's are never read as this one's, and refusing would stop the study.
    store = ResultsStore(Path(out) / RESULTS)
    todo = [s for s in specs if not store.has_result(em.fingerprint, s, lr, seed)]
    if todo:
        check_grid([lr], [seed], STUDY_FILE)
        check_decay([(s, lr) for s in todo], "lower the study's eval.lrs (or eval.checkpoint_lrs)")
        require_assets([s.name for s in todo])
        members = [_prepared_task(s, em) for s in todo]
        check_shared_training(members)
        for record in _run_nodes(em, members, lr, seed, resolve_device(device), Path(out)):
            store.add(record)
    return store.get(em.fingerprint, task, specs[0].signature(), lr, seed)


def adopt_record(
    trained: Path,
    model: str,
    task: str,
    lr: float,
    seed: int,
    out: Path,
    max_steps: int | None = None,
    pooling: str | None = None,
) -> EvalRecord:
    """The record of `task` that another node's shared run (`eval_node(also=...)`) wrote in `trained`,
    cached in `out` with its saved predictions, as if `out` had run it. `pooling`: the pooling that run
    resolved (its record's), which tasks sharing a run share (`Task.training` holds their options)."""
    resolved = capped_task(task, max_steps).resolve_pooling(pooling)
    store = ResultsStore(Path(trained) / RESULTS, repair=False)
    # The run marks its pair tasks where its model takes segment ids (`EvalModel.resolved`): that
    # record first, else the unmarked one of a model that takes none.
    marked, plain = (
        store.get(model, task, t.signature(), lr, seed) for t in (resolved.resolve_segments(True), resolved)
    )
    record = marked or plain
    if record is None:
        raise UserError(
            f"{trained} holds no result of task {task} at lr {lr_text(lr)}, seed {seed} (the run it shares was "
            "interrupted); rerun the study, which runs that node again"
        )
    store = ResultsStore(Path(out) / RESULTS)
    if store.get(model, task, record.task_signature, lr, seed) is None:
        if record.predictions:
            target = Path(out) / record.predictions
            target.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(target, (Path(trained) / record.predictions).read_text(encoding="utf-8"))
        store.add(record)
    return record
