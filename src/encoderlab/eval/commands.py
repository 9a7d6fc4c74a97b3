"""`encoderlab eval`: parse, call `evaluate`, print where the results are."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

import tyro

from encoderlab.eval.protocol import SUMMARY_MD, evaluate
from encoderlab.eval.suites import suite_tasks
from encoderlab.eval.tasks.custom import load_task_files
from encoderlab.eval.tasks.hub import HUB_DATA_ENV


def eval_command(
    model: Annotated[str, tyro.conf.Positional],
    suite: Literal["pocket", "domain", "paper", "biomed"] | None = None,
    tasks: tuple[str, ...] = (),
    task_file: Annotated[tuple[Path, ...], tyro.conf.UseAppendAction] = (),
    lrs: tuple[float, ...] | None = None,
    seeds: tuple[int, ...] | None = None,
    out: Path = Path("eval"),
    device: str | None = None,
    hub_data: Path | None = None,
) -> None:
    """Fine-tune and score MODEL on a suite over an LR grid and seeds (cached; reruns resume).

    Args:
        model: An encoderlab model/run folder, a Hugging Face folder, an asset name or a hub id.
        suite: pocket (offline, ~10 min per LR x seed for a tiny model), domain, paper (paper 1's 12 datasets) or biomed (paper 2's English tasks and protocol); default pocket, or none with --task-file.
        tasks: Only these tasks of the suite (default: all); with --task-file, built-in tasks to add.
        task_file: A task spec (YAML) or a folder of them, run through the same protocol, cache and summary as built-in tasks; repeat the flag for more (see docs/evaluation.md).
        lrs: Learning-rate grid; the best is chosen on the validation mean (default: the suite's protocol, paper 1's 6 LRs, or paper 2's 5e-5 for biomed).
        seeds: Fine-tuning seeds per learning rate (default: 0-4, or paper 2's 42-46 for biomed).
        out: Folder for results.jsonl, summary.json and summary.md.
        device: cpu or cuda (default: cuda when available).
        hub_data: Folder of hub dataset mirrors, DIR/<owner>/<name>, read instead of the hub (sets $ENCODERLAB_HUB_DATA; see docs/evaluation.md).
    """
    if hub_data is not None:
        os.environ[HUB_DATA_ENV] = str(hub_data)
    names = list(tasks)
    if task_file:
        # Checked and registered before anything is written; the suite's tasks, if one is named, join them.
        names = [
            *(suite_tasks(suite) if suite else []),
            *names,
            *(t.name for t in load_task_files(task_file)),
        ]
        suite = None
    elif suite is None:
        suite = "pocket"
    summary = evaluate(model, suite=suite, tasks=names or None, lrs=lrs, seeds=seeds, out=out, device=device)
    for name, t in summary.tasks.items():
        ci = f" ± {t.test.half_width:.2f}" if t.test.half_width is not None else ""
        flag = t.degenerate
        warn = f"  DEGENERATE in {flag.runs}/{flag.of} seeds: {flag.why}" if flag else ""
        print(f"{name:<20} {t.metric:<10} {t.test.mean:6.2f}{ci}  (best lr {t.best_lr:g}){warn}")
    print(f"wrote {out / SUMMARY_MD}")
