"""A source's `text_field` as a dotted path into nested records: `#text_field=meta.text` (`id_field` stays a
top-level name: a record without it is named by its file and line or row, as before).

Hub datasets and the JSON lines exported from them nest their text in objects (`{"meta": {"text": ...}}`,
a parquet struct column `meta` with a string field `text`); such a field was refused as "has no field
'meta.text'", with nothing to name instead. The rule, one for JSON lines, parquet and hub records:
- a name the record (or the file's columns) holds as it is wins, so a key holding a dot (`{"a.b": ...}`)
  still reads as before; otherwise the name is split on dots and walked through nested objects (structs);
- a null object on the way is a null text, an empty document (dropped and counted), as a null cell is;
- a list on the way is entered by an index segment, `meta.0.text` (a JSON array, a parquet list or
  large_list, a hub `Sequence`): hub layouts keep text in lists (MLDR's `positive_passages` is a list of
  {docid, text}; SQuAD's `answers.text` a list of strings). A list too short for the index is a null
  text, an empty document (dropped and counted): SQuAD v2's unanswerable questions have empty lists;
- a segment that is not there, or a value on the way that is no object (a list met by a name), is refused
  naming where the path stopped and what that object holds (`FieldMissing`; for a list, the index path to
  the text in its element, `list_guess`: the field the path named, else `text`, else its string fields),
  and a leaf that is no string is refused as a top-level field that is no string is.
Trade-offs: a literal dot in a nested key (`meta` -> `a.b`) cannot be named; hub schemas seen so far do not
have one, and a flat key with a dot keeps working. One index reads one element per record: every element
as a document of its own (each passage of a list) is not offered; flatten the records first for that.
Was: a list on the way was refused as "meta is list, not an object", with no way to name the text in it.
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
        """The full paths of that object's string values, longest value first (the likeliest text); for a
        list, those of its first element that holds text (a string, or an object with one), through index 0
        (`meta.0.text`): a null or empty first element named nothing."""
        found, at = self.found, self.at
        if isinstance(found, list):
            texts = (e for e in found if isinstance(e, str) or (isinstance(e, dict) and _holds_str(e)))
            found, at = next(texts, None), f"{at}.0"
            if isinstance(found, str):
                return [at]
        if not isinstance(found, dict):
            return []
        keys = sorted((k for k, v in found.items() if isinstance(v, str)), key=lambda k: -len(found[k]))
        return [f"{at}.{k}" if at else k for k in keys]

    def why(self, kind: str = "field") -> str:
        """What the refusal says in brackets: the fields of the object where the path stopped, or what it is
        (a list: that it is entered by index)."""
        if isinstance(self.found, list) or is_list_name(self.type_name):
            return f"{self.at} is a list, entered by index: {self.at}.0 is its first element"
        if not isinstance(self.found, dict):
            return f"{self.at} is {self.type_name}, not an object"
        return f"{kind}s{f' of {self.at}' if self.at else ''}: {', '.join(self.found)}"


def _holds_str(record: dict) -> bool:
    return any(isinstance(v, str) for v in record.values())


def list_guess(at: str, key: str, strings: list[str]) -> tuple[list[str], str]:
    """Where the text field path `key` met the list `at` (`key` names it, or goes on past it): the paths a
    fix suggests, of `strings` (the string paths there are, those through `at.0` among them), and words
    for the refusal that list the element's string fields where none is clearly the text ("" otherwise).
    Clearly the text: the path the user wrote, entered by index (`passages.text` -> `passages.0.text`), then
    a field named `text`, then the element itself (a list of strings), then its only string field; else the
    suggestion is `at.0.FIELD`. Was: the first string field in file order (parquet) or the longest value of
    the first element (JSON lines), an id as often as the text."""
    element = f"{at}.0"
    inside = [s for s in strings if s == element or s.startswith(element + ".")]
    rest = key[len(at) + 1 :] if key.startswith(at + ".") else ""
    for wanted in (f"{element}.{rest}" if rest else None, f"{element}.text", element):
        if wanted in inside:
            return [wanted], ""
    if len(inside) < 2:
        return inside or strings, ""
    return [
        f"{element}.FIELD"
    ], f"; string fields of {element}: {', '.join(s[len(element) + 1 :] for s in inside)}"


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
        if isinstance(value, list) and is_index(segment):  # too short a list: no such element, a null
            value = value[int(segment)] if int(segment) < len(value) else None
        elif not isinstance(value, dict) or segment not in value:
            raise FieldMissing(".".join(walked), value)
        else:
            value = value[segment]
        walked.append(segment)
    return value


def struct_path(schema, key: str) -> tuple[list[str], Any]:
    """([column, field, ...], the leaf's arrow type) that `key` names in the arrow `schema`: the column itself
    when there is one of that name, else the dotted path through struct columns and, by index, lists.
    Raises `FieldMissing` (`found`: the names the struct where the path stopped holds, or its type) where
    the path stops."""
    import pyarrow as pa

    if key in schema.names or "." not in key:
        if key not in schema.names:
            raise FieldMissing("", dict.fromkeys(schema.names))
        return [key], schema.types[schema.names.index(key)]  # the first of two of one name (refused later)
    segments = key.split(".")
    kind, names = None, dict.fromkeys(schema.names)
    for i, segment in enumerate(segments):
        if i and is_list(kind) and is_index(segment):
            kind = kind.value_type
        elif i and not pa.types.is_struct(kind):
            raise FieldMissing(".".join(segments[:i]), None, str(kind))
        elif segment not in names:
            raise FieldMissing(".".join(segments[:i]), names)
        else:
            kind = schema.types[schema.names.index(segment)] if i == 0 else kind.field(segment).type
        names = dict.fromkeys(kind.names if pa.types.is_struct(kind) else [])
    return segments, kind


def is_index(segment: str) -> bool:
    """Whether a path segment is a list index: ASCII digits. Was `str.isdigit`, true of `²` too, which
    `int` then refused: a ValueError traceback for `meta.²` where a list stood (now "a list met by a name")."""
    return segment.isascii() and segment.isdigit()


def is_list_name(type_name: str) -> bool:
    """Whether an arrow type's name (`FieldMissing.type_name`) is a list's an index segment enters."""
    return type_name.startswith(("list<", "large_list<"))


def is_list(kind) -> bool:
    """Whether the arrow type `kind` is a list an index segment enters (list, large_list)."""
    import pyarrow as pa

    return pa.types.is_list(kind) or pa.types.is_large_list(kind)


def inner_fields(kind) -> list | None:
    """The arrow fields a dotted path enters below a value of type `kind`: a struct's fields, a list's
    element as the field `0` (its first element); None for a leaf."""
    import pyarrow as pa

    if pa.types.is_struct(kind):
        return list(kind)
    return [kind.value_field.with_name("0")] if is_list(kind) else None


def struct_values(column, fields: list[str]):
    """The leaf array `fields` name inside the arrow struct (or list) array `column`; a null struct or list,
    or a list too short for the index, gives a null."""
    import pyarrow.compute as pc

    for field in fields:
        if is_list(column.type):  # a fixed one-slot slice pads a short list with a null: list_element raises
            n = int(field)
            column = pc.list_element(pc.list_slice(column, n, n + 1, return_fixed_size_list=True), 0)
        else:
            column = pc.struct_field(column, field)
    return column
