"""A task file's labels: the label set, and each row's label (or set of labels) as class ids.

sc and pair-sc rows hold one label, with `options: {multilabel: true}` a list of labels (none, one
or several), with `options: {regression: true}` a number; tc rows hold one tag per word. A label is
looked up by its name (a number by its text), except the ids of a ClassLabel column, which are ids,
and whole numbers beside a `labels:` list none of whose names they are (HF's ClassLabel ids, a
run_glue CSV's 0/1 with `labels: [bad, good]`): those are positions in the list. A
cell that does not fit (empty, a list where one label is expected, one label where a list is, a
target that is not a number, a tc row without words or with an empty word) is one line naming the problem and the fix: `str()` would have made it
a class of its own, called 'None' or "['a', 'b']". So is a class column of fractional numbers (e.g.
similarity scores), which would have become one class per distinct value, and, without `labels:`, one
of two names that differ only in spaces at their ends (`good`, `good `) or in case (`Good`, `good`).
Names are compared in Unicode's composed form (NFC), so one written with a combining accent is the
same class as its composed spelling, which looks the same. A -1 where it is no class is a dataset's hidden
label (`hiddenlabels`).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Literal

from encoderlab.errors import UserError, shown
from encoderlab.eval.metrics import non_iob_tag
from encoderlab.eval.tasks.rowplaces import RowPlaces
from encoderlab.eval.tasks.splits import text_fields
from encoderlab.words import count

Kind = Literal["one", "multilabel", "regression"]
"""What an sc row's label cell holds: one label, a list of labels, or a number."""
At = Callable[[int], str]
"""Cell i of a label column -> where its row is (`train split, line 4 of train.csv`)."""


def label_kind(options: dict) -> Kind:
    """The kind of label an sc/pair-sc task file's `options` ask for."""
    if options.get("multilabel") is True:
        return "multilabel"
    return "regression" if options.get("regression") is True else "one"


def label_set(
    given,
    family: str,
    kind: Kind,
    names: tuple[str, ...] | None,
    cells: list,
    column: str,
    where: str,
    at: At,
) -> tuple[str, ...]:
    """The spec's labels (`given`), else the column's ClassLabel `names`, else the values seen in train's
    label `cells` (sorted; tc puts `O` first where the data has it); none for a regression. `at(i)`: where cell i's row is."""
    if kind == "regression":
        return ()
    if given is not None:
        labels = tuple(label_name(str(x)) for x in given)  # NFC, as the data's names are read
        twice = next((x for x in labels if labels.count(x) > 1), None)
        if twice is not None:  # the second was never a class id: its predictions read as the first's name
            raise UserError(
                f"{where}: labels: {twice!r} is listed twice; name each class once (its position is its id)"
            )
        return labels
    if names:
        return names
    values = _values(cells)
    fraction = next(((v, i) for v, i in values if isinstance(v, float) and not v.is_integer()), None)
    if fraction is not None and family != "tc":
        raise UserError(
            f"{where}: the label column {column!r} holds fractional numbers (e.g. {_at(fraction, at)}), each "
            "of which would be a class; for a numeric target set `options: {regression: true}`, else give "
            "class names"
        )
    _one_form(values, column, where, at)
    _one_spelling(values, column, where, at)
    seen = {label_name(v) for v, _ in values}
    if family != "tc" and kind == "one":
        _not_a_text_column(values, seen, column, where, at)
    if family == "tc" and "O" in seen:  # NER's convention (CoNLL's, HF's run_ner): O is tag 0
        return ("O", *sorted(seen - {"O"}))
    return tuple(sorted(seen))  # a tag set without O (POS, CAP/LOW) got an O no word trains


def _values(cells: Iterable) -> list[tuple]:
    """(value, its cell's index) of every label in `cells` (a list cell's each), empty ones left out:
    those are refused row by row, naming the empty label."""
    return [
        (v, i)
        for i, cell in enumerate(cells)
        for v in (cell if isinstance(cell, list) else [cell])
        if not empty(v)
    ]


def _at(value: tuple, at: At, show=repr) -> str:
    """A label value and where its row is, as a refusal gives an example: `'good' in the train split,
    line 4 of train.csv`."""
    return f"{show(value[0])} in the {at(value[1])}"


