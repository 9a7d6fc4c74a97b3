"""Checks of a loaded hub dataset's layout against what a built-in task reads of it: its splits, its
columns, and a label column's class names. A published dataset's layout can change under a pinned name;
each check refuses with one line naming what is missing and what the dataset has, before a run starts."""

from __future__ import annotations

from encoderlab.errors import UserError
from encoderlab.eval.tasks.hubsource import HubSource
from encoderlab.words import noun


def require_columns(task: str, split, columns: tuple[str, ...], source: HubSource) -> None:
    """One error naming the columns a split lacks and the ones it has."""
    missing = [c for c in columns if c not in split.column_names]
    if missing:
        raise UserError(
            f"task {task}: {source.describe()} has no {noun(len(missing), 'column')} {', '.join(missing)} "
            f"(it has {', '.join(split.column_names)}); the dataset's layout changed, see docs/evaluation.md"
        )


def require_splits(task: str, ds, splits: tuple[str, ...], source: HubSource) -> None:
    missing = [s for s in splits if s not in ds]
    if missing:
        raise UserError(
            f"task {task}: {source.describe()} has no {noun(len(missing), 'split')} {', '.join(missing)} "
            f"(it has {', '.join(ds)}); the dataset's layout changed, see docs/evaluation.md"
        )


def class_names(split, column: str) -> tuple[str, ...] | None:
    """ClassLabel names of a column (or of a sequence column's items), if it has them."""
    feature = split.features[column]
    inner = getattr(feature, "feature", feature)
    names = getattr(inner, "names", None)
    return tuple(names) if names else None
