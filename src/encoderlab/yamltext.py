"""Reading YAML (and JSON) text safely and strictly, into plain data for `config.from_dict`.

The loader is PyYAML's safe loader (no tag builds an object), made strict where PyYAML is silent:
a key given twice is refused (PyYAML keeps the last), and so is a file whose aliases expand past
`MAX_EXPANDED_VALUES` (a "billion laughs" file). Numbers follow YAML 1.2 where 1.1 reads text
(`1e-3`), as the command line and JSON read them.

A number read from text remembers how it was written (`Numeral`), so a refusal of a number where a
name is expected can tell the user to quote what they wrote (`"1e5"`), not Python's spelling of it
(`"100000.0"`, another name). Trade-off: `Numeral` is a float subclass; `config.coerce` turns it
into a plain float (`plain`) for every field, and elsewhere it compares, hashes and serialises (JSON,
the safe YAML dumper) as the float it is.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml


class _Written:
    """A number that keeps the text it was written as (`written`), for the messages that quote it back."""

    written: str

    def __new__(cls, value, written: str):
        out = super().__new__(cls, value)
        out.written = written
        return out

    def __getnewargs__(self) -> tuple:
        """What copy and deepcopy call `__new__` with; `.real` is the plain number."""
        return self.real, self.written


class Numeral(_Written, float):
    """A float as the user wrote it (`written`): `1e5` is 100000.0 with `written` '1e5'."""


class WrittenInt(_Written, int):
    """An int written otherwise than Python writes it (`written`): YAML 1.1 reads `010` as 8 (octal),
    `0x1f` as 31, `1:30` as 90 (base 60), `1_000` as 1000. Only such spellings get one: a plain `12` stays
    an int. Without it, `labels: [01, 010]` was refused with `quote it ("8")`, another name."""


def as_written(value: Any) -> str:
    """The text `value` was written as: a `Numeral`'s or `WrittenInt`'s own text, else Python's."""
    return value.written if isinstance(value, _Written) else str(value)


def plain(value: Any) -> Any:
    """`value` with every `Numeral` in it a plain float and every `WrittenInt` a plain int (for a config
    field of any type)."""
    if isinstance(value, Numeral):
        return float(value)
    if isinstance(value, WrittenInt):
        return int(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


# A Numeral that reaches a YAML dump anyway (data read but not coerced) is written as the float it is;
# PyYAML's safe dumper matches exact types, and refused it ("cannot represent an object").
yaml.SafeDumper.add_representer(Numeral, yaml.SafeDumper.represent_float)
yaml.SafeDumper.add_representer(WrittenInt, yaml.SafeDumper.represent_int)


class StrictYAMLError(yaml.YAMLError):
    """YAML that parses but that we refuse to read; the message names the problem and its fix."""


class DuplicateKey(StrictYAMLError):
    """A mapping of a YAML file names one key twice."""


# Aliases share one node, so a 1 KB file of nested `*name`s is a billion values once anything walks
# it (a "billion laughs" file): `eval --task-file` held 4.8 GB after a minute. Real configs use an
# anchor for a repeated value or block, far below this many values in all.
MAX_EXPANDED_VALUES = 100_000


def _children(node: yaml.Node) -> list[yaml.Node]:
    """A node's keys and values (mapping), items (sequence) or nothing (scalar)."""
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _expanded_size(root: yaml.Node) -> int:
    """How many values `root` holds with every alias written out; iterative, memoised by node."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, closing = stack.pop()
        kids = _children(node)
        if closing:
            open_.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(k)] for k in kids)
            continue
        if id(node) in sizes:
            continue
        open_.add(id(node))
        stack.append((node, True))
        for kid in kids:
            if id(kid) in open_:
                raise StrictYAMLError(
                    f"the anchor on line {kid.start_mark.line + 1} holds an alias to itself; write the value out"
                )
            stack.append((kid, False))
    return sizes[id(root)]


class _UniqueKeyLoader(yaml.SafeLoader):
    """The safe loader (plain data, no tags that build objects) that refuses a repeated key and
    aliases that write out into more than `MAX_EXPANDED_VALUES` values."""

    def compose_document(self) -> yaml.Node:
        node = super().compose_document()
        if node is not None and _expanded_size(node) > MAX_EXPANDED_VALUES:
            raise StrictYAMLError(
                f"its aliases (*name) expand it to over {MAX_EXPANDED_VALUES:,} values; "
                "write the values out, or use fewer aliases"
            )
        return node


def _unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue  # `<<: *base` may be overridden key by key, as YAML means it
        key, line = loader.construct_object(key_node), key_node.start_mark.line + 1
        if key in seen:
            # a flow mapping (`{name: a, name: b}`) on one line read "(lines 12 and 12)"
            where = f"on line {line}" if seen[key] == line else f"(lines {seen[key]} and {line})"
            raise DuplicateKey(f"key {key!r} is given twice {where}; keep one")
        seen[key] = line
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)
# YAML 1.2's numbers that YAML 1.1 (PyYAML) reads as text: an exponent without a dot or its sign
# (`lr: 1e-3`, `1.0e5`). A file was refused ("expected float, got '1e-3'") where the same value on the
# command line (`--param lr=1e-3`, `parse_scalar`) was read as the number, and JSON reads it so too.
_UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def _numeral(loader: _UniqueKeyLoader, node: yaml.ScalarNode) -> Numeral:
    return Numeral(loader.construct_yaml_float(node), node.value)


_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:float", _numeral)


def _int(loader: _UniqueKeyLoader, node: yaml.ScalarNode) -> int:
    value = loader.construct_yaml_int(node)
    return value if node.value == str(value) else WrittenInt(value, node.value)


_UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", _int)


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object's pairs as a dict, refusing a repeated key as `_unique_mapping` does."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(f"key {key!r} is given twice; keep one")
        out[key] = value
    return out


def read_yaml(text: str) -> Any:
    """YAML text as plain data, read safely and strictly (`DuplicateKey` for a repeated key).

    JSON is read too. PyYAML reads YAML 1.1, of which JSON is not quite a subset: a tab-indented JSON
    file (`json.dump(indent="\t")`, Go's MarshalIndent) or an escaped slash fails it, and "not valid
    YAML; fix the syntax" of a valid JSON file had no fix. Such text is read as JSON instead."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)
    except StrictYAMLError:
        raise
    except RecursionError:  # PyYAML composes recursively: `[[[...` thousands deep
        raise StrictYAMLError("it nests lists or mappings thousands deep; flatten it") from None
    except yaml.YAMLError as exc:
        if not text.lstrip().startswith(("{", "[")):
            raise
        try:
            return json.loads(text, object_pairs_hook=_unique_pairs)
        except ValueError:  # not JSON either: the YAML error says where
            raise exc from None


def yaml_problem(exc: Exception) -> str:
    """Where a YAML file stops parsing and why: `at line 5, column 2: expected ... (while parsing a block
    mapping)`. PyYAML's first line names only the context, which says neither where nor what."""
    mark = getattr(exc, "problem_mark", None)
    if isinstance(exc, yaml.MarkedYAMLError) and mark is not None and exc.problem:
        context = f" ({exc.context})" if exc.context else ""
        return f"at line {mark.line + 1}, column {mark.column + 1}: {exc.problem}{context}"
    return f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
