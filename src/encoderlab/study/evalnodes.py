"""A study's evaluation nodes: its tasks, and one eval node per (model, checkpoint, task, LR, seed).

`graph.build_graph` adds them after the prepare and pretraining nodes (`add_evals`). Tasks sharing one
fine-tuning run (`Backend.training_groups`) get one training node per (LR, seed) and one node per other task
taking its record, so a shared run trains once. Split out of `graph.py`, which keeps the graph, its keys and
the pretraining nodes; the graph's types are imported for checking only, as the graph imports this module.
Trade-off: the per-node configs are dictionaries merged per cell rather than dataclasses replaced per node
(`_add_runs`), as a paper study's thousands of eval nodes made `study list` slow otherwise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from encoderlab.errors import UserError
from encoderlab.study.nodeconfig import EvalNode
from encoderlab.study.spec import RunSpec, StudySpec
from encoderlab.study.specproblems import family_untested
from encoderlab.words import lr_text, noun

if TYPE_CHECKING:
    from encoderlab.study.graph import Backend, Graph


def study_tasks(spec: StudySpec, backend: Backend) -> tuple[dict[str, str], dict[str, str]]:
    """({task: family} of the study's task files, of all its tasks: the suite's and the files'). A task
    named in `eval.tasks`, `eval.checkpoint_tasks` or a run's `tasks` that is none of them is refused:
    those of a run or of the checkpoints were found by their eval node, after the pretraining."""
    own = backend.file_tasks(spec.eval.task_files) if spec.eval.task_files else {}
    families = {**(backend.suite_tasks(spec.eval.suite) if spec.eval.suite else {}), **own}
    named = {"eval.tasks": spec.eval.tasks, "eval.checkpoint_tasks": spec.eval.checkpoint_tasks}
    named |= {f"run {r.name}": r.tasks for r in spec.runs if r.tasks and r.evaluate}
    unknown = {where: sorted(set(tasks) - set(families)) for where, tasks in named.items()}
    if lines := [f"{where}: {', '.join(names)}" for where, names in unknown.items() if names]:
        suite = f"suite '{spec.eval.suite}'" if spec.eval.suite else ""
        within = " and ".join(w for w in (suite, "its task files" if own else "") if w)
        raise UserError(
            f"study {spec.name} names {noun(sum(map(len, unknown.values())), 'a task', 'tasks')} not in {within} ({'; '.join(lines)}); valid: {', '.join(families)}"
        )
    # A claim on a family no task file gives was planned, trained and evaluated, then reported "not tested":
    # the file's check (`specproblems`) sees a suite's families only, a task file's are read here.
    if own and (untested := [x for c in spec.claims for x in family_untested(spec, c, families, own)]):
        raise UserError(f"study {spec.name}: {'; '.join(untested)}")
    return own, families


def add_evals(
    graph: Graph,
    spec: StudySpec,
    backend: Backend,
    models: dict[str, tuple[RunSpec, str | None, str | None]],
    files: Mapping[str, str | None],
    parts: Mapping[str, dict[str, str]] | None = None,
) -> list[str]:
    """One eval node per (model, checkpoint, task, LR, seed) of the study's protocol; their names. `files`:
    {start model: the identity of its files} (`graph._source_files`); `parts`: {such a model: the digests of
    those files}, handed to its nodes beside their key (`Backend.model_files`)."""
    own, families = study_tasks(spec, backend)
    ev, evals = spec.eval, []
    holders = {entry: set(backend.file_tasks((entry,))) for entry in ev.task_files} if own else {}
    for rid, (run, node, source) in models.items():
        if not run.evaluate:
            continue
        signatures = {t: backend.task_signature(t, ev.max_steps, source) for t in families}
        for step in (None, *run.eval_steps):
            early = step is not None
            lrs = ev.checkpoint_lrs if early and ev.checkpoint_lrs else ev.lrs
            tasks = (
                ev.checkpoint_tasks
                if early and ev.checkpoint_tasks
                else run.tasks or ev.tasks or tuple(families)
            )
            prefix = f"eval/{rid}{'' if step is None else f'@{step}'}"
            cells = [(lr, sd) for lr in lrs for sd in ev.seeds]
            for group in backend.training_groups(tuple(tasks)) if cells else ():
                group_files = _files_of(group, holders)
                cfgs = [
                    EvalNode(
                        model=rid,
                        source=source,
                        step=step,
                        suite=ev.suite,
                        task=task,
                        task_signature=signatures.get(task, "?"),
                        family=families.get(task, "?"),
                        lr=cells[0][0],
                        seed=cells[0][1],
                        max_steps=ev.max_steps,
                        task_files=group_files if task in own else (),
                        source_files=files.get(source) if source else None,
                    )
                    for task in group
                ]
                aside = {"source_files": parts[source]} if source and source in (parts or {}) else None
                evals += _add_runs(graph, prefix, cfgs, cells, (node,) if node else (), aside)
    return evals


def _files_of(group: tuple[str, ...], holders: Mapping[str, set[str]]) -> tuple[str, ...]:
    """The task-file entries (files or folders) holding a task of `group` (the tasks of one fine-tuning
    run), sorted: an eval node's key names these alone. It named every task file of the study, in the
    study's order, so adding a task file, or listing the files in another order, gave every evaluation of
    the other files a new key and ran it again; its run loads only its own tasks' files anyway."""
    return tuple(sorted(entry for entry, tasks in holders.items() if tasks & set(group)))


def _add_runs(
    graph: Graph,
    prefix: str,
    cfgs: list[EvalNode],
    cells: list[tuple[float, int]],
    deps: tuple[str, ...],
    aside: dict | None = None,
) -> list[str]:
    """The eval nodes of one fine-tuning run per (LR, seed) of `cells`: the first task's node trains and
    scores the others too (`EvalNode.also`); each other task's node takes its record (`trained_by`) and
    depends on it alone. The configs are made once and only their LR and seed set per cell (`lr` and `seed`
    are plain numbers, which `EvalNode.data` keeps as they are): a dataclass built, replaced and converted
    per node was half of `study list`'s graphs, thousands of nodes per paper study. `aside`: the trainer's, the
    one node that loads the model (`Node.aside`)."""
    first, *rest = cfgs
    trains = dataclasses.replace(first, also=tuple(c.task for c in rest))
    scores = [dataclasses.replace(c, trained_by=first.task) for c in rest]
    layouts = [(c.data(), c.key_data()) for c in (trains, *scores)]  # (recorded, keyed)

    def add(layout: tuple[dict, dict], lr: float, seed: int, deps: tuple[str, ...], aside=None) -> str:
        cfg, keyed = ({**data, "lr": lr, "seed": seed} for data in layout)
        name = f"{prefix}/{cfg['task']}/lr{lr_text(lr)}/s{seed}"
        return graph.add("eval", name, cfg, deps, aside, key_config=keyed).name

    names = []
    for lr, seed in cells:
        trainer = add(layouts[0], lr, seed, deps, aside)
        names += [trainer, *(add(layout, lr, seed, (trainer,)) for layout in layouts[1:])]
    return names
