"""`encoderlab study run | plan | show | list | report | status`: thin wrappers over the study API.

A study is named by a built-in name with a scale (`paper1-pfs --scale cpu`) or by a YAML file of one's
own (`my-study.yaml`, which carries its scale; `study show` exports a built-in study as one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import tyro

from encoderlab.cliargs import Repeated, flatten
from encoderlab.errors import UserError
from encoderlab.paths import typed
from encoderlab.study.catalog import get_study, list_studies
from encoderlab.study.prepared import with_prepared
from encoderlab.study.runner import run_study
from encoderlab.study.spec import StudySpec
from encoderlab.words import count, noun

# a built-in study's name, a study file or a study folder; and a study folder
Study = Annotated[str, tyro.conf.Positional, tyro.conf.arg(metavar="STUDY")]
StudyFolder = Annotated[Path, tyro.conf.Positional, tyro.conf.arg(metavar="FOLDER")]


def study_spec(name: str, scale: str | None) -> StudySpec:
    """The built-in study `name` at `scale` (default demo), the study file `name` (.yaml/.yml), or the
    study a study folder `name` was last run with (its study.json; `study show DIR` said "unknown study")."""
    if study_folder(name) is not None:
        if scale is not None:
            raise UserError(
                f"{name} is a study folder, which keeps the scale it was run at; drop --scale {scale}"
            )
        from encoderlab.study.data import read_study

        return read_study(Path(name))[0]
    if _is_study_file(name):
        _check_not_a_builtin_name(Path(name))
        if scale is not None:
            raise UserError(f"{name} is a study file, which sets its own scale; drop --scale {scale}")
        from encoderlab.study.files import load_study_file

        return load_study_file(name)
    return get_study(name, scale or "demo")


def _is_study_file(name: str) -> bool:
    """Whether `name` (not a study folder) is a study file rather than a built-in study's name."""
    return name.endswith((".yaml", ".yml")) or Path(name).is_file()


def _show_args(name: str, spec: StudySpec) -> str | None:
    """What `encoderlab study show` takes to print the study `name` (`spec`) as a file to edit: a built-in
    study's name and scale, a study folder; None for a study file, itself the file to edit."""
    if study_folder(name) is not None:
        return name
    return None if _is_study_file(name) else f"{name} --scale {spec.scale}"


def _with_prepared(name: str, scale: str | None, prepared: Repeated) -> StudySpec:
    """The study `name` at `scale` with its `--prepared NAME=DIR` datasets (`prepared.with_prepared`)."""
    spec = study_spec(name, scale)
    return with_prepared(spec, flatten(prepared, "--prepared"), _show_args(name, spec))


def _check_not_a_builtin_name(path: Path) -> None:
    """A study file that does not exist but is named as a built-in study (`paper1-pfs.yaml`): a built-in
    study is named alone, and "study file paper1-pfs.yaml does not exist" did not say so."""
    from encoderlab.study.catalog import STUDIES

    if path.stem in STUDIES and not path.exists():
        raise UserError(
            f"study file {path} does not exist; {path.stem} is a built-in study: name it without {path.suffix} "
            f"(encoderlab study list), or write the file first with `encoderlab study show {path.stem} > {typed(path)}`"
        )


def study_folder(name: str) -> Path | None:
    """`name` as a study folder (one holding study.json), else None; a folder that holds none is refused
    here, not called an unknown study. A built-in study's name means that study, folder or not."""
    from encoderlab.study.catalog import STUDIES

    path = Path(name)
    if name in STUDIES or not path.is_dir():
        return None
    if not (path / "study.json").is_file():
        raise UserError(
            f"{name} is a folder without study.json, so no study folder; give a built-in study name (encoderlab "
            "study list), a study file, or a folder `study run --out` wrote"
        )
    return path


def default_backend():
    """The real node kinds (imported lazily: they pull in torch and transformers)."""
    from encoderlab.study import real_backend

    return real_backend()


