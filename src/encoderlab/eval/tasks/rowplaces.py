"""Where each row of a task file's split is in its data, as a refusal of that row names it.

A row's problem (an empty label, a label outside the label set, an empty word, a TSV cell holding a
tab, also in a hub mirror's file) names its split and the 1-based line of the file it was read from: a
JSON lines file's physical line (blank lines, which the reader skips, counted), a CSV or TSV file's
line counting the header, where the row starts (a quoted cell may hold line breaks, so rows and lines
differ). Lines are found by reading the file as
its reader does: a JSON lines row is a non-blank line; a CSV row is a record of `csv.reader`, and a
line of only spaces and tabs (other than the separator) is skipped, as pandas skips it. Where that
reading finds another number of rows than the reader did (a .json file holding one array, a CSV
`csv` parses otherwise than pandas), rows are counted instead: "row N" of a JSON file or parquet,
"row N (after the header)" of a CSV. A hub dataset's rows are counted in its split. A split cut from
train (validation, or test by `test_fraction`) names the train file's lines: each row keeps its
index in the file it came from through the cut. Rows are checked in file order (`file_order`,
`check_rows`), so a refusal names the first bad row of the data, not a row of train's shuffled cut;
trade-off: a pass over every row before the splits are converted, which the conversion repeats.

A problem of a column as a whole (a column the split lacks) names the split's file, and a CSV's or TSV's
header line: `test split, line 1 of test.csv (the header)`, `test split, test.jsonl`; a problem of the
column's values (train's labels of one class) names the file and a row: `train split, train.csv`, `line 2`.
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from encoderlab.eval.tasks.localfiles import plain_suffix, text_lines

ORIGIN = "__encoderlab_row__"
"""A column carrying each row's index in its file through a cut of train (removed after)."""


@dataclass(frozen=True)
class RowPlaces:
    """Where a split's rows come from: `source` (a file as the task names it, or a hub split), the
    line of each of its rows (None: rows are counted), and each split row's index in it (`order`)."""

    source: str
    lines: tuple[int, ...] | None
    header: bool
    order: tuple[int, ...]
    head: int | None = None
    """The line of a CSV's or TSV's header (None: not found, or no header)."""
    hub: bool = False
    """`source` is the name of a hub dataset's split (its rows counted), not a file."""
    from_train: bool = False
    """The split was cut from train (`custom_data.load_splits`: no file or hub split gave it)."""

    def of(self, split: str, i: int) -> str:
        """Row `i` of `split`, as a refusal names it: `train split, line 12 of train.csv`."""
        if self.hub:
            return f"{split} split, {self.row(i)} of the dataset's {self.source!r} split"
        return f"{split} split, {self.row(i)} of {self.source}"

    def row(self, i: int) -> str:
        """Row `i` in its file or hub split, unnamed: `line 12`, `row 3 (after the header)`, `row 3`."""
        n = self.order[i]
        if self.lines is not None:
            return f"line {self.lines[n]}"
        return f"row {n + 1}{' (after the header)' if self.header else ''}"

    def whole(self, split: str, header: bool = True) -> str:
        """All of `split`, as a refusal of one of its columns names it: `test split, line 1 of test.csv
        (the header)`, `test split, test.jsonl` (or `test split, test.csv` with `header=False`: a problem
        of the column's values), `test split` (a hub split of that name)."""
        if self.hub:
            return f"{split} split" + (
                "" if self.source == split else f" (the dataset's {self.source!r} split)"
            )
        if self.header and header:
            line = (
                f"line {self.head} of {self.source} (the header)"
                if self.head
                else f"the header of {self.source}"
            )
            return f"{split} split, {line}"
        return f"{split} split, {self.source}"

    def cut(self, order: list[int]) -> RowPlaces:
        """The places of a part of this split, its rows' indices in the source given."""
        return dataclasses.replace(self, order=tuple(order))


def file_order(places: dict[str, RowPlaces], splits: Iterable[str]) -> list[tuple[str, int]]:
    """(split, row index) of every row of `splits`, in the order of the data read: the train file's rows
    in its line order, wherever a cut put them (validation and `test_fraction`'s test, cut from train, and
    train itself, which `train_test_split` shuffles), then each other split's file in its own order.

    Per-row checks run in this order, so a refusal names the first bad row of the file, as it would if
    the rows were checked before the cut; the examples built keep their split's order (its seeded
    shuffle), on which the data hash and the fine-tuning depend."""
    splits = tuple(splits)
    rank = {s: k for k, s in enumerate(splits)}
    group = {s: rank.get("train", k) if places[s].from_train else k for s, k in rank.items()}
    return sorted(
        ((s, i) for s in splits for i in range(len(places[s].order))),
        key=lambda row: (group[row[0]], places[row[0]].order[row[1]]),
    )


def check_rows(
    check: Callable[[dict, str], None],
    rows: dict[str, list[dict]],
    places: dict[str, RowPlaces],
    order: list[tuple[str, int]],
    where: str,
) -> None:
    """Run a row's own checks (`check(row, where it is)`) on the rows `order` names, `file_order`'s list
    (sorted once by the caller, who reuses it: a sort of a million rows takes seconds). A task's rows are
    converted split by split, train first, after validation was cut from train and shuffled: a refusal
    named a shuffled row (line 95 while line 2 was already wrong)."""
    for s, i in order:
        check(rows[s][i], f"{where}: {places[s].of(s, i)}")


def file_places(name: str, path: Path, rows: int, where: str) -> RowPlaces:
    """The places of the `rows` rows read from the data file `path` (`name` as the task file says)."""
    kind = plain_suffix(path)
    lines, head = None, None
    if kind in (".csv", ".tsv"):
        starts = _csv_lines(path, "\t" if kind == ".tsv" else ",", where)
        head, lines = (starts[0], starts[1:]) if starts else (None, None)
    elif kind in (".jsonl", ".json"):
        lines = _json_lines(path, where)
    if lines is not None and len(lines) != rows:
        lines = None
    return RowPlaces(name, lines, kind in (".csv", ".tsv"), tuple(range(rows)), head)


def hub_places(split: str, rows: int) -> RowPlaces:
    """The places of a hub dataset split's rows: counted."""
    return RowPlaces(split, None, False, tuple(range(rows)), hub=True)


def _json_lines(path: Path, where: str) -> tuple[int, ...] | None:
    """The line of each JSON lines row: each non-blank line (pyarrow skips blank ones); None where a
    line is not one object (a .json file holding an array, or an object spread over lines)."""
    found = []
    with text_lines(path, where) as text:
        for number, line in enumerate(text, 1):
            line = line.strip(" \t\r\n")
            if line and not (line.startswith("{") and line.endswith("}")):
                return None
            if line:
                found.append(number)
    return tuple(found)


def _csv_lines(path: Path, sep: str, where: str) -> tuple[int, ...] | None:
    """The line each CSV or TSV record starts on, the header first; None where `csv` cannot read it."""
    blank = set(" \t") - {sep}
    last = [0, ""]

    def numbered(text) -> Iterator[str]:
        for number, line in enumerate(text, 1):
            last[:] = [number, line]
            yield line

    starts = []
    with text_lines(path, where) as text:
        reader = csv.reader(numbered(text), delimiter=sep)
        try:
            while True:
                start = last[0] + 1
                if next(reader, None) is None:
                    break
                if last[0] == start and set(last[1].rstrip("\r\n")) <= blank:
                    continue  # a line of nothing but spaces: no row (pandas' skip_blank_lines)
                starts.append(start)
        except csv.Error:  # a field over csv's size limit, which pandas reads
            return None
    return tuple(starts)
