"""Reading one local corpus file into documents: JSON lines, text and parquet (`sources.iter_documents`).

Each reader streams `Document(id, text)` records and hashes the stored bytes in the same pass
(`_open_hashed`). A record or file that cannot be read becomes a `_Bad`, which `on_error` turns
into one line (`raise`) or a count in `SourceStats` (`skip`). What is text is decided here, the
same for every kind: a UTF-8 byte-order mark at the start of a file is not; a null text field is
an empty document (dropped and counted), as in hub data; a field or column that holds anything
but strings is refused, never turned into its Python repr; a `.json` file holding one JSON array is
refused with the command that writes it as JSON lines (`.json` is read as JSON lines, C4's form).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from encoderlab import jsonlines
from encoderlab.data.fieldpath import (
    FieldMissing,
    inner_fields,
    is_list,
    is_list_name,
    list_guess,
    lookup,
    struct_path,
    struct_values,
)
from encoderlab.data.filekinds import (
    COMPRESSIONS,
    DECOMPRESS_ERRORS,
    content_head,
    decompressed,
    file_kind,
    json_lines_fix,
    misnamed,
    utf16_without_bom,
)
from encoderlab.data.filerecords import file_record
from encoderlab.errors import UserError, not_utf8, save_as_utf8

if TYPE_CHECKING:
    from encoderlab.data.sources import SourceConfig, SourceStats


class Document(NamedTuple):
    """One document of a corpus."""

    id: str
    text: str
    source: int = 0
    """Index of its source in a mixture."""
    repeat: int = 0
    """0 on a source's first pass, k on its k-th restart by an `all_exhausted` mixture."""
    where: str = ""
    """FILE:LINE or FILE row N, where the id names the record by its id field instead (`path#id`): how a
    skipped empty document is named (`SourceStats.first_skipped`); "" where the id says it."""


class _Bad(Exception):
    """A record or file that cannot be read; message names where, `fix` overrides the generic fix, and
    `plain` is that fix without `--on-error skip`, for commands that have no such flag
    (`on_error="refuse"`); `missing`: what `MissingTextField` says of a text field that is not there;
    `whole_file`: met on a line but the file's fault (UTF-16): skipped, the rest of the file goes too."""

    def __init__(
        self,
        message: str,
        fix: str | None = None,
        plain: str | None = None,
        missing: tuple | None = None,
        whole_file: bool = False,
    ):
        super().__init__(message)
        self.fix, self.plain, self.missing, self.whole_file = fix, plain, missing, whole_file


class MissingTextField(UserError):
    """A local file, or a record of it, without the text field its source reads. The line's fix names
    the field in `--source`'s syntax; `problem` (the line before its fix), `path` (the file) and `guess`
    (the likeliest text field there) let a caller that names sources otherwise say it its way (a study:
    its corpus entries, `study/checks.py`)."""

    def __init__(self, line: str, problem: str, path: str, guess: str):
        super().__init__(line)
        self.problem, self.path, self.guess = problem, path, guess


def _no_field(message: str, where: Path | str, field: str, present: list[str], source: str) -> _Bad:
    """A text field that is not there, with its fix: name the field that is, in the source spec (with and
    without `--on-error skip`). For a folder or glob `source` the fix names it, not the file: a source of
    that one file would leave out the others (a folder mixing .txt and .jsonl files lost its .txt files)."""
    from encoderlab.data.sources import is_pattern  # sources reads files through this module

    location = str(where).rsplit(":", 1)[0] if str(where).rpartition(":")[2].isdigit() else str(where)
    guess = present[0] if present else "FIELD"
    if not (Path(source).is_dir() or is_pattern(source)):  # the file itself (or an asset)
        name = f"name the text field in the source, e.g. --source '{location}#text_field={guess}'"
    else:  # its .txt files have no fields and ignore it: the folder's every file is still read
        name = (
            f"name the text field in the source, e.g. --source '{source}#text_field={guess}' (the field of every "
            f"JSONL and parquet file it holds; --source '{location}#text_field={guess}' would read that file alone)"
        )
    return _Bad(
        message,
        f"{name} (or fix the record, or pass --on-error skip if only some records lack '{field}')",
        f"{name} (or fix the record)",
        missing=(location, guess),
    )


class _HashingReader(io.RawIOBase):
    """Wraps a binary file and hashes every byte read through it."""

    def __init__(self, raw, entry: dict):
        self.raw, self.entry, self.sha = raw, entry, hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = self.raw.readinto(b)
        if n:
            self.sha.update(memoryview(b)[:n])
            self.entry["bytes"] += n
        else:
            self.entry["complete"] = True
        return n

    def close(self) -> None:
        self.entry["sha256"] = self.sha.hexdigest()
        self.raw.close()
        super().close()


