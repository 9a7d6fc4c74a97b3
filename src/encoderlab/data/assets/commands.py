"""`encoderlab assets list` and `encoderlab assets fetch`: thin wrappers over the Python API."""

from __future__ import annotations

from typing import Annotated, Any

import tyro

from encoderlab.data.assets.cache import fetch, read_manifest
from encoderlab.data.assets.registry import ASSETS, DEFAULT_ASSETS


def list_assets() -> list[dict[str, Any]]:
    """One row per registered asset: name, kind, size, documents, licence, fetched, source, description.

    `size` is the asset's size on disk when fetched, else the size of its download (0 when local)."""
    rows = []
    for name, spec in ASSETS.items():
        manifest = read_manifest(name)
        source = spec.source
        rows.append(
            {
                "name": name,
                "kind": spec.kind,
                "fetched": manifest is not None,
                "size_bytes": manifest["size_bytes"] if manifest else (source.size if source else 0),
                "documents": manifest["documents"] if manifest else None,
                "licence": spec.licence,
                "source": f"{source.registry}:{source.package}=={source.version}" if source else "local",
                "default": name in DEFAULT_ASSETS,
                "description": spec.description,
            }
        )
    return rows


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def list_command() -> None:
    """List every asset: kind, size (on disk if fetched, else download), documents, licence, fetched."""
    rows = list_assets()
    header = ("name", "kind", "fetched", "size", "docs", "licence", "source")
    table = [
        (
            r["name"] + ("*" if r["default"] else ""),
            r["kind"],
            "yes" if r["fetched"] else "no",
            _mb(r["size_bytes"]) if r["fetched"] else f"({_mb(r['size_bytes'])} dl)",
            f"{r['documents']:,}" if r["documents"] is not None else "-",
            r["licence"],
            r["source"],
        )
        for r in rows
    ]
    widths = [max(len(str(row[i])) for row in [header, *table]) for i in range(len(header))]
    for row in [header, *table]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())
    print(
        "* fetched by `encoderlab assets fetch` with no names; (.. dl) = download size of an unfetched asset"
    )


def fetch_command(
    names: Annotated[
        tuple[str, ...],
        tyro.conf.Positional,
        tyro.conf.arg(metavar="[NAME ...]", help_behavior_hint="(default: the small default set)"),
    ] = (),
    all: Annotated[bool, tyro.conf.FlagCreatePairsOff] = False,
) -> None:
    """Fetch assets into $ENCODERLAB_HOME/assets (no names: the small default set; --all: everything).

    Args:
        names: Assets to fetch (see `encoderlab assets list`); what they depend on is fetched too.
        all: Fetch every asset (about 0.76 GB of downloads; needs pip, npm and apt-get).
    """
    folders = fetch(list(names), everything=all)
    for name, folder in folders.items():
        print(f"{name}\t{folder}")
