"""A task file's column named by a dotted path into a nested field: `columns: {text: meta.text}`.

JSON lines exported from hub datasets, and parquet files with struct columns, nest a field in an object
(`{"meta": {"text": ...}}`); lm-evaluation-harness reads it as `doc_to_text: "{{meta.text}}"`, and a
pretraining source as `#text_field=meta.text` (`data/fieldpath.py`). A task file's `columns:` naming it
was refused as "no column meta.text (it has meta, label)", with no way to read it short of rewriting the
data. The rule is the pretraining source's, one module's (`fieldpath.lookup`): a column the split holds
under that very name wins (a CSV header `meta.text` reads as before); otherwise the name is walked through
the nested objects of the split's column of its first segment, a list entered by an index segment
(`passages.0.text`), a null object on the way a null cell (then refused as any empty cell is, naming its
row). The values are added to the split as a column of that name, so every later check and refusal (rows,
labels, lines) reads it as any other column; an optional field's column (`query_id: meta.qid`) as a required
one's (it was refused as "no split has column 'meta.qid'"). A path that stops (a field the object lacks) is
left to the missing-column line, which names the column and what the split holds.

Trade-off: the column is built in memory, one Python value per row (a task's splits are held whole
already); a path through a list reads one element per row, never every element as rows of their own.
"""

from __future__ import annotations

from collections.abc import Iterable

from encoderlab.data.fieldpath import FieldMissing, lookup
from encoderlab.errors import UserError


def lift_nested(found: dict, columns: Iterable[str], where: str) -> None:
    """Add to each split of `found` ({split: datasets.Dataset}) every one of `columns` it lacks as a column
    but names by a dotted path into one it has (module docstring); in place."""
    for split, part in found.items():
        for name in columns:
            head = name.split(".", 1)[0]
            if name in part.column_names or "." not in name or head not in part.column_names:
                continue
            try:
                cells = [lookup({head: value}, name) for value in part[head]]
            except FieldMissing:
                continue  # the missing-column line names the column and what the split holds
            try:
                part = part.add_column(name, cells)
            except (TypeError, ValueError) as e:  # arrow's: values of two kinds (a text and a number)
                raise UserError(
                    f"{where}: {split} split: the column {name!r} (a nested field) holds values of more than "
                    f"one kind ({str(e).splitlines()[0][:80]}); give every row one kind of value there"
                ) from None
        found[split] = part
