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
section and the reading of its splits are `custom_data.py`'s). The task's `data_version` is a hash of its loaded
examples, so the results cache (keyed by the task signature) never reuses scores computed on
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
from encoderlab.eval.spec import (
    NEGATIVE,
    FinetuneConfig,
    HubRepo,
    Inputs,
    PairSCOptions,
    Task,
    TaskData,
)
from encoderlab.eval.tasks.beir import beir_data, beir_hub_id
from encoderlab.eval.tasks.custom_data import (
    SPLITS,
    DataSpec,
    load_splits,
    refuse_negative_ids,
    require_named_columns,
    require_train_negatives,
)
from encoderlab.eval.tasks.custom_family import (
    BINARY_F1,
    COLUMNS,
    FAMILIES,
    METRICS,
    OPTIONAL_COLUMNS,
    REGRESSION_METRICS,
    check_binary_f1,
    check_family,
    check_foreign_fields,
    check_positive_named,
    columns_of,
    kind_hint,
    of_other_family,
    options_of,
    qa_metric,
)
from encoderlab.eval.tasks.custom_labels import (
    check_classes,
    check_iob2,
    check_scored_sizes,
    class_of,
    converter,
    label_kind,
    label_set,
    reads_ids,
    refuse_hidden_labels,
    tc_shape,
    written,
)
from encoderlab.eval.tasks.custom_rows import (
    ir_eval_split,
    ir_pairs,
    ir_row,
    qa_examples,
    qa_row,
    require_answers,
)
from encoderlab.eval.tasks.hublayout import class_names
from encoderlab.eval.tasks.localfiles import task_files
from encoderlab.eval.tasks.paper import rows
from encoderlab.eval.tasks.rowplaces import RowPlaces, check_rows, file_order
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
    values seen in train (sorted; tc puts `O` first)."""
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
    metrics = _metrics(spec)
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


def _metrics(spec: TaskSpec) -> tuple[str, ...]:
    """The scores a task file may select by (the first is the default): its family's, or for an sc
    task a regression's, and micro-F1 besides the others for a multi-label one."""
    kind = label_kind(spec.options) if spec.family in ("sc", "pair-sc") else "one"
    if kind == "regression":
        return REGRESSION_METRICS
    if kind == "multilabel":  # no one positive class: its F1s are over every label
        return (*(m for m in METRICS[spec.family] if m != BINARY_F1), "micro_f1")
    return METRICS[spec.family]


# ----------------------------------------------------------------------------- examples


def _examples(spec: TaskSpec, found: dict, places: dict[str, RowPlaces], where: str) -> TaskData:
    optional_named = {f: spec.columns[f] for f in OPTIONAL_COLUMNS.get(spec.family, ()) if f in spec.columns}
    require_named_columns(found, places, optional_named, where)
    if spec.family == "ir":
        require_train_negatives(found, places, spec.columns.get(NEGATIVE), where)
        refuse_negative_ids(found, places, where)
    col = {f: spec.columns.get(f, f) for f in columns_of(spec.family)}
    required = _required(spec)  # every split holds them (`load_splits`)
    optional = [col[f] for f in OPTIONAL_COLUMNS.get(spec.family, ())]
    back = {c: f for f, c in col.items()}
    # Optional columns (QA and IR ids) are read where a split has them: one file may lack them (a
    # ValueError traceback when train had them), its ids then default to row numbers or text hashes.
    raw = {
        s: [
            {back[c]: v for c, v in r.items()}
            for r in rows(found[s], (*required, *(c for c in optional if c in found[s].column_names)))
        ]
        for s in SPLITS
    }
    if spec.family in ("sc", "pair-sc", "tc"):
        return _labelled(spec, found, raw, places, col, where)
    every = file_order(places, SPLITS)  # one sort of every row (was four: a million rows, seconds each)
    check_rows(qa_row if spec.family == "qa" else ir_row, raw, places, every, where)
    at = {s: _row_where(places[s], s, where) for s in SPLITS}
    order = {s: [i for t, i in every if t == s] for s in SPLITS}  # ids checked in file order
    if spec.family == "qa":
        counts: dict = {}
        parts = {s: qa_examples(raw[s], s, counts, where, at[s], order[s]) for s in SPLITS}
        return TaskData(parts["train"], parts["validation"], {"test": parts["test"]}, counts)
    # Evaluation corpora hold the split's documents only (judged-only, as the built-in IR tasks).
    evals = {s: ir_eval_split(raw[s], s, at[s], order[s]) for s in ("validation", "test")}
    return TaskData(
        ir_pairs(raw["train"], at["train"], order["train"]), evals["validation"], {"test": evals["test"]}
    )