def run_command(
    name: Study,
    /,
    scale: str | None = None,
    out: Path | None = None,
    fetch: bool = True,
    jobs: int = 1,
    prepared: Repeated = (),
) -> Path:
    """Run a study end to end (resuming a previous attempt) and print the report's paths (HTML, Markdown).

    Args:
        name: Built-in study name (see `encoderlab study list`), a study YAML file (see `study show`), or a
            study folder, which continues in itself.
        scale: demo | cpu | gpu-210m | gpu-610m | gpu-1b (built-in studies; default demo).
        out: Study folder (default runs/NAME-SCALE); rerunning into it resumes and reuses finished nodes.
        fetch: Fetch missing assets automatically (--no-fetch: fail and name the fetch command instead).
        jobs: Nodes run at once, each in a worker process with its share of the CPU threads and, on a
            GPU machine, a GPU of its own (1: one after the other in this process; more than the CPUs:
            one thread each, sharing them, with a note).
        prepared: NAME=DIR: read dataset NAME from DIR, a folder prepared from its corpus with its
            tokenizer (e.g. across machines with `data prepare --shard`, then `data merge`).
    """
    spec = _with_prepared(name, scale, prepared)
    # a study folder given as the study continues in itself
    folder = out if out is not None else study_folder(name) or Path("runs") / f"{spec.name}-{spec.scale}"
    report = run_study(spec, folder, default_backend(), fetch=fetch, jobs=jobs)
    print_report_paths(report)
    return report


def print_report_paths(report: Path) -> None:
    """The report's artefacts, one line each, as `study run` and `study report` print them: the HTML page
    and its Markdown twin (`study report` printed only the page)."""
    print(f"report: {report}")
    print(f"markdown: {report.with_suffix('.md')}")


def show_command(name: Study, /, scale: str | None = None) -> None:
    """Print a study as YAML: a starting point for a study of your own (`> my.yaml`, then `study run my.yaml`).

    Args:
        name: Built-in study name, a study file (printed as it reads, after checking), or a study folder
            (the study it was last run with).
        scale: Scale of a built-in study (default demo).
    """
    from encoderlab.study.files import dump_study

    spec = study_spec(name, scale)
    if study_folder(name) is not None:
        origin = f"the study folder {name}"
    else:
        origin = name if name.endswith((".yaml", ".yml")) else f"{name} --scale {spec.scale}"
    print(dump_study(spec, origin=origin), end="")


def plan_command(
    name: Study,
    /,
    scale: str | None = None,
    out: Path | None = None,
    prepared: Repeated = (),
    probe: Annotated[bool, tyro.conf.FlagCreatePairsOff] = False,
) -> None:
    """Print what a study will train and read: per run its tokens against the corpus's, GPU (and CPU) time.

    Args:
        name: Built-in study name, a study YAML file, or a study folder (counted from its prepared data).
        scale: Scale of a built-in study (default demo).
        out: A study folder whose prepared data gives exact token counts (default: estimates; a folder
            without this study's prepared data says so in a note and estimates).
        prepared: NAME=DIR: dataset NAME is the prepared folder DIR (counted exactly), as in `study run`.
        probe: Runs that train on this CPU: time each training shape here (a few optimizer steps, seconds a shape) for their CPU time; of a --out folder, only the runs still to run (default: the device named, the CPU time not measured, torch not imported).
    """
    from encoderlab.study.absent import resumed_graph
    from encoderlab.study.checks import check_inputs, check_prepared_sources
    from encoderlab.study.data import check_study_folder
    from encoderlab.study.evalcost import with_evaluation
    from encoderlab.study.graph import build_graph, pretraining
    from encoderlab.study.plan import check_passes, plan_study
    from encoderlab.study.plantext import plan_text
    from encoderlab.study.runchecks import check_runs, elsewhere_note
    from encoderlab.study.runner import check_same_study

    out = out if out is not None else study_folder(name)  # a study folder is counted from its own data
    if out is not None:  # a file was planned as a folder without prepared data, its counts estimated
        check_study_folder(out, "--out ", ", or drop --out for estimated counts")
    spec = _with_prepared(name, scale, prepared)
    if out is not None:  # another study's folder: `study run --out` refuses it (the plan counted from it)
        check_same_study(out, spec)
    # the graph `study run` builds (a missing task file or unknown task is refused there; of a study
    # folder, one gone since as the folder recorded it: `absent.resumed_graph`), and the checks of its
    # inputs `study run` makes, in its words: not counted from data of a corpus changed since
    trained, backend = pretraining(spec), default_backend()  # resolved once, for graph, plan and checks
    graph, gone, idle = (
        resumed_graph(spec, out, backend, trained)
        if out
        else (build_graph(spec, backend, trained), frozenset(), False)
    )
    check_prepared_sources(spec, out, graph, gone)  # first, as `study run` checks it: the plan counts from it
    if not idle:  # else a --prepared folder is gone, nothing to run: as `study run`, no input is checked
        check_inputs(spec, out, graph, fetched=False)
    plan = with_evaluation(plan_study(spec, out, graph, trained), graph)
    plan = _with_device(plan, trained, probe, out, graph)  # --probe is opt-in: torch, seconds a shape
    print(plan_text(plan))
    if out is not None:
        _folder_notes(spec, plan, out, graph, gone)
    _hub_lines(spec, out, graph)
    if idle:  # nothing to run: no passes or runs to refuse (`study run` checks none either)
        return
    check_passes(plan)  # a refused study is the last line, and a non-zero exit
    if elsewhere := elsewhere_note(spec):
        print(elsewhere)
    # rows a node would refuse: start models, memory (not for GPUs planned without one), data
    check_runs(spec, out, graph, memory=not elsewhere, trained=trained)