def _named(value) -> str:
    return repr(label_name(value))


def _not_a_text_column(values: list[tuple], seen: set, column: str, where: str, at: At) -> None:
    """Refuse an inferred label set with more classes than half of train's rows: a text column named as
    the label (`columns:` swapped, or the wrong column) was a class per row, refused later as one test
    label "not in the label set" followed by every train text. `labels:` names a real many-class set."""
    if len(values) >= 20 and len(seen) > len(values) / 2:
        example = shown(label_name(values[0][0]))
        raise UserError(
            f"{where}: the label column {column!r} holds {len(seen)} different values in {len(values)} train "
            f"rows (e.g. {example} in the {at(values[0][1])}), so nearly every row would be a class of its own; "
            "if it is a text column, point `columns: {label: ...}` at the class column, else list the classes "
            "in `labels:`"
        )


def _one_form(values: list[tuple], column: str, where: str, at: At) -> None:
    """Refuse a label column without `labels:` holding both names and whole numbers (`"bad"` beside
    `1`): each form became classes of its own, so a two-class task was trained and scored as four."""
    number = next(((v, i) for v, i in values if _numeric(v)), None)
    name = next(((v, i) for v, i in values if not _numeric(v)), None)
    if number is not None and name is not None:
        raise UserError(
            f"{where}: the label column {column!r} holds both names (e.g. {_at(name, at, _named)}) and numbers "
            f"(e.g. {_at(number, at, _named)}), each of which would be a class of its own; write every label in "
            "one form, or name the classes in `labels:` (numbers are then read as positions in it, or by "
            "name if the list names them)"
        )


def _one_spelling(values: list[tuple], column: str, where: str, at: At) -> None:
    """Refuse a label column without `labels:` holding two names that differ only in spaces at their
    ends (`good` beside `good `, as a hand-edited CSV has them: its cells are read as written) or only in
    case (`Positive` beside `positive`, two annotators' spellings): each became a class of its own, so a
    two-class task was trained and scored as three. Case is compared casefolded, as `str.casefold` does."""
    first: dict[str, tuple] = {}
    for value in values:
        name = label_name(value[0])
        other = first.setdefault(name.strip().casefold(), value)
        if label_name(other[0]) != name:
            raise UserError(
                f"{where}: the label column {column!r} holds {_named(other[0])} ({at(other[1])}) and "
                f"{_named(value[0])} ({at(value[1])}), {_spelling_fix(label_name(other[0]), name)}"
            )


def _spelling_fix(a: str, b: str) -> str:
    """How two names of one class differ (in end spaces, in case, or both), and the fix for the data."""
    case, spaces = a.strip() != b.strip(), a.casefold() != b.casefold()  # equal once stripped and casefolded
    if not case:
        differ, fix = "in spaces at their ends", "remove the spaces from the data"
    elif not spaces:
        differ, fix = "in case", "write the class in one case in the data"
    else:
        differ, fix = "in case and in spaces at their ends", "write the class one way in the data"
    return (
        f"which differ only {differ}, so each would be a class of its own; {fix}, or name the classes in "
        "`labels:`"
    )


def _numeric(value) -> bool:
    """Whether a label value is a number, or the text of one (`-1`, `0.5`, as a JSON string)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, (int, float)) or bool(
        re.fullmatch(r"[+-]?[0-9]+(\.[0-9]+)?", str(value).strip())
    )


def check_classes(
    labels: tuple[str, ...], family: str, kind: Kind, given: bool, column: str, where: str, train: RowPlaces
) -> None:
    """Refuse a label set a classifier cannot learn, once every row has been read by it: fewer than two
    classes for one label per example, no label for label sets (a single class trained a loss of 0 and
    scored 100; no label at all trained a NaN loss on zero outputs). Labels read from the data name
    train's file (`train`) and, for a single class, the first row holding it."""
    if family in ("sc", "pair-sc") and kind != "regression" and len(labels) < (2 if kind == "one" else 1):
        if given:
            source = f"{where}: `labels:`"
        else:
            source = f"{where}: {train.whole('train', header=False)}: the label column {column!r}"
        held = f"holds only {labels[0]!r}" if labels else "holds no label"
        if labels and not given and train.order:  # the first in the file (train may be cut and shuffled)
            held += f" (e.g. {train.row(train.order.index(min(train.order)))})"
        need, add = ("two classes", "of the others") if kind == "one" else ("a label", "with labels")
        raise UserError(
            f"{source} {held}; a classifier needs {need} or more: name every class in `labels:`, or add "
            f"examples {add} to train"
        )


