"""A dataset's hidden label, -1: the label of a row whose gold label the dataset does not publish.

`datasets` writes it -1 in a class-label column (GLUE's and SuperGLUE's test splits), and a local export
(`run_glue.py`'s CSVs; SNLI's unlabelled rows) writes it -1 in a plain label column. Read as a class id or
a class of its own, such rows scored every prediction wrong (and, in train, failed in the loss). One line
refuses it wherever it stands (`refuse_hidden_labels`): the rows counted, the first named, and the fix of
the split it is in, a hub split's (`HIDDEN_FIX`: map it to a labelled split) or a local file's
(`LOCAL_HIDDEN_FIX`: name a labelled file, cut the split from train, or drop the rows from train). A plain
column's -1 is refused before train is cut (`refuse_unpublished_before_cut`), so a test file of -1 beside a
one-row train file is told so, not to add train rows first (after which it was refused anyway).

Trade-off: where -1 is a class (`labels: ["-1", "0", "1"]`, or a train file of -1, 0 and 1 sentiment
without `labels:`) it is read as one, so hidden labels beside such a class are not told apart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from encoderlab.errors import UserError
from encoderlab.eval.tasks.custom_labels import label_kind, label_name, named_as, written
from encoderlab.eval.tasks.hublayout import class_names
from encoderlab.eval.tasks.rowplaces import RowPlaces
from encoderlab.words import count

if TYPE_CHECKING:
    from encoderlab.eval.tasks.custom import TaskSpec

HIDDEN_FIX = {
    "train": "map train to a labelled split in data.splits",
    "validation": "map validation to a labelled split in data.splits, or set it null to cut it from train",
    "test": "map test to a labelled split in data.splits (e.g. `{test: validation, validation: null}`), or "
    "cut it from train with data.test_fraction",
}
"""The fix per split of hidden labels in a hub split: map the split to a labelled one (`data.splits`)."""


LOCAL_HIDDEN_FIX = {
    "train": "drop those rows from the train file (a dataset's unlabelled rows, as SNLI's), or name a labelled "
    "file in data.train",
    "validation": "name a labelled file in data.validation, or leave it out to cut validation from train",
    "test": "name a labelled file in data.test, or cut test from train with data.test_fraction",
}
"""The fix per split of hidden labels in a local file; a hub split's are `HIDDEN_FIX` (a split mapping in
data.splits, which a local file cannot have)."""


def refuse_hidden_labels(split: str, cells: list, places: RowPlaces, column: str, where: str) -> None:
    """A class-label column's -1 is `datasets`' mark of a label the dataset does not publish (GLUE's and
    SuperGLUE's test splits): read as a class id, a test split of them scored every prediction wrong,
    and a train split of them failed in the loss. Called on columns with class names, where -1 cannot be a
    class of one's own, and on plain ones where it is no class (`refuse_unpublished_labels`). The example is
    the first such row of the data (a split cut from train is shuffled). The fix is a hub split's or a local
    file's by where the split was read: a local parquet file's class-label column was told to map the split
    in data.splits, which is refused beside local files."""
    hidden = [i for i, c in enumerate(cells) if c == -1 or (isinstance(c, list) and -1 in c)]
    if hidden:
        raise UserError(
            f"{where}: {places.whole(split, header=False)}: {count(len(hidden), 'row')} of {len(cells)} "
            f"(e.g. {places.row(min(hidden, key=places.order.__getitem__))}) have the label -1 in {column!r}, the dataset's hidden "
            f"label; {(HIDDEN_FIX if places.hub else LOCAL_HIDDEN_FIX)[split]}"
        )


def refuse_unpublished_labels(
    labels: tuple[str, ...],
    raw: dict[str, list[dict]],
    places: dict[str, RowPlaces],
    fields: tuple[str, str],
    where: str,
) -> None:
    """Refuse -1 in a plain label column (a local export of GLUE's test split, as `run_glue.py` reads it;
    SNLI's unlabelled rows) where -1 is no class of `labels` (every split's rows, our field names; `fields`:
    the field and its column): the hidden label of `refuse_hidden_labels`, by its one line, with the fix of
    the split it is in. Was refused row by row with the test split's fix wherever it stood (a validation
    file was told to cut test from train), and before that told to add -1 to `labels:`, a class no training
    row has, so every such row scored wrong. Where -1 is a class (`labels: ["-1", "0", "1"]`, or a train
    file of -1, 0 and 1 without `labels:`), it is read as one."""
    if named_as(-1, labels) is not None:
        return
    field_, column = fields
    for split, rows in raw.items():
        cells = [-1 if _minus_one(r[field_]) else None for r in rows]
        refuse_hidden_labels(split, cells, places[split], column, where)


def _minus_one(value) -> bool:
    """Whether a label cell is, or (a tc row's tags, a multi-label cell) holds, -1 (`-1`, `-1.0`, "-1")."""
    if isinstance(value, list):
        return any(_minus_one(v) for v in value)
    return value is not None and label_name(written(value)) == "-1"  # a CSV's "-1.0" as its number


def refuse_unpublished_before_cut(
    spec: TaskSpec, found: dict, places: dict[str, RowPlaces], where: str
) -> None:
    """`refuse_unpublished_labels` on the splits as read, before train is cut (`load_splits`' `before_cut`):
    checked after the cut only, a test file of -1 beside a one-row train file was told that "0.05 of the 1
    train example leaves none to train on", and a user who added rows learnt only then that the test file
    could never be scored. The label set is `labels:`, else -1 is a class where train holds it; a class-label
    column's -1 is never one of its classes."""
    if spec.family not in ("sc", "pair-sc", "tc") or label_kind(spec.options) == "regression":
        return
    field_ = "tags" if spec.family == "tc" else "label"
    column = spec.columns.get(field_, field_)
    if any(class_names(part, column) is not None for part in found.values()):
        for split, part in found.items():
            refuse_hidden_labels(split, list(part[column]), places[split], column, where)
        return
    if spec.labels is None and any(_minus_one(v) for v in found["train"][column]):
        return  # -1 is one of train's classes
    raw = {s: [{field_: v} for v in part[column]] for s, part in found.items()}
    refuse_unpublished_labels(tuple(spec.labels or ()), raw, places, (field_, column), where)
