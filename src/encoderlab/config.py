"""Typed configs: frozen dataclasses in, plain dicts and YAML out, and back again strictly.

Configs are frozen, keyword-only dataclasses with a docstring per field (tyro shows them in
`--help`). This module is the only place that turns them into dicts or YAML and back, so a
resolved config written to a run folder reloads to the identical object. Loading is strict: an
unknown field or a value of the wrong type is a `UserError` that lists the valid fields, never a
silent default; a key given twice in one mapping is refused too (PyYAML keeps the last one, silently). An experiment is a recipe plus dotted overrides (`optim.lr=1e-3`).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml

from encoderlab.atomic import write_text_atomic
from encoderlab.configforms import (
    NotText,
    command_line_values,
    not_a_list,
    not_a_mapping,
    one_value,
    scalar_fix,
    untagged,
)
from encoderlab.errors import UserError, WrongType, closest, not_utf8, save_as_utf8, shown
from encoderlab.paths import typed
from encoderlab.words import noun
from encoderlab.yamltext import (
    Numeral,
    StrictYAMLError,
    WrittenInt,
    as_written,
    plain,
    read_yaml,
    yaml_problem,
)

SEED_BOUND = 2**64
"""Seeds reach torch's generators, which take none at or above 2**64: an overflow traceback mid-run
(`pretrain --set seed=...`, `eval --seeds`), after the models had loaded."""

MAX_LR = 1.0
"""The largest peak learning rate `pretrain` (`optim.lr`) and `eval` (`--lrs`) take: AdamW moves every
weight by about the LR each step, so a larger one wrecks the model at its first update (and one near
float32's range, 1e38, was a RuntimeError traceback mid-run, after the run folder was made)."""

FLOAT32_MAX = 3.4028234663852886e38
"""float32's largest finite number: an optimizer constant past it (`optim.eps=1e300`) became inf on the
weights' dtype and silently stopped every update."""


def decay_flips_weights(lr: float, weight_decay: float) -> bool:
    """Whether decoupled weight decay at the peak LR, a step multiplying the weights by 1 - lr x
    weight_decay, turns them negative: past 1 they change sign every step and the loss is non-finite a
    step later. Refused by pretraining (`optim`) and fine-tuning (each task's decay over the LR grid)."""
    return lr * weight_decay > 1


T = TypeVar("T")

KEYED_WHEN_SET = {"keyed_when_set": True}
"""`dataclasses.field` metadata for a field added after study folders existed: `to_dict` leaves it out
while it holds its default, so the node keys that hash those dicts (and the configs runs wrote) stay
what they were, and `from_dict` fills the default back in. Set, it is written and keyed like any other."""
UNRECORDED = {"unrecorded": True}
"""`dataclasses.field` metadata for a field that says where a config was read from, not what it is (a
study file's folder): `to_dict` never writes it, so no key, record or export holds it, and neither a
file nor `from_dict` may set it (`recorded_fields`)."""


def recorded_fields(cls: type) -> dict[str, dataclasses.Field]:
    """The fields of `cls` that a file or `from_dict` sets, by name (not `init=False`, not `UNRECORDED`)."""
    return {f.name: f for f in dataclasses.fields(cls) if f.init and not f.metadata.get("unrecorded")}


@functools.cache
def type_hints(obj: Any) -> dict[str, Any]:
    """`typing.get_type_hints` of a class or function, resolved once per object (a study's graph reads
    tens of thousands of configs): read it, never change it."""
    return typing.get_type_hints(obj)


@functools.cache
def _written_fields(cls: type) -> tuple[tuple[str, bool, Any], ...]:
    """(name, keyed when set, default) of each field of dataclass `cls` that `to_dict` writes."""
    return tuple(
        (f.name, bool(f.metadata.get("keyed_when_set")), f.default)
        for f in dataclasses.fields(cls)
        if not f.metadata.get("unrecorded")
    )


_PLAIN = frozenset({str, int, float, bool, type(None)})
"""Types `to_dict` returns as they are, checked first (most values of a config are)."""


def to_dict(cfg: Any, complete: bool = False) -> Any:
    """A dataclass (nested, with lists and tuples) as plain Python data; union members are
    tagged with `type` so `from_dict` can rebuild them. `complete` keeps the `KEYED_WHEN_SET` fields
    that hold their default too (every field a dotted override may name)."""
    if type(cfg) in _PLAIN:
        return cfg
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        out = {}
        for name, keyed_when_set, default in _written_fields(type(cfg)):
            value = getattr(cfg, name)
            if complete or not (keyed_when_set and value == default):
                out[name] = value if type(value) in _PLAIN else to_dict(value, complete)
        tag = getattr(type(cfg), "type_tag", None)
        return {"type": tag, **out} if tag else out
    if isinstance(cfg, (list, tuple)):
        return [to_dict(v, complete) for v in cfg]
    if isinstance(cfg, dict):
        return {k: to_dict(v, complete) for k, v in cfg.items()}
    if isinstance(cfg, Path):
        return str(cfg)
    return cfg


def _union_members(tp: Any) -> tuple[Any, ...]:
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(tp)
    return (tp,)


def coerce(value: Any, tp: Any, where: str) -> Any:
    """Convert plain data (YAML/CLI values) to the type `tp`, or raise a UserError naming `where`."""
    if tp is Any:
        return plain(value)
    members = _union_members(tp)
    if len(members) > 1:
        if value is None and type(None) in members:
            return None
        tagged = [m for m in members if dataclasses.is_dataclass(m) and getattr(m, "type_tag", None)]
        if tagged:
            return _coerce_tagged(value, tagged, where)
        errors: list[UserError] = []
        for member in members:
            if member is type(None):
                continue
            try:
                return coerce(value, member, where)
            except UserError as exc:
                errors.append(exc)
        # the member's own error, not its text: a `WrongType` keeps its fix apart (`problem_of`), which a
        # damaged node.json's `float | None` count lost ("give a number ..." beside "delete ... and rerun")
        raise errors[0] if errors else UserError(f"{where}: cannot use {value!r}")
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise not_a_mapping(value, where, tp.__name__, recorded_fields(tp))
        return from_dict(tp, value, where)
    if origin in (list, tuple):
        args = typing.get_args(tp)
        item_tp = args[0] if args else Any
        if not isinstance(value, (list, tuple)):
            raise not_a_list(value, where, fits=_fits(value, item_tp, where))
        items = [coerce(v, item_tp, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is typing.Literal:
        if value not in typing.get_args(tp):
            # booleans as YAML and the CLI spell them
            choices = ", ".join(
                str(a).lower() if isinstance(a, bool) else repr(a) for a in typing.get_args(tp)
            )
            raise UserError(f"{where}: must be one of {choices}, got {value!r}")
        return value
    if dict in (origin, tp) and not isinstance(value, dict):  # `options: dict` as well as `dict[str, str]`
        raise not_a_mapping(value, where)
    return _coerce_scalar(value, tp, where)


def _coerce_tagged(value: Any, tagged: list[type], where: str) -> Any:
    """`coerce` for a union of classes told apart by a `type` key (an objective: `{type: clm}`)."""
    tags = {m.type_tag: m for m in tagged}
    if not isinstance(value, dict):  # `objective: clm` was told "expected a mapping of MLM fields"
        raise untagged(value, sorted(tags), where)
    if "type" not in value:  # said "'type' must be one of clm, mlm, got None", a value nobody wrote
        raise UserError(f"{where}: no `type` given; add `type: {'` or `type: '.join(sorted(tags))}` to it")
    tag = value["type"]
    if tag not in tags:
        raise UserError(f"{where}: 'type' must be one of {', '.join(sorted(tags))}, got {tag!r}")
    try:
        return from_dict(tags[tag], value, where)
    except UserError as exc:  # an objective's own check ("mlm mask_ratio must be ...") named no phase
        if str(exc).startswith(where):
            raise
        raise UserError(f"{where}: {exc}") from None


def _fits(value: Any, tp: Any, where: str) -> bool:
    """Whether `value` is a `tp` (`coerce` takes it): a list field's value that would do as its one item."""
    try:
        coerce(value, tp, where)
    except UserError:
        return False
    return not isinstance(value, (list, dict))


def _coerce_scalar(value: Any, tp: Any, where: str) -> Any:
    """`coerce` for int, float, str, bool and Path (any other type passes as is)."""
    if tp is float and isinstance(value, (int, Numeral)) and not isinstance(value, bool):
        return float(value)  # a plain float: a `Numeral`'s spelling is for messages only
    if tp is int and isinstance(value, WrittenInt):
        return int(value)  # a plain int: a `WrittenInt`'s spelling is for messages only
    if tp is int and isinstance(value, float) and value.is_integer():
        # `--param steps=1e5`: YAML 1.1 reads 1e5 as text, `parse_scalar` as 100000.0; refusing
        # ("expected int, got 100000.0") named no fix for a number that is exactly an integer
        return int(value)
    if tp is Path and isinstance(value, str):
        return Path(value)
    if tp is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        # YAML reads `labels: [0, 1]` as numbers; a name that is a number is written quoted
        # quoted as written: `1e5` quoted as Python spells it, "100000.0", would be another name
        written = as_written(value)
        raise NotText(where, written, f'"{written}"')
    if tp is str and isinstance(value, (list, dict)):
        # `--param mask_token=[MASK]`: YAML reads [MASK] unquoted as a list; the line named no fix
        written = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
        kind = "list" if isinstance(value, list) else "mapping"
        raise NotText(
            where, f"the {kind} {written} (YAML reads [ ] or {{ }} unquoted as one)", f"'{written}'"
        )
    if tp is str and isinstance(value, bool):  # YAML 1.1's booleans: `labels: [yes, no]` is [True, False]
        # the spelling is lost (a bool cannot carry it, as a `Numeral` does): the fix names no one word
        raise NotText(
            where, f"{value!r} (YAML reads an unquoted yes/no, on/off or true/false as a boolean)", None
        )
    if tp is str and isinstance(value, datetime.date):  # `name: 2024-01-01` is a date to YAML
        raise NotText(where, f"the date {value}", f'"{value}"')
    if value is None and tp in (int, float, str, bool):  # "got None" named Python's value, and no fix
        raise UserError(
            f"{where}: expected {tp.__name__}, got null (nothing after the colon, `~` or `null`); give it a value"
        )
    if tp in (int, float, str, bool) and isinstance(value, (list, dict)):  # "give a number" of [3] missed why
        raise one_value(value, tp, where)
    if tp in (int, float, str, bool) and not (
        isinstance(value, tp) and not (tp is int and isinstance(value, bool))
    ):
        raise WrongType(f"{where}: expected {tp.__name__}, got {value!r}", scalar_fix(value, tp))
    return value


def missing_fields(fields: Mapping[str, dataclasses.Field], data: Mapping[str, Any]) -> list[str]:
    """The fields without a default that `data` does not set, in declaration order."""
    return [
        name
        for name, f in fields.items()
        if name not in data and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]


def field_path(where: str, name: str) -> str:
    """Where field `name` of the mapping at `where` is: `run.seed` below another field, but `t.yaml: seed`
    right below a file (or a quoted source), where a dot would read as part of the file's name."""
    if not where:
        return name
    return (
        f"{where}: {name}" if where.endswith((".yaml", ".yml", ".json", ".jsonl", "'")) else f"{where}.{name}"
    )


def unknown_fields(where: str, data: dict, fields) -> str | None:
    """The line naming the keys of `data` that are not `fields`, each with the field it is close to
    (`lables (labels?)`), and the valid ones; None when every key is a field."""
    unknown = sorted(set(data) - set(fields), key=str)
    if not unknown:
        return None
    named = [f"{k} ({near}?)" if (near := closest(k, fields)) else str(k) for k in unknown]
    return (
        f"{where}: unknown {noun(len(named), 'field')} {', '.join(named)}; valid: {', '.join(sorted(fields))}"
    )


def from_dict(cls: type[T], data: dict[str, Any], where: str = "") -> T:
    """Build `cls` from plain data; unknown fields and wrong types are UserErrors."""
    data = _without_own_tag(cls, data, where)
    hints = type_hints(cls)
    fields = recorded_fields(cls)
    if line := unknown_fields(where or cls.__name__, data, fields):
        raise UserError(line)
    # Named here: the constructor's own TypeError reads "__init__() missing 1 required keyword-only ..."
    missing = missing_fields(fields, data)
    if missing:
        raise UserError(
            f"{where or cls.__name__}: missing {noun(len(missing), 'field')} {', '.join(missing)}"
        )
    kwargs = {k: coerce(v, hints[k], field_path(where, k)) for k, v in data.items()}
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:  # __post_init__ validation
        raise UserError(f"{where or cls.__name__}: {exc}") from None


def _without_own_tag(cls: type, data: dict[str, Any], where: str) -> dict[str, Any]:
    """`data` less the `type` that `to_dict` writes for a class with a `type_tag`. Only such a class:
    elsewhere `type` is no field and is named as unknown like any other (it was dropped from every
    mapping, so `schedule: {type: cosine}` ran the default constant schedule without a word)."""
    tag = getattr(cls, "type_tag", None)
    if tag is None or "type" not in data:
        return data
    if data["type"] != tag:
        raise UserError(f"{where or cls.__name__}: 'type' must be {tag!r} here, got {data['type']!r}")
    return {k: v for k, v in data.items() if k != "type"}


def parse_scalar(text: str, where: str = "value") -> Any:
    """A command-line value as YAML would read it (numbers, booleans, lists, null); nothing after the
    `=` is the empty text, not YAML's null (`--param data=$DATA` with DATA unset was "expected str, got
    None", a value nobody wrote; `null` still gives None)."""
    if not text.strip():
        return ""
    try:
        value = read_yaml(text)
    except StrictYAMLError as exc:
        raise UserError(f"{where} = {shown(text)}: {exc}") from None
    except yaml.YAMLError:
        return text
    if isinstance(value, datetime.date):  # no field is a date: `--set out=2024-01-01` means the text
        return text.strip()
    # YAML 1.1 reads "1e-3" (no dot) as a string; a value quoted on the command line (`freeze='"7"'`,
    # as a refusal's `quote it ("7")` says) is text as written, never made a number again
    if isinstance(value, str) and value == text.strip():
        try:
            return Numeral(float(value), value)
        except ValueError:
            pass
    return value


def apply_overrides(cfg: T, overrides: list[str] | tuple[str, ...]) -> T:
    """Return `cfg` with each `dotted.path=value` applied, type-checked like a loaded config."""
    values, typed = {}, {}
    for item in overrides:
        if "=" not in item:
            raise UserError(f"override '{item}' must look like field.path=value")
        path, raw = item.split("=", 1)
        values[path] = parse_scalar(raw, f"override '{path}'")
        typed[path] = (path, raw)
    with command_line_values(typed):
        return with_values(cfg, values)


def with_values(cfg: T, values: Mapping[str, Any]) -> T:
    """`cfg` with the field at each dotted path (`optim.lr`, `phases.0.steps`) set to a typed value.

    The values are set all at once and the result is checked like a loaded config, so several fields
    that must agree (phase lengths and total_steps) can change together."""
    data = to_dict(cfg, complete=True)
    for path, value in values.items():
        node = data
        keys = path.split(".")
        for i, key in enumerate(keys[:-1]):
            node = _descend(node, key, path)
            if not isinstance(node, (dict, list)):  # `layout.seq_len.x=1`: was a TypeError traceback
                parent = ".".join(keys[: i + 1])
                raise UserError(
                    f"override '{path}': {parent} is a value ({node!r}), not a section with fields; "
                    f"set it as {parent}=VALUE"
                )
        last = keys[-1]
        if isinstance(node, dict) and last not in node:
            raise UserError(f"override '{path}': no field '{last}'; valid: {', '.join(sorted(node))}")
        if isinstance(node, list):
            node[_index(node, last, path)] = to_dict(value)
        else:
            node[last] = to_dict(value)
    return from_dict(type(cfg), data)


def check_values(cls: type, values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Check dotted paths of `cls` and their values by type alone (no instance needed); returns the
    values coerced to the fields' types. A path through a tuple takes an index (`phases.0.steps`), one
    through a union of config classes (an objective) a field of any member."""
    out = {}
    for path, value in values.items():
        tp: Any = cls
        for key in path.split("."):
            tp = _field_type(tp, key, f"{where}: override '{path}'")
        out[path] = coerce(value, tp, f"{where}: override '{path}'")
    return out


def _field_type(tp: Any, key: str, where: str) -> Any:
    if typing.get_origin(tp) in (tuple, list):
        if not key.isdigit():
            raise UserError(f"{where}: '{key}' is not an index")
        return typing.get_args(tp)[0]
    members = [m for m in _union_members(tp) if dataclasses.is_dataclass(m)]
    for member in members:
        hints = type_hints(member)
        if key in {f.name for f in dataclasses.fields(member)}:
            return hints[key]
    valid = sorted({f.name for m in members for f in dataclasses.fields(m)})
    raise UserError(f"{where}: no field '{key}'; valid: {', '.join(valid) or 'none'}")


def _index(node: list, key: str, path: str) -> int:
    if not key.isdigit() or int(key) >= len(node):
        raise UserError(f"override '{path}': '{key}' is not an index below {len(node)}")
    return int(key)


def _descend(node: Any, key: str, path: str) -> Any:
    if isinstance(node, list):
        return node[_index(node, key, path)]
    if not isinstance(node, dict) or key not in node:
        valid = ", ".join(sorted(node)) if isinstance(node, dict) else "none"
        raise UserError(f"override '{path}': no field '{key}'; valid: {valid}")
    return node[key]


def save_yaml(cfg: Any, path: Path) -> None:
    """Write a resolved config as YAML (atomically: temporary name, then rename)."""
    write_text_atomic(path, yaml.safe_dump(to_dict(cfg), sort_keys=False))


def near_yaml(path: Path) -> str | None:
    """The YAML file beside a missing `path` whose name is near (`my-studdy.yaml` -> `my-study.yaml`), as
    the user would write it (bare when `path` is); None when there is none. Hidden names are not theirs.
    Names are compared without their suffix (`study.yml` -> `study.yaml` still): with it, the shared
    `.yaml` alone made a short name near any other (`a.yaml` -> "did you mean b.yaml?")."""
    folder = path.parent
    if not folder.is_dir():
        return None
    found = {
        p.stem: p.name
        for p in sorted(folder.iterdir())
        if p.suffix.lower() in (".yaml", ".yml") and p.is_file() and not p.name.startswith(".")
    }
    stem = path.stem if path.suffix.lower() in (".yaml", ".yml") else path.name
    near = found.get(closest(stem, found) or "")
    return None if near is None else near if str(folder) == "." else str(folder / near)


def missing_yaml_fix(path: Path) -> str:
    """The fix for a YAML file that is not there (the line named none): the near one beside it
    (`near_yaml`), else where a relative path was looked for."""
    if (near := near_yaml(path)) is not None:
        return f"did you mean {near}?"
    where = (
        "" if path.is_absolute() else f" (a relative path is read from the working directory, {Path.cwd()})"
    )
    return f"check the path{where}"


def read_mapping(path: Path, what: str = "config file") -> dict:
    """A YAML file holding a mapping; missing, malformed or another shape is one clear UserError."""
    try:
        data = read_yaml(Path(path).read_text(encoding="utf-8"))
    except StrictYAMLError as exc:
        raise UserError(f"{what} {path}: {exc}") from None
    except FileNotFoundError:
        raise UserError(f"{what} {path} does not exist; {missing_yaml_fix(Path(path))}") from None
    except IsADirectoryError:
        raise UserError(f"{what} {path} is a folder; pass the YAML file") from None
    except UnicodeDecodeError as exc:
        # was "is not valid YAML (...codec...); fix the syntax": no syntax to fix
        said, utf16 = not_utf8(exc)
        raise UserError(f"{what} {path} {said}; {save_as_utf8(path, utf16)}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{what} {path} is not valid YAML {yaml_problem(exc)}; fix the syntax") from None
    if data is None:  # "got NoneType" named Python's type and no fix
        raise UserError(f"{what} {path} is empty; write its fields in it, one `name: value` per line")
    if not isinstance(data, dict):
        shape = "a list" if isinstance(data, list) else shown(data)  # a text file: its whole text, cut
        raise UserError(
            f"{what} {path} holds {shape}, not a mapping of fields; write its fields as `name: value` lines"
        )
    _refuse_other_kind(data, path, what)
    return data


FILE_KINDS = {
    "task file": (
        "family",
        "pass it with `encoderlab eval MODEL --task-file {path}`, or list it in a study's "
        "`eval: {{task_files: [...]}}`",
    ),
    "study file": ("runs", "run it with `encoderlab study run {path} --out DIR`"),
}
"""YAML file kinds -> (the top-level key every file of the kind has and none of another, how one is used)."""


def _refuse_other_kind(data: dict, path: Path, what: str) -> None:
    """A task file given as a study file, or the converse, is named as such by its top-level keys: its
    fields were listed as unknown ones ("unknown fields columns, family, ..."), which was not the mistake."""
    if what not in FILE_KINDS:
        return
    own = FILE_KINDS[what][0]
    for kind, (key, use) in FILE_KINDS.items():
        if kind != what and key in data and own not in data:
            raise UserError(
                f"{what} {path} is a {kind} (it has `{key}:`, not `{own}:`); {use.format(path=typed(path))}"
            )


def load_yaml(cls: type[T], path: Path) -> T:
    """Read a config file strictly; malformed YAML or a wrong field is one clear UserError."""
    data = read_mapping(path)
    return from_dict(cls, data, where=str(Path(path).name))
