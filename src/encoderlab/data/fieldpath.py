"""A source's `text_field` as a dotted path into nested records: `#text_field=meta.text` (`id_field` stays a
top-level name: a record without it is named by its file and line or row, as before).

Hub datasets and the JSON lines exported from them nest their text in objects (`{"meta": {"text": ...}}`,
a parquet struct column `meta` with a string field `text`); such a field was refused as "has no field
'meta.text'", with nothing to name instead. The rule, one for JSON lines, parquet and hub records:
- a name the record (or the file's columns) holds as it is wins, so a key holding a dot (`{"a.b": ...}`)
  still reads as before; otherwise the name is split on dots and walked through nested objects (structs);
- a null object on the way is a null text, an empty document (dropped and counted), as a null cell is;
- a segment that is not there, or a value on the way that is no object, is refused naming where the path
  stopped and what that object holds (`FieldMissing`), and a leaf that is no string is refused as a
  top-level field that is no string is.
Trade-off: a literal dot in a nested key (`meta` -> `a.b`) cannot be named; hub schemas seen so far do not
have one, and a flat key with a dot keeps working.
"""

from __future__ import annotations

from typing import Any


class FieldMissing(Exception):
    """The dotted path stopped at `at` ("" for the record itself), whose value `found` lacks the next segment
    (a dict) or is no object at all."""

    def __init__(self, at: str, found: Any, type_name: str | None = None):
        super().__init__(at)
        self.at, self.found = at, found
        self.type_name = type_name or type(found).__name__
        """What the value where the path stopped is, where it is no object (an arrow type: its name)."""

    def strings(self) -> list[str]:
        """The full paths of that object's string values, longest value first (the likeliest text)."""
        if not isinstance(self.found, dict):
            return []
        keys = sorted(
            (k for k, v in self.found.items() if isinstance(v, str)), key=lambda k: -len(self.found[k])
        )
        return [f"{self.at}.{k}" if self.at else k for k in keys]

    def why(self, kind: str = "field") -> str:
        """What the refusal says in brackets: the fields of the object where the path stopped, or what it is."""
        if not isinstance(self.found, dict):
            return f"{self.at} is {self.type_name}, not an object"
        return f"{kind}s{f' of {self.at}' if self.at else ''}: {', '.join(self.found)}"


def lookup(record: dict, key: str) -> Any:
    """The value `key` names in `record` (module docstring); None where an object on the way is null.
    Raises `FieldMissing` where the path stops."""
    if key in record:
        return record[key]
    if "." not in key:
        raise FieldMissing("", record)
    value: Any = record
    walked: list[str] = []
    for segment in key.split("."):
        if value is None:
            return None
        if not isinstance(value, dict) or segment not in value:
            raise FieldMissing(".".join(walked), value)
        value = value[segment]
        walked.append(segment)
    return value


def struct_path(schema, key: str) -> tuple[list[str], Any]:
    """([column, field, ...], the leaf's arrow type) that `key` names in the arrow `schema`: the column itself
    when there is one of that name, else the dotted path through struct columns. Raises `FieldMissing`
    (`found`: the names the struct where the path stopped holds, or its type) where the path stops."""
    import pyarrow as pa

    if key in schema.names or "." not in key:
        if key not in schema.names:
            raise FieldMissing("", dict.fromkeys(schema.names))
        return [key], schema.types[schema.names.index(key)]  # the first of two of one name (refused later)
    segments = key.split(".")
    kind, names = None, dict.fromkeys(schema.names)
    for i, segment in enumerate(segments):
        if i and not pa.types.is_struct(kind):
            raise FieldMissing(".".join(segments[:i]), None, str(kind))
        if segment not in names:
            raise FieldMissing(".".join(segments[:i]), names)
        kind = schema.types[schema.names.index(segment)] if i == 0 else kind.field(segment).type
        names = dict.fromkeys(kind.names if pa.types.is_struct(kind) else [])
    return segments, kind


def struct_values(column, fields: list[str]):
    """The leaf array `fields` name inside the arrow struct array `column`; a null struct gives a null."""
    import pyarrow.compute as pc

    for field in fields:
        column = pc.struct_field(column, field)
    return column
