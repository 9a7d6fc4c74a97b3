"""Resuming a study whose task files or `--prepared` folders were moved or deleted since it ran.

Building a study's graph reads its task files (`eval.task_files`): each of their tasks' family and
definition (its signature, `needs.task_signature`) is in the keys of its eval nodes, and the digest of
their test texts in the keys of the prepare nodes cleaning a corpus against them (`needs.keyed_sets`). So a study folder
whose task files were moved or deleted after every node reading them finished could not be resumed,
even to find every node finished and keep its report ("task file ... does not exist"). Now, when every
task file of the study is gone, `study run` takes them as the study folder's graph.json recorded them
(`recorded_backend`): their tasks and families, each task's signature as the eval nodes of that
graph that name the very same task files were keyed with, and their test texts' digest as its prepare
nodes were keyed with (`_recorded_sets`). That never keys a node on a stale file:
- a task file that is there is read, as before (one changed since gets new keys);
- a node whose config is not one recorded (another `max_steps`, a model added) gets a signature no
  task has (`UNKNOWN`), so a key of no finished node: it is to run;
- every node still to run (`runner.pending_nodes`) that reads a task file not there is refused before
  anything runs or is written (`refuse_absent_task_files`), naming the file and the fix. Put back, the
  file keeps every finished node; named where it is now, the nodes of its tasks run again: a node's
  key holds its own tasks' task files by path (`EvalNode.task_files`; until 2026-12-07 all the study's).

When only SOME of the recorded task files are gone, none is taken from the record, and the resume is
refused in one line naming them and the fix (`_partly_absent`). Trade-off: an eval node records the
task files of its fine-tuning run's tasks (since 2026-12-07; before, all the study's), so graph.json
says which tasks a gone file held only where no run's tasks spanned two files. Taking them from it would
let such a study resume, but only to find its nodes finished: a node to run that reads the gone file is
refused anyway; and mixing files read now with files taken from a record would have to settle a task
moved since from the gone file into one that is there. Putting the file back (which keeps every node)
is the fix, so the partial case is refused rather than half-recorded.

A CKA texts file on this machine is keyed by its content (`study/localtexts.py`); one gone is taken as the
CKA nodes of graph.json reading that very path recorded it (`_recorded_cka_texts`), as a start model folder
gone is (`_recorded_models`): a finished CKA keeps its result, and one still to run is refused by the start
checks, which look for the file. Without that, the key fell back to the path and a finished study resumed
with its texts file deleted was refused ("... is neither a file nor an asset").

A folder given with `--prepared` is keyed by its content (`study/prepared.py`), read from its meta.json
when the graph is built. One gone is taken as the study folder recorded it (`recorded_digests`: the
digest of its prepare node in graph.json, when study.json names the same folder). Only the nodes that
read its tokens need it (`reads_tokens`): its prepare node (to run when its key changed) and the
pretraining nodes training on it; a resume that runs one of them is refused in one line naming the
folder, the node and the fix (`--prepared NAME=DIR` where it is now keeps every finished node), before
anything is written. Every other node runs without it: an evaluation or CKA reads models, and the report
reads what the prepare node recorded of the folder (`nodes._recorded`): its unique tokens, which the
plan and the report's passes count as they counted them from the folder (`plan.finished_meta`), and the
unigram entropy of its plateau caveat (`outputs._read_unigram`). A node recording no unique tokens (edited
by hand) has them estimated; one from before 2026-12-05 recorded no entropy, and its report's claims
say the plateau is not checked, naming the folder and `--prepared NAME=DIR`. The start checks run for
the nodes to run but skip the folder (`gone_prepared`): its tokenizer (`checks.check_prepared_tokenizers`),
its token files (`checks.check_prepared_sources`) and the rows and memory of the runs on it
(`runchecks.check_runs`), all finished. With nothing to run, `study run` checks no node's inputs and
fetches nothing (`Resumed.idle`): it rewrites study.json and graph.json and hands back the report.
A folder gone of which nothing is recorded (not the one the study ran with) is refused in one line.
`study report DIR` reads the same record, so it writes the same figures with the folder gone.

`study plan DIR` (or `--out DIR`) builds its graph with the same `resumed_graph`, so it plans what
`study run DIR` would resume and refuses what it would refuse, and says which inputs it took from the
record (`recorded_notes`): with a `--prepared` folder gone it checks what `study run` checks, and
counts that dataset's unique tokens as its prepare node recorded them (`plan.finished_meta`).
"""

