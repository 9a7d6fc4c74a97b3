"""A task file's loaded rows as its examples: the columns read, every cell checked, the labels resolved.

`custom.py` parses a task file and loads its splits; this module turns those splits' rows into the
`TaskData` the protocol trains and scores on. Rows are renamed column -> field (`columns:`), then an sc,
pair-sc or tc task's label cells are read as the label set says (`_labelled`: `labels:`, a ClassLabel
column's names, or the values seen in train) and a qa or ir task's rows become questions or query-document
pairs (`custom_rows.py`). Every check runs over the rows in file order (`file_order`, sorted once for all
of them), so a refusal names the first bad row of the data even where validation was cut from train.

Design. The spec is read, never built, here (`TaskSpec` is `custom.py`'s, imported for its type only, so
the two modules do not import each other at run time); the tables of what each family reads are
`custom_family.py`'s and the cell checks `custom_labels.py`'s and `custom_rows.py`'s. The trade-off: the
split from `custom.py` is by concern (a file's fields vs. its data's cells), so a new field that changes how
cells are read touches both.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from encoderlab.data.hub import import_datasets
from encoderlab.eval.spec import NEGATIVE, TaskData, TaskOptions
from encoderlab.eval.tasks.custom_data import (
    SPLITS,
    refuse_negative_ids,
    refuse_relevance_columns,
    require_named_columns,
    require_train_negatives,
)
from encoderlab.eval.tasks.custom_family import (
    COLUMNS,
    OPTIONAL_COLUMNS,
    check_positive_named,
    columns_of,
    family_metrics,
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
    tc_shape,
    written,
)
from encoderlab.eval.tasks.custom_rows import ir_eval_split, ir_pairs, ir_row, qa_examples, qa_row
from encoderlab.eval.tasks.hiddenlabels import (
    refuse_hidden_labels,
    refuse_unpublished_before_cut,
    refuse_unpublished_labels,
)
from encoderlab.eval.tasks.hublayout import class_names
from encoderlab.eval.tasks.paper import rows
from encoderlab.eval.tasks.rowplaces import RowPlaces, check_rows, file_order
from encoderlab.words import count, noun

if TYPE_CHECKING:
    from encoderlab.eval.tasks.custom import TaskSpec


def examples(spec: TaskSpec, found: dict, places: dict[str, RowPlaces], where: str) -> TaskData:
    """The task's examples from its loaded splits (`found`, each row's place in `places`), every cell
    checked as it is read: sc, pair-sc and tc by their labels (`_labelled`), qa and ir by their rows."""
    optional_named = {f: spec.columns[f] for f in OPTIONAL_COLUMNS.get(spec.family, ()) if f in spec.columns}
    require_named_columns(found, places, optional_named, where)
    if spec.family == "ir":
        require_train_negatives(found, places, spec.columns.get(NEGATIVE), where)
        refuse_negative_ids(found, places, where)
        read = {spec.columns.get(f, f) for f in (*columns_of("ir"), *OPTIONAL_COLUMNS["ir"])}
        refuse_relevance_columns(found, places, read, where)
    col = {f: spec.columns.get(f, f) for f in columns_of(spec.family)}
    required = required_columns(spec)  # every split holds them (`load_splits`)
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


LIST_FIELDS = {"tc": ("tokens", "tags"), "qa": ("answers",)}
"""The fields whose cells are lists or structs, which a CSV or TSV cell (one text) never is."""


def before_cut(spec: TaskSpec, found: dict, places: dict[str, RowPlaces], where: str) -> None:
    """The checks of the splits as read that run before train is cut (`load_splits`' `before_cut`), so a
    split that can never be read is refused before a cut's size refusal sends the user to add train rows."""
    refuse_text_cells(spec, found, places, where)
    refuse_unpublished_before_cut(spec, found, places, where)


def refuse_text_cells(spec: TaskSpec, found: dict, places: dict[str, RowPlaces], where: str) -> None:
    """Refuse, before train is cut (`load_splits`' `before_cut`), a split whose tc tokens and tags or qa
    answers are read as plain values (a CSV or TSV cell is one text; a JSON string), naming its first row
    with the family's own row check (`tc_shape`, `qa_row`). Checked after the cut only, a one-row train CSV
    was refused as "data.validation_fraction 0.05 of the 1 train example leaves none to train on", and a
    user who added rows learnt only then that the file could never be read. Every split read is checked,
    not train's alone: a right one-row train file beside a test file of text cells was told to add train
    rows first, though the test file could never be read. A column's type is every row's, so its first
    row stands for them all; the rows of the splits before it in file order (`file_order`: train, then
    validation, then test) are checked first, so the first bad row of the data is still the one named."""
    fields = LIST_FIELDS.get(spec.family, ())
    if not fields:
        return
    scalar = import_datasets().Value
    col = {f: spec.columns.get(f, f) for f in COLUMNS[spec.family]}  # every split has them (checked)
    check = tc_shape if spec.family == "tc" else qa_row
    read = [s for s in SPLITS if s in found]
    for k, split in enumerate(read):
        part = found[split]
        if part.num_rows and any(isinstance(part.features[col[f]], scalar) for f in fields):
            for s, i in file_order(places, read[:k]):  # an earlier split's bad row comes first
                check({f: found[s][i][c] for f, c in col.items()}, f"{where}: {places[s].of(s, i)}")
            check({f: part[0][c] for f, c in col.items()}, f"{where}: {places[split].of(split, 0)}")


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
    if kind != "regression":  # a target of -1 is a number like any other
        refuse_unpublished_labels(labels, raw, places, (field_, label_col), where)
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
    scored_by = (spec.metric or family_metrics(spec.family, spec.options)[0], spec.finetune.select_metric)
    check_positive_named(labels, spec.labels is None and names is None, spec.options, scored_by, where)
    if spec.family == "tc" and "entity_f1" in scored_by:
        check_iob2(parts, labels, places, order, where)
    check_scored_sizes(kind, {s: parts[s] for s in ("validation", "test")}, where)
    return TaskData(parts["train"], parts["validation"], {"test": parts["test"]}, labels=labels)


def note_untrained_labels(spec: TaskSpec, data: TaskData, options: TaskOptions, where: str) -> None:
    """Warn, and go on, of the labels of an sc, pair-sc or tc task (`options.labels`: its `labels:`, or a
    ClassLabel column's names) that no training example of `data` holds: the model never learns to predict them, yet they are
    scored (a gold one is always missed, and macro-F1 counts them), as in run_glue.py, which trains on such a
    label set without a word; it was unsaid here too. A `UserWarning`, so the CLI prints it as one
    `encoderlab: note:` line on stderr (`errors.warnings_as_notes`); called once the task file has passed
    every check, so a refused one prints its refusal alone. Not refused: a label of the scored set may be rare
    enough that train lacks it (a class of the test data, an `I-` tag of single-word entities), and only the
    user knows whether it belongs."""
    kind = label_kind(spec.options)
    if spec.family not in ("sc", "pair-sc", "tc") or kind == "regression":
        return
    labels = options.labels
    name = "tags" if spec.family == "tc" else "label"  # the field as the file reads it
    field = "labels" if kind == "multilabel" else name  # as the examples hold it: an id, or a list of ids
    held = {i for e in data.train for i in (e[field] if field != "label" else (e[field],))}
    if missing := [label for i, label in enumerate(labels) if i not in held]:
        column = spec.columns.get(name, name)
        source = "`labels:`" if spec.labels is not None else f"the label column {column!r}'s class names"
        it, n = noun(len(missing), "it", "them"), len(missing)
        warnings.warn(
            f"{where}: {count(n, 'label')} of {source} ({', '.join(map(repr, missing))}) {noun(n, 'is', 'are')} "
            f"held by no training {'word' if field == 'tags' else 'example'}: the model never learns to predict "
            f"{it}, yet {noun(n, 'it counts', 'they count')} in the scores; add training rows that hold {it}, or "
            f"drop {it} from the labels if {noun(n, 'it is', 'they are')} no class of the task",
            UserWarning,
            stacklevel=2,
        )


def required_columns(spec: TaskSpec) -> tuple[str, ...]:
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
