"""Named suites of tasks.

* `pocket`: offline, real data, paper 1's four families with 2-3 tasks each, sized for CPUs (the CPU
  time a `tiny` model takes at one LR and one seed is measured in docs/evaluation.md, *Time budget*;
  its wall time on a quiet machine never was);
* `domain`: the detour study's domain tasks (biomedical PubMedQA classification and retrieval,
  code docstring -> function retrieval on stdlib modules held out of `code-python`);
* `paper`: paper 1's 12 datasets, from the hub or from local mirrors ($ENCODERLAB_HUB_DATA);
* `biomed`: paper 2's English biomedical tasks on the hub, with paper 2's protocol: its tasks
  select the best epoch (their `FinetuneConfig`), and the suite's default grid is paper 2's one
  learning rate and five seeds (`SUITE_GRIDS`), where the other suites use paper 1's grid.
"""

from __future__ import annotations

from encoderlab.errors import UserError, did_you_mean
from encoderlab.eval.tasks import TASKS, get_task

SUITES: dict[str, tuple[str, ...]] = {
    "pocket": (
        "vitaminc",
        "boolq",
        "tweets",
        "wnut16",
        "brown-pos",
        "squad",
        "squad-retrieval",
        "boolq-retrieval",
        "pubmedqa-retrieval",
    ),
    "domain": ("pubmedqa", "pubmedqa-retrieval", "code-retrieval"),
    "paper": tuple(name for name in TASKS if name.startswith("paper-")),
    "biomed": tuple(name for name in TASKS if name.startswith("biomed-")),
}

PAPER2_LRS, PAPER2_SEEDS = (5e-5,), (42, 43, 44, 45, 46)
SUITE_GRIDS: dict[str | None, tuple[tuple[float, ...], tuple[int, ...]]] = {
    "biomed": (PAPER2_LRS, PAPER2_SEEDS)
}
"""(LRs, seeds) of a suite whose protocol is not paper 1's grid (BioClinical-ModernBERT: lr 5e-5,
seeds 42-46 in scripts/run_parallel.sh)."""

# The assets each offline task reads, so a suite can name every missing fetch at once.
TASK_ASSETS: dict[str, tuple[str, ...]] = {
    "vitaminc": ("vitaminc",),
    "boolq": ("boolq",),
    "tweets": ("tweets",),
    "wnut16": ("wnut16",),
    "brown-pos": ("brown-pos",),
    "squad": (
        "squad-v1-dev",
        "squad-shifts-nyt",
        "squad-shifts-reddit",
        "squad-shifts-amazon",
        "squad-shifts-new-wiki",
    ),
    "squad-retrieval": ("squad-v1-dev",),
    "boolq-retrieval": ("boolq",),
    "pubmedqa-retrieval": ("pubmedqa",),
    "pubmedqa": ("pubmedqa",),
    "code-retrieval": (),
}


def refuse_repeats(tasks) -> None:
    """A task named twice is one line (it was dropped without a word): `suite_tasks`, and `eval --tasks`
    naming task files' tasks, which no suite lists."""
    if repeated := sorted({t for t in tasks if list(tasks).count(t) > 1}):
        raise UserError(f"task {', '.join(repeated)} given twice; give each once")


def suite_tasks(suite: str | None, tasks: list[str] | tuple[str, ...] | None = None) -> list[str]:
    """The task names to run: the suite's, or the `tasks` subset (which must belong to it); with
    no suite, `tasks` may name any registered task. A task named twice is refused (it was dropped
    without a word, where `analyze probe` and `advise` refuse a repeat)."""
    refuse_repeats(tasks or ())
    if suite is None:
        if not tasks:
            raise UserError("name a suite or at least one task")
        for name in tasks:
            get_task(name)
        return list(dict.fromkeys(tasks))
    if suite not in SUITES:
        raise did_you_mean(suite, list(SUITES), "suite")
    if not tasks:
        return list(SUITES[suite])
    for name in tasks:
        get_task(name)
        if name not in SUITES[suite]:
            raise UserError(f"task '{name}' is not in suite '{suite}'; its tasks: {', '.join(SUITES[suite])}")
    return list(dict.fromkeys(tasks))


def missing_assets(task_names: list[str]) -> list[str]:
    """Assets the given tasks need that are not fetched yet."""
    from encoderlab.data.assets import is_fetched

    needed = dict.fromkeys(a for t in task_names for a in TASK_ASSETS.get(t, ()))
    return [a for a in needed if not is_fetched(a)]


def require_assets(task_names: list[str]) -> None:
    """One error naming the single command that fetches everything missing, then `require_mirrors`."""
    missing = missing_assets(task_names)
    if missing:
        raise UserError(
            f"assets not fetched: {', '.join(missing)}; run: encoderlab assets fetch {' '.join(missing)}"
        )
    require_mirrors(task_names)


def require_mirrors(task_names: list[str]) -> None:
    """With `$ENCODERLAB_HUB_DATA` set, the first hub dataset a task reads (`Task.hub_repos`) that has
    no mirror there is one error with its download command. A loader found it only when the grid (or a
    study's evaluation node) reached its task: on the paper suite, hours of earlier work in."""
    from encoderlab.data.hub import dataset_location, mirror_root

    if mirror_root() is None:  # the hub itself: a download, the loader's to try
        return
    for name in task_names:
        for hub in get_task(name).hub_repos:
            try:
                dataset_location(hub.repo, hub.revision)
            except UserError as exc:
                raise UserError(f"task {name}: {exc}") from None
