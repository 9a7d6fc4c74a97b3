"""Tasks from a file: a YAML task spec turned into a registered `Task`.

A spec names a family (`sc`, `pair-sc`, `tc`, `qa`, `ir`), a data source (local CSV/TSV/JSONL/parquet
files per split, the text ones possibly compressed (`localfiles`), or a hub dataset read by the
same `load_hub` as the paper suite), which columns hold the family's fields, the label set, the
metric and the protocol knobs (family options, `finetune`, `max_length`). docs/evaluation.md has the schema and a worked example.

Design. The spec is parsed strictly (`config.from_dict`: an unknown field is an error naming the
valid ones) and the data is loaded and checked while parsing, before any output exists: a missing
column, a label outside the label set, an empty split, or an example in two splits is one line
naming the file. Local files and hub datasets both go through `datasets.load_dataset`, and a
missing validation split is cut from train as EncodEval does (`train_test_split`, seed 42), so a
file task behaves like a built-in one; `test_fraction` cuts a test split from train first (the `data:`
section and the reading of its splits are `custom_data.py`'s; the rows read and checked as examples,
`custom_examples.py`'s). The task's `data_version` is a hash of its loaded examples, so the results cache (keyed by the task signature) never reuses scores computed on
other data; the loaded examples are kept and handed to the protocol by the task's loader.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from encoderlab.config import coerce, from_dict, read_mapping, unknown_fields
from encoderlab.errors import UserError
from encoderlab.eval.metrics import non_iob_tag
from encoderlab.eval.spec import FinetuneConfig, HubRepo, Inputs, PairSCOptions, Task
from encoderlab.eval.tasks.beir import beir_data, beir_hub_id
from encoderlab.eval.tasks.custom_data import DataSpec, load_splits
from encoderlab.eval.tasks.custom_examples import (
    before_cut,
    examples,
    note_untrained_labels,
    required_columns,
)
from encoderlab.eval.tasks.custom_family import (
    FAMILIES,
    METRICS,
    REGRESSION_METRICS,
    check_binary_f1,
    check_family,
    check_foreign_fields,
    columns_of,
    family_metrics,
    kind_hint,
    of_other_family,
    options_of,
    qa_metric,
)
from encoderlab.eval.tasks.custom_rows import require_answers
from encoderlab.eval.tasks.localfiles import task_files
from encoderlab.eval.tasks.splits import (
    check_overlap,
    cut_validation,
    data_hash,
    read_across,
    require_nonempty,
)

FILE_DATA = "file:"
"""The `data_version` of a task from a file starts so (its data's hash follows): `taskruns` tells them apart."""

FILE_FINETUNE = FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=300)
"""A task file's schedule: what a `finetune:` section leaves out keeps these values (a section naming
any field fell back to FinetuneConfig's 1000 steps x 32 for the rest)."""
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")  # \Z: `$` let a final line break through


@dataclass(frozen=True, kw_only=True)
class TaskSpec:
    """A task file (YAML). Every field is documented in docs/evaluation.md."""

    name: str
    """The task's name: letters, digits, `.`, `_`, `-`; not a built-in task's."""
    family: str
    """sc, pair-sc, tc, qa or ir."""
    data: DataSpec
    """Where the examples come from: a hub id or local files, and which split is which."""
    description: str = ""
    """A one-line description of the task (`Task.description`); default: "FAMILY task from FILE"."""
    columns: dict[str, str] = field(default_factory=dict)
    """The family's field -> your column (default: the field's own name)."""
    labels: tuple[str, ...] | None = None
    """Class or tag names (sc, pair-sc, tc); default: the column's ClassLabel names, else the
    values seen in train (sorted; tc puts `O` first where the data has it)."""
    template: str | None = None
    """pair-sc: how the two texts become one input, with `{a}` and `{b}`."""
    metric: str | None = None
    """The score for LR selection and reporting; default the family's first (accuracy, entity_f1,
    f1, ndcg@10)."""
    max_length: int | None = 512
    """Tokens per input; null = 0.99 x the model's maximum."""
    inputs: Inputs = "tokenizer"
    """`tokenizer`: the tokenizer's own special tokens; `eos`: none, the end-of-text token appended
    (EncodEval's rule, paper 1)."""
    options: dict = field(default_factory=dict)
    """Family options: sc/pair-sc `pooling`, `head`, `multilabel`; tc `words`, `subword_labels`; qa `v2`,
    `stride`, `max_answer_tokens`, `head`, `question_template`; ir `query_prefix`, `document_prefix`,
    `pooling`."""
    finetune: FinetuneConfig = FILE_FINETUNE
    """Optimiser and schedule (FinetuneConfig fields); a field left out keeps `FILE_FINETUNE`'s value."""
    allow_overlap: bool = False
    """Allow the same input in two splits (refused by default: it inflates test scores)."""