def class_of(value, names: tuple[str, ...]):
    """A class-label cell (an id, or a list of ids for tags and label sets) as its column's class names, so
    a task file's `labels:` is matched by name: read as positions in `labels:`, ids of another order (or
    of a subset) named other classes without a word."""
    return [names[v] for v in value] if isinstance(value, list) else names[value]


def check_scored_sizes(kind: Kind, scored: dict[str, list], where: str) -> None:
    """A regression's validation and test splits need two examples and two different targets: a
    correlation over one example, or over targets all alike, is undefined. One example stopped the run
    after fine-tuning (a ValueError traceback; a small train file's 5% validation cut is one example);
    targets all alike (a validation cut of a few rows of integer scores) scored every run 0, so the LR
    was picked by a tie of zeros and the test reported 0, without a word."""
    if kind != "regression":
        return
    cut = "(or raise data.validation_fraction, for a validation cut from train)"
    for name, split in scored.items():
        if len(split) < 2:
            raise UserError(
                f"{where}: the {name} split has {count(len(split), 'example')}, and a correlation needs at "
                f"least 2; add examples {cut}"
            )
        if len({e["target"] for e in split}) == 1:
            raise UserError(
                f"{where}: the {name} split's {len(split)} targets are all {split[0]['target']:g}, and a "
                f"correlation over targets all alike is undefined (every run would score 0); add examples "
                f"with other targets {cut}"
            )


def label_name(value) -> str:
    """A label value as a class name: its text, a JSON/parquet boolean as YAML writes it (`true`), a
    whole float as the integer it holds (`1.0` -> `1`: a CSV column of floats, e.g. one pandas wrote,
    names its classes as an integer column does, so a train file of floats and a test file of ints
    agree; they were refused as "label '1' is not in the label set ['0.0', '1.0']"). A text is taken in
    Unicode's composed form (NFC): `café` written with a combining accent (as macOS and some exports
    write it) is the same name, not a class of its own that looks the same in every message."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return unicodedata.normalize("NFC", str(value))


def written(value):
    """A label cell of a CSV or TSV file (read as the text written) as the label it holds: a number written
    plainly (`1`, `-1`, `0.5`, `1.0`) is that number, as a JSON or parquet column of numbers holds it;
    other text is itself, so `00123` and `0123` stay two labels (pandas read both as 123), and `1e5`,
    `0x1F` or ` 12` the label written."""
    if isinstance(value, str) and re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?", value):
        return float(value) if "." in value else int(value)
    return value


def named_as(value, labels: tuple[str, ...]) -> str | None:
    """The name in `labels` that `value` reads as: its class name, else its text as written (`1.0`
    with `labels: ["1.0"]`); None when neither is one."""
    return next((n for n in (label_name(value), str(value)) if n in labels), None)


def whole(value) -> int | None:
    """A label value as a class id, if it is a whole number (an int, a digit string as a CSV column
    may hold, 1.0 as pandas reads ids beside an empty cell); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"[0-9]+", value.strip()):
        return int(value)
    return value if isinstance(value, int) else None