def _labelled(
    spec: TaskSpec, found: dict, raw: dict, places: dict[str, RowPlaces], col: dict, where: str
) -> TaskData:
    """An sc, pair-sc or tc task's examples from its rows (`raw`, our field names; `col`: field -> column).
    Rows are checked in file order (`file_order`), so a refusal names the first bad row of the data even
    where validation was cut from train and shuffled; the examples keep their split's order."""
    field_ = "label" if spec.family != "tc" else "tags"
    label_col, kind = col[field_], label_kind(spec.options)
    raw = _label_cells(spec.labels is not None, found, raw, places, (field_, label_col), where)
    names = class_names(found["train"], label_col)
    order = file_order(places, SPLITS)  # sorted once: a split's rows in it are in its file order
    if spec.family == "tc":  # before the tag set is read from train's cells
        check_rows(tc_shape, raw, places, order, where)
    in_train = [i for s, i in order if s == "train"]
    cells = [raw["train"][i][field_] for i in in_train]  # an example a refusal gives names its split and line
    at = lambda k: places["train"].of("train", in_train[k])  # noqa: E731
    labels = label_set(spec.labels, spec.family, kind, names, cells, label_col, where, at)
    if spec.labels is None:
        named = names is not None
    else:  # whole numbers beside named `labels:` (a run_glue CSV's 0/1) are positions in them
        values = [raw[s][i][field_] for s, i in order]
        named = reads_ids(labels, values, label_col, where, lambda k: places[order[k][0]].of(*order[k]))
    convert = converter(spec.family, labels, named, kind)
    parts: dict[str, list] = {s: [None] * len(raw[s]) for s in SPLITS}
    # a row's problem names its split and line (a tag only in test: "not in the label set")
    for s, i in order:
        parts[s][i] = convert(raw[s][i], f"{where}: {places[s].of(s, i)}")
    check_classes(labels, spec.family, kind, spec.labels is not None, label_col, where, places["train"])
    # the metric as `task_from_file` resolves it (the family's default where the file names none)
    scored_by = {spec.metric or _metrics(spec)[0], spec.finetune.select_metric}
    check_positive_named(labels, spec.labels is None and names is None, spec.options, scored_by, where)
    if spec.family == "tc" and "entity_f1" in scored_by:
        check_iob2(parts, labels, places, order, where)
    check_scored_sizes(kind, {s: parts[s] for s in ("validation", "test")}, where)
    return TaskData(parts["train"], parts["validation"], {"test": parts["test"]}, labels=labels)


def _required(spec: TaskSpec) -> tuple[str, ...]:
    """The columns every split of the task must hold: its family's fields, as `columns:` names them."""
    return tuple(spec.columns.get(f, f) for f in COLUMNS[spec.family])


def _label_cells(
    given: bool, found: dict, raw: dict, places: dict, fields: tuple[str, str], where: str
) -> dict:
    """{split: rows} with the label cells (`fields`: the field and its column) as the label checks read
    them: a CSV's as written (numbers only where plainly so); a class-label column's checked for -1,
    and with `labels:` `given`, its ids as its class names."""
    field_, column = fields
    out = dict(raw)
    for s in SPLITS:
        if found[s].info.builder_name == "csv":
            out[s] = [{**r, field_: written(r[field_])} for r in raw[s]]
        elif (own := class_names(found[s], column)) is not None:  # -1 was read as a class id, unsaid
            refuse_hidden_labels(s, [r[field_] for r in raw[s]], places[s], column, where)
            if given:  # ids were read as positions in `labels:`: reordered, B-PER was read as B-LOC, unsaid
                out[s] = [{**r, field_: class_of(r[field_], own)} for r in raw[s]]
    return out


def _row_where(places: RowPlaces, split: str, where: str):
    """Row i of `split` as a refusal of it names it."""
    return lambda i: f"{where}: {places.of(split, i)}"


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
    metric = spec.metric or _metrics(spec)[0]
    if spec.family == "qa":
        metric = qa_metric(spec.metric, spec.finetune.select_metric, options, spec.inputs, where)
    if spec.data.beir is not None:  # BEIR's corpus, queries and qrels: one reader for a folder or a hub id
        data = beir_data(spec.data, spec.family, spec.columns, path.parent, where)
    else:
        query = (
            spec.columns.get("query", "query") if spec.family == "ir" else None
        )  # a query's rows: one side
        found, places = load_splits(spec.data, path.parent, _required(spec), where, query)
        data = _examples(spec, found, places, where)
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
