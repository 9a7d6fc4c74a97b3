"""Tiny package files in the real formats (wheel = zip, npm/sdist = tar.gz, Debian = ar + tar.xz)."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path


def make_zip(path: Path, members: dict[str, bytes | str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def tar_bytes(members: dict[str, bytes | str], mode: str = "w:gz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:
        for name, data in members.items():
            data = data.encode() if isinstance(data, str) else data
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def make_tgz(path: Path, members: dict[str, bytes | str]) -> Path:
    path.write_bytes(tar_bytes(members))
    return path


def make_deb(path: Path, data_members: dict[str, bytes | str]) -> Path:
    """A .deb: an ar archive of debian-binary, control.tar.xz and data.tar.xz (members like ./usr/...)."""
    parts = [
        ("debian-binary", b"2.0\n"),
        ("control.tar.xz", tar_bytes({"./control": "Package: x\n"}, "w:xz")),
        ("data.tar.xz", tar_bytes(data_members, "w:xz")),
    ]
    out = bytearray(b"!<arch>\n")
    for name, data in parts:
        header = f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode()
        assert len(header) == 60
        out += header + data + (b"\n" if len(data) % 2 else b"")
    path.write_bytes(bytes(out))
    return path
