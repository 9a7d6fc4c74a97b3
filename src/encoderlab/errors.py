"""User-facing errors.

Every mistake a user can make (a bad path, an unknown recipe, a corrupt checkpoint) is raised as
`UserError` with one sentence that names the problem and the fix. The CLI prints that sentence
alone and exits non-zero; anything else is a bug in encoderlab and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path


class UserError(Exception):
    """A problem with the user's input, reported as one line with the fix."""

    exit_code = 2
    quiet = False
    """True on a process whose line another one prints (a rank other than 0 under torchrun, see
    `train.distributed.agreed`): the CLI then exits with `exit_code` without printing it again."""

    def __reduce__(self):
        # Exception's own reduce calls cls(*args), which a subclass taking more than the line
        # (`EmptySource`, `MissingTextField`) refused: a study worker's refusal failed to come back to the
        # study's process. Rebuilt without __init__, with its args and attributes as they were.
        return _rebuilt, (type(self), self.args, self.__dict__)


def _rebuilt(cls: type[UserError], args: tuple, state: dict) -> UserError:
    """`UserError.__reduce__`'s inverse: the refusal of class `cls`, its `args` and attributes `state`."""
    exc = cls.__new__(cls, *args)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class DiskFull(UserError):
    """The disk filled up while writing, reported with what was kept (exit 3, as for every full disk:
    the CLI gives an `OSError(ENOSPC)` from anywhere the same code)."""

    exit_code = 3


NO_ROOM = {
    errno.ENOSPC: ("disk full", "free space"),
    errno.EDQUOT: ("disk quota exceeded", "free space within your quota"),
    errno.EFBIG: (
        "file too large",
        "raise the file size limit (`ulimit -f`) or write to a disk that holds larger files",
    ),
}
"""The write failures that mean no room for the output, not a bad path: (what happened, its fix). Each is
`DiskFull`'s exit 3, and what was completed is kept: a spent quota (EDQUOT, common on a cluster's home) and
a file past the size limit (EFBIG: `ulimit -f`, or FAT32's 4 GiB) were tracebacks outside a study."""

_RUST_OS_ERROR = re.compile(r"\(os error (\d+)\)")


def no_room(exc: BaseException) -> OSError | None:
    """`exc` as the `OSError` of a write that found no room (`NO_ROOM`), else None. A library written in Rust
    reports one as its own exception, "... No space left on device (os error 28)" (safetensors'
    SafetensorError, tokenizers' bare Exception), which is taken for the OSError it is: only where the
    system's own words for that errno come right before it, as Rust's `io::Error` writes them, so a message
    that merely quotes "(os error 28)" (a file name, a value echoed back) is not a full disk."""
    if isinstance(exc, OSError):
        return exc if exc.errno in NO_ROOM else None
    text = str(exc) if isinstance(exc, Exception) else ""
    for found in _RUST_OS_ERROR.finditer(text):
        code = int(found.group(1))
        said = os.strerror(code) if code in NO_ROOM else None
        if said is not None and text[: found.start()].endswith(f"{said} "):
            return OSError(code, said)
    return None


class WrongType(UserError):
    """A config value of the wrong type (`config.coerce`): "FIELD: expected float, got 'abc'; give a number
    such as 3e-4". `problem` is the line without its fix, for a caller whose fix is another (a file
    encoderlab wrote that is damaged: delete it and rerun, not edit the value)."""

    def __init__(self, problem: str, fix: str):
        super().__init__(f"{problem}; {fix}")
        self.problem = problem


def problem_of(exc: UserError) -> str:
    """`exc`'s line without its fix where it keeps one apart (`WrongType`), else the whole line."""
    return getattr(exc, "problem", None) or str(exc)


def shown(value, width: int = 60) -> str:
    """`value` as a refusal quotes it: its repr, cut to about `width` characters with "..." (a text is cut
    inside its quotes, which stay, so the line still reads as a quoted text). One rule for every refusal
    that shows what it was given: a whole text file or row could otherwise fill the terminal."""
    text = repr(value)
    if len(text) <= width:
        return text
    if isinstance(value, str):
        return repr(value[: width - 6] + "...")
    return text[: width - 3] + "..."


def closest(name: str, valid, cutoff: float = 0.75) -> str | None:
    """The valid name `name` is most likely a typo of (`lables` -> `labels`), or None when none is close:
    below `cutoff` a suggestion misleads more than it helps (`colour` is not `columns`)."""
    import difflib

    return next(iter(difflib.get_close_matches(str(name), [str(v) for v in valid], n=1, cutoff=cutoff)), None)


def file_in_the_way(path: Path | str) -> Path | None:
    """The file that `path` runs through (`notes.json` of `notes.json/x.yaml`), or `path` itself when it
    is a file; None when none of them is. For the line that says so where the system's says only
    "Not a directory"."""
    path = Path(path)
    for part in (*reversed(path.parents), path):
        if part.exists() and not part.is_dir():
            return part
    return None


def did_you_mean(name: str, valid: list[str] | tuple[str, ...], what: str) -> UserError:
    """An error for an unknown name, with the valid name it is close to and the valid ones."""
    near = closest(name, valid)
    return UserError(
        f"unknown {what} '{name}'{f' ({near}?)' if near else ''}; valid: {', '.join(sorted(valid))}"
    )


def save_as_utf8(path: Path | str, utf16: bool = False, encoding: str | None = None) -> str:
    """The fix for a text file that is not UTF-8 (a task's data, a corpus): the `iconv` line that
    writes a UTF-8 copy beside it (Latin-1 the likeliest other encoding, UTF-16 Excel's "Unicode text");
    `encoding` names another (`utf-16le` for UTF-16 without a byte order mark, whose byte order iconv
    would otherwise guess)."""
    name = Path(path).name
    source = encoding or ("utf-16" if utf16 else "latin1")
    return f"save it as UTF-8, e.g. `iconv -f {source} -t utf-8 {name} > utf8-{name}`"


def not_utf8(exc: UnicodeDecodeError) -> tuple[str, bool]:
    """What a text file that failed to decode as UTF-8 is (`is UTF-16 text, not UTF-8`, or the byte that
    is no UTF-8), and whether it is UTF-16 (its byte order mark first), for `save_as_utf8`'s fix."""
    utf16 = exc.start == 0 and exc.object[:2] in (b"\xff\xfe", b"\xfe\xff")
    byte = exc.object[exc.start : exc.start + 1].hex()
    if utf16:
        return "is UTF-16 text, not UTF-8", True
    return f"is not UTF-8 text (byte 0x{byte} cannot start or continue a UTF-8 character)", False


def first_line(exc: BaseException) -> str:
    """The first line of a library's exception message (its name when it has none), to quote inside
    a one-line error."""
    lines = str(exc).strip().splitlines()
    return lines[0].rstrip(":") if lines else type(exc).__name__


@contextlib.contextmanager
def warnings_as_notes() -> Iterator[None]:
    """While inside, a `UserWarning` raised on behalf of encoderlab's own code (CKA on fewer texts than
    dimensions) prints as one `encoderlab: note:` line, like the CLI's other notes, not as Python's
    `FILE:LINE: UserWarning:` with a source line; other libraries' warnings keep their own display."""
    package = Path(__file__).resolve().parent
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, UserWarning) and Path(filename).resolve().is_relative_to(package):
            print(f"encoderlab: note: {message}", file=file or sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown
