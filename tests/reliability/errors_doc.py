"""docs/errors.md read as data: its catalogue rows, and the check that a case prints its row's message.

`test_catalogue_rows.py` ties rows to tests and matches each row against its case's pattern; a pattern
matches a prefix, so lists of valid names could grow while the rows kept the old lists. The table
tests therefore also compare what each case printed with its row, word for word, in the same run
(`assert_printed_as_documented`). What may differ between machines is left out: the scratch folder
(`{w}` in the row), numbers (memory available, sizes of the test's own fixtures) and the device word;
a row that shortens its message with `...`, or shows another case's message, is not compared. A study
file's refusal is a line and its problems indented below it: the row shows them on one line. A row
may add a note in brackets after the message (other inputs that give the same line).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

DOC = Path(__file__).parents[2] / "docs" / "errors.md"


def _cells(line: str) -> list[str]:
    """A Markdown table row's cells (`\\|` inside a cell is a literal bar)."""
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


@functools.cache
def doc_rows() -> dict[str, tuple[str, str, str, bool]]:
    """Case id -> (command, message, exit code, whether the row's message is this case's) for every
    catalogue row of docs/errors.md (a row may list several cases, e.g. `lr-inf`, `lr-nan`, and
    show the first one's message)."""
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = _cells(line) if line.startswith("| `") else []
        if len(cells) != 4:
            continue  # another table (the NaN policies, the exit codes)
        for i, case in enumerate(re.findall(r"`([a-z0-9-]+)`", cells[0].split("(")[0])):
            assert case not in rows, f"docs/errors.md has two rows for {case}"
            command = re.match(r"`([^`]*)`", cells[1])  # then, maybe, a note in brackets
            rows[case] = (command.group(1) if command else cells[1], cells[2], cells[3], i == 0)
    return rows


def _normal(message: str) -> str:
    message = re.sub(r"\d+(\.\d+)?", "N", message)
    return re.sub(r"\b(cpu|cuda|mps)\b", "DEVICE", message)


def assert_printed_as_documented(case: str, err: str, folder: Path) -> None:
    """The error line `case` printed (stderr `err`, scratch folder `folder`) is its row's message."""
    row = doc_rows().get(case)
    if row is None or not row[3] or "..." in row[1]:
        return
    lines = [x.strip() for x in err.strip().splitlines() if not x.startswith("encoderlab: note: ")]
    printed = _normal(" ".join(lines).replace(str(folder), "{w}").removeprefix("encoderlab: error: "))
    shown = _normal(row[1])
    assert shown == printed or shown.startswith(printed + " ("), (
        f"docs/errors.md's row {case} shows another message than:\n{err}"
    )
