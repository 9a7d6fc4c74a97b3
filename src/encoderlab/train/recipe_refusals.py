"""Which of the `--param` values given a recipe a refusal is about, found by building the recipe again.

A recipe's own checks (`steps must be at least ...`, `recipe parameter micro_batch_size must be >= 1`) name
their parameter: they raise `ParamRefusal`, and their line is said as it is. A check of a part the recipe
builds (`MLM`'s `mask_ratio must be between 0 and 1`) knows nothing of the recipe, so its line names a
field (`mask_ratio`) where the user typed `--param ratio=0`. That line gets the parameters it is about in
front: `recipe pfs-mlm with --param ratio=0: mlm mask_ratio must be ...`.

Which parameters those are is found from the typed arguments, not from the line's words (a regex over the
line took `ratio` for absent from `mask_ratio` and named every `--param` given, `data=...` too): a given
parameter is involved when the recipe built without it (at its default) builds. Only when none does alone
(two values each refused) is one whose absence ends the build otherwise named: a parameter whose default
trips another check (a `micro_batch_size` that a study's `global_batch` needs) is not the one at fault, and
the refusal the recipe's defaults give by themselves (cpt-mlm's `needs a starting checkpoint`) only says a
parameter is required, not that its value is wrong. Trade-off: one more
build per given parameter, paid only on the way out of a refusal; a build is a few dataclasses (no model,
no file), so it costs nothing a user sees.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from encoderlab.errors import UserError


class ParamRefusal(UserError):
    """A recipe's own refusal of its parameters, whose line names them as the user passes them."""


def _outcome(build: Callable[[dict[str, Any]], Any], args: dict[str, Any]) -> str | None:
    """The line a build with `args` is refused with, or None when it builds."""
    try:
        build(args)
    except Exception as exc:  # noqa: BLE001 -- any other ending counts as another outcome
        return f"{type(exc).__name__}: {exc}"
    return None


def involved_params(
    build: Callable[[dict[str, Any]], Any], given: Mapping[str, Any], refusal: UserError
) -> list[str]:
    """The names in `given` whose values `refusal` (raised by `build(given)`) is about, in the order given:
    those without which the recipe builds; when none does alone (two values each refused), those without
    which it ends in another way than this refusal or the defaults' own."""
    line = f"{type(refusal).__name__}: {refusal}"
    without = {name: _outcome(build, {k: v for k, v in given.items() if k != name}) for name in given}
    if built := [name for name, outcome in without.items() if outcome is None]:
        return built
    bare = _outcome(build, {})
    return [name for name, outcome in without.items() if outcome not in (line, bare)]
