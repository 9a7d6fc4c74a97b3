"""Command-line argument types shared by the commands.

`Repeated`: a list flag that accepts both `--source a b` and `--source a --source b` (and any mix),
keeping every value. tyro's plain `tuple[str, ...]` keeps only the last occurrence of a repeated
flag, silently; its append action alone refuses `--source a b`. Appending lists of values and
flattening them (`flatten`) gives both forms.
"""

from __future__ import annotations

from typing import Annotated

import tyro

Repeated = Annotated[tuple[tuple[str, ...], ...], tyro.conf.UseAppendAction]
"""A flag that may be given several times, each time with one or more values."""


def flatten(values: tuple[tuple[str, ...], ...] | tuple[str, ...]) -> tuple[str, ...]:
    """The values of a `Repeated` flag, in command-line order."""
    return tuple(v for group in values for v in ((group,) if isinstance(group, str) else group))
