"""A task file's labels: the label set, and each row's label (or set of labels) as class ids.

sc and pair-sc rows hold one label, or with `options: {multilabel: true}` a list of labels (none, one
or several); tc rows hold one tag per word. A value is looked up by its name (a number by its text),
except the ids of a ClassLabel column, which are ids. A cell that does not fit (empty, a list where one
label is expected, one label where a list is) is one line naming the problem and the fix: `str()`
would have made it a class of its own, called 'None' or "['a', 'b']".
"""

from __future__ import annotations

from collections.abc import Callable

from encoderlab.errors import UserError
from encoderlab.eval.tasks.hub import class_names
from encoderlab.eval.tasks.paper import rows
from encoderlab.eval.tasks.splits import text_fields


def label_set(given, family: str, multilabel: bool, train, column: str) -> tuple[str, ...]:
    """The spec's labels (`given`), else the column's ClassLabel names, else the values seen in train
    (sorted; tc puts `O` first)."""
    if given is not None:
        return tuple(str(x) for x in given)
    names = class_names(train, column)
    if names:
        return names
    seen = {
        str(v)
        for r in rows(train, (column,))
        for v in (r[column] if isinstance(r[column], list) else [r[column]])
        if v is not None  # refused row by row, naming the empty label
    }
    return ("O", *sorted(seen - {"O"})) if family == "tc" else tuple(sorted(seen))


def label_id(where: str, labels: tuple[str, ...], value, named: bool) -> int:
    """A label id: ClassLabel ids are ids; any other value (name or number) is looked up by name."""
    if value is None:  # an empty CSV cell or a JSON null: str() would make it a class called 'None'
        raise UserError(f"{where}: a row has an empty label; fill it in or remove the row")
    if named and isinstance(value, int) and not isinstance(value, bool):
        return value
    name = str(value).lower() if isinstance(value, bool) else str(value)
    if name not in labels:
        raise UserError(
            f"{where}: label {name!r} is not in the label set {list(labels)}; add it to `labels:` or fix the data"
        )
    return labels.index(name)


def _sc_labels(where: str, labels: tuple[str, ...], value, named: bool, multilabel: bool) -> dict:
    """An sc row's label field: `{"label": id}`, or `{"labels": [ids]}` for a multi-label task."""
    if not multilabel:
        if isinstance(value, list):
            raise UserError(
                f"{where}: a row's label is a list ({value!r}); for several labels per example set "
                "`options: {multilabel: true}`, else give one label per row"
            )
        return {"label": label_id(where, labels, value, named)}
    if not isinstance(value, list):
        raise UserError(
            f"{where}: with `multilabel: true` each label cell must be a list of labels (JSON lines or "
            f"parquet; [] for none), got {value!r}"
        )
    return {"labels": sorted({label_id(where, labels, v, named) for v in value})}


def converter(family: str, labels: tuple[str, ...], named: bool, multilabel: bool, where: str) -> Callable:
    """One function from a row (our field names) to an example of the family."""
    if family in ("sc", "pair-sc"):
        texts = ("text", "text_pair") if family == "pair-sc" else ("text",)

        def text(r, t: str) -> str:
            if r[t] is None:  # str() would feed the model the word 'None'
                raise UserError(f"{where}: a row has an empty {t}; fill it in or remove the row")
            return str(r[t])

        return lambda r: {
            **text_fields(tuple(text(r, t) for t in texts) if len(texts) == 2 else text(r, "text")),
            **_sc_labels(where, labels, r["label"], named, multilabel),
        }
    if family == "tc":

        def tc(r):
            if not isinstance(r["tokens"], list) or not isinstance(r["tags"], list):
                raise UserError(
                    f"{where}: a row's tokens and tags must both be lists, got {r['tokens']!r}, {r['tags']!r}"
                )
            if len(r["tokens"]) != len(r["tags"]):
                raise UserError(f"{where}: a row has {len(r['tokens'])} tokens but {len(r['tags'])} tags")
            return {
                "tokens": [str(t) for t in r["tokens"]],
                "tags": [label_id(where, labels, t, named) for t in r["tags"]],
            }

        return tc
    return lambda r: r  # qa and ir rows are converted split by split (they need ids and counts)