def reads_ids(labels: tuple[str, ...], values: Iterable, column: str, where: str, at: At) -> bool:
    """Whether a label column holds positions in the given `labels:` rather than names: none of its
    values is one of the names and every one is a whole number. A label set of numbers ("0", "1") is
    read by name. Whole numbers out of range, beside names, or beside a value that is neither a name nor a
    number (a typo), are one line naming the fixes, each example with where its row is (`at(i)`: cell
    i's row)."""
    if any(whole(n) is not None for n in labels):
        return False
    values = _values(values)
    names = [(v, i) for v, i in values if named_as(v, labels) is not None]
    ids = [(whole(v), i) for v, i in values if named_as(v, labels) is None and whole(v) is not None]
    others = [(v, i) for v, i in values if named_as(v, labels) is None and whole(v) is None]
    if not ids:
        return False  # names only, or names and a value that is neither: refused row by row, naming it
    fix = "write every label as its name, or as its position in `labels:` (from 0)"
    if names:
        raise UserError(
            f"{where}: the label column {column!r} holds both names from `labels:` (e.g. {_at(names[0], at)}) "
            f"and class ids (e.g. {_at(ids[0], at, str)}); {fix}"
        )
    if others:
        other = f"{label_name(others[0][0])!r} ({at(others[0][1])})"
        raise UserError(
            f"{where}: the label column {column!r} holds class ids (e.g. {_at(ids[0], at, str)}) and {other}, "
            f"which is neither a name in `labels:` {list(labels)} nor a class id; fix that cell, or add it "
            "to `labels:` and write every label as its name"
        )
    bad = next(((n, i) for n, i in ids if not 0 <= n < len(labels)), None)
    if bad is not None:
        raise UserError(
            f"{where}: the label column {column!r} holds class ids, read as positions in `labels:`, but "
            f"{bad[0]} ({at(bad[1])}) is not one of 0 to {len(labels) - 1}; name every class in `labels:` in id "
            "order, or fix the data"
        )
    return True


def empty(value) -> bool:
    """Whether a cell holds nothing: an empty CSV cell or a JSON null (None), a blank string, or a float
    NaN, which Python's `json.dumps` writes for a missing value (pandas rows dumped so): a label column of
    numbers beside one was refused as "fractional numbers (e.g. nan)", with the fix of a regression."""
    return (
        value is None
        or (isinstance(value, float) and math.isnan(value))
        or (isinstance(value, str) and not value.strip())
    )


def cell_text(value, field: str, where: str) -> str:
    """A text cell (text, word, question, query...) as the model reads it. An empty one (an empty CSV
    cell, a JSON null, a JSON "" or blank text) or a nested one (a list or a mapping) is one line: `str()`
    fed the model the word 'None', or "['a', 'b']"; a blank word got no token and was scored as `O`."""
    if empty(value):
        raise UserError(f"{where}: a row has an empty {field}; fill it in or remove the row")
    if isinstance(value, (list, dict)):
        raise UserError(f"{where}: a row's {field} is {shown(value)}, not a text; give one text per cell")
    return str(value)


def label_id(where: str, labels: tuple[str, ...], value, named: bool) -> int:
    """A label id: class ids (`named`: a ClassLabel column's, or positions in `labels:`) are ids; any
    other value (name or number) is looked up by name."""
    if empty(value):  # an empty CSV cell, a JSON null or "": str() made it a class called 'None' or ''
        raise UserError(f"{where}: a row has an empty label; fill it in or remove the row")
    if isinstance(value, (list, dict)):  # str() made it a class called "['a']" or "{'x': 1}"
        raise UserError(f"{where}: a row's label {value!r} is not a name or a number; give one per label")
    if named and whole(value) is not None:
        return whole(value)
    name = named_as(value, labels)
    if name is None and whole(value) is not None and not any(whole(n) is not None for n in labels):
        # a split of ids beside train's names ("add it to `labels:`" would have made a class called '0')
        raise UserError(
            f"{where}: label {label_name(value)!r} looks like a class id, but the label set {list(labels)} is "
            "of names; write every split's labels in one form: as names, or as ids (positions) with the "
            "classes listed in `labels:` in id order"
        )
    if (
        name is None
    ):  # a -1 is refused before (`refuse_unpublished_labels`): added to `labels:`, no row trains on it
        raise UserError(
            f"{where}: label {label_name(value)!r} is not in the label set {list(labels)}; add it to "
            "`labels:` or fix the data"
        )
    return labels.index(name)


def _target(where: str, value) -> float:
    """A regression row's number (a numeric string too: a CSV column with one odd cell is read as text)."""
    if empty(value):  # a JSON null, or an empty CSV cell
        raise UserError(f"{where}: a row has an empty label; fill it in or remove the row")
    try:
        number = float(value) if not isinstance(value, (bool, list, dict)) else math.nan
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise UserError(
            f"{where}: a row's target {value!r} is not a finite number; a regression task "
            "(`regression: true`) needs a number in every label cell"
        )
    return number


def _sc_labels(where: str, labels: tuple[str, ...], value, named: bool, kind: Kind) -> dict:
    """An sc row's label field: `{"label": id}`, `{"labels": [ids]}` (multi-label) or `{"target": x}`."""
    if kind == "regression":
        return {"target": _target(where, value)}
    if kind == "one":
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


def tc_shape(r: dict, where: str) -> None:
    """Refuse a tc row whose tokens and tags are not two lists of one length, at least one word long. Run
    on every row before the tag set is read from train's cells: a string cell (a CSV's "B-LOC O O") was
    read as a tag of its own, and a good row cut into test refused as "label 'B-LOC' is not in the label
    set ['O', 'B-LOC O O']", not the string cell."""
    if not isinstance(r["tokens"], list) or not isinstance(r["tags"], list):
        raise UserError(  # the fix was not said: a CSV cell is one text, never a list
            f"{where}: a row's tokens and tags must both be lists, got {r['tokens']!r}, {r['tags']!r}; "
            'write one list each per row, in JSON lines or parquet (`{"tokens": ["Paris", "is"], '
            '"tags": ["B-LOC", "O"]}`, under your column names); a CSV or TSV cell is one text'
        )
    if len(r["tokens"]) != len(r["tags"]):
        raise UserError(  # the fix was not said
            f"{where}: a row has {len(r['tokens'])} tokens but {len(r['tags'])} tags; give each word "
            "one tag, in order (tags[i] tags tokens[i])"
        )
    if not r["tokens"]:  # a split of such rows had no word to score (a ZeroDivisionError)
        raise UserError(f"{where}: a row has no tokens (an empty sentence); remove the row")


def converter(family: str, labels: tuple[str, ...], named: bool, kind: Kind) -> Callable:
    """One function from a row (our field names) and where it is (`task file X: train split, line 3 of
    train.csv`, which a refusal of the row starts with) to an example of the family."""
    if family in ("sc", "pair-sc"):
        texts = ("text", "text_pair") if family == "pair-sc" else ("text",)

        def sc(r, where: str) -> dict:
            text = tuple(cell_text(r[t], t, where) for t in texts)
            return {
                **text_fields(text if len(texts) == 2 else text[0]),
                **_sc_labels(where, labels, r["label"], named, kind),
            }

        return sc
    if family == "tc":

        def tc(r, where: str):
            tc_shape(r, where)
            return {
                "tokens": [cell_text(t, "token", where) for t in r["tokens"]],
                "tags": [label_id(where, labels, t, named) for t in r["tags"]],
            }

        return tc
    return lambda r, where: r  # qa and ir rows are converted split by split (they need ids and counts)


def check_iob2(
    parts: dict[str, list[dict]],
    tags: tuple[str, ...],
    places: dict,
    order: list[tuple[str, int]],
    where: str,
) -> None:
    """Refuse an `I-` tag that continues no entity of its type (after `O`, or after another type), as IOB1
    data (CoNLL-2003's original files) starts entities, when scored by strict IOB2 entity F1: seqeval drops
    such an entity from the gold, so a model tagging it `O` scored it right and one tagging `B-PER I-PER`
    scored a false positive, without a word. Tag sets that are not IOB are `custom._check_entity_tags`'."""
    if non_iob_tag(tags) is not None:
        return
    for split, i in order:  # in file order (`file_order`): the first such row of the data is named
        example = parts[split][i]
        names = [tags[t] for t in example["tags"]]
        for k, (before, tag) in enumerate(zip(["O", *names], names)):
            if tag.startswith("I-") and before[2:] != tag[2:]:
                raise UserError(
                    f"{where}: {places[split].of(split, i)}: tag {tag!r} of word {k + 1} "
                    f"({example['tokens'][k]!r}) follows {before!r}, so strict IOB2 entity F1 (metric "
                    "'entity_f1') drops that entity from the scores; convert IOB1 tags to IOB2 (B- starts "
                    "every entity), or set `metric: conlleval_f1` (conlleval's lenient reading)"
                )
