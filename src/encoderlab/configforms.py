"""The form a config value of the wrong type is to be given in: the fix a `WrongType` line ends with.

Design: one table of what each scalar is written as (`SCALAR_FORMS`) and one line per container mismatch
(`not_a_list`, `not_a_mapping`, `one_value`), so every strict load (`config.coerce`, a study file's sections,
a damaged record read back, whose callers keep the problem apart from the fix: `errors.problem_of`) names the
same forms. A list or mapping says which it is ("got the list [3]"): YAML reads an unquoted [ ] or { } as
one, which is how most of these values are written by mistake. Trade-off: the forms are YAML's (the config
files' and the CLI's `--set`/`--param` values are read as YAML), so a fix shows [a, b] and {name: value}
rather than each caller's own syntax. The one exception is the quotes that make a value text (`NotText`):
the shell strips YAML's, so for a value typed on a command line the fix is the shell's form.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import yaml

from encoderlab.errors import WrongType, shown
from encoderlab.paths import typed
from encoderlab.yamltext import as_written

SCALAR_FORMS = {
    float: "a number such as 3e-4",
    int: "a whole number such as 1000",
    bool: "true or false",
    str: "it as text",
}
"""What a value of each scalar type is written as: the fix a wrong one's line ends with ("expected float,
got 'abc'" named none)."""


def scalar_fix(value: Any, tp: type) -> str:
    """The fix of a value that is not a `tp`: its form (`SCALAR_FORMS`), or, for text that is one written in
    quotes (`progress: "true"`, `lr: "1e-4"`), the quotes to drop: "give true or false" read as nonsense."""
    if isinstance(value, str) and tp is not str:
        try:
            # not inf or nan: unquoted, YAML reads those as text too (`.inf` is its number)
            reads = value.strip().lower() in ("true", "false") if tp is bool else math.isfinite(tp(value))
        except ValueError:
            reads = False
        if reads:
            return f"write {value.strip()} without quotes (quoted, it is text)"
    return f"give {SCALAR_FORMS[tp]}"


def one_value(value: list | dict, tp: type, where: str) -> WrongType:
    """A scalar field of type `tp` given a list or mapping: a one-item list of such a value with the brackets
    to drop (`seed: [3]`), anything else with the one value's form ("give a whole number" missed why)."""
    got = f"{where}: expected {tp.__name__}, got {described(value)}"
    if isinstance(value, list) and len(value) == 1 and _is_a(value[0], tp):
        return WrongType(got, f"write {flow(value[0])} without the brackets (one value, not a list)")
    kind = "list" if isinstance(value, list) else "mapping"
    return WrongType(got, f"give one value, {SCALAR_FORMS[tp]}, not a {kind}")


def _is_a(value: Any, tp: type) -> bool:
    """Whether `value` is one `tp` as `config.coerce` takes it (an int for a float; a bool for neither)."""
    if isinstance(value, bool):
        return tp is bool
    return isinstance(value, (int, float)) if tp is float else isinstance(value, tp)


def not_a_list(value: Any, where: str, fits: bool = False) -> WrongType:
    """A list field given anything else (`sinks: tensorboard`), with the form of a list and, where the value
    `fits` as the list's one item, that value in brackets: "expected a list, got 5" named no fix."""
    one = f"[{flow(value)}] for this one value, " if fits else ""
    return WrongType(
        f"{where}: expected a list, got {described(value)}",
        f"give a list: {one}[a, b] on one line or one '- ' line per item",
    )


def not_a_mapping(value: Any, where: str, section: str = "", fields: Iterable[str] = ()) -> WrongType:
    """A mapping field (a plain dict, or the dataclass named `section`, whose `fields` it lists) given anything
    else, with the form of a mapping: "expected a mapping, got ['pooling']" named no fix."""
    what = f"a mapping of {section} fields" if section else "a mapping"
    listed = f" (fields: {', '.join(sorted(fields))})" if section else ""
    return WrongType(
        f"{where}: expected {what}, got {described(value)}",
        f"give one 'name: value' line per entry below it, or {{name: value}} on one line{listed}",
    )


def described(value: Any) -> str:
    """`value` as a wrong-type line names it: a list or mapping says which it is (YAML reads an unquoted
    [ ] or { } as one), cut as `errors.shown` cuts."""
    if isinstance(value, list):
        return f"the list {shown(value)}"
    return f"the mapping {shown(value)}" if isinstance(value, dict) else shown(value)


