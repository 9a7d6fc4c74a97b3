"""Which local files a source reads, by name: text formats, and the compressions read on the fly.

Pretraining corpora are often shipped compressed, one JSON object per line (C4 and Dolma as
`.json.gz`, OpenWebText's parts as `.xz`). A `.txt`, `.jsonl` or `.json` file may therefore be
gzip, bz2 or xz compressed (`name.jsonl.gz`); it is decompressed as it is streamed, never unpacked
to disk. Parquet compresses inside the format, so `.parquet.gz` is not read.

Trade-offs. Only the standard library's decompressors are used: zstd (`.zst`, the Pile's and
SlimPajama's format) would need a package this project does not otherwise depend on, so such a file
is refused in one line that names the command that decompresses it. The digest recorded in
meta.json is of the file's bytes as stored (compressed), which is what names the file.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path
from typing import BinaryIO

TEXT_SUFFIXES = {".txt": "txt", ".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet"}
"""Suffix -> how the file is read."""

COMPRESSIONS = {
    ".gz": lambda f: gzip.GzipFile(fileobj=f, mode="rb"),
    ".bz2": lambda f: bz2.BZ2File(f, mode="rb"),
    ".xz": lambda f: lzma.LZMAFile(f, mode="rb"),  # noqa: SIM115 (the caller closes it)
}
"""Suffix -> a reader that decompresses a binary stream (it leaves that stream open)."""

UNREAD_COMPRESSIONS = {".zst": "zstd -d", ".zstd": "zstd -d", ".lz4": "lz4 -d", ".zip": "unzip"}
"""Compressions not read, with the command that unpacks them (named in the refusal)."""

DECOMPRESS_ERRORS = (EOFError, lzma.LZMAError, gzip.BadGzipFile)
"""What a truncated or corrupt compressed file raises besides OSError."""

SUPPORTED = ", ".join(TEXT_SUFFIXES) + f" (.txt/.jsonl/.json also as {', '.join(COMPRESSIONS)})"
"""The accepted names, for messages."""


def file_kind(path: Path) -> str | None:
    """'txt', 'jsonl' or 'parquet' for a file name a source reads (compressed too); None otherwise."""
    suffix = path.suffix.lower()
    if suffix in COMPRESSIONS:
        kind = TEXT_SUFFIXES.get(Path(path.stem).suffix.lower())
        return None if kind == "parquet" else kind
    return TEXT_SUFFIXES.get(suffix)


def unread_reason(path: Path) -> str:
    """Why `path` is not read, and the fix: one clause for a refusal."""
    unpack = UNREAD_COMPRESSIONS.get(path.suffix.lower())
    if unpack is not None:
        return (
            f"{path} is compressed as {path.suffix}, which encoderlab does not read; unpack it first "
            f"(`{unpack} {path}`) or recompress it with gzip"
        )
    return f"{path} has suffix '{path.suffix}', not one of {SUPPORTED}; rename it or convert it"


def decompressed(path: Path, stream: BinaryIO) -> BinaryIO:
    """`stream` (the bytes of `path` as stored) as the bytes it holds: decompressed if `path` says so."""
    opener = COMPRESSIONS.get(path.suffix.lower())
    return stream if opener is None else opener(stream)


def content_bytes(files: list[Path], sample_files: int = 8, sample_bytes: int = 1 << 22) -> tuple[float, str]:
    """(the bytes `files` hold once decompressed, a note on how compressed ones were sized): plain files
    count their size; compressed ones their size times the ratio measured on the first `sample_files`
    of them (up to `sample_bytes` of content each), so a plan stays quick on thousands of shards."""
    plain = sum(f.stat().st_size for f in files if f.suffix.lower() not in COMPRESSIONS)
    packed = [f for f in files if f.suffix.lower() in COMPRESSIONS]
    if not packed:
        return plain, ""
    content = consumed = 0
    for path in packed[:sample_files]:
        with open(path, "rb") as stored, decompressed(path, stored) as text:
            read = 0
            try:
                while read < sample_bytes and (chunk := text.read(1 << 20)):
                    read += len(chunk)
            except (OSError, *DECOMPRESS_ERRORS):  # corrupt: what was read so far sets the ratio
                pass
            content, consumed = content + read, consumed + stored.tell()
    ratio = content / max(consumed, 1)
    note = (
        f" ({len(packed)} compressed file(s) at {ratio:.1f}x, measured on {min(len(packed), sample_files)})"
    )
    return plain + ratio * sum(f.stat().st_size for f in packed), note
