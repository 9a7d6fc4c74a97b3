"""`encoderlab eval`: parse, check, call `evaluate`, print where the results are.

The output folder follows `encoderlab.outdir`: a folder that encoderlab did not create (say one
holding someone else's `results.jsonl`) is refused before anything in it is opened for writing, so a
file that is not ours is never cut or appended to. The tasks, the grid, their assets and the model
are checked before the folder is created; a task whose data turns out unusable while it loads leaves
no new folder behind. Folders from versions without the marker are recognised by their
`results.jsonl` (every complete line a result record), read without changing it.

One evaluation writes a folder at a time: `OUT/.eval.lock` (`locks.folder_lock`, as `study run` and
`pretrain` lock theirs) refuses a second one naming the first, which would otherwise fine-tune every
cell again beside it. Trade-off: the second learns it once its model is loaded, as the lock lives in
the folder, which is made only after every check.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from pathlib import Path
from typing import Annotated, Literal

import tyro

from encoderlab import jsonlines
from encoderlab.cliargs import Repeated, flatten
from encoderlab.errors import UserError, closest
from encoderlab.eval.families import check_inputs
from encoderlab.eval.protocol import (
    RESULTS,
    EvalModel,
    ResultsStore,
    evaluate,
    load_eval_model,
    require_own_results,
    resolve_device,
    resolve_grid,
)
from encoderlab.eval.suites import refuse_repeats, require_assets, suite_tasks
from encoderlab.eval.summarypage import SUMMARY_MD
from encoderlab.eval.taskruns import check_positions
from encoderlab.eval.tasks import TASKS, get_task
from encoderlab.eval.tasks.custom import load_task_files, task_file_names
from encoderlab.eval.tasks.hub import HUB_DATA_ENV
from encoderlab.eval.tasks.registry import BUILTIN
from encoderlab.eval.tasks.splits import split_notes
from encoderlab.locks import folder_lock
from encoderlab.outdir import check_output, output_folder
from encoderlab.words import count, count_of, estimate_text, lr_text

KIND = "eval"
"""The ownership-marker kind of an evaluation folder."""
LOCK = ".eval.lock"
"""The lock of an evaluation folder, held while `eval` writes it (`locks.folder_lock`)."""
_RECORD_KEYS = ("model", "task", "task_signature", "lr", "seed")


def is_eval_folder(folder: Path) -> bool:
    """A folder written by `encoderlab eval` before output markers existed: its results.jsonl holds
    only result records (a torn last line aside). Reads, never writes."""
    try:
        raw = (Path(folder) / RESULTS).read_bytes()
        lines = raw[: raw.rfind(b"\n") + 1].decode("utf-8").splitlines()
        records = [jsonlines.loads(line) for line in lines]
    except (OSError, ValueError):
        return False
    return bool(records) and all(isinstance(r, dict) and all(k in r for k in _RECORD_KEYS) for r in records)


def eval_command(
    model: Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="MODEL")],
    suite: Literal["pocket", "domain", "paper", "biomed"] | None = None,
    tasks: Repeated = (),
    task_file: Repeated = (),
    lrs: tuple[float, ...] | None = None,
    seeds: tuple[int, ...] | None = None,
    out: Path = Path("eval"),
    device: str | None = None,
    hub_data: Path | None = None,
    check: bool = False,
) -> None:
    """Fine-tune and score MODEL on a suite over an LR grid and seeds (cached; reruns resume).

    Args:
        model: An encoderlab model/run folder, a Hugging Face folder, an asset name or a hub id.
        suite: pocket (offline, sized for CPUs; its measured CPU time per LR x seed is in docs/evaluation.md), domain, paper (paper 1's 12 datasets) or biomed (paper 2's English tasks and protocol); default pocket, or none with --task-file.
        tasks: Only these tasks of the suite (default: all), with --task-file too; with --task-file and no --suite, any built-in tasks to add; a task of the task files named here runs alone of them (default: all) (`--tasks a b` or `--tasks a --tasks b`).
        task_file: Task specs (YAML) or folders of them, run through the same protocol, cache and summary as built-in tasks (`--task-file a.yaml b.yaml`, or the flag repeated; see docs/evaluation.md).
        lrs: Learning-rate grid; the best is chosen on the validation mean (default: the suite's protocol, paper 1's 6 LRs, or paper 2's 5e-5 for biomed).
        seeds: Fine-tuning seeds per learning rate (default: 0-4, or paper 2's 42-46 for biomed).
        out: Folder for results.jsonl, summary.json, summary.md and predictions/ (per-example test predictions).
        device: cpu or cuda (default: cuda when available).
        hub_data: Folder of hub dataset mirrors, DIR/<owner>/<name>, read instead of the hub (sets $ENCODERLAB_HUB_DATA; see docs/evaluation.md).
        check: Check what the run would read (task files, data, grid, assets, the model's tokenizer and config, and of its weights only the safetensors headers) and print each task's splits, labels, metric, max length and fine-tuning runs, and what a rerun into --out would reuse (the weights then read, to fingerprint the model); train nothing, write nothing (--out is not created; --device is not checked).
    """
    from encoderlab.model.sources import guarded_folder

    names = list(flatten(tasks, "--tasks"))
    task_file = tuple(Path(f) for f in flatten(task_file, "--task-file"))
    if not check:  # a check may run where the GPU is not (a login node)
        resolve_device(device)  # refused before anything is read or written
    folder = guarded_folder(model)
    check_output(out, KIND, sources=[folder] if folder else [], legacy=is_eval_folder)  # reads only
    with _hub_data(hub_data):
        _check_out_outside_mirrors(out, suite, names, task_file)  # reads only
        if check:
            _check_command(model, suite, names, task_file, lrs, seeds, out)
        else:
            _evaluate_command(model, suite, names, task_file, lrs, seeds, out, device)


@contextlib.contextmanager
def _hub_data(hub_data: Path | None):
    """$ENCODERLAB_HUB_DATA set to --hub-data for this command only: left set, it outlived the command
    in a process that runs more than one (a notebook, tests calling `main` again)."""
    before = os.environ.get(HUB_DATA_ENV)
    if hub_data is not None:
        os.environ[HUB_DATA_ENV] = str(hub_data)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(HUB_DATA_ENV, None)
        else:
            os.environ[HUB_DATA_ENV] = before


def planned_tasks(suite, names, task_file, lrs, seeds):
    """(suite, names, the tasks to run, (LRs, seeds)) as `evaluate` takes them: task files read and
    registered, the grid and the assets checked; nothing written, no model read."""
    grid_suite = suite
    if task_file:
        # Checked and registered before anything is written; the suite's tasks (those of --tasks, if
        # given) join them, and the suite keeps its own default grid (biomed's one LR and seeds 42-46).
        files = _picked_file_tasks(names, task_file)
        builtin = [n for n in names if n not in files]
        names = [*(suite_tasks(suite, builtin or None) if suite else builtin), *files]
        suite = None
    elif suite is None:
        suite = grid_suite = "pocket"
    checked = suite_tasks(suite, names or None)
    grid = resolve_grid(grid_suite, lrs, seeds, checked)  # refused here, before the model loads
    require_assets(checked)
    return suite, names, checked, grid


def _picked_file_tasks(names: list[str], task_file) -> list[str]:
    """The tasks of the task files that run, read and registered: those `--tasks` names (as
    lm-evaluation-harness picks a task of a folder of configs), or all of them where it names none (its
    names are then built-in tasks, added, or picked from --suite). Each side a pick of its own, so
    `--task-file a.yaml --tasks tweets` runs as before. A name neither a task file's nor a built-in task's
    is refused with the others, in one line, before any task's data is read."""
    ours = task_file_names(task_file)
    # a name ending .yaml is `get_task`'s line (pass it with --task-file), said below
    unknown = [
        n for n in names if n not in ours and n not in BUILTIN and not n.lower().endswith((".yaml", ".yml"))
    ]
    if unknown:
        near = ", ".join(f"{n} -> {c}" for n in unknown if (c := closest(n, [*ours, *BUILTIN])))
        which = "no task has this name" if len(unknown) == 1 else "no tasks have these names"
        raise UserError(
            f"--tasks {' '.join(unknown)}: {which} in your task files ({', '.join(ours)}) or among the "
            f"built-in tasks{f' (did you mean {near}?)' if near else ''}; check the spelling"
        )
    picked = [n for n in names if n in ours]
    refuse_repeats(picked)
    return [t.name for t in load_task_files(task_file, only=picked or None)]


def _check_out_outside_mirrors(out: Path, suite, names, task_file) -> None:
    """Refuse an --out inside (or holding) the hub mirror folder a task reads (`--hub-data`), as `study run`
    refuses one inside a corpus's: `datasets` reads every file of a mirror folder, so results written there
    would be read as the task's data next time. From the task files' specs and the built-in tasks named or
    of the suite, before any task's data is read (a read leaves `datasets`' cache behind a refusal)."""
    from encoderlab.data.sources import hub_mirror_folders
    from encoderlab.eval.suites import SUITES
    from encoderlab.eval.tasks.custom import file_hub_repos

    builtin = [n for n in (*names, *SUITES.get(suite or "", ())) if n in BUILTIN]
    repos = [*(r for rs in file_hub_repos(task_file).values() for r in rs)]
    repos += [r for n in builtin for r in TASKS[n].hub_repos]
    check_output(out, KIND, sources=hub_mirror_folders(r.repo for r in repos), legacy=is_eval_folder)


def _check_command(model, suite, names, task_file, lrs, seeds, out) -> None:
    """`eval --check`: the run's checks, its model's weights unread, and what it would run (`preflight`)."""
    from encoderlab.eval.preflight import check_model, check_task, check_text, rerun_lines

    _, _, checked, (lrs, seeds) = planned_tasks(suite, names, task_file, lrs, seeds)
    mc = check_model(model)
    checks = [check_task(name, mc.tokenizer, mc.positions, mc.pooling) for name in checked]
    # what a rerun into --out would reuse: the run's own `cache_lines`, where --out holds results
    rerun = rerun_lines(model, mc, out, checked, lrs, seeds)
    print(check_text(model, mc, checks, lrs, seeds, out, rerun))


def _evaluate_command(model, suite, names, task_file, lrs, seeds, out, device) -> None:
    """The command once its flags are read and its output folder checked."""
    given_suite = suite
    suite, names, checked, grid = planned_tasks(suite, names, task_file, lrs, seeds)
    if given_suite is not None and suite is None:  # task files beside a suite: the suite's own grid
        lrs, seeds = grid
    em = load_eval_model(model)
    for name in checked:
        check_inputs(get_task(name), em.tokenizer)
        # before --out is made; `evaluate` checks again for library callers, which have no such step
        check_positions(get_task(name), em.positions)
    require_own_results(ResultsStore(out / RESULTS, repair=False), em)  # before --out is made or written
    with output_folder(out, KIND), folder_lock(out / LOCK, KIND, use=out):
        for line in cache_lines(ResultsStore(out / RESULTS), em, checked, *grid):
            print(line)
        summary = evaluate(em, suite=suite, tasks=names or None, lrs=lrs, seeds=seeds, out=out, device=device)
    for name, t in summary.tasks.items():
        score = estimate_text(t.test.mean, t.test.half_width)  # to its interval's digits, as summary.md
        flag = t.degenerate
        warn = f"  DEGENERATE in {count_of(flag.runs, flag.of, 'seed')}: {flag.why}" if flag else ""
        print(f"{name:<20} {t.metric:<10} {score:>6}  (best lr {lr_text(t.best_lr)}){warn}")
        for note in split_notes(t.counts, t.family, summary.lrs):
            print(f"  note: {note}")
    print(f"wrote {out / SUMMARY_MD}")


def cache_lines(store: ResultsStore, em: EvalModel, names, lrs, seeds) -> list[str]:
    """What a rerun reuses, said before it runs: the grid's runs already in `store` (an extra LR or seed
    added, an interrupted sweep resumed), and per task the runs of `em` under another task signature (its
    data, settings or scoring changed since), which are kept in the file but never reused or summarised,
    and the tasks of task files not given now, which the rewritten summary leaves out (built-in tasks
    evaluated earlier stay in it). Before, a rerun said none of it: a changed task file silently cost the
    whole grid again, and a task file's results vanished from summary.md when the next call named another."""
    lines, reused, path = [], 0, store.path
    if not store.records:  # a first run: nothing to reuse
        return lines
    for name in names:
        task = em.resolved(get_task(name))
        signature = task.signature()
        reused += sum(store.has_result(em.fingerprint, task, lr, s) for lr in lrs for s in seeds)
        stale = sum(k[:2] == (em.fingerprint, name) and k[2] != signature for k in store.records)
        if stale:
            lines.append(
                f"{name}: {count(stale, 'earlier run')} in {path} {'was' if stale == 1 else 'were'} of another "
                "version of the task (its data, settings or scoring changed since): not reused, kept in the file "
                "outside the summary"
            )
    gone = Counter(k[1] for k in store.records if k[0] == em.fingerprint and k[1] not in TASKS)
    for name, n in sorted(gone.items()):  # `evaluate` keeps only the tasks it knows in the rewritten summary
        lines.append(
            f"{name}: {count(n, 'earlier run')} in {path} of a task file not given now: kept in the file, "
            "outside the summary; give that --task-file again to summarise it"
        )
    if reused:
        runs = count_of(reused, len(names) * len(lrs) * len(seeds), "run")
        lines.insert(0, f"reusing {runs} (task x LR x seed) already in {path}; they are not fine-tuned again")
    return lines