# ----------------------------------------------------------------------------- reading


def _read_spec(path: Path) -> TaskSpec:
    where = f"task file {path}"
    raw = read_mapping(path, "task file")  # malformed YAML: the line and the problem
    check_family(raw, where)
    check_foreign_fields(raw, where)
    if isinstance(raw.get("finetune"), dict):
        raw = {**raw, "finetune": _file_finetune(raw["finetune"], where)}
    spec = from_dict(TaskSpec, raw, where)
    if spec.data.validation and spec.data.validation_fraction is not None:  # was ignored, unsaid
        raise UserError(
            f"{where}: data.validation and data.validation_fraction both give the validation split; keep one"
        )
    if not NAME.match(spec.name):
        raise UserError(f"{where}: name {spec.name!r} may hold only ASCII letters, digits, '.', '_' and '-'")
    _check_template(spec, where)
    _check_columns(spec, where)
    metrics = family_metrics(spec.family, spec.options)
    for name, value in (("metric", spec.metric), ("finetune.select_metric", spec.finetune.select_metric)):
        if value is not None and value not in metrics:
            other = kind_hint(spec.family, spec.options, value) or of_other_family(
                spec.family, [value], METRICS.__getitem__
            )
            raise UserError(
                f"{where}: {name} {value!r} is not one of {spec.family}'s: {', '.join(metrics)}{other}"
            )
    if spec.template is not None:  # its check named `options:`, where a task file has no template
        from_dict(PairSCOptions, {"template": spec.template}, f"{where}: template")
    for own in ("labels", "template"):  # were accepted, then replaced by the task's own, unsaid
        if own in spec.options:
            what = "label set" if own == "labels" else own
            raise UserError(
                f"{where}: options.{own}: the {what} is the task's own `{own}:` field; move it there"
            )
    valid = options_of(spec.family)
    if line := unknown_fields(f"{where}: options", spec.options, valid):  # they were listed as valid
        raise UserError(line + of_other_family(spec.family, spec.options, options_of))
    if spec.labels is not None and spec.family in ("qa", "ir"):
        raise UserError(f"{where}: `labels` is only for sc, pair-sc and tc")
    if spec.labels is not None and metrics == REGRESSION_METRICS:
        raise UserError(f"{where}: `labels` names classes; a regression task (`regression: true`) has none")
    for name in ("validation_fraction", "test_fraction"):
        if getattr(spec.data, name) is not None and not 0 < getattr(spec.data, name) < 1:
            raise UserError(f"{where}: data.{name} must be between 0 and 1")
    if spec.data.seed < 0:  # numpy's generators, which cut the validation split, take no negative seed
        raise UserError(f"{where}: data.seed must be >= 0, got {spec.data.seed}")
    if spec.max_length is not None and spec.max_length < 1:
        raise UserError(
            f"{where}: max_length must be >= 1 tokens, or null for the model's, got {spec.max_length}"
        )
    spec.finetune.check(where)
    return spec


def _file_finetune(given: dict, where: str) -> dict:
    """A task file's `finetune:` over `FILE_FINETUNE`. `epochs` without `max_steps` is an epoch schedule,
    as Hugging Face's Trainer reads `num_train_epochs` while `max_steps` is unset: before, the default
    300 steps ran and `epochs` was ignored, unsaid. Both given, `max_steps` would decide alone (the
    Trainer's rule too, also unsaid), so that is one line rather than a field silently read as nothing."""
    defaults = dataclasses.asdict(FILE_FINETUNE)
    if "epochs" in given:
        if given.get("max_steps") is not None:
            raise UserError(
                f"{where}: finetune: epochs {given['epochs']!r} and max_steps {given['max_steps']!r} both set "
                "the run's length, and max_steps would decide alone; keep one (epochs alone runs that many "
                "passes over train)"
            )
        defaults["max_steps"] = None
    return {**defaults, **given}


def _check_template(spec: TaskSpec, where: str) -> None:
    """A pair-sc task has a `template:` and no other family does."""
    if (spec.template is not None) != (spec.family == "pair-sc"):
        # a pair is one text joined by its template (EncodEval's way), not the tokenizer's pair encoding
        # run_glue.py users expect, so the fix shows the form; the other way round, the two fixes
        fix = (
            'add `template:` joining the two texts, e.g. template: "{a}\\n{b}" (EncodEval\'s MNLI: '
            '"Premise: {a}\\nHypothesis: {b}")'
            if spec.family == "pair-sc"
            else "remove it, or set `family: pair-sc` for a task of two texts"
        )
        raise UserError(
            f"{where}: `template` is {'required' if spec.family == 'pair-sc' else 'only'} for pair-sc; {fix}"
        )