def flow(value: Any) -> str:
    """`value` written as YAML writes it on one line: a number as written (`as_written`), true/false, text
    quoted only where YAML would read it otherwise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return as_written(value)
    return yaml.safe_dump(value, default_flow_style=True, width=10**6).removesuffix("...\n").strip()


def untagged(value: Any, tags: list[str], where: str) -> WrongType:
    """A field of classes told apart by a `type` key (an objective) given a bare value (`objective: clm`). It
    was refused as the union's first member ("expected a mapping of MLM fields, got 'clm'"), naming MLM for a
    CLM phase and not the `type` key; the fix names the type the value spells, if it spells one."""
    said = value.strip().lower() if isinstance(value, str) else None
    example = f"{{type: {said}}}" if said in tags else " or ".join(f"{{type: {t}}}" for t in tags)
    return WrongType(
        f"{where}: expected a mapping with a `type` ({', '.join(tags)}), got {described(value)}",
        f"write it as {example} (any other field of it beside `type`)",
    )


class NotText(WrongType):
    """A text field given a value YAML read as another type (`freeze: 7`, `mask_token: [MASK]`, `name: yes`),
    with the quotes that make it text. Where the value came from picks their form, in this one place: in a
    YAML file YAML's own (`"7"`); on a command line (`--param`, `--set`) the shell strips those
    (`freeze="7"` reaches us as 7, refused again), so they go inside the shell's: `freeze='"7"'`
    (`on_command_line`, called by `config.command_line_values`, which knows the value was typed).

    `quoted` is the value in YAML's quotes, None where its spelling is lost (a boolean: `on` and `yes` both
    read as True); `where` is the field, as `config.coerce` names it."""

    def __init__(
        self, where: str, got: str, quoted: str | None, typed: tuple[str, str] | None = None, fix: str = ""
    ):
        self.where, self.got, self.quoted = where, got, quoted
        super().__init__(f"{where}: expected str, got {got}", fix or text_fix(quoted, typed))

    def on_command_line(self, key: str, raw: str) -> NotText:
        """This refusal for the value `raw` typed as `key=raw` on a command line: the shell's form of the fix."""
        return NotText(self.where, self.got, self.quoted, (key, raw.strip()))

    def in_typed_value(self, key: str, raw: str, path: list[str]) -> NotText:
        """This refusal for an item at `path` (keys and indices) inside the value `raw` typed as `key=raw`
        (`phases=[{..., freeze: 7}]`): the whole `key=value` to type, that item quoted in it. YAML's
        quotes alone (`quote it ("7")`) were the hint before, and a `'[a]'` inside the shell's single
        quotes ends them, so the shell passed `[a]` on and the same refusal came back. Where the item
        cannot be found in the text (JSON that YAML does not read), the YAML form stays."""
        return NotText(self.where, self.got, self.quoted, fix=item_fix(key, raw, path) or "")


def text_fix(quoted: str | None, typed: tuple[str, str] | None = None) -> str:
    """The fix of a text value YAML read as another type (`NotText`): YAML's quotes around it, or for one
    `typed` on a command line as (key, raw text), the whole `key=value` with those quotes inside the shell's
    (the other kind, so the shell keeps them)."""
    if typed is None:
        if quoted is None:  # its spelling is lost: the examples fit `on` and `true` as well as `yes`
            return 'quote it as written (e.g. "yes", "on") to give it as text'
        return f"quote it ({quoted}) to give it as text"
    key, raw = typed
    inner = "'" if quoted is not None and quoted.startswith("'") else '"'
    outer = '"' if inner == "'" else "'"
    return f"quote it inside the shell's quotes to give it as text: {key}={outer}{inner}{raw}{inner}{outer}"


@contextlib.contextmanager
def command_line_values(typed: Mapping[str, tuple[str, str]]) -> Iterator[None]:
    """Within it, a `NotText` about a value typed on a command line gets the shell's form of its fix.
    `typed` maps each such field, as `config.coerce` names it (`detour.freeze`, `phases.0.freeze`; an
    index may be written [0]), to (key, raw text) as typed. A value of any other field (a recipe's own, a
    config file's) keeps YAML's form. An item inside a typed list or mapping (`phases.0.freeze` of a typed
    `phases=[...]`) gets the whole typed value back with that item quoted (`NotText.in_typed_value`)."""
    try:
        yield
    except NotText as exc:
        where = re.sub(r"\[(\d+)\]", r".\1", exc.where)
        if (item := typed.get(where)) is not None:
            raise exc.on_command_line(*item) from None
        for field_name, (key, raw) in typed.items():
            if where.startswith(f"{field_name}."):
                raise exc.in_typed_value(key, raw, where[len(field_name) + 1 :].split(".")) from None
        raise


def _item_span(raw: str, path: list[str]) -> tuple[int, int] | None:
    """Where the item at `path` (mapping keys, list indices) is written in the YAML text `raw`: the span
    of its characters, from the composed nodes' marks; None where `raw` is no YAML or holds no such item."""
    try:
        node = yaml.compose(raw, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    for part in path:
        if isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            node = node.value[int(part)]
        elif isinstance(node, yaml.MappingNode):
            found = [v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part]
            if not found:
                return None
            node = found[-1]  # as PyYAML keeps the last of a repeated key
        else:
            return None
    return node.start_mark.index, node.end_mark.index


def item_fix(key: str, raw: str, path: list[str]) -> str | None:
    """The fix of a text item at `path` inside a value typed as `key=raw`: the whole `key=value`, the item
    as written in YAML's quotes (its spelling kept: `yes` stays yes, not True), the value in the shell's
    quotes (`paths.typed`: single ones, a single quote inside written `'"'"'`), so that the shell passes
    on exactly the quoted value. None where the item is not found in the text."""
    span = _item_span(raw, path)
    if span is None:
        return None
    start, end = span
    written = raw[start:end]
    # YAML's double quotes read a backslash as an escape; its single quotes double a quote inside
    single = '"' in written or "\\" in written
    item = "'" + written.replace("'", "''") + "'" if single else f'"{written}"'
    value = (raw[:start] + item + raw[end:]).strip()
    return f"quote it inside the shell's quotes to give it as text: {key}={typed(value)}"
