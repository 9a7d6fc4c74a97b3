"""Ladders from plain files: one run per CSV row or JSONL record.

Columns (CSV header or JSON keys):

| column | meaning |
|---|---|
| `clm_share` | share of the steps trained with CLM, 0 to 1 (0: pure MLM, 1: pure CLM) |
| `mask_ratio` | MLM mask ratio; empty (CSV) or null (JSON) for pure CLM |
| `label` | optional display name of the schedule, one per schedule (a run without one takes it) |
| `params` | N, non-embedding parameters |
| `tokens` | D, training tokens |
| `flops` | optional measured training FLOPs (empty: 6ND), for every run or for none |
| `seed` | pretraining seed (an integer) |
| the metric | its value, in a column named like the metric (`val/mlm15` by default) |

Any other column is ignored, so a results table can be fed as it is. Every problem is reported as
one line naming the file, the line and the fix, before anything is fitted.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from encoderlab.advise.ladder import Observation, Schedule
from encoderlab.data.filekinds import user_text
from encoderlab.errors import UserError
from encoderlab.jsonlines import json_objects
from encoderlab.words import noun

REQUIRED = ("clm_share", "mask_ratio", "params", "tokens", "seed")


def _number(
    raw,
    column: str,
    where: str,
    *,
    optional: bool = False,
    integer: bool = False,
    empty: str = "give a value",
):
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        if optional:
            return None
        raise UserError(f"{where}: column {column} is empty; {empty}")
    try:
        if isinstance(raw, bool):  # JSON true/false: float() read them as 1 and 0, a run of N=1 or seed 1
            raise TypeError
        value = float(raw)
    except (TypeError, ValueError):
        raise UserError(f"{where}: column {column} must be a number, got {raw!r}") from None
    if integer:
        if not math.isfinite(value) or value != int(value):  # int() of nan or inf raises
            raise UserError(f"{where}: column {column} must be an integer, got {raw!r}")
        return int(value)
    if not math.isfinite(value):  # a diverged run's NaN loss was fitted as a measurement
        raise UserError(
            f"{where}: column {column} must be a finite number, got {raw!r}; leave out the row of a run that "
            "diverged (its loss is not finite)"
        )
    return value


def _observation(record: dict, metric: str, where: str) -> Observation:
    missing = [c for c in (*REQUIRED, metric) if c not in record]
    if missing:
        raise UserError(
            f"{where}: missing {noun(len(missing), 'column')} {', '.join(missing)}; a ladder row needs {', '.join(REQUIRED)} and the "
            f"metric {metric} (choose another with --metric); found: {', '.join(record) or 'none'}"
        )
    try:
        schedule = Schedule.biphasic(
            _number(record["clm_share"], "clm_share", where),
            _number(record["mask_ratio"], "mask_ratio", where, optional=True),
            label=str(record.get("label") or ""),
        )
    except UserError as exc:
        if str(exc).startswith(where):
            raise
        raise UserError(f"{where}: {exc}") from None  # the schedule's own check names no row
    return Observation(
        schedule=schedule,
        params=_number(record["params"], "params", where),
        tokens=_number(record["tokens"], "tokens", where),
        seed=_number(record["seed"], "seed", where, integer=True),
        value=_number(  # a task only some schedules were scored on: "give a value" they do not have
            record[metric],
            metric,
            where,
            empty="give its value, or drop the row: schedules are compared on a metric every run has",
        ),
        flops=_number(record.get("flops"), "flops", where, optional=True),
        source=where,
    )


def _records(path: Path):
    """(line number, record) of a .csv or .jsonl file."""
    text = user_text(path, "save it as UTF-8 CSV or JSONL")  # a spreadsheet's CSV may start with a BOM
    if path.suffix == ".jsonl":
        yield from json_objects(path, text)
        return
    # newline="" keeps a quoted value's line breaks (splitlines cut them, and at U+2028 too), and
    # line_num counts the file's lines, which a row ordinal does not past a blank or multi-line row
    rows = csv.DictReader(io.StringIO(text, newline=""))
    try:
        for row in rows:
            if None in row:  # more values than columns: csv keeps the surplus apart, and they were dropped
                raise UserError(
                    f"{path}:{rows.line_num} has {len(rows.fieldnames or ()) + len(row[None])} values but the "
                    f"header names {len(rows.fieldnames or ())} columns; quote a value that holds a comma, or fix the row"
                )
            yield rows.line_num, row
    except csv.Error as exc:  # a value over csv's 128 KiB field limit, a NUL byte: was a traceback
        raise UserError(
            f"{path}:{rows.line_num + 1} is not valid CSV ({exc}); fix the row"
        ) from None  # not yet counted


def read_table(path: Path | str, metric: str) -> list[Observation]:
    """The runs of a .csv or .jsonl ladder file."""
    path = Path(path)
    if not path.suffix and not path.exists():  # a mistyped study folder was told to be a .csv or .jsonl file
        raise UserError(f"{path} does not exist; give a study folder or a .csv/.jsonl ladder file")
    if path.suffix not in (".csv", ".jsonl"):
        raise UserError(f"{path}: a ladder file must be .csv or .jsonl (or give a study folder)")
    if not path.is_file():
        raise UserError(
            f"{path} does not exist or is not a file; give a .csv/.jsonl ladder or a study folder"
        )
    rows = [_observation(record, metric, f"{path}:{i}") for i, record in _records(path)]
    if not rows:
        raise UserError(f"{path} holds no runs; add one row per pretraining run")
    return rows