from __future__ import annotations

import dataclasses
from functools import partial
from pathlib import Path
from typing import NamedTuple

from encoderlab.errors import UserError
from encoderlab.study.graph import Backend, Graph, KeyedSets, Node, Pretraining, build_graph
from encoderlab.study.needs import split_task_tests
from encoderlab.study.nodeconfig import CkaNode, EvalNode
from encoderlab.study.spec import DataSpec, StudySpec
from encoderlab.words import count, noun

UNKNOWN = "?"
"""The signature of a task of a task file not there, for an eval node of a config the record has not:
no finished node holds it, so the node is to run, and is refused (`refuse_absent_task_files`)."""


def absent_task_files(spec: StudySpec) -> tuple[str, ...]:
    """The task files (or folders) of `spec` that are not there."""
    return tuple(f for f in spec.eval.task_files if not Path(f).exists())


def recorded_backend(spec: StudySpec, study_dir: Path, backend: Backend) -> Backend:
    """`backend`, with the model folders evaluated as is that are gone as recorded (`_recorded_models`), and
    when every task file of `spec` is gone: their tasks, families and signatures as
    the graph.json of `study_dir` recorded them (see the module docstring). As it is when every task
    file is there, or none is recorded (a first run: building the graph then refuses the missing file);
    when only some are gone of the files it recorded, a refusal naming them and the fix."""
    files, absent, gone = spec.eval.task_files, absent_task_files(spec), _gone_starts(spec)
    texts = _gone_texts(spec)
    nodes = _recorded_nodes(study_dir) if absent or gone or texts else []  # graph.json read once, only then
    backend = _recorded_models(nodes, backend) if gone else backend
    backend = _recorded_cka_texts(nodes, backend) if texts else backend
    if not absent:
        return backend
    recorded = [EvalNode.of(n) for n in nodes if n.kind == "eval"]
    recorded = [e for e in recorded if e.task_files and set(e.task_files) <= set(files)]
    if not recorded:
        return backend
    if len(absent) < len(files):  # which of them held which task is not recorded: none is taken
        raise UserError(_partly_absent(spec, study_dir, absent))
    families = {e.task: e.family for e in recorded}
    held: dict[str, dict[str, str]] = {}  # file -> {task: family}: a node's key names its own tasks' files
    for e in recorded:
        for f in e.task_files:
            held.setdefault(f, {})[e.task] = e.family
    signatures = {(e.task, e.max_steps, e.source): e.task_signature for e in recorded}

    def task_signature(task: str, max_steps: int | None, source: str | None) -> str:
        if task not in families:  # a suite's task
            return backend.task_signature(task, max_steps, source)
        return signatures.get((task, max_steps, source), UNKNOWN)

    return dataclasses.replace(
        backend,
        file_tasks=lambda asked: {t: fam for f in asked for t, fam in held.get(f, {}).items()},
        task_signature=task_signature,
        keyed_sets=partial(_recorded_sets, _recorded_texts(nodes)),
    )


def _gone_starts(spec: StudySpec) -> bool:
    """Whether a run of `spec` starts from (evaluates as is or continues) a folder that is not there."""
    names = {r.name for r in spec.runs}  # a run continuing another run of the study names no folder
    return any(r.init and r.init not in names and not Path(r.init).expanduser().exists() for r in spec.runs)


