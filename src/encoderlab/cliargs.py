"""Command-line argument types shared by the commands.

`Repeated`: a list flag that accepts both `--source a b` and `--source a --source b` (and any mix),
keeping every value. tyro's plain `tuple[str, ...]` keeps only the last occurrence of a repeated
flag, silently; its append action alone refuses `--source a b`. Appending lists of values and
flattening them (`flatten`) gives both forms. Every other flag given twice is refused
(`refuse_repeated_flags`, called by the dispatcher for every command), so no value is ever dropped.

`path_registry`: every `Path` argument (`--out`, `--config`, `--eval`, `--hub-data`...) reads a leading
`~` as the home folder. A shell expands `~` only at the start of a word, so `--out=~/hf` (and a quoted
`'~/hf'`) reached the command as it was and made a folder named `~` in the working folder, while model,
tokenizer and data sources and a config's `out` already expanded it. One tyro rule for every command,
not an `expanduser` per command that the next `Path` flag would miss.

`path_registry` also shows an optional flag (`X | None = None`) as X: tyro's own help read
`--scale {None}|STR ... (default: None)` next to text saying "default demo". None there means "see
the text", so the flag's metavar is X's (`--scale STR`, `--lrs [FLOAT [FLOAT ...]]`) and the
"(default: None)" hint is dropped; real defaults ("(default: 1)") still show. One struct rule for every
command (`_none_means_see_the_text`), not an annotation per flag that the next flag would miss. It
changes the help alone: the parser (and its "None" choice and error messages) is tyro's, unchanged.
"""

from __future__ import annotations

from typing import Annotated

import tyro

Repeated = Annotated[tuple[tuple[str, ...], ...], tyro.conf.UseAppendAction]
"""A flag that may be given several times, each time with one or more values."""

RequiredRepeated = Annotated[Repeated, tyro.conf.arg(help_behavior_hint="(required; repeatable)")]
"""A `Repeated` flag without a default: tyro's append action never marks a flag required, so `--help`
said only "(repeatable)" of `data prepare --source`, which the command refuses to run without."""


def path_registry():
    """A tyro registry whose `Path` arguments expand a leading `~` and whose optional flags show as
    their type (see the module docstring)."""
    from pathlib import Path

    from tyro.constructors import ConstructorRegistry, PrimitiveConstructorSpec

    registry = ConstructorRegistry()
    registry.struct_rule(_none_means_see_the_text())

    @registry.primitive_rule
    def _home_paths(type_info) -> PrimitiveConstructorSpec | None:
        if type_info.type is not Path:
            return None
        return PrimitiveConstructorSpec(
            nargs=1,
            metavar="PATH",  # tyro's own name for a Path, so every --help reads as before
            instance_from_str=lambda args: Path(args[0]).expanduser(),
            is_instance=lambda x: isinstance(x, Path),
            str_from_instance=lambda instance: [str(instance)],
        )

    return registry


def _none_means_see_the_text():
    """A struct rule: tyro's own spec of a command (or dataclass argument), its `X | None = None` flags
    annotated with X's metavar and no behaviour hint. An explicit `tyro.conf.arg` of the flag wins."""
    import dataclasses
    import types
    import typing

    from tyro.constructors import ConstructorRegistry, PrimitiveConstructorSpec, PrimitiveTypeInfo

    busy: list[bool] = []  # set while tyro's own rules answer, so this rule does not ask itself

    def metavar(tp) -> str | None:
        args = typing.get_args(tp)
        if typing.get_origin(tp) not in (typing.Union, types.UnionType) or type(None) not in args:
            return None
        rest = [a for a in args if a is not type(None)]
        inner = rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]  # noqa: UP007 (built at run time)
        spec = ConstructorRegistry.get_primitive_spec(PrimitiveTypeInfo.make(inner, set()))
        return spec.metavar if isinstance(spec, PrimitiveConstructorSpec) else None

    def annotate(field):
        tp, meta = field.type, ()
        if typing.get_origin(tp) is typing.Annotated:
            tp, meta = typing.get_args(tp)[0], tp.__metadata__
        shown = None if field.default is not None or tyro.conf.Positional in meta else metavar(tp)
        if shown is None:
            return field
        mine = tyro.conf.arg(metavar=shown, help_behavior_hint="")
        return dataclasses.replace(field, type=typing.Annotated[(tp, mine, *meta)])  # theirs after: they win

    def rule(type_info):
        if busy:
            return None
        busy.append(True)
        try:
            spec = ConstructorRegistry.get_struct_spec(type_info) or _function_spec(type_info)
        finally:
            busy.pop()
        if spec is None or not hasattr(spec, "fields"):  # not a struct, or tyro's error: tyro says it
            return spec
        return dataclasses.replace(spec, fields=tuple(annotate(f) for f in spec.fields))

    return rule