@contextlib.contextmanager
def _open_hashed(path: Path, stats: SourceStats) -> Iterator[io.BufferedIOBase]:
    """`path`'s content (decompressed as its name says), hashing the stored bytes as they are read."""
    entry = {"path": str(path), "bytes": 0, "sha256": None, "complete": False}
    stats.files.append(entry)
    raw = _HashingReader(open(path, "rb"), entry)  # noqa: SIM115 (closed by `stored`, below)
    entry["mtime_ns"] = os.fstat(raw.raw.fileno()).st_mtime_ns  # `filerecords.file_change`'s cheap test
    with (
        io.BufferedReader(raw, buffer_size=1 << 20) as stored,
        contextlib.closing(decompressed(path, stored)) as content,
    ):
        if path.suffix.lower() in COMPRESSIONS and not os.fstat(raw.raw.fileno()).st_size:
            # gzip and bz2 read 0 bytes as an empty stream: a shard whose download was cut short went unsaid
            raise EOFError(f"0 bytes, so no {path.suffix} data: a download cut short leaves that")
        yield content


_BOM = b"\xef\xbb\xbf"
"""UTF-8's byte-order mark, which Windows editors put at the start of a file: not text (a JSON line
starting with it does not parse, and in a .txt it became a token of the first document)."""