def _recorded_models(nodes: list[Node], backend: Backend) -> Backend:
    """`backend`, a start model evaluated as is or continued whose folder is gone identified as the recorded
    `nodes` (of graph.json) hold it (`EvalNode.source_files`, `CkaNode.source_files`,
    `PretrainNode.init_files`, of nodes reading that very path): its finished nodes keep their keys (and the
    nodes downstream of a continued one theirs), and one still to run is refused by the start checks, which
    look for the folder (`checks.check_inputs`). Only asked when such a folder is gone (`_gone_starts`)."""
    recorded: dict[bool, dict[str, str]] = {False: {}, True: {}}  # by whether continued (`start`)
    for node in nodes:
        if node.kind == "eval" and (files := node.config.get("source_files")):
            recorded[False][node.config["source"]] = files
        elif node.kind == "pretrain" and (files := node.config.get("init_files")):
            recorded[True][node.config["run"]["model"]["init"]] = files
        elif node.kind == "cka":
            cka = CkaNode.of(node)
            recorded[False] |= {cka.sources[m]: files for m, files in cka.source_files.items()}
    if not any(recorded.values()):
        return backend
    identity = backend.model_identity
    return dataclasses.replace(
        backend, model_identity=lambda source, start: identity(source, start) or recorded[start].get(source)
    )


def _gone_texts(spec: StudySpec) -> bool:
    """Whether a CKA of `spec` reads texts that are neither there nor an asset name (a local file gone)."""
    from encoderlab.data.assets import ASSETS

    return any(c.texts not in ASSETS and not Path(c.texts).expanduser().exists() for c in spec.cka)


def _recorded_cka_texts(nodes: list[Node], backend: Backend) -> Backend:
    """`backend`, a CKA texts file that is gone identified as the recorded CKA `nodes` reading that very path
    hold its content (`CkaNode.texts_digest`): a finished CKA keeps its key; one still to run is refused by the
    start checks, which look for the file (`checks.check_cka_texts`)."""
    recorded = {c.analysis.texts: c.texts_digest for c in (CkaNode.of(n) for n in nodes if n.kind == "cka")}
    recorded = {texts: digest for texts, digest in recorded.items() if digest is not None}
    if not recorded:
        return backend
    identity = backend.texts_identity
    return dataclasses.replace(backend, texts_identity=lambda texts: identity(texts) or recorded.get(texts))


def _recorded_texts(nodes: list[Node]) -> str:
    """The digest of the task files' test texts that the recorded prepare nodes were keyed by (every
    dataset cleaned against them holds the same), or `UNKNOWN` where none or several are recorded."""
    texts = {n.config["test_texts"] for n in nodes if n.kind == "prepare" and "test_texts" in n.config}
    return texts.pop() if len(texts) == 1 else UNKNOWN


def _recorded_sets(texts: str, against: tuple[str, ...]) -> KeyedSets:
    """`needs.keyed_sets` of a study whose task files are all gone: the named sets, and for the task files'
    test splits, the digest the record holds (`texts`), not read; `UNKNOWN`: the key of no finished node, a
    prepare node to run, which its evaluation nodes to run with it get refused (`refuse_absent_task_files`).
    Each file's own digest is not recorded, and not there to read: none."""
    named, task_tests = split_task_tests(against)
    return KeyedSets(named, texts if task_tests else None)


def _partly_absent(spec: StudySpec, study_dir: Path, absent: tuple[str, ...]) -> str:
    """The line refusing a resume of `study_dir` with some of the task files it recorded `absent`."""
    these, it = noun(len(absent), "it", "them"), f"{noun(len(absent), 'task file')} {', '.join(absent)}"
    return (
        f"study {spec.name}: {it} {noun(len(absent), 'is', 'are')} not there (moved or deleted), while its "
        f"other task files are; none is taken from {Path(study_dir) / 'graph.json'} while the others are read: "
        f"put {these} back where {noun(len(absent), 'it was', 'they were')} (finished nodes are kept); naming "
        f"{these} elsewhere in eval.task_files runs the evaluation nodes of {noun(len(absent), 'its', 'their')} "
        "tasks again (their keys hold their task files' paths)"
    )


def _recorded_nodes(study_dir: Path) -> list[Node]:
    """The nodes of the graph.json of `study_dir` (none without one; damaged: one line naming it)."""
    if not (Path(study_dir) / "graph.json").is_file():
        return []
    from encoderlab.study.data import read_study

    return read_study(Path(study_dir))[1]


