"""A report figure as the report renders it (`Figure`) and the one way one is saved: the PNG and the CSV of
the numbers drawn, both written atomically.

Its own module so that the figure modules (`figures.py`: paper 1's curves, the results chart and the CKA;
`lossfigures.py`: the losses read from the runs' metrics.jsonl) share one `Figure` and one save without
importing each other. Trade-off: a module this small, against a cycle between the two drawers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from encoderlab.analysis.plots import pyplot
from encoderlab.atomic import savefig_atomic, write_csv_atomic


@dataclass(frozen=True, kw_only=True)
class Figure:
    """A figure as the report renders it: its PNG, and the numbers behind it (CSV beside the PNG)."""

    name: str
    """File stem of the PNG and CSV."""
    title: str
    """Heading in the report."""
    caption: str
    """What the figure shows and how its intervals are computed."""
    png: Path
    """The drawn figure."""
    rows: list[dict]
    """The numbers drawn, one dict per CSV row (the report also shows them as a table)."""

    @property
    def csv(self) -> str:
        """The CSV's path relative to the report folder."""
        return f"figures/{self.name}.csv"


def save_figure(fig, folder: Path, name: str, rows: list[dict], title: str, caption: str) -> Figure:
    """`fig` saved as `folder/name.png` (then closed) beside the CSV of `rows`, as the report's `Figure`."""
    png = folder / f"{name}.png"
    savefig_atomic(fig, png, dpi=90, bbox_inches="tight", metadata={"Software": None})
    pyplot().close(fig)
    write_csv_atomic(folder / f"{name}.csv", rows, columns=list(rows[0]))
    return Figure(name=name, title=title, caption=caption, png=png, rows=rows)
