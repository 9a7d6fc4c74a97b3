"""Which local files a source reads, by name: text formats, and the compressions read on the fly.

Pretraining corpora are often shipped compressed, one JSON object per line: C4 and Dolma as
`.json.gz`, the Pile and SlimPajama as `.jsonl.zst`, OpenWebText's parts as `.xz`. A `.txt`, `.jsonl`
or `.json` file may therefore be gzip, bz2, xz or zstd compressed (`name.jsonl.gz`); it is
decompressed as it is streamed, never unpacked to disk. Parquet compresses inside the format, so
`.parquet.gz` is not read.

Trade-offs. gzip, bz2 and xz come with Python; zstd needs the `zstandard` package (the `zstd` extra),
which is not a core dependency: without it a `.zst` file is refused in one line, naming the install
and the command that unpacks it, before anything is written. A folder's compressed text file that
cannot be read is refused the same way rather than skipped, so no shard drops out of a corpus
unseen. The digest recorded in meta.json is of the file's bytes as stored (compressed), which is
what names the file.
"""

from __future__ import annotations

import bz2
import gzip
import importlib.util
import io
import lzma
from pathlib import Path
from typing import BinaryIO

TEXT_SUFFIXES = {".txt": "txt", ".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet"}
"""Suffix -> how the file is read."""


class _ZstdReader(io.RawIOBase):
    """A zstd stream's content, frame after frame (zstd tools may write a file as several), raising
    EOFError when the file ends inside a frame: `zstandard`'s own stream reader returns a truncated
    file's first part as if it were all of it."""

    def __init__(self, stream: BinaryIO):
        import zstandard  # present: `unreadable` refuses a .zst file without it before any is opened

        self._stream, self._new = stream, zstandard.ZstdDecompressor().decompressobj
        self._frame, self._in_frame, self._out, self._at = self._new(), False, b"", 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while self._at == len(self._out):
            data = self._stream.read(1 << 17)
            if not data:
                if self._in_frame:
                    raise EOFError("Compressed file ended before the end-of-stream marker was reached")
                return 0
            self._out, self._at = self._decompress(data), 0
        n = min(len(b), len(self._out) - self._at)
        b[:n] = self._out[self._at : self._at + n]
        self._at += n
        return n

    def _decompress(self, data: bytes) -> bytes:
        parts = []
        while data:
            parts.append(self._frame.decompress(data))
            self._in_frame, data = not self._frame.eof, self._frame.unused_data if self._frame.eof else b""
            if self._frame.eof:
                self._frame = self._new()
        return b"".join(parts)


def _zstd(stream: BinaryIO) -> BinaryIO:
    return io.BufferedReader(_ZstdReader(stream), buffer_size=1 << 20)  # leaves `stream` open


COMPRESSIONS = {
    ".gz": lambda f: gzip.GzipFile(fileobj=f, mode="rb"),
    ".bz2": lambda f: bz2.BZ2File(f, mode="rb"),
    ".xz": lambda f: lzma.LZMAFile(f, mode="rb"),  # noqa: SIM115 (the caller closes it)
    ".zst": _zstd,
    ".zstd": _zstd,
}
"""Suffix -> a reader that decompresses a binary stream (it leaves that stream open)."""

UNREAD_COMPRESSIONS = {".lz4": "lz4 -d", ".zip": "unzip", ".7z": "7z x"}
"""Compressions not read, with the command that unpacks them (named in the refusal)."""


def _zstd_error() -> type[Exception]:
    try:
        import zstandard
    except ImportError:
        return EOFError  # any: no .zst file is read without the package
    return zstandard.ZstdError


DECOMPRESS_ERRORS = (EOFError, lzma.LZMAError, gzip.BadGzipFile, _zstd_error())
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


def has_zstandard() -> bool:
    """Whether `.zst` files can be read here (the `zstandard` package, the `zstd` extra)."""
    return importlib.util.find_spec("zstandard") is not None


def unreadable(path: Path) -> str | None:
    """Why a file named as compressed corpus text cannot be read here, and the fix; None if it can."""
    suffix, inner = path.suffix.lower(), Path(path.stem).suffix.lower()
    if inner not in TEXT_SUFFIXES or inner == ".parquet":
        return None
    if suffix in (".zst", ".zstd") and not has_zstandard():
        return (
            f"{path} is zstd-compressed and the zstandard package is not installed; "
            f"pip install 'encoderlab[zstd]', or unpack it first (`zstd -d {path}`)"
        )
    if suffix in UNREAD_COMPRESSIONS:
        return (
            f"{path} is compressed as {path.suffix}, which encoderlab does not read; unpack it first "
            f"(`{UNREAD_COMPRESSIONS[suffix]} {path}`) or recompress it with gzip"
        )
    return None


def unread_reason(path: Path) -> str:
    """Why `path` is not read, and the fix: one clause for a refusal."""
    why = unreadable(path)
    return why or f"{path} has suffix '{path.suffix}', not one of {SUPPORTED}; rename it or convert it"


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