def refuse_absent_task_files(spec: StudySpec, study_dir: Path, nodes: list[Node]) -> None:
    """Refuse, in one line naming the file and the fix, a study whose node still to run in `study_dir`
    (`runner.pending_nodes` of its graph `nodes`) reads a task file that is not there."""
    from encoderlab.study.runner import pending_nodes

    absent = absent_task_files(spec)
    if not absent:
        return
    readers = [n for n in pending_nodes(Path(study_dir), nodes) if _reads_task_files(n)]
    if readers:
        files = f"{noun(len(absent), 'task file')} {', '.join(absent)} {noun(len(absent), 'is', 'are')}"
        what = "evaluation node" if all(n.kind == "eval" for n in readers) else "node"
        raise UserError(
            f"study {spec.name}: {files} not there (moved or deleted), and "
            f"{count(len(readers), what)} still to run {noun(len(readers), 'reads', 'read')} "
            f"{noun(len(absent), 'it', 'them')} ({readers[0].name}); put {noun(len(absent), 'it', 'them')} "
            f"back (finished nodes are kept), or name where {noun(len(absent), 'it is', 'they are')} now in "
            f"the study file's eval.task_files and run that file with --out {study_dir} (the evaluation "
            "nodes of its task files run again: their keys hold the files' paths)"
        )


def _reads_task_files(node: Node) -> bool:
    """Whether `node` reads the study's task files when it runs: an evaluation node of their tasks, and a
    prepare node cleaning its corpus against their test splits (its key holds their digest, `test_texts`:
    it reads them to clean, `nodes._text_sets`). The prepare node was left out, so a dataset added to a study
    whose task files were gone passed this check and its prepare node failed as it ran, the study under way
    ("task file ... does not exist"), after `study plan` said no node to run read them."""
    return bool(node.config.get("task_files")) if node.kind == "eval" else "test_texts" in node.config


class Resumed(NamedTuple):
    """What `resumed_graph` hands `study run` and `study plan`."""

    graph: Graph
    gone: frozenset[str]
    """The datasets whose `--prepared` folder is gone, as the record has them: no node to run reads it."""
    idle: bool
    """A folder is gone and no node is to run: no input is checked, nothing is fetched."""


def gone_prepared(spec: StudySpec) -> frozenset[str]:
    """The datasets of `spec` whose `--prepared` folder is not there (moved or deleted). A resume that
    would run a node reading one (`reads_tokens`) is refused, so the start checks skip them."""
    return frozenset(d.name for d in spec.data if d.prepared is not None and not Path(d.prepared).exists())


def resumed_graph(
    spec: StudySpec, study_dir: Path, backend: Backend, trained: list[Pretraining] | None = None
) -> Resumed:
    """The graph of `spec` to run in `study_dir` (`build_graph`, `trained` as its), with its task files
    and `--prepared` folders that are gone as its graph.json recorded them, or a refusal naming one that
    a node to run reads (see the module docstring). `study run` and `study plan --out` both build their
    graph here."""
    gone = [d for d in spec.data if d.name in gone_prepared(spec)]
    digests = recorded_digests(spec, study_dir, [d.name for d in gone])
    resumed = (Path(study_dir) / "study.json").is_file()  # a first run: `prepared.prepared_meta`'s line
    for d in gone if resumed else ():
        if d.name not in digests:  # another folder than the study ran with, or nothing recorded
            raise UserError(
                _prepared_gone(spec, d, f"{study_dir} did not run with it, so it is read to resume")
            )
    graph = build_graph(spec, recorded_backend(spec, study_dir, backend), trained, recorded=digests)
    refuse_absent_task_files(spec, study_dir, list(graph))
    runs = to_run(study_dir, graph) if digests else []
    for d in gone:
        if readers := [n for n in runs if reads_tokens(n, d.name)]:
            reads = (
                f"{count(len(readers), 'node')} to run in {study_dir} {noun(len(readers), 'reads', 'read')}"
            )
            raise UserError(_prepared_gone(spec, d, f"{reads} its tokens ({readers[0].name})"))
    return Resumed(graph, frozenset(digests), idle=bool(digests) and not runs)


