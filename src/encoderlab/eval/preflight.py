"""`encoderlab eval --check`: what an evaluation would read, checked, and what it would run, printed;
nothing trained, no weights read (the safetensors headers only), nothing written.

A user checks a task file, a suite or a grid before spending GPU time, as lm-evaluation-harness
validates its tasks and `run_glue.py` reads its data before it trains. The check goes through the
run's own steps in the run's order (`commands.planned_tasks`: the task files, the grid and the assets;
then the model; then each task's data through its loader), so a problem is the same one line a run
gives. The model is read without its weights (`model.hub.model_files`: its tokenizer and config; a hub
id's from its local hub cache snapshot, the hub asked only for what that lacks: `data.hubmodels.check_files`), which is what fixes the inputs: the tokenizer's special tokens
(`families.check_inputs`, `features.check_room`; a QA task's room for context after each split's longest
question, tokenising the questions alone), the max length of a task that takes the model's and
that of one that names its own (no more than the model's positions: `taskruns.check_positions`), the
pooling a config declares (`pooling.declared_pooling`), and the tokenizer's ids against the embedding's
rows the config records (`model.hub.check_vocabulary`, the run's own check of the built model; before,
`--check` passed a tokenizer with more ids than the embedding has rows and the run refused it), and the
config's `vocab_size` against the embedding's rows the safetensors headers record
(`model.headercheck.check_embedding_rows`, in the load's line; no tensor data read): of a copy on this
machine, and of a hub id whose weights the local hub cache holds (nothing downloaded); the model's line
says where they were not compared (a hub id not cached: before, it said nothing of them).

What a rerun into --out would reuse is said as the run says it (`commands.cache_lines`: `reusing K of N
runs`, tasks whose earlier runs are of another version), and only where --out holds results: the cache
is keyed by the model's fingerprint, a hash of its weights, so then, and only then, the weights are read
(`protocol.load_eval_model`, on the CPU, nothing trained; a hub id's from its hub cache snapshot folder,
`ModelCheck.weights_at`, not by its id, whose load online asks the hub and fetches what the cache lacks;
not for a hub id whose weights are not cached, which --check never downloads). Trade-off: such a check takes the load's time and memory; a second
count from paths or names would claim reuse for a retrained model in the same folder.

What it leaves to the run: tokenising every example (`finetune.prepare`: minutes for paper 1's larger
sets, and no refusal of its own beyond the room checked here), the check that tasks sharing a
fine-tuning run train on the same examples (`protocol.check_shared_training`, which hashes the
tokenised data), the device (a check may run where the GPU is not: a login node), and the results
cache of --out (folder checked read-only, as a run checks it first; never created).

Per task it prints the family, each split's examples (retrieval: queries and documents), the labels
of classification and tagging tasks, the metric, the max length on this model, and the grid: its
fine-tuning runs and the optimizer steps of each (`FinetuneConfig.total_steps`), from which a reader
gets GPU time at their own step time. No GPU-hour estimate: `study/evalcost.py` has one (`node_work`,
`NodeWork.seconds`), but the study layer sits above eval, which may not import it (docs/architecture.md,
"Layers"), and a second copy here would drift from it; `study plan` prints it for a study's nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from encoderlab.errors import UserError
from encoderlab.eval.answer_tagger import check_tagger_room
from encoderlab.eval.families import check_inputs
from encoderlab.eval.features import check_room
from encoderlab.eval.pooling import ModelPooling, declared_pooling
from encoderlab.eval.qa import check_question_room
from encoderlab.eval.spec import FAMILY_NAMES, NEGATIVE, IRSplit, PairSCOptions, Task, training_groups
from encoderlab.eval.taskruns import check_positions
from encoderlab.eval.tasks import get_task, load_task
from encoderlab.eval.tasks.splits import split_notes
from encoderlab.words import count, lr_grid

SHOWN_LABELS = 5
"""Label names printed per task; the rest are counted."""


@dataclass(frozen=True)
class TaskCheck:
    """One task as it would run on the model: loaded, checked, counted."""

    task: Task
    """Its labels filled in from the data and a concrete `max_length` (where the model's is known)."""
    splits: dict[str, str]
    """Split name -> its examples (`90`; retrieval's evaluation splits: `20 queries + 100 documents`)."""
    steps: int
    """Optimizer steps of one fine-tuning run (`FinetuneConfig.total_steps` of its training examples)."""
    counts: dict
    """The loader's bookkeeping (`TaskData.counts`: a validation cut from train, or read from the data's test
    split, for their notes, `splits.split_notes`)."""


def check_task(name: str, tokenizer, positions: int | None, pooling) -> TaskCheck:
    """`name` loaded through its loader and checked against the model's tokenizer as a run checks it."""
    spec = get_task(name)
    spec = spec.resolve_pooling(pooling.of(spec.family))  # as `EvalModel.resolved` runs it
    check_inputs(spec, tokenizer)
    check_positions(spec, positions)  # as `evaluate` checks it, before its data is read
    task, data = load_task(spec)
    if positions is not None:
        task = task.for_model(positions)
    if task.inputs == "tokenizer" and task.max_length is not None:
        check_room(tokenizer, task.max_length, f"task {name}")
    if task.family == "qa" and task.max_length is not None:  # was passed, then refused by the run
        _check_qa_room(task, tokenizer, [data.train, data.val, *data.tests.values()])
    splits = {"train": _size(data.train, task.family), "validation": _size(data.val)}
    splits.update({split: _size(examples) for split, examples in data.tests.items()})
    return TaskCheck(task, splits, task.finetune.total_steps(max(len(data.train), 1)), dict(data.counts))


def _check_qa_room(task: Task, tokenizer, splits) -> None:
    """The QA windows' room for context after each split's longest question, in the run's order (train,
    validation, tests) and with its refusal (`qa.check_question_room`, `answer_tagger.check_tagger_room`):
    tokenising only the questions, not the contexts the run windows."""
    for split in splits:
        questions = [e["question"] for e in split]
        if not questions:
            continue
        if task.options.head == "tagger":
            check_tagger_room(task, tokenizer, questions)
        else:
            check_question_room(tokenizer, questions, task.max_length, task.options.stride, task.name)


def _size(split, family: str = "") -> str:
    """Examples of a split (`90`; an IR train split's pairs, `90 query-document pairs`, which a bare `90` beside
    its evaluation splits' queries and documents left unnamed; of triplets `... with hard negatives`, which
    the loss adds), or a retrieval split's queries and documents (`20 queries + 100 documents`)."""
    if isinstance(split, IRSplit):
        return f"{count(len(split.queries), 'query', 'queries')} + {count(len(split.corpus), 'document')}"
    hard = bool(split) and isinstance(split[0], dict) and NEGATIVE in split[0]
    pairs = count(len(split), "query-document pair") if family == "ir" else f"{len(split):,}"
    return pairs + (" with hard negatives" if hard else "")


@dataclass(frozen=True)
class ModelCheck:
    """The model as `eval --check` read it, its weights unread (`check_model`)."""

    tokenizer: object
    """Its tokenizer, as `model.hub.model_files` read it."""
    positions: int | None
    """The longest input it takes, from its config (None: not recorded there)."""
    pooling: ModelPooling
    """The poolings its config declares."""
    weights_at: str | None
    """Where its weights are read on this machine, without the network: `source` itself for a copy here
    (a folder, an asset, a mirror), a hub id's hub cache snapshot folder (`model_files`' folder) when it
    holds them; None where they are not here."""
    rows: str
    """What was said of the embedding rows: compared with the config, or why not."""


def check_model(source: str) -> ModelCheck:
    """The model at `source`, its weights unread: refused as `protocol.load_eval_model` refuses it (no
    tokenizer, a config's pooling, a checkpoint the running pretrain deletes while it is read)."""
    from encoderlab.data.tokenizer import token_spec
    from encoderlab.eval.protocol import require_tokenizer
    from encoderlab.model.headercheck import check_embedding_rows
    from encoderlab.model.hub import check_vocabulary, model_files, require_weights
    from encoderlab.model.runlayout import pruned_while_read
    from encoderlab.model.sources import source_folder

    # as the run's own load: a config gone mid-read, or the tokenizer read as absent, is the prune's
    with pruned_while_read(str(source)):
        files = model_files(source)
        # a copy on this machine holds its weights too (a hub id's are downloaded by its run); asked
        # before the tokenizer, as the run's load reads the weights before `require_tokenizer`
        local = source_folder(source) is not None
        if local:
            require_weights(files)
        # a hub id's snapshot may hold weights an earlier run downloaded: their headers are read, no download
        here = local or _cached_weights(files.folder)
        compared = here and check_embedding_rows(files)  # the load's refusal of weights unlike the config
        if files.tokenizer is not None and files.vocab_size is not None:  # as the run's load, then
            check_vocabulary(files.vocab_size, token_spec(files.tokenizer))
        require_tokenizer(source, files.tokenizer)
    pooling = declared_pooling(files.config, f"{source} (config.json)")
    at = str(source) if local else str(files.folder) if here else None
    return ModelCheck(files.tokenizer, files.positions, pooling, at, _rows_said(compared, here))


def _cached_weights(folder) -> bool:
    """Whether a hub id's snapshot folder holds all its safetensors weights (a single file, or every shard
    its index names), as an earlier full download leaves them in the local hub cache."""
    from encoderlab.model.hub import hf_weight_files

    try:
        files = hf_weight_files(folder)
    except UserError:  # none there, only the configs and tokenizer `model_files` fetched
        return False
    return all(f.suffix == ".safetensors" and f.is_file() for f in files)


def _rows_said(compared: bool, here: bool) -> str:
    if compared:
        return "embedding rows checked against its config (safetensors headers)"
    if here:
        return (
            "embedding rows not checked (no vocab_size in its config, or no embedding the headers name; "
            "the run's load checks them)"
        )
    return (
        "embedding rows not checked: its weights are not in the local hub cache and --check downloads none "
        "(the run downloads and checks them)"
    )


@dataclass(frozen=True)
class Rerun:
    """What `eval --check` says of a rerun into --out (`rerun_lines`)."""

    lines: list[str]
    """The run's own lines (`commands.cache_lines`), or why the reuse was not counted."""
    weights_read: bool
    """The model's weights were read, to fingerprint it."""
    to_train: int | None = None
    """The fine-tuning runs a rerun would train, the others reused (`_to_train`); None where not counted."""


def rerun_lines(model: str, check: ModelCheck, out: Path, names, lrs, seeds) -> Rerun:
    """What a rerun into `out` would reuse, in the run's words (`commands.cache_lines`): nothing said where
    `out` holds no results (nothing to reuse: the weights stay unread), and that it was not counted where the
    weights are not on this machine (a hub id not cached: --check downloads none). The results are read only
    (`repair=False`: a torn last line is the run's to cut); the model is loaded to fingerprint it, the key
    of every cached run."""
    from encoderlab.eval.commands import cache_lines
    from encoderlab.eval.protocol import RESULTS, ResultsStore, load_eval_model, require_own_results

    store = ResultsStore(out / RESULTS, repair=False)
    if not store.records:
        return Rerun([], weights_read=False)
    if check.weights_at is None:
        return Rerun(
            [
                f"{store.path} holds results, but what a rerun would reuse is not counted: they are keyed by "
                "the model's weights, which are not in the local hub cache, and --check downloads none"
            ],
            weights_read=False,
        )
    # the snapshot folder, not the hub id: online, the id's load is a `snapshot_download` that asks the hub
    # for the repo's commit and fetches whatever of `MODEL_FILES` the cache lacks (the fingerprint hashes
    # the weights and tokenizer, not the path, so the folder keys the same runs)
    em = load_eval_model(check.weights_at)
    require_own_results(store, em)  # the run would be refused: --check says so
    lines = cache_lines(store, em, names, lrs, seeds)
    return Rerun(lines, weights_read=True, to_train=_to_train(store, em, names, lrs, seeds))


def _to_train(store, em, names, lrs, seeds) -> int:
    """The runs a rerun trains, as `protocol.evaluate` decides: a group of tasks sharing one run
    (`training_groups`) at an LR and seed, unless every task of it has that run's result in `store`. The
    check said "would run 4 fine-tuning runs" right below "reusing 1 of 4 runs", which it would not."""
    groups = training_groups([em.resolved(get_task(name)) for name in names])
    return sum(
        not all(store.has_result(em.fingerprint, t, lr, seed) for t in group)
        for group in groups
        for lr in lrs
        for seed in seeds
    )


def check_text(
    model: str, mc: ModelCheck, checks: Sequence[TaskCheck], lrs, seeds, out: Path, rerun: Rerun
) -> str:
    """What `eval --check` prints: the model, each task, what a rerun reuses (`rerun_lines`), and the runs
    in all."""
    grid = len(lrs) * len(seeds)
    weights = (
        f"weights read only to fingerprint it for {out}'s results"
        if rerun.weights_read
        else "weights not loaded"
    )
    lines = [f"model {model}: tokenizer and config read ({weights}); {_positions(mc.positions)}; {mc.rows}"]
    for c in checks:
        lines += _task_lines(c, grid)
        lines += [f"  note: {note}" for note in split_notes(c.counts, c.task.family, lrs)]
    lines += rerun.lines
    runs = len(training_groups([c.task for c in checks])) * grid
    trained = (
        ""
        if rerun.to_train in (None, runs)
        else ", all reused (none fine-tuned)"
        if rerun.to_train == 0
        else f", {rerun.to_train} of them fine-tuned (the others reused)"
    )
    lines += [
        f"grid: {lr_grid(lrs, seeds)}",
        f"would run {count(runs, 'fine-tuning run')} ({count(len(checks), 'task')}; tasks sharing a run "
        f"count once) into {out}{trained}; checked, nothing trained or written",
    ]
    return "\n".join(lines)


def _positions(positions: int | None) -> str:
    return f"{positions:,} positions" if positions is not None else "positions not in its config"


def _family(task: Task) -> str:
    """The task's family as a task file names it: a pair task's options are `PairSCOptions`, whose
    `family` is sc (the runs share sc's head and metrics), so it was printed "sequence classification
    (sc)", the name of a task file family that takes one text."""
    if isinstance(task.options, PairSCOptions):
        return "sequence classification of text pairs (pair-sc)"
    return f"{FAMILY_NAMES[task.family]} ({task.family})"


def _metric(task: Task) -> str:
    """The task's metric, and for a two-class task's `f1` the class it scores: `positive_label`, else the
    second (id 1) of `labels:`, of ClassLabel names or of ids 0/1 (two other names read from the data
    are refused before this, `check_positive_named`: which is positive they do not say)."""
    if task.metric == "f1" and task.family == "sc":
        return f"f1 (the F1 of class {task.options.positive!r})"
    return task.metric


def _task_lines(c: TaskCheck, grid: int) -> list[str]:
    task = c.task
    length = task.max_length if task.max_length is not None else "the model's (0.99 x its positions)"
    lines = [
        f"task {task.name}: {_family(task)}, metric {_metric(task)}, max_length {length}",
        "  examples: " + ", ".join(f"{split} {size}" for split, size in c.splits.items()),
    ]
    if task.labels:
        shown = ", ".join(task.labels[:SHOWN_LABELS]) + (", ..." if len(task.labels) > SHOWN_LABELS else "")
        lines.append(f"  labels: {len(task.labels)} ({shown})")
    shared = f", sharing {task.trains_as}'s" if task.trains_as else ""
    # a lower bound (`Task.steps_at_least`): printed as the run's steps, it said 3 where the run took 4
    steps = ("at least " if task.steps_at_least else "") + count(c.steps, "optimizer step")
    windows = (
        "; trained on windows of the contexts, a long one several, which the run counts"
        if task.steps_at_least
        else ""
    )
    lines.append(
        f"  fine-tuning: {count(grid, 'run')}{shared}, {steps} each (batch {task.finetune.batch_size}{windows})"
    )
    return lines