def _with_device(plan, trained, probe: bool, out: Path | None, graph):
    """`plan` with where its runs train (`cputime.with_device`), timed by `cputime.probe` with `--probe`
    unless the study folder `out` has nothing left to run (`absent.to_run`): no step it would time is left;
    of a folder partly run, the runs whose pretraining node finished there are not timed."""
    from encoderlab.study import cputime
    from encoderlab.study.absent import to_run

    left = to_run(out, list(graph)) if out is not None else list(graph)
    pending = {n.name for n in left}
    done = frozenset(n.name.split("/", 1)[1] for n in graph if n.kind == "pretrain" and n.name not in pending)
    return cputime.with_device(
        plan, trained, cputime.probe if probe else None, out is not None and not left, done
    )


def _hub_lines(spec: StudySpec, out: Path | None, graph) -> None:
    """The plan's lines on the hub start models and tokenizers its nodes still to run read, asking no hub:
    pinned or not, and the commit read (`hubinputs.plan_hub_inputs`), then a note on each start model
    the local hub cache does not hold (`hubids.uncached_start_notes`)."""
    from encoderlab.study.hubids import uncached_start_notes
    from encoderlab.study.hubinputs import plan_hub_inputs
    from encoderlab.study.reads import unread_inputs

    unread = unread_inputs(spec, out, graph)
    for line in plan_hub_inputs(spec, unread) + uncached_start_notes(spec, unread):
        print(line)


def _folder_notes(spec: StudySpec, plan, out: Path, graph, gone: frozenset[str]) -> None:
    """The plan's lines on its study folder `out`: what a rerun into it reuses, the inputs recorded there
    that are gone (`absent.recorded_notes`), and why its counts are estimated, if they are."""
    from encoderlab.study.absent import recorded_notes

    if (out / "study.json").is_file():
        print(_reused_line(out, graph))
    counted = frozenset(n for n, c in plan.corpora.items() if c.counted)
    if notes := recorded_notes(spec, out, gone, counted):
        print("\n".join(notes))
    if estimated := _estimated_note(spec, plan, out):  # asked for counts: why none
        print(estimated)


def _reused_line(out: Path, graph) -> str:
    """What `study run` into the folder `out` would reuse and run, per node kind: rerun after an edit of
    the study file, a finished node whose config is unchanged is kept and one whose config changed is a
    new node, which the plan counted but never said which (`study status` reads the study as it last ran,
    not as the file says now)."""
    from encoderlab.study.absent import to_run
    from encoderlab.study.runner import nothing_to_run

    nodes = list(graph)
    todo = to_run(out, nodes)
    if not todo:  # the line `study run` prints into such a folder
        return nothing_to_run(out, len(nodes))
    kinds = ", ".join(f"{sum(n.kind == k for n in todo)} {k}" for k in dict.fromkeys(n.kind for n in todo))
    return (
        f"study folder {out}: {len(nodes) - len(todo)} of {len(nodes)} nodes finished, reused as they are; to run: "
        f"{kinds} (a node whose config changed runs as a new node; its old folder is kept)"
    )


def _estimated_note(spec: StudySpec, plan, out: Path) -> str:
    """The note of `study plan --out` naming the datasets it estimated (none: "") and why."""
    estimated = [d.name for d in spec.data if d.prepared is None and not plan.corpora[d.name].counted]
    if not estimated:
        return ""
    names = ", ".join(estimated)
    why = (
        "does not exist"
        if not out.exists()
        else f"holds no finished prepared data of {noun(len(estimated), 'dataset')} {names} as this study defines them"
    )
    return f"note: --out {out} {why}: the unique tokens of {names} are estimated, not counted"


def expected_time(minutes: float) -> str:
    """An expected run time as `study list` prints it (and docs/studies.md's scales table quotes it)."""
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.0f} h"