def reads_tokens(node: Node, dataset: str) -> bool:
    """Whether `node` reads the prepared data of `dataset`: its prepare node (which checks a `--prepared`
    folder against its digest) and the pretraining nodes training on it. No other node does: an evaluation
    or CKA reads models, the report the counts the prepare node recorded (`plan.finished_meta`,
    `outputs._read_unigram`)."""
    prepare = f"prepare/{dataset}"
    return node.name == prepare or (node.kind == "pretrain" and prepare in node.deps)


def recorded_notes(
    spec: StudySpec, study_dir: Path, gone: frozenset[str], counted: frozenset[str]
) -> list[str]:
    """What `study plan --out` says of the inputs `resumed_graph` took from the record of `study_dir`:
    the task files not there and the datasets whose `--prepared` folder is gone (`gone`), of which
    `counted` have the unique tokens their prepare node recorded (`plan.finished_meta`), others estimates."""
    graph = Path(study_dir) / "graph.json"
    notes = []
    if files := absent_task_files(spec):
        notes.append(
            f"note: {noun(len(files), 'task file')} {', '.join(files)} {noun(len(files), 'is', 'are')} not "
            f"there (moved or deleted): {noun(len(files), 'its', 'their')} tasks, families and signatures "
            f"are as {graph} recorded them, and no node to run reads {noun(len(files), 'it', 'them')}"
        )
    for d in spec.data:
        if d.name in gone:
            tokens = (
                "are as its prepare node counted them"
                if d.name in counted
                else "are estimated (its prepare node recorded none): give its place now with "
                f"--prepared {d.name}=DIR to count them"
            )
            notes.append(
                f"note: dataset {d.name}: the prepared folder {d.prepared} is not there (moved or deleted): "
                f"its content digest is as {graph} recorded it; no node to run reads its tokens, so no start "
                f"check reads it; its unique tokens {tokens}"
            )
    return notes


def recorded_digests(spec: StudySpec, study_dir: Path, datasets: list[str]) -> dict[str, str]:
    """{dataset: the content digest of its `--prepared` folder} as the graph.json of `study_dir` recorded
    it, for each of `datasets` whose folder study.json names as `spec` does (another folder is another
    input: nothing recorded of it)."""
    if not datasets or not (Path(study_dir) / "graph.json").is_file():
        return {}
    from encoderlab.study.data import read_study

    then, nodes = read_study(Path(study_dir))
    folders = {d.name: d.prepared for d in then.data}
    digests = {n.name.split("/", 1)[1]: n.config.get("prepared") for n in nodes if n.kind == "prepare"}
    return {
        name: digests[name]
        for name in datasets
        if digests.get(name) and folders.get(name) == spec.dataset(name).prepared
    }


def to_run(study_dir: Path, nodes: Graph | list[Node]) -> list[Node]:
    """The nodes running the study in `study_dir` now runs: `runner.pending_nodes`, and a finished report
    whose report was rewritten since (`runner.report_rewritten`), which `run_graph` runs again."""
    from encoderlab.study.runner import pending_nodes, read_marker, report_rewritten

    nodes = list(nodes)
    pending = pending_nodes(Path(study_dir), nodes)
    rewritten = [
        n
        for n in nodes
        if n.kind == "report"
        and n not in pending
        and (marker := read_marker(Path(study_dir), n)) is not None
        and report_rewritten(Path(study_dir), n, marker)
    ]
    return pending + rewritten


def _prepared_gone(spec: StudySpec, d: DataSpec, why: str) -> str:
    """The line refusing dataset `d`'s `--prepared` folder, which is gone, `why` saying what reads it."""
    return (
        f"study {spec.name}, dataset {d.name}: the prepared folder {d.prepared} is not there (moved or "
        f"deleted), and {why}; give its place now with --prepared {d.name}=DIR (keyed by its content: "
        "finished nodes are kept), or put it back"
    )
