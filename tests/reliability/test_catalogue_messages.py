"""docs/errors.md shows what the commands print, word for word.

`test_catalogue_rows.py` checks that each row's message matches its test's pattern, and a pattern
matches a prefix: lists of valid names grew (commands, config fields, model sizes, tasks) while the
rows kept the old lists, and every pattern still matched. Here each table case runs once more and its
printed line is compared with its row. What may differ between machines is left out of the
comparison: the scratch folder (`{w}` in the row), numbers (memory available, sizes of the test's
own fixtures) and the device word; a row that shortens its message with `...` is skipped.
"""

from __future__ import annotations

import re

import pytest
from tests.reliability.test_catalogue_rows import doc_rows
from tests.reliability.test_hostile_data import DATA_CASES, dworld  # noqa: F401 (fixture)
from tests.reliability.test_hostile_inputs import CASES, cli, world  # noqa: F401 (fixture)

ROWS = doc_rows()


def _shown(case: str) -> bool:
    """Rows that show this case's own message in full."""
    row = ROWS.get(case)
    return row is not None and row[3] and "..." not in row[1]


def _normal(message: str) -> str:
    message = re.sub(r"\d+(\.\d+)?", "N", message)
    return re.sub(r"\b(cpu|cuda|mps)\b", "DEVICE", message)


def _printed(err: str, folder) -> str:
    lines = [x for x in err.strip().splitlines() if not x.startswith("encoderlab: note: ")]
    return lines[-1].replace(str(folder), "{w}").removeprefix("encoderlab: error: ")


@pytest.mark.parametrize("case,argv", [(c[0], c[1]) for c in CASES if _shown(c[0])])
def test_an_input_rows_message_is_what_the_command_prints(world, capsys, monkeypatch, case, argv):  # noqa: F811
    monkeypatch.setenv("ENCODERLAB_HOME", str(world / "home"))
    _, err = cli(argv.format(w=world).split(), capsys)
    assert _normal(_printed(err, world)) == _normal(ROWS[case][1])


@pytest.mark.parametrize("case,argv", [(c[0], c[1]) for c in DATA_CASES if _shown(c[0])])
def test_a_data_rows_message_is_what_the_command_prints(dworld, capsys, case, argv):  # noqa: F811
    _, err = cli(argv.format(w=dworld).split(), capsys)
    assert _normal(_printed(err, dworld)) == _normal(ROWS[case][1])