def list_command() -> None:
    """List the built-in studies and scales: expected run time, passes over the corpus, hardware, and whether
    each scale is its paper's setup (else what differs)."""
    print(f"{'study':<18} {'scale':<10} {'expected time':>14} {'passes':>8}  {'hardware':<20} setup")
    for study, scale, minutes, hardware, passes, setup in list_studies():
        print(f"{study:<18} {scale:<10} {expected_time(minutes):>14} {passes:>8}  {hardware:<20} {setup}")
    print(
        "passes: the most any pretraining run reads its corpus (estimated, >=: at least, ?: unknown until its "
        "corpus is fetched, as `study plan` names it; exact in `study plan --out DIR`)"
    )
    print(
        "plan one with: encoderlab study plan STUDY --scale SCALE; run it with: encoderlab study run STUDY --scale SCALE --out DIR"
    )
    print(
        "a scale that is NOT its paper's setup tests the claims on other data, tokenizer or tasks (docs/reproduce.md)"
    )


def report_command(folder: StudyFolder, /) -> Path:
    """Regenerate the report of a study folder (also of a partly finished study) and print its paths.

    Args:
        folder: The study folder (`study run --out`); the report goes to its report/.
    """
    from encoderlab.study.report import write_report

    report = write_report(folder)
    print_report_paths(report)
    return report


def status_command(folder: StudyFolder, /) -> None:
    """Say how far a study folder got: its finished nodes per kind, those still to run, and the node
    folders that belong to no node of the study as it last ran (kept, never deleted: yours to remove).

    Args:
        folder: The study folder (`study run --out`).
    """
    from encoderlab.study.data import read_study
    from encoderlab.study.marker import MARKER
    from encoderlab.study.runner import STALE_WHY, pending_nodes, stale_folders

    starting = _starting(folder)
    if starting:
        print(starting)
        return
    spec, nodes = read_study(folder)
    # what `study run` would run: a node downstream of one whose folder was deleted keeps its marker until
    # then, but reads the old outputs, so it is not finished (was listed as finished beside its input)
    todo_names = {n.name for n in pending_nodes(folder, nodes)}
    done = {n.name for n in nodes if n.name not in todo_names}
    print(f"study {spec.name} (scale {spec.scale}) in {folder}: {len(done)} of {len(nodes)} nodes finished")
    print(_running(folder, len(done) == len(nodes)))
    for kind in dict.fromkeys(n.kind for n in nodes):
        todo = [n.name for n in nodes if n.kind == kind and n.name not in done]
        left = f"; not finished: {', '.join(todo[:3])}{f' and {len(todo) - 3} more' if len(todo) > 3 else ''}"
        total = sum(n.kind == kind for n in nodes)
        print(f"  {kind}: {total - len(todo)} of {total} finished{left if todo else ''}")
    stale = stale_folders(folder, nodes)
    if stale:
        print(
            f"{count(len(stale), 'node folder')} {noun(len(stale), 'belongs', 'belong')} to no node of the study as it last ran: {STALE_WHY}"
        )
        for f in stale:
            print(f"  {f}{'  (finished)' if (f / MARKER).is_file() else ''}")


def _starting(folder: Path) -> str | None:
    """What `status` says of a folder whose study holds its lock but has not yet written its records (its start
    checks, its asset fetch: minutes on a fresh machine); None for any other folder. `status` said "is not a
    study folder (no study.json/graph.json); run: encoderlab study run NAME --out FOLDER", a run that the
    lock then refused."""
    from encoderlab.locks import holder_alive, read_lock
    from encoderlab.study.runner import LOCK

    try:
        holder = read_lock(folder / LOCK)
    except OSError:  # a file given as the folder, one that cannot be read: `read_study` names it
        return None
    if (
        not holder
        or holder_alive(holder) is False
        or all((folder / f).is_file() for f in ("study.json", "graph.json"))
    ):
        return None
    return (
        f"{holder.get('what')} in {folder}: starting (its checks and assets before the first node; no node "
        f"has run yet)\n{_running(folder, False)}"
    )


def _running(folder: Path, finished: bool) -> str:
    """Whether a study process runs in `folder` now, from its lock: `status` listed a killed study's
    nodes as it listed a running one's ("to run"), so neither could be told from the other."""
    from encoderlab.locks import holder_alive, read_lock
    from encoderlab.study.runner import LOCK

    holder = read_lock(folder / LOCK)
    alive = holder_alive(holder) if holder else False
    if not alive and (finished or holder is None):
        return "not running" + (
            "" if finished else f"; rerun `encoderlab study run {typed(folder)}` to resume"
        )
    who = f"pid {holder.get('pid')} on {holder.get('host')} since {holder.get('since')}"
    if alive:
        return f"running: {who}"
    if alive is None:
        return f"held by {who}, which cannot be checked from here; if that process is gone, delete {folder / LOCK}"
    return (
        f"not running: the study that ran here ({who}) was stopped before it finished; rerun "
        f"`encoderlab study run {typed(folder)}` to resume"
    )
