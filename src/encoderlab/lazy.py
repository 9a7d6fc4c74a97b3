"""A package's public names imported when first read (PEP 562), for `encoderlab.train`, `encoderlab.eval`
and `encoderlab.model`: `study list` and `study plan` import a light submodule of each (a config, a record,
the model sizes) and so run its `__init__`, which would otherwise bring the training or fine-tuning loop
they never use, or the encoder and torch with it.

The trade-off: a static reader sees the names only under `TYPE_CHECKING`, where each `__init__` imports
them again for type checkers and editors.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_names(
    package: str, homes: dict[str, str], namespace: dict[str, Any], public: list[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module `__getattr__` and `__dir__` of `package`: each name of `homes` is read from its
    submodule (`homes[name]`, relative to `package`) on first use and kept in `namespace` (the
    package's globals), so the next read finds it there; `public` is the package's `__all__`."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:  # a submodule (`from encoderlab.eval import qa`) is imported by Python then
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *public})

    return __getattr__, __dir__