def _decode(raw: bytes, where: str, path: Path, first: bool = False) -> str:
    """`raw`, of the file `path`, as text; `first`: the file's first line (or whole content), whose
    byte-order mark is dropped. Not UTF-8: the fix is the `iconv` line that converts the file."""
    try:
        return (raw.removeprefix(_BOM) if first else raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        if not_utf8(exc)[
            1
        ]:  # the whole file is UTF-16 (Notepad's "Unicode"): `iconv -f latin1` made mojibake
            fix = save_as_utf8(path, utf16=True)  # and skipping its lines would skip them all
            raise _Bad(f"{where} is UTF-16 text, not UTF-8", fix, fix, whole_file=True) from None
        fix = save_as_utf8(path)
        raise _Bad(
            f"{where} is not UTF-8 (byte {exc.start})",
            f"{fix}, or pass --on-error skip to skip such records",
            fix,
        ) from None


def _utf16_without_bom(f: io.BufferedIOBase, path: Path) -> _Bad | None:
    """Why the file `path` (its content stream `f`, peeked, not read) is UTF-16 without a byte order mark
    (`filekinds.utf16_order`), whole: refused or skipped as one with its mark is (`_decode`); or None."""
    said = utf16_without_bom(content_head(f, path), path)
    return None if said is None else _Bad(said[0], said[1], said[1], whole_file=True)


def _field(record: dict, key: str, where: str, source: str) -> str:
    """The text `key` names in `record`, a dotted path into nested objects too (`data/fieldpath.py`)."""
    try:
        value = lookup(record, key)
    except FieldMissing as miss:  # the fix guesses the longest string there (an id or a label is short)
        strings = miss.strings()  # in a list: the text the path named, else `text` (`list_guess`)
        guesses, choices = (
            list_guess(miss.at, key, strings) if isinstance(miss.found, list) else (strings, "")
        )
        why = f"{where} has no field '{key}' ({miss.why()}{choices})"
        raise _no_field(why, where, key, guesses, source) from None
    if value is None:  # a null text is an empty document (dropped and counted), as in parquet and hub data
        return ""
    # `meta` for `meta.text` (a list: `meta.0`): the fix names a string in it
    if isinstance(value, dict | list):
        inside = FieldMissing(key, value).strings()
        what = "an object" if isinstance(value, dict) else "a list, entered by index"
        inside, choices = list_guess(key, key, inside) if isinstance(value, list) else (inside, "")
        why = f"{where} has no string field '{key}' ({key} is {what}{choices})"
        raise _no_field(why, where, key, inside, source)
    if not isinstance(value, str):
        raise _Bad(f"{where} has no string field '{key}' ({key} is {type(value).__name__})")
    return value


def _check_surrogates(text: str, where: str) -> None:
    """Refuse text holding a lone UTF-16 surrogate, which only a JSON `\\ud800` escape can put there
    (the bytes were strict UTF-8). Was: `data tokenizer` stopped in a UnicodeEncodeError traceback,
    and `data prepare` trained on whatever the encoder made of it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _Bad(
            f"{where} holds a lone surrogate ({text[exc.start]!a} at character {exc.start}), which is not text",
            "fix the record's \\uD8xx-\\uDFxx escape (the writer split a character), or pass --on-error skip "
            "to skip and count such records",
            "fix the record's \\uD8xx-\\uDFxx escape (the writer split a character)",
        ) from None


def _read_jsonl(path: Path, cfg: SourceConfig, stats: SourceStats, on_error: str, id_prefix: str):
    with _open_hashed(path, stats) as f:
        if (utf16 := _utf16_without_bom(f, path)) is not None:
            _handle(utf16, on_error, stats, record=False)
            return
        first = True
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            where = f"{path}:{lineno}"
            if first and raw.lstrip(b" \t" + _BOM).startswith(b"["):  # the file is one JSON array
                _handle(
                    _Bad(
                        f"{path} holds a JSON array, not JSON lines (one object per line)",
                        json_lines_fix(path),
                    ),
                    on_error,
                    stats,
                )
                return
            if first and raw.strip(b" \t\r\n" + _BOM) == b"{":  # one object written over several lines
                # (was "not valid JSON (Expecting property name ...); fix or remove it", naming no problem)
                why = f"{where} is a lone '{{': the file holds JSON written over several lines (pretty-printed), not JSON lines (one object per line)"
                _handle(_Bad(why, json_lines_fix(path, each="[json.load({})]")), on_error, stats)
                return
            first = False
            try:
                try:
                    record = jsonlines.loads(_decode(raw, where, path, first=lineno == 1))
                except json.JSONDecodeError as exc:
                    raise _Bad(f"{where} is not valid JSON ({jsonlines.why_not_json(exc)})") from None
                if not isinstance(record, dict):
                    raise _Bad(f"{where} is a JSON {type(record).__name__}, not an object")
                text = _field(record, cfg.text_field, where, cfg.location)
                if b"\\u" in raw:  # only an escape can hold a lone surrogate
                    _check_surrogates(text, f"{where} field '{cfg.text_field}'")
            except _Bad as exc:
                _handle(exc, on_error, stats, record=not exc.whole_file)
                if exc.whole_file:
                    return
                continue
            rid = record.get(cfg.id_field)
            yield Document(f"{id_prefix}{rid}" if rid is not None else where, text, where=where)


def _read_txt(path: Path, cfg: SourceConfig, stats: SourceStats, on_error: str):
    with _open_hashed(path, stats) as f:
        if (utf16 := _utf16_without_bom(f, path)) is not None:  # its lines decode, NULs and all
            _handle(utf16, on_error, stats, record=False)
            return
        if cfg.txt_unit == "file":
            try:
                # Windows line ends are line ends: the same text tokenizes the same whatever editor saved it
                text = _decode(f.read(), str(path), path, first=True)
                yield Document(str(path), text.replace("\r\n", "\n").replace("\r", "\n"))
            except _Bad as exc:
                _handle(exc, on_error, stats, record=not exc.whole_file)
            return
        lines = _decoded_lines(f, path, on_error, stats)
        if cfg.txt_unit == "line":
            for lineno, line in lines:
                if line is not None:
                    yield Document(f"{path}:{lineno}", line.rstrip("\r\n"))
            return
        start, para, spoiled = 0, [], False
        for lineno, line in lines:  # paragraphs: runs of lines up to a blank (whitespace-only) line
            if line is None:  # a skipped line drops its paragraph whole (it was joined around the gap)
                para, spoiled = [], True
            elif line.strip():
                start = start if para else lineno
                para += [] if spoiled else [line.rstrip("\r\n")]  # joined by "\n": CRLF reads as its LF twin
            else:
                if para:
                    yield Document(f"{path}:{start}", "\n".join(para))
                para, spoiled = [], False
        if para:
            yield Document(f"{path}:{start}", "\n".join(para))


def _decoded_lines(f, path: Path, on_error: str, stats: SourceStats) -> Iterator[tuple[int, str | None]]:
    """The lines of a .txt file as text; one that is no UTF-8 is refused or skipped alone, but a UTF-16 file
    is skipped whole (one bad file): its later lines decode as UTF-8 (ASCII text's NUL bytes are UTF-8), so
    `--on-error skip` skipped its first line and trained on the rest as text of NULs ("\x00s\x00e..."). A line
    skipped is yielded as None, so the paragraph reader drops the paragraph holding it."""
    for lineno, raw in enumerate(_lines(f), 1):
        try:
            yield lineno, _decode(raw, f"{path}:{lineno}", path, first=lineno == 1)
        except _Bad as exc:
            _handle(exc, on_error, stats, record=not exc.whole_file)
            if exc.whole_file:
                return
            yield lineno, None


def _lines(f, size: int = 1 << 20) -> Iterator[bytes]:
    """The lines of the binary stream `f`, each ended by `\n`, `\r\n` or a lone `\r` (classic Mac OS files),
    as Python's universal newlines end them; a form feed or U+2028 does not end one (`bytes.splitlines`
    splits on those three only). Was: iterating `f` ended lines at `\n` alone, so a CR-only file was one
    line, and one document in every unit, where its LF and CRLF twins were many. Read in `size` chunks;
    a `\r` that ends a chunk waits for the next one, which may start with its `\n`; a line running over
    chunks is kept in pieces, joined once (was `rest + chunk` per chunk: quadratic, minutes for a line of
    a few hundred MB, where iterating `f` is linear)."""
    pieces: list[bytes] = []  # the line the chunks so far leave unended
    cr = b""
    while chunk := f.read(size):
        data = cr + chunk
        cr = b"\r" if data.endswith(b"\r") else b""
        lines = (data[:-1] if cr else data).splitlines(keepends=True)
        last = lines.pop() if lines and not lines[-1].endswith((b"\n", b"\r")) else None
        if pieces and lines:  # this chunk ends the line the last ones began
            lines[0] = b"".join([*pieces, lines[0]])
            pieces = []
        yield from lines
        pieces += [last] if last is not None else []
    if pieces or cr:
        yield b"".join([*pieces, cr])


def _read_parquet(path: Path, cfg: SourceConfig, stats: SourceStats, on_error: str):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        record = file_record(path)
    except OSError:
        # recorded as `_open_hashed` records a file it cannot open (`filerecords.file_change`), then skipped
        stats.files.append({"path": str(path), "bytes": 0, "sha256": None, "complete": False})
        raise
    stats.files.append(record)
    try:
        pf = pq.ParquetFile(path)
        names = pf.schema_arrow.names
        fields = _text_column(pf.schema_arrow, path, cfg)
        columns = [fields[0]] + ([cfg.id_field] if cfg.id_field in names else [])
        row = 0
        for batch in pf.iter_batches(batch_size=1024, columns=columns):
            texts = _cells(struct_values(batch.column(0), fields[1:]), path, row, on_error, stats)
            ids = batch.column(1).to_pylist() if len(columns) > 1 else [None] * len(texts)
            for text, rid in zip(texts, ids):
                row += 1
                if text is _SKIPPED:
                    continue
                # a null cell is an empty document, dropped and counted (was: dropped and counted nowhere)
                yield Document(
                    f"{path}#{rid}" if rid is not None else f"{path}:{row}",
                    "" if text is None else text,
                    where=f"{path} row {row}",
                )
    except (pa.ArrowException, OSError) as exc:
        _handle(_Bad(f"{path} is not a readable parquet file ({str(exc).splitlines()[0]})"), on_error, stats)
    except _Bad as exc:
        _handle(exc, on_error, stats)


_SKIPPED = object()
"""A parquet text cell `--on-error skip` skipped (counted in `bad_records`), where None is a null cell."""


def _cells(column, path: Path, row: int, on_error: str, stats: SourceStats) -> list:
    """The text cells of one parquet batch whose first row is `row` + 1. Arrow does not check a file's
    strings are UTF-8 when it reads them, only when a cell becomes a Python str: a bad byte anywhere in
    the batch was a UnicodeDecodeError traceback from `to_pylist`. Then the batch is read cell by cell
    (the slow path, taken only on such a batch) to name the row, which `on_error` refuses or skips."""
    try:
        return column.to_pylist()
    except UnicodeDecodeError:
        pass
    cells = []
    for i in range(len(column)):
        try:
            cells.append(column[i].as_py())
        except UnicodeDecodeError as exc:
            fix = "write the column again as UTF-8 text (decode its bytes with the encoding they are in)"
            bad = _Bad(
                f"{path} row {row + i + 1} is not UTF-8 (byte {exc.start})",
                f"{fix}, or pass --on-error skip to skip such rows",
                fix,
            )
            _handle(bad, on_error, stats, record=True)
            cells.append(_SKIPPED)
    return cells


def _text_column(schema, path: Path, cfg: SourceConfig) -> list[str]:
    """The column (and the struct fields in it) `cfg.text_field` names, which must hold strings: a struct or
    a list was read as its Python repr ("{'a': 'x'}"), a number as its digits, where JSON lines refuse a
    non-string field. The fix names a column it would read (was: the first, an int id)."""
    name = cfg.text_field
    try:
        fields, kind = struct_path(schema, name)
    except FieldMissing as miss:
        why = miss.why("column") if not miss.at else miss.why()
        guesses, choices = _string_columns(schema, within=miss.at), ""
        if is_list_name(miss.type_name):
            guesses, choices = list_guess(miss.at, name, guesses)
        why = f"{path} has no column '{name}' ({why}{choices})"
        raise _no_field(why, path, name, guesses, cfg.location) from None
    # pyarrow reads the first of two columns of one name (was a KeyError or AttributeError traceback)
    if schema.names.count(fields[0]) > 1:
        raise _Bad(
            f"{path} has {schema.names.count(fields[0])} columns named '{fields[0]}'",
            "write it again with one column of that name",  # `plain` too: `_Bad` falls back to `fix`
        )
    if not _is_text(kind):
        guesses, choices = _string_columns(schema, within=name), ""
        if is_list(kind):
            guesses, choices = list_guess(name, name, guesses)
        why = f"{path} has no string column '{name}' ({name} is {kind}{choices})"
        raise _no_field(why, path, name, guesses, cfg.location)
    return fields


def _is_text(kind) -> bool:
    import pyarrow as pa

    value = kind.value_type if pa.types.is_dictionary(kind) else kind
    return pa.types.is_string(value) or pa.types.is_large_string(value) or str(value) == "string_view"


def _string_columns(schema, within: str = "") -> list[str]:
    """The columns of `schema` a text field can name, in file order, then the string fields of its struct
    columns as dotted paths (`meta.text`), which `_text_column` reads too; those inside the struct `within`
    (where a dotted path stopped) first; a list's, through its first element (`meta.0.text`)."""
    nested: list[str] = []

    def strings(prefix: str, fields) -> list[str]:
        found = []
        for f in fields:
            if _is_text(f.type):
                found.append(prefix + f.name)
            elif (inner := inner_fields(f.type)) is not None:
                nested.extend(strings(f"{prefix}{f.name}.", inner))
        return found

    found = strings("", schema) + nested
    return sorted(found, key=lambda c: not (within and c.startswith(within + ".")))


def _handle(exc: _Bad, on_error: str, stats: SourceStats, record: bool = False) -> None:
    if on_error == "raise":
        raise _refusal(
            exc, exc.fix or "fix or remove it, or pass --on-error skip to skip and count such input"
        )
    if on_error == "refuse":  # a command without --on-error: its fix must not offer the flag
        raise _refusal(exc, exc.plain or exc.fix or "fix or remove it")
    stats.skip("bad_records" if record else "bad_files", str(exc))


def _refusal(exc: _Bad, fix: str) -> UserError:
    if exc.missing is None:
        return UserError(f"{exc}; {fix}")
    return MissingTextField(f"{exc}; {fix}", str(exc), *exc.missing)


def read_file(path: Path, cfg: SourceConfig, stats: SourceStats, on_error: str, id_prefix: str):
    """The documents of one local file, by its kind (`data/filekinds.py`), counting into `stats`."""
    kind, yielded = file_kind(path), 0
    if (why := misnamed(path)) is not None:
        _handle(_Bad(why), on_error, stats)
        return
    if kind == "jsonl":
        docs = _read_jsonl(path, cfg, stats, on_error, id_prefix)
    elif kind == "txt":
        docs = _read_txt(path, cfg, stats, on_error)
    else:
        docs = _read_parquet(path, cfg, stats, on_error)
    try:
        for doc in docs:
            yielded += 1
            yield doc
    except (OSError, *DECOMPRESS_ERRORS) as exc:  # permission denied, vanished, truncated or corrupt
        why = f"cannot read {path} ({getattr(exc, 'strerror', None) or exc})"
        if path.is_symlink() and not path.exists():  # the path is there: say what is not
            why = f"cannot read {path}: it is a symlink to {os.readlink(path)}, which does not exist"
        if yielded and path.suffix.lower() in COMPRESSIONS:
            # gzip checks its CRC only at the end: what a corrupt file gave before may be garbage, and
            # documents already streamed cannot be taken back, so such a file is never skipped
            raise UserError(
                f"{why}, after {yielded:,} of its documents were read; a compressed file that fails "
                "part-way is not skipped: download it again or remove it"
            ) from None
        _handle(_Bad(why), on_error, stats)
