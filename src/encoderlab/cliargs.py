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
    """A tyro registry whose `Path` arguments expand a leading `~` (see the module docstring)."""
    from pathlib import Path

    from tyro.constructors import ConstructorRegistry, PrimitiveConstructorSpec

    registry = ConstructorRegistry()

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
    """{--flag (and --no-flag for booleans): (canonical flag, appends, takes several values)} of a
    command function's (or a dataclass argument's) options, named as tyro names them: underscores
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
        if tp is bool:
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
