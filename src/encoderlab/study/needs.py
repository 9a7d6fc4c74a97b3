"""What a study reads and how its eval nodes key their tasks, decided from the spec alone.

These are the questions `graph.build_graph`, the plan and the start checks ask of a study before any node
runs (the `Backend` fields other than the node kinds, `nodes.real_backend`): the locations a dataset's
corpus entries read, the tasks evaluated runs are fine-tuned on and the task files that register more,
a task's signature in an eval node's key, which tasks share one fine-tuning run, the assets to fetch, and
the evaluation sets a dataset is decontaminated against. None of them trains, loads a model or reads a
study folder, so `study list` and `study plan` use them without the node kinds' imports.

Trade-off: they were the tail of `nodes.py` until it outgrew the size rule; apart, the node kinds that
call them (a prepare node reads `corpus_sources`, an eval node `file_tasks`) import them from here, and
what a study needs can be read without reading how its nodes run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from encoderlab.study.spec import DataSpec, StudySpec

if TYPE_CHECKING:
    from encoderlab.data.decontaminate import TextSet
    from encoderlab.study.graph import KeyedSets


def corpus_sources(corpus) -> tuple:
    """The `SourceConfig`s a prepare node reads a dataset's corpus with: each entry in `--source`'s
    syntax, `LOCATION[#key=value,...]` (`corpus.jsonl#text_field=content`, `wiki-leads#weight=2`)."""
    from encoderlab.data.sources import parse_source

    return tuple(parse_source(c) for c in corpus)


def corpus_locations(corpus) -> list[str]:
    """Where each corpus entry reads from (an asset name, a hub corpus, `hf:...`, a path), options aside."""
    return [s.location for s in corpus_sources(corpus)]


def task_signature(task: str, max_steps: int | None, source: str | None = None) -> str:
    """The signature of a task as an eval node runs it (capped at `max_steps`). A model the study trains
    declares no pooling (encoderlab's folders declare none), so a task pooling as the model declares
    (`pooling: model`, the paper suite) keys its nodes as its default pooling would. A `source` model
    evaluated as is keeps `model` in the key: the key names the source, not its contents, so it says
    "as that source declares", as it says "with that source's weights"."""
    from encoderlab.eval.taskruns import capped_task

    capped = capped_task(task, max_steps)
    return (capped if source is not None else capped.resolve_pooling(None)).signature()


def file_tasks(files: tuple[str, ...], only: tuple[str, ...] | None = None) -> dict[str, str]:
    """{task: family} of the tasks of these task files or folders, registered for evaluation. `only`: the
    tasks an eval node runs, of which only the files holding them are loaded (`custom.load_task_files`):
    each eval node loaded every task file of the study, a hub dataset's or BEIR corpus's too."""
    from encoderlab.eval.tasks.custom import load_task_files

    return {t.name: t.family for t in load_task_files(files, only)}


def training_groups(tasks: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The tasks grouped by the fine-tuning run they share (`eval.spec.training_groups`), in the order
    of their first task; a task the registry does not hold (a backend's own) trains alone."""
    from encoderlab.eval.spec import training_groups as groups
    from encoderlab.eval.tasks import TASKS

    leader = {t.name: g[0].name for g in groups([TASKS[n] for n in tasks if n in TASKS]) for t in g}
    out: dict[str, list[str]] = {}
    for name in tasks:
        out.setdefault(leader.get(name, name), []).append(name)
    return [tuple(g) for g in out.values()]


def suite_families(suite: str) -> dict[str, str]:
    """{task: family} for every task of an evaluation suite."""
    from encoderlab.eval.suites import suite_tasks
    from encoderlab.eval.tasks import get_task

    return {name: get_task(name).family for name in suite_tasks(suite)}


def evaluated_tasks(spec: StudySpec) -> list[str]:
    """The built-in tasks that evaluated runs (`RunSpec.evaluate`) are fine-tuned on, sorted."""
    evaluated = [r for r in spec.runs if r.evaluate]  # a run trained only as a base or control reads no task
    suite = suite_families(spec.eval.suite) if spec.eval.suite else ()  # null: task files, no assets
    tasks = {t for r in evaluated for t in (r.tasks or spec.eval.tasks or suite)}
    tasks |= {t for r in evaluated if r.eval_steps for t in spec.eval.checkpoint_tasks}
    return sorted(tasks)


def _task_assets(spec: StudySpec) -> list[str]:
    """The assets of the tasks that evaluated runs are fine-tuned on."""
    from encoderlab.eval.suites import TASK_ASSETS

    return list(dict.fromkeys(a for t in evaluated_tasks(spec) for a in TASK_ASSETS.get(t, ())))


def required_assets(spec: StudySpec) -> list[str]:
    """Assets the study reads: corpora, tokenizers and start models named as assets, CKA texts, and the
    data of the tasks that evaluated runs are fine-tuned on."""
    from encoderlab.data.assets import ASSETS

    names = [c for d in spec.data for c in corpus_locations(d.corpus)] + [d.tokenizer for d in spec.data]
    names += [r.init for r in spec.runs if r.init] + [c.texts for c in spec.cka]
    return [n for n in dict.fromkeys(names + _task_assets(spec)) if n in ASSETS]


def decontamination_sets(spec: StudySpec) -> tuple[str, ...]:
    """The evaluation sets a study's datasets are decontaminated against: the long-text sets
    (`data.decontaminate.EVAL_ASSETS`: SQuAD and its shifts, BoolQ, VitaminC, BBC News, PubMedQA) among the
    assets its tasks read, which the study fetches anyway. Decided by the study alone: before, every
    evaluation set that happened to be fetched was used, so one study key held other data on a
    machine that had fetched more. The test splits of the study's own task files (`eval.task_files`) follow,
    one set each (`task-test:PATH`, `eval.tasks.testtexts`), when a run is evaluated: they were checked
    against nothing, so a corpus holding a user's test set was trained on unsaid."""
    from encoderlab.data.decontaminate import EVAL_ASSETS
    from encoderlab.eval.tasks.testtexts import task_test_name

    builtin = tuple(sorted(a for a in _task_assets(spec) if a in EVAL_ASSETS))
    evaluated = any(r.evaluate for r in spec.runs)
    return builtin + tuple(task_test_name(f) for f in spec.eval.task_files if evaluated)


def split_task_tests(against: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A prepare node's `against` split in two: (the named sets, which the data layer reads, the study's own
    task files' test splits, `task-test:PATH`, which only evaluation reads)."""
    from encoderlab.eval.tasks.testtexts import TASK_TEST

    named = tuple(a for a in against if not a.startswith(TASK_TEST))
    return named, tuple(a for a in against if a.startswith(TASK_TEST))


def read_text_sets(against: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[TextSet, ...]]:
    """A prepare node's `against` as `data prepare` takes it: (the named sets, which the data layer reads,
    the task files' test splits, read here by evaluation since the data layer knows no tasks)."""
    from encoderlab.eval.tasks.testtexts import task_test_set

    named, task_tests = split_task_tests(against)
    return named, tuple(task_test_set(a) for a in task_tests)


def keyed_sets(against: tuple[str, ...]) -> KeyedSets:
    """A prepare node's `against` as its key holds it: the named sets, the digest of the task files' test
    texts (`decontaminate.texts_digest`, None when it names none) and each file's own, from one reading of
    them (`read_text_sets`). The key held `task-test:PATH`, the file's name: a test split edited after the
    study prepared its data left that data as it was, cleaned against the old texts; and a moved task file
    (or a study moved with its task files) re-keyed it, and so trained every run again, on the same data.
    The content keys it, as a `--prepared` folder's does. Each file's digest is handed to the node beside
    its key, so the node's refusal of texts changed since names the files that changed (`nodes._text_sets`),
    not every file."""
    from encoderlab.study.graph import KeyedSets

    named, text_sets = read_text_sets(against)
    if not text_sets:
        return KeyedSets(named)
    return KeyedSets(named, sets_digest(text_sets), {s.name: s.version for s in text_sets})


def sets_digest(text_sets: tuple[TextSet, ...]) -> str:
    """The one digest of these test splits' texts together that a prepare node's key holds (`keyed_sets`),
    which the node checks again as it runs (`nodes._text_sets`)."""
    from encoderlab.data.decontaminate import texts_digest

    return texts_digest(t for s in text_sets for t in s.texts)


def dataset_decontamination(spec: StudySpec, d: DataSpec) -> tuple[str, ...]:
    """The sets the study's prepare node cleans dataset `d` against: `decontamination_sets` when `d`
    asks for it and the study prepares it (a folder prepared elsewhere: its own meta.json says)."""
    return decontamination_sets(spec) if d.decontaminate and d.prepared is None else ()


def model_identity(source: str, start: bool = False) -> str | None:
    """The identity of the files a load of `source` reads (`readfiles.files_identity` of the folder
    `hub.own_model_folder` finds, else the Hugging Face folder itself; `start`: the folder a training start from
    it reads, `train.start.start_model_folder`, a finished run folder's last checkpoint's `model/` where an
    evaluation reads its `final/`) when it is a folder on this machine, which
    an eval or CKA node evaluating it as is, or a pretraining node continuing it, is keyed by instead of its path
    (`EvalNode.source_files`, `PretrainNode.init_files`); None for
    an asset name or a hub id, which name their model wherever it lies (a hub id's commit: `startcommits.py`).
    A folder that exists is read before an asset or a hub id of the same name (`sources.source_path`).
    The tokenizer's files are those its class declares (`readfiles.folder_tokenizer`), so the identity is the
    one a training start records of the same folder (`train.build.init_identity`); from the fixed list, a
    tokenizer file of its class's own (LUKE's entity_vocab.json) edited in place kept the key and the score.
    Trade-off: the weight list is the loader's (`hub.hf_weight_files`) and the tokenizer is loaded to learn its
    class, so a study naming such a folder imports torch and transformers to build its graph (`study plan`
    too), and reads the folder's files whole once per process while none of them changes
    (`localmodels.read_model`: each node that loads the folder asks again, `localmodels.check_model`)."""
    from encoderlab.study.localmodels import read_model

    read = read_model(source, start)  # remembered for the process while the folder's files keep their stats
    return read.identity if read is not None else None
