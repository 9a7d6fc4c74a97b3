"""What a real study checks before it writes anything: every node's inputs, as the node would check them.

A node refuses its inputs only when its turn comes, after the study folder was made and the nodes before it
ran (a corpus prepared for hours, other runs trained). So `study run` (through the backend's `check_start`
before it fetches assets, `check_fetched` for what they hold once fetched) and `study plan` check them all
first, each with the code the node itself runs, prefixed with the study and the dataset or run it concerns:

- the sources a node reads (`check_sources`): local corpora, tokenizers and start models;
- a folder given with `--prepared`: made with the dataset's tokenizer (`check_prepared_tokenizers`);
- the study's own prepared data (`check_prepared_sources`): still what its local corpus files hold;
  a folder given with `--prepared`: its token files still those its meta.json records (checked first,
  once, by `study run` and `study plan` themselves, not through the backend: passes are counted from it);
- every pretraining run's rows (`runchecks.check_runs`): against its start model's positions, memory
  and its dataset.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from encoderlab.errors import UserError
from encoderlab.study.absent import gone_prepared
from encoderlab.study.graph import Node
from encoderlab.study.hubids import check_hub_ids, check_shadowed_hub_ids, spec_folder, start_ids
from encoderlab.study.reads import unread_inputs
from encoderlab.study.runchecks import check_runs
from encoderlab.study.spec import CkaSpec, StudySpec
from encoderlab.study.startcommits import check_start_commits
from encoderlab.words import count


def check_start(spec: StudySpec, study_dir: Path | None = None, nodes: Iterable[Node] = ()) -> None:
    """Everything a real study checks before it fetches assets or writes anything (an asset not fetched
    yet is not read: `_here`; what it holds is checked once fetched: `check_fetched`); `nodes`: the
    study's graph, whose finished prepare nodes in `study_dir` give exact token counts. A start model
    named by a hub id that a node still to run reads, and that neither a mirror nor the local hub cache
    holds, has its configs downloaded for its positions (`fetch`), after `check_inputs` asked the hub
    for it once (`check_hub_ids`); one read unpinned is then checked against the commit the finished
    runs read (`startcommits`)."""
    nodes = list(nodes)
    check_inputs(spec, study_dir, nodes)
    starts = frozenset(r.init for r in spec.runs if r.init)
    check_runs(spec, study_dir, nodes, fetch=starts - unread_inputs(spec, study_dir, nodes))
    check_start_commits(spec, study_dir, nodes)  # after check_runs: a hub id's configs are here by now


def check_fetched(
    spec: StudySpec, study_dir: Path | None, nodes: Iterable[Node], fetched: frozenset[str]
) -> None:
    """The start checks of what the assets `fetched` hold, once `study run` fetched them (`runner`):
    `check_start` ran every other check before the fetch and left these (an asset not fetched yet is not
    read: `_here`), so each check runs once (a hub id is asked for once). An asset is read as a corpus
    (its first documents, and the rows of the longest run on its dataset), a tokenizer (also a
    `--prepared` folder's) or a start model (its positions)."""
    from encoderlab.study.needs import corpus_sources

    nodes = list(nodes)
    inputs = {c: s.location for d in spec.data for c, s in zip(d.corpus, corpus_sources(d.corpus))}
    inputs |= {location: location for location, _, _ in start_ids(spec)}
    left = frozenset(i for i, location in inputs.items() if location not in fetched)
    skip = left | unread_inputs(spec, study_dir, nodes)
    check_sources(spec, True, skip)
    check_prepared_tokenizers(spec, True, skip)
    check_runs(spec, study_dir, nodes, memory=False, fetched=fetched)
    check_cka_texts(spec, only=fetched)


def check_inputs(
    spec: StudySpec, study_dir: Path | None, nodes: Iterable[Node], fetched: bool = True
) -> None:
    """The checks of a study's inputs that `study run` (`check_start`) and `study plan` share, so a plan
    refuses in the same line what the run would (`nodes`: the study's whole graph, `graph.build_graph`).
    `fetched=False` (`study plan`, which fetches nothing): what is not on this machine yet is not read
    (`_here`). The rows of each run (`check_runs`) are checked apart: the plan prints first what they
    are measured against. The prepared data (`check_prepared_sources`) is checked before these, once,
    by `study run` (runner) and `study plan` (cli): the passes are counted from it."""
    nodes = list(nodes)
    unread = unread_inputs(spec, study_dir, nodes)  # read by finished nodes only: not looked for
    check_shadowed_hub_ids(spec, study_dir, unread)
    check_sources(spec, fetched, unread)
    check_hub_ids(spec, fetched, unread)
    check_prepared_tokenizers(spec, fetched, unread)
    check_analyses(spec)
    check_cka_texts(spec, fetched, unread=unread)
    check_task_mirrors(spec)
    check_finetune_decay(spec, nodes)


def _here(location: str, fetched: bool) -> bool:
    """Whether `location` (a corpus, tokenizer or start model) is on this machine, or should be by now:
    an asset once fetched (`study run` checks before it fetches any, and what it fetched after:
    `check_fetched`); else
    everything for a run; for a plan (`fetched=False`), a path (a study file's are absolute), or a hub
    id read from a mirror (`ENCODERLAB_HUB_MODELS`), never a download. A name that is none of these
    (`init: foo`, a typo) is checked too: nothing can bring it, and a plan left it out, priced it `?` and
    exited 0 while `study run` refused it."""
    from encoderlab.data.assets import ASSETS, is_fetched
    from encoderlab.data.hub import mirror_root
    from encoderlab.data.hubmodels import is_hub_id

    if location in ASSETS:
        return is_fetched(location)
    if fetched or Path(location).is_absolute():
        return True
    return not is_hub_id(location) or mirror_root("model") is not None


def check_finetune_decay(spec: StudySpec, nodes: Iterable[Node]) -> None:
    """Refuse eval nodes whose LR times their task's `finetune.weight_decay` (task files and built-in tasks)
    is past 1 (`eval.taskruns.check_decay`), before anything runs: it fine-tuned to NaN after training."""
    from encoderlab.eval.taskruns import check_decay
    from encoderlab.eval.tasks.registry import TASKS

    # the registry holds every task of a real study by now (built-in, and its task files registered when
    # the graph read them; an unknown name was refused then); a test backend's own tasks are not in it
    evals = {
        (n.config["task"], n.config["lr"]) for n in nodes if n.kind == "eval" and n.config["task"] in TASKS
    }
    try:
        check_decay(((TASKS[t], lr) for t, lr in sorted(evals)), "lower eval.lrs (or eval.checkpoint_lrs)")
    except UserError as exc:
        raise UserError(f"study {spec.name}: {exc}") from None


def check_analyses(spec: StudySpec) -> None:
    """Refuse a CKA of fewer texts than `analysis.cka` takes, or of texts of no token: its node said "raise
    --n" (a flag a study has not) after every run had trained."""
    from encoderlab.analysis.inputs import MIN_TEXTS

    for c in spec.cka:
        where = f"study {spec.name}, cka {c.a}-vs-{c.b}"
        if c.n_texts < MIN_TEXTS:
            raise UserError(
                f"{where}: n_texts must be at least {MIN_TEXTS} (below it the chance level of linear CKA is too "
                f"high to read), got {c.n_texts}; the paper uses 500"
            )
        if c.max_length < 1:
            raise UserError(f"{where}: max_length must be >= 1 (tokens per text), got {c.max_length}")


def cka_pool_problem(where: str, c: CkaSpec, pool: int) -> str | None:
    """The line (after `where`) refusing CKA `c` over a pool of `pool` texts, fewer than its `n_texts`, else None (the
    node compared the whole pool instead, silently: another n than asked, every sampling seed's draw the
    same texts, so no interval and an undecided claim)."""
    from encoderlab.analysis.inputs import MIN_TEXTS

    if pool >= c.n_texts:
        return None
    fix = (
        f"lower n_texts to {MIN_TEXTS}-{pool - 1} (fewer than the texts, so the sampling seeds draw different ones) "
        "or give more texts"
        if pool > MIN_TEXTS
        else f"give more than {c.n_texts} texts"
    )
    return (
        f"{where}: its texts {c.texts} hold {count(pool, 'text')}, fewer than its n_texts {c.n_texts}; {fix}"
    )


def check_cka_texts(
    spec: StudySpec,
    fetched: bool = True,
    only: frozenset[str] | None = None,
    unread: frozenset[str] = frozenset(),
) -> None:
    """Refuse a CKA whose texts are no file or asset, or hold fewer than its `n_texts`
    (`cka_pool_problem`), before anything runs: texts on this machine (`_here`: an asset not fetched yet
    is read once fetched, `only` naming those), that a CKA node still to run reads (not in `unread`). A
    missing file was left to the CKA node, which refused it after every run had trained."""
    from encoderlab.analysis.inputs import read_texts, records_path

    for c in spec.cka:
        if only is not None and c.texts not in only or c.texts in unread or not _here(c.texts, fetched):
            continue
        where = f"study {spec.name}, cka {c.a}-vs-{c.b}"
        try:
            records_path(c.texts)
        except UserError as exc:
            raise UserError(f"{where}: {exc}") from None
        if problem := cka_pool_problem(where, c, len(read_texts(c.texts))):
            raise UserError(problem)


def check_task_mirrors(spec: StudySpec) -> None:
    """With `$ENCODERLAB_HUB_DATA` set, every hub dataset the evaluated tasks read must be mirrored
    (`eval.suites.require_mirrors`): an evaluation node found a missing one after its runs trained."""
    from encoderlab.data.hub import mirror_root
    from encoderlab.eval.suites import require_mirrors
    from encoderlab.study.needs import evaluated_tasks

    if mirror_root() is None:  # the hub itself: each node's download
        return
    try:
        require_mirrors(evaluated_tasks(spec))
    except UserError as exc:
        raise UserError(f"study {spec.name}: {exc}") from None


CORPUS_ENTRY = "the dataset's corpus entry in the study file"
"""What names a study's local corpus, for `sources.describe`'s fixes (its own name `--source`)."""
ONE_ENTRY = (
    "keep one of the two entries in the dataset's corpus in the study file (beside a folder's or a glob's entry, "
    "which reads every file it holds, drop the file's)"
)
"""The fix of two corpus entries that read one file (`mixing.check_disjoint`; its own names `--source`)."""


def check_sources(spec: StudySpec, fetched: bool = True, unread: frozenset[str] = frozenset()) -> None:
    """Refuse a local corpus, tokenizer or start model that is not there, in the words of the node that
    would read it, before the study writes anything: the prepare and pretraining nodes refused them only
    when their turn came, after the study folder was made. Hub corpora and hub ids are the nodes' to
    resolve (a download, or a mirror). Each local source is read whole, streamed (`check_first_documents`,
    `whole`; `data prepare` reads its first document before writing): an empty file, records without the
    text field or a bad record past the first were refused by the prepare node, after the study folder was
    made. Assets are fetched by now, unless
    `fetched=False` (`study plan`, which fetches nothing): then only what is on this machine is checked
    (`_here`), and an asset's absence is the plan's to say. What `unread` holds (a start model, tokenizer
    or corpus entry that finished nodes only read: `reads.unread_inputs`) is not looked for: a resumed
    study whose local inputs of finished nodes were moved or deleted since still resumes."""
    from encoderlab.data.filereaders import MissingTextField
    from encoderlab.data.mixing import EmptySource, check_disjoint, check_first_documents
    from encoderlab.data.sources import CORPORA, describe
    from encoderlab.data.tokenizer import tokenizer_folder
    from encoderlab.model.sources import check_model_source
    from encoderlab.study.needs import corpus_sources
    from encoderlab.study.nodes import empty_in_entry, field_in_entry

    runs = [r for r in spec.runs if r.init and r.init not in unread and _here(r.init, fetched)]
    names = {d.name for d in spec.data}
    for d in spec.data:
        try:
            local = [  # a bad `#option` is refused here too
                s
                for c, s in zip(d.corpus, corpus_sources(d.corpus))
                if c not in unread
                and s.location not in CORPORA
                and not s.location.startswith("hf:")
                and _here(s.location, fetched)
            ]
            for source in local:
                describe(source, fix="fix the dataset's corpus in the study file", named_by=CORPUS_ENTRY)
            check_disjoint(local, ONE_ENTRY)  # was the prepare node's, after the study folder was made
            try:  # an empty file, records without the text field, a bad record anywhere (not only the first)
                check_first_documents(local, "refuse", whole=True)
            except MissingTextField as exc:
                raise field_in_entry(exc, d.corpus, spec.folder) from None
            except EmptySource as exc:
                raise empty_in_entry(exc, d.corpus) from None
            if (
                d.tokenizer != "train"
                and (d.tokenizer == d.name or d.tokenizer not in names)  # its own name is a path or asset
                and d.prepared is None
                and d.tokenizer not in unread
                and _here(d.tokenizer, fetched)
            ):
                tokenizer_folder(d.tokenizer, spec_folder(spec))
        except UserError as exc:
            raise UserError(f"study {spec.name}, dataset {d.name}: {exc}") from None
    for r in runs:
        if r.init not in {x.name for x in spec.runs}:
            try:
                # a study file's path is read beside it: was named from the working folder ("/ holds no
                # 'models'"), where the tokenizer's check already looked beside the file
                check_model_source(r.init, spec_folder(spec))
            except UserError as exc:
                raise UserError(f"study {spec.name}, run {r.name}: {exc}") from None


def check_prepared_sources(
    spec: StudySpec, study_dir: Path | None, nodes: Iterable[Node], gone: frozenset[str] = frozenset()
) -> None:
    """Refuse a study whose prepare node (finished or not) holds data, or a tokenizer it trained, read
    from local corpus files that changed since (edited, replaced, added to or removed from a folder),
    before anything runs: the finished node was reused and every run trained on the old text, silently;
    an unfinished one met `data prepare`'s refusal, whose fix (--out) a study has not, or, interrupted
    after its tokenizer, reused the tokenizer trained on the old text (its `sources.json` records what).

    The node's key stays the corpus's paths, not its contents: hashing a corpus on every `study run`
    or `status` would read it all, and a file touched but unchanged must not retrain the study. So this
    is `data.freshness`'s check instead (one stat per file; a file whose mtime moved is hashed again,
    on each run, and found the same). Hub corpora are not checked. A folder given with `--prepared` is
    keyed by its meta.json (`study/prepared.py`), so its token files are checked against what that
    records (`data.packed.refuse_changed_files`): a file swapped since silently trained the runs still
    to do on other rows than the finished ones. `gone`: datasets whose `--prepared` folder is not there
    any more and that no node to run reads (`absent.resumed_graph`), not looked for."""
    from encoderlab.data.packed import refuse_changed_files
    from encoderlab.study.prepared import prepared_meta
    from encoderlab.study.runner import node_dir

    for d in spec.data:
        if d.prepared is not None and d.name not in gone:
            meta = prepared_meta(d.prepared, d.name)
            try:
                refuse_changed_files(Path(d.prepared), meta)
            except UserError as exc:
                raise UserError(f"study {spec.name}, dataset {d.name}: {exc}") from None
    for node in nodes if study_dir is not None else ():
        if node.kind == "prepare" and spec.dataset(node.name.split("/", 1)[1]).prepared is None:
            refuse_stale_data(spec, node.name.split("/", 1)[1], node_dir(Path(study_dir), node))


def refuse_stale_data(spec: StudySpec, dataset: str, node: Path) -> None:
    """One line when the prepared data (`data/`) or the trained tokenizer (`tokenizer/`) of `node`,
    dataset `dataset`'s prepare node folder in a study, was read from local files that changed since
    (`data.freshness.source_change`), or when the tokenizer, to be reused for data not prepared yet,
    records nothing to check (`_refuse_unrecorded`); nothing for one not written yet."""
    from encoderlab import jsonlines
    from encoderlab.data.tokenizer_training import trained_from

    def meta(data: Path) -> dict | None:
        try:
            return jsonlines.loads((data / "meta.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):  # not prepared yet, or damaged: the node prepares or refuses it
            return None

    data, tokenizer = node / "data", node / "tokenizer"  # the data first: the line a finished node met
    prepared, trained = meta(data), trained_from(tokenizer)
    for folder, record, made in ((data, prepared, "prepared from"), (tokenizer, trained, "trained on")):
        if isinstance(record, dict) and (refusal := _stale(record, node)) is not None:
            change, fix = refusal
            raise UserError(
                f"study {spec.name}, dataset {dataset}: {folder} was {made} sources that changed "
                f"since ({change}); nothing was changed: {fix}"
            )
    if prepared is None and trained is None:
        _refuse_unrecorded(spec, dataset, tokenizer, data)


def _stale(record: dict, node: Path) -> tuple[str, str] | None:
    """(the change, its fix) when `record` (meta.json, a tokenizer's SOURCES) no longer holds what its
    corpus reads as: changed files can be restored; files an older encoderlab read otherwise
    (`freshness.reading_change`) are as they were, so only a new prepare helps (deleting the node folder
    runs it and everything after it again, as any deleted node)."""
    from encoderlab.data.freshness import files_change, reading_change

    if (change := files_change(record)) is not None:
        fix = "restore the corpus as it was, or run the study in another --out folder to train on the corpus as it is now"
        return change, fix
    if (change := reading_change(record)) is not None:
        fix = (
            f"the files are as they were, so restoring them would not help: delete {node} to prepare it "
            "again (the nodes after it run again), or run the study in another --out folder"
        )
        return change, fix
    return None


def _refuse_unrecorded(spec: StudySpec, dataset: str, tokenizer: Path, data: Path) -> None:
    """One line when a prepare node's trained `tokenizer` (kept by an interrupted attempt, its `data`
    not prepared yet) records no sources (no `sources.json`: trained by an encoderlab from before it
    was written; or one damaged since, which the line says instead, naming the file): what it was
    trained on cannot be known, so it is neither reused unchecked (it was) nor vouched for now (the
    corpus's mtimes say only that no write moved them). Retraining is the user's call, a folder
    deleted. Data prepared to its end is checked itself, and kept."""
    from encoderlab.data.tokenizer_training import SOURCES, sources_damage

    if not (tokenizer.is_dir() and any(tokenizer.iterdir())):  # none trained yet: the node trains it
        return
    delete = f"{tokenizer} and {data}" if data.exists() else str(tokenizer)
    if (damage := sources_damage(tokenizer)) is not None:  # written, then damaged: no earlier encoderlab
        why = f"{tokenizer / SOURCES}, the record of what {tokenizer} was trained on, is damaged ({damage})"
    else:
        why = f"{tokenizer} records no sources it was trained on (no {SOURCES}: an earlier encoderlab trained it)"
    raise UserError(
        f"study {spec.name}, dataset {dataset}: {why}, so it cannot be checked against the corpus as it is "
        f"now; nothing was changed: delete {delete} to train it again on the corpus, or run the study in "
        "another --out folder"
    )


def check_prepared_tokenizers(
    spec: StudySpec, fetched: bool = True, unread: frozenset[str] = frozenset()
) -> None:
    """Refuse a folder given with `--prepared` that another tokenizer than its dataset's made, before the
    study writes anything (the prepare node checks it again: the folder may change while a study waits).
    The spec allows `prepared` only with a named tokenizer, so it can be loaded here (unless not `fetched`
    and not on this machine: `_here`, no node still to run reads it: `unread`, or gone: `absent.py`)."""
    from encoderlab.study.prepared import check_tokenizer, prepared_meta

    for d in (d for d in spec.data if d.prepared is not None and d.name not in gone_prepared(spec)):
        if d.tokenizer not in unread and _here(d.tokenizer, fetched):
            check_tokenizer(prepared_meta(d.prepared, d.name), d.tokenizer, d.name, d.prepared)