def _check_columns(spec: TaskSpec, where: str) -> None:
    """Refuse an unknown field in `columns:`, a column name that is not text, and two fields reading one
    column: the rows are renamed column -> field, so one of the two was lost (`columns: {text: stars,
    label: stars}` ended in a KeyError traceback). A field left out reads the column of its own name, so
    that counts too."""
    valid = columns_of(spec.family)
    if line := unknown_fields(f"{where}: columns of a {spec.family} task", spec.columns, valid):
        raise UserError(line + of_other_family(spec.family, spec.columns, columns_of))
    for f, column in spec.columns.items():  # `from_dict` checks a mapping, not its values: `{label: 1}` was a
        coerce(column, str, f"{where}: columns.{f}")  # TypeError traceback where the data lacked column 1
    readers: dict[str, list[str]] = {}
    for f in valid:
        readers.setdefault(spec.columns.get(f, f), []).append(f)
    for column, fields in readers.items():
        if len(fields) > 1:
            unnamed = " and ".join(f for f in fields if f not in spec.columns)
            own = f" ({unnamed}, left out of `columns:`, reads the column of its own name)" if unnamed else ""
            both = "both" if len(fields) == 2 else "all"
            raise UserError(
                f"{where}: columns: {' and '.join(fields)} {both} read column {column!r}{own}; "
                "give each field its own column"
            )


# ----------------------------------------------------------------------------- tasks


def _check_entity_tags(spec: TaskSpec, metric: str, tags: tuple[str, ...], where: str) -> None:
    """Entity F1 reads IOB2 tags: a tag set such as POS tags would stop seqeval with a KeyError
    traceback after fine-tuning, so it is refused here, with the scores that read any tags."""
    bad = non_iob_tag(tags)
    for name, value in (("metric", metric), ("finetune.select_metric", spec.finetune.select_metric)):
        if bad is not None and value in ("entity_f1", "conlleval_f1"):
            default = " (tc's default)" if name == "metric" and spec.metric is None else ""
            if spec.labels is None and all(t == "O" or t.isdigit() for t in tags):
                raise UserError(  # a JSON export of a tag-id column: the fix is its names, not a metric
                    f"{where}: {name} {value!r}{default} scores entities tagged O, B-TYPE, I-TYPE, but the "
                    f"tags are numbers (e.g. {bad!r}), ids without names; name them in `labels:` in id "
                    "order (e.g. [O, B-PER, I-PER]), or set `metric: accuracy` (per word)"
                )
            raise UserError(
                f"{where}: {name} {value!r}{default} scores entities tagged O, B-TYPE, I-TYPE, but tag "
                f"{bad!r} is not one; set `metric: accuracy` (per word) or `sentence_macro_f1`"
            )


_READ: ContextVar[dict[Path, Task] | None] = ContextVar("task_files_read", default=None)


@contextmanager
def read_once() -> Iterator[None]:
    """Within it, a task file is loaded once (by its real path) however often it is asked for. Building a
    study's graph asks twice: the test texts keying its prepare nodes (`eval.tasks.testtexts`), then the
    tasks keying its evaluations (`study.needs.file_tasks`), each a full load, a hub dataset's too. Scoped,
    not a process cache: a later load (a prepare node checking its test texts, an eval node) reads the file
    as it is then."""
    token = _READ.set(_READ.get() if _READ.get() is not None else {})
    try:
        yield
    finally:
        _READ.reset(token)


def task_from_file(path: Path | str) -> Task:
    """Parse, load and check one task file; the Task's loader returns the examples loaded here (once
    within `read_once`)."""
    read = _READ.get()
    if read is None:
        return _task_from_file(Path(path))
    if (real := Path(path).resolve()) not in read:
        read[real] = _task_from_file(Path(path))
    return read[real]