def _function_spec(type_info):
    """A command function as a tyro struct spec, so `_none_means_see_the_text` sees its flags: tyro reads
    a function's parameters (and their docstring help) without its struct rules. A positional-only
    parameter keeps its markers (`tyro.conf.Positional`) and is passed by position; None where one is
    `*args` or `**kwargs`, or where tyro's private reader is not as this reads it (tyro then reads the
    function itself, as before: only the help shows `(default: None)` again)."""
    import inspect
    import typing

    from tyro.constructors import StructConstructorSpec, StructFieldSpec

    if not inspect.isfunction(type_info.type):
        return None
    try:  # private in tyro 1.0 (pinned in pyproject), as cli._tyro_errors: a changed one must cost the help
        # its look, not every command its parse (a renamed function was a traceback of every command)
        from tyro import _fields

        read = _fields._field_list_from_function(type_info.type, type_info.default, markers=type_info.markers)
        if not isinstance(read, tuple) or any(f.call_mode not in ("kwarg", "positional") for f in read[1]):
            return None
        call, found = read
    except (ImportError, AttributeError, TypeError, ValueError):
        return None
    by_position = [f.call_argname for f in found if f.call_mode == "positional"]

    def instantiate(**kwargs):
        args = [kwargs.pop(name) for name in by_position]  # popped before `**kwargs` is spread
        return call(*args, **kwargs)

    instantiate.__doc__ = call.__doc__  # the command's description in its --help
    fields = tuple(
        StructFieldSpec(
            f.intern_name,
            typing.Annotated[(f.type, *f.markers)] if f.markers else f.type,
            f.default,
            f.helptext,
            f.call_argname,
        )
        for f in found
    )
    return StructConstructorSpec(instantiate=instantiate, fields=fields)


def flatten(
    values: tuple[tuple[str, ...], ...] | tuple[str, ...], flag: str | None = None
) -> tuple[str, ...]:
    """The values of a `Repeated` flag, in command-line order. With `flag`, the flag given without a
    value is refused (`eval --task-file` alone was dropped, and the default suite ran instead)."""
    if flag is not None and any(not isinstance(group, str) and not group for group in values):
        from encoderlab.errors import UserError

        raise UserError(f"{flag} is given without a value; put at least one after it ({flag} A B)")
    return tuple(v for group in values for v in ((group,) if isinstance(group, str) else group))


def _flags(fn, prefix: str = "") -> dict[str, tuple[str, bool, bool]]:
    """{--flag (and --no-flag for booleans, unless FlagCreatePairsOff): (canonical flag, appends, takes several
    values)} of a command function's (or a dataclass argument's) options, named as tyro names them: underscores
    become dashes, `tyro.conf.arg(name=...)` renames, a dataclass argument's fields are `--arg.field`
    (`--field` when it is renamed to ""); positional arguments have no flag."""
    import dataclasses
    import inspect
    import typing

    hints = typing.get_type_hints(fn, include_extras=True)
    names = (
        [f.name for f in dataclasses.fields(fn)]
        if dataclasses.is_dataclass(fn)
        else inspect.signature(fn).parameters
    )
    arg_config = type(tyro.conf.arg())
    out: dict[str, tuple[str, bool, bool]] = {}
    for name in names:
        tp, meta = hints.get(name), ()
        if typing.get_origin(tp) is Annotated:
            tp, meta = typing.get_args(tp)[0], tp.__metadata__
        if any(m is tyro.conf.Positional for m in meta):
            continue
        renamed = next((m.name for m in meta if isinstance(m, arg_config) and m.name is not None), None)
        own = name.replace("_", "-") if renamed is None else renamed
        if dataclasses.is_dataclass(tp):
            out.update(_flags(tp, f"{prefix}{own}." if own else prefix))
            continue
        flag = f"--{prefix}{own}"
        several = "tuple" in str(tp) or "list" in str(tp)
        entry = (flag, any(m is tyro.conf.UseAppendAction for m in meta), several)
        out[flag] = entry
        paired = not any(m is tyro.conf.FlagCreatePairsOff for m in meta)  # `--probe` alone: no `--no-probe`
        if tp is bool and paired:
            out[f"--{prefix}no-{own}"] = entry
    return out


def refuse_repeated_flags(fn, argv: list[str]) -> None:
    """Refuse a flag given twice unless it appends (`Repeated`): argparse would keep only the last
    value, silently (`eval --tasks a --tasks b` evaluated b alone). One line, before anything runs."""
    from encoderlab.errors import UserError

    flags, seen = _flags(fn), set()
    for token in argv:
        if token == "--":
            break
        entry = flags.get(token.partition("=")[0])
        if entry is None or entry[1]:
            continue
        flag, _, several = entry
        if flag in seen:
            fix = f"give it once, with every value after it ({flag} A B)" if several else "give it once"
            raise UserError(f"{flag} is given more than once, and only the last would count; {fix}")
        seen.add(flag)