def _task_from_file(path: Path) -> Task:
    where = f"task file {path}"
    spec = _read_spec(path)
    options_cls = FAMILIES[spec.family]
    options = from_dict(
        options_cls,
        {**spec.options, **({"template": spec.template} if spec.template else {})},
        f"{where}: options",
    )
    metric = spec.metric or family_metrics(spec.family, spec.options)[0]
    if spec.family == "qa":
        metric = qa_metric(spec.metric, spec.finetune.select_metric, options, spec.inputs, where)
    if spec.data.beir is not None:  # BEIR's corpus, queries and qrels: one reader for a folder or a hub id
        data = beir_data(spec.data, spec.family, spec.columns, path.parent, where)
    else:
        query = (
            spec.columns.get("query", "query") if spec.family == "ir" else None
        )  # a query's rows: one side
        found, places = load_splits(
            spec.data,
            path.parent,
            required_columns(spec),
            where,
            query,
            before_cut=lambda found, places: before_cut(spec, found, places, where),
            named=spec.columns.values(),
        )
        data = examples(spec, found, places, where)
        if places["validation"].from_train:  # noted where too small to pick an LR by (`cut_validation_note`)
            data = cut_validation(data)
        # a hub split of the other part (`data.splits: {test: validation}`) is noted (`read_across`)
        data = read_across(data, {s: p.source for s, p in places.items() if p.hub and s != "train"})
    require_nonempty(spec.name, data)
    if spec.family == "qa":
        require_answers(options, {"validation": data.val, "test": data.tests["test"]}, where)
    if not spec.allow_overlap:
        check_overlap(spec.family, data, where)
    if data.labels:
        options = dataclasses.replace(options, labels=data.labels)
    if spec.family == "tc":
        _check_entity_tags(spec, metric, options.labels, where)
    if spec.family in ("sc", "pair-sc"):
        check_binary_f1(options.labels, options, (metric, spec.finetune.select_metric), where)
    note_untrained_labels(spec, data, options, where)  # after every check: a refusal prints alone
    return Task(
        name=spec.name,
        description=spec.description or f"{spec.family} task from {path.name}",
        options=options,
        metric=metric,
        finetune=spec.finetune,
        max_length=spec.max_length,
        inputs=spec.inputs,
        data_version=f"{FILE_DATA}{data_hash(data)}",
        loader=lambda: data,
        # the study report's hub inputs list it as a built-in task's (was left out: files only)
        hub_repos=_hub_repos(spec, path.parent),
    )


def _hub_repos(spec: TaskSpec, base: Path) -> tuple[HubRepo, ...]:
    """The hub datasets a task file's data names (`data.hub`, or `data.beir` as a hub id, and `data.train`
    beside it as one, read at its default revision: `Task.hub_repos`; none for local files). `base`: the
    task file's folder."""
    hub = spec.data.hub or (beir_hub_id(spec.data.beir, base) if spec.data.beir else None)
    trains = beir_hub_id(spec.data.train, base) if spec.data.beir and spec.data.train else None
    return ((HubRepo(hub, spec.data.revision),) if hub else ()) + ((HubRepo(trains),) if trains else ())


def file_hub_repos(paths) -> dict[str, tuple[HubRepo, ...]]:
    """{task: the hub datasets it reads} of these task files or folders, from their specs alone (no data
    is read): for the study report, whose process may not have registered them. Files gone or no longer
    valid give {}: the report then names none of their datasets rather than failing."""
    try:
        return {(spec := _read_spec(path)).name: _hub_repos(spec, path.parent) for path in task_files(paths)}
    except UserError:
        return {}


def task_file_names(paths) -> list[str]:
    """The names of the tasks these files or folders hold, from their specs alone (YAML, no data)."""
    return [_read_spec(path).name for path in task_files(paths)]


def load_task_files(paths, only: Collection[str] | None = None) -> list[Task]:
    """Read, check and register the tasks of these files or folders; a repeated name is an error. `only`:
    the names of the tasks wanted (a study's eval node: its own), whose files alone are loaded; the others'
    specs are read to find them (YAML, no data), as their data may be a hub dataset's or a BEIR corpus."""
    from encoderlab.eval.tasks.registry import BUILTIN, register

    tasks, seen = [], {}
    for path in task_files(paths):
        if only is not None and _read_spec(path).name not in only:
            continue
        task = task_from_file(path)
        if task.name in seen and seen[task.name].resolve() == path.resolve():  # was "rename one", of one file
            also = f" (also as {seen[task.name]})" if seen[task.name] != path else ""
            raise UserError(f"task file {path} is given twice{also}; give it once")
        if task.name in seen:
            raise UserError(
                f"task file {path}: name '{task.name}' is also used by {seen[task.name]}; rename one"
            )
        if task.name in BUILTIN:
            raise UserError(f"task file {path}: '{task.name}' is a built-in task's name; rename yours")
        seen[task.name] = path
        tasks.append(task)
    return [register(t) for t in tasks]
