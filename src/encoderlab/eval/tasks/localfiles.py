"""A task file's local data files: which `datasets` builder reads them, and the checks made first;
and which files `--task-file` names (`task_files`: a folder stands for its task files).

A task's files are small labelled sets read whole by `datasets.load_dataset`, so a file task gets
the columns and dtypes a hub dataset of the same files would. CSV, TSV and JSON lines may be
gzip, bz2 or xz compressed (`train.jsonl.gz`, `dev.tsv.xz`): `datasets` recognises those by their
leading bytes and unpacks them. Each read goes into memory through a temporary cache removed after it, not into
`datasets`' own ($HF_DATASETS_CACHE), which kept an Arrow copy of every task file read, also by a command then
refused; the cost, reading a small labelled set again on each command, is not worth a cache.

Trade-offs. zstd is not read here, unlike in a pretraining corpus (`data.filekinds`): `datasets`
would need python-zstandard, whose stream reader takes a truncated file as whole, and a labelled
set is small enough to unpack. A `.zst`, `.lz4`, `.zip` or `.7z` file is refused with the command
that unpacks it. Every file is read through once before `datasets` sees it, which finds an empty
split, a compressed file cut short and a text file that is not UTF-8 (a latin-1 CSV), each as one
line naming the file.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import io
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from encoderlab.data.filekinds import DECOMPRESS_ERRORS, UNPACK_COMMANDS, compressed_unread, decompressed
from encoderlab.data.hub import import_datasets
from encoderlab.errors import UserError, first_line, not_utf8, save_as_utf8
from encoderlab.jsonlines import json_objects
from encoderlab.paths import visible_entries

if TYPE_CHECKING:  # rowplaces reads files through this module
    from encoderlab.eval.tasks.rowplaces import RowPlaces

BUILDERS = {".csv": "csv", ".tsv": "csv", ".jsonl": "json", ".json": "json", ".parquet": "parquet"}
"""A data file's suffix -> the `datasets` builder that reads it."""
COMPRESSIONS = (".gz", ".bz2", ".xz")
"""Compressions a task's CSV, TSV or JSON lines file may have (read by `datasets` itself)."""
KINDS = ".csv, .tsv, .jsonl/.json or .parquet (the first four also as .gz, .bz2 or .xz)"


def plain_suffix(path: Path) -> str:
    """The format's suffix of a data file name, under any compression suffix (`a.tsv.gz` -> `.tsv`)."""
    suffix = path.suffix.lower()
    return Path(path.stem).suffix.lower() if suffix in COMPRESSIONS or suffix in UNPACK_COMMANDS else suffix


def _is_study_file(path: Path) -> bool:
    """Whether a YAML file of a task folder is a study file (`runs:`, no `family:`), as docs/studies.md's
    example keeps one beside the task files it names: `--task-file FOLDER` refused the folder for it.
    A file that is no readable mapping is kept, so the task file reader names its problem."""
    import yaml

    from encoderlab.config import FILE_KINDS

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    kinds = {kind: key for kind, (key, _) in FILE_KINDS.items()}
    return isinstance(data, dict) and kinds["study file"] in data and kinds["task file"] not in data


def task_files(paths) -> list[Path]:
    """The YAML files named, a folder standing for its *.yaml / *.yml task files (sorted; the suffix in any
    case, as data files' is read: `B.YAML` was left out, its task never run; hidden names are not the
    user's tasks: `paths.visible_entries`; a study file beside them is no task file: `_is_study_file`)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            yamls = [q for q in visible_entries(p) if q.suffix.lower() in (".yaml", ".yml")]
            found = [q for q in yamls if not _is_study_file(q)]
            if not found:
                raise UserError(
                    f"task folder {p} holds no .yaml or .yml task files; put each task's YAML in it"
                    ' (docs/evaluation.md, "Your own tasks"), or name the files: --task-file a.yaml b.yaml, or'
                    " a study file's eval: {task_files: [a.yaml, b.yaml]}"
                )
            out += found
        elif p.is_file() or p.exists():
            out.append(refuse_data_file(p))
        else:  # a near name beside it first (`pair.yaml` of `pairs.yaml`), as a study file's line says it
            from encoderlab.config import near_yaml

            near = near_yaml(p)
            fix = (
                f"did you mean {near}?"
                if near
                else "give the path of a task YAML file or of a folder of them"
            )
            raise UserError(
                f'task file {p} does not exist; {fix} (docs/evaluation.md, "Your own tasks (task files)")'
            )
    for p in out:  # reading a named pipe waited for a writer, forever
        if not p.is_file():
            raise UserError(
                f"task file {p} is not a regular file (a pipe, socket or device); save the task as a file"
            )
    return out


def refuse_data_file(path: Path) -> Path:
    """`path`, named as a task file, unless it is a data file (CSV, TSV, JSON lines, parquet): read as
    YAML, a CSV was "holds '<the whole file>', not a mapping of fields", one line as long as the file."""
    kind = plain_suffix(path)
    if kind in BUILDERS and kind != ".json":  # a .json file may be a task spec: YAML reads JSON
        raise UserError(
            f"task file {path} is a {kind} data file, not a task spec; pass the task's YAML file, whose "
            '`data:` names this file (docs/evaluation.md, "Your own tasks (task files)")'
        )
    return path


def builder_of(paths: dict[str, Path], where: str) -> str:
    """The one `datasets` builder that reads all of `paths` ({split: file}); else one line."""
    for path in paths.values():
        suffix = path.suffix.lower()
        if suffix in UNPACK_COMMANDS and plain_suffix(path) in BUILDERS:
            raise UserError(f"{where}: {compressed_unread(path, 'task files do not read')}")
    # .csv and .tsv share a builder but not a separator: a mix would read one with the other's
    kinds = {
        None
        if p.suffix.lower() in COMPRESSIONS and plain_suffix(p) == ".parquet"
        else (plain_suffix(p) if plain_suffix(p) in (".csv", ".tsv") else BUILDERS.get(plain_suffix(p)))
        for p in paths.values()
    }
    if None in kinds or len(kinds) != 1:
        found = ", ".join(f"{split} {p.name}" for split, p in paths.items())
        # which way to convert: a CSV or TSV cell is one text, so a file of lists cannot become one
        nested = {".csv", ".tsv"} & kinds and kinds - {".csv", ".tsv", None}
        hint = "; a CSV or TSV cell is one text, so write them all as JSON lines or parquet" if nested else ""
        raise UserError(f"{where}: data files must all be {KINDS}, one kind (got {found}){hint}")
    kind = kinds.pop()
    return BUILDERS.get(kind, kind)


def _has_rows(path: Path, builder: str, where: str) -> bool:
    """Whether a data file holds at least one example (`datasets` refuses an empty split outright)."""
    if builder == "parquet":
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(path).metadata.num_rows > 0
        except Exception:  # noqa: BLE001 (not parquet: `load_dataset` names the problem)
            return True
    filled, head = 0, ""  # the non-blank lines: their count, and the first three without their spaces
    with text_lines(path, where) as text:  # read through: a byte that is not UTF-8 is refused here
        for line in text:
            if line.strip():
                head += "".join(line.split()) if filled < 3 else ""
                filled += 1
    if builder == "json" and head == "[]":  # a .json of an empty array, `[]` or `[\n]`:
        return False  # datasets said `Instruction "train" corresponds to no data!`
    return filled > (1 if builder == "csv" else 0)


@contextlib.contextmanager
def text_lines(path: Path, where: str, fix: str | None = None) -> Iterator[Iterable[str]]:
    """The lines of a text data file, decompressed, a leading UTF-8 byte order mark dropped (Windows tools
    write one: it was part of the first header name or the first JSON line). One that is not UTF-8
    (`datasets` said only "An error occurred while generating the dataset") or is cut short is one line
    naming it (and `fix`, when given, as what to do: a file its reader cannot edit, a hub cache
    snapshot's). Every task data file is read here, a BEIR folder's too."""
    try:
        with open(path, "rb") as raw, decompressed(path, raw) as stream:
            yield io.TextIOWrapper(stream, encoding="utf-8-sig")
    except UnicodeDecodeError as exc:  # UTF-16 (with its byte order mark): Excel's "Unicode text"
        what, utf16 = not_utf8(exc)
        raise UserError(f"{where}: {path} {what}; {fix or save_as_utf8(path, utf16)}") from None
    except (OSError, *DECOMPRESS_ERRORS) as exc:  # read whole first, so a file cut short is named
        raise UserError(
            f"{where}: cannot read {path} ({exc or type(exc).__name__}); download it again or recompress it"
        ) from None


def csv_options(paths: Iterable[Path], tsv: bool, where: str, fix: str | None = None) -> dict:
    """The options of `datasets`' csv builder for these CSV or TSV files (a task's, or a hub mirror's),
    whose headers are checked first. Every cell is read as the text written: pandas' inference made
    `00123` the number 123 (and `0123` too: two labels, one class; a text column of ids lost its zeros),
    `1e5` and ` 12` numbers; labels are converted deliberately (`custom_labels.written`). Only an empty
    cell is missing: pandas' default also read "NA", "N/A", "NULL", "None" and "nan" as missing, so a
    class named N/A or a text saying NULL was refused as "a row has an empty label". A dataset card's
    features still cast the text (`datasets` after pandas). `fix`: what a refusal says to do instead of
    editing the file (a hub cache snapshot's files are not the reader's to edit)."""
    width = max((_check_header(path, where, fix) for path in paths), default=0)
    as_written = dict.fromkeys(range(width), str)  # by position: a column named twice is refused above
    return {**({"sep": "\t"} if tsv else {}), "keep_default_na": False, "converters": as_written}


def _check_header(path: Path, where: str, fix: str | None = None) -> int:
    """The number of columns a CSV or TSV file's header names. One named twice is refused: the reader
    kept the first under the name and renamed the second (`stars.1`), so which of the two a task read was
    not the file's to say. So is a first row of more fields than the header names: pandas took the first
    column for row names and shifted the others left (a later row that long is pandas' own error)."""
    tsv = plain_suffix(path) == ".tsv"
    with text_lines(path, where, fix) as text:
        records = (r for r in csv.reader(text, delimiter="\t" if tsv else ",") if "".join(r).strip())
        names = next(records, [])  # a byte order mark is dropped by `text_lines`
        try:
            first = next(records, [])
        except csv.Error:  # a field over csv's size limit: pandas reads it
            first = []
    other = {";": "semicolons", "\t": "tabs", ",": "commas"}
    other.pop("\t" if tsv else ",")
    sep = next((c for c in other if len(names) == 1 and c in names[0]), None)
    if sep is not None:  # was pandas' "Error tokenizing data. C error: Expected 1 fields in line 12, saw 2"
        fix = {";": "save it with commas (Excel: CSV UTF-8)", "\t": "name it .tsv", ",": "name it .csv"}[sep]
        raise UserError(
            f"{where}: {path}'s header is one column, {names[0]!r}: the file is separated by {other[sep]}, but "
            f"a {'.tsv' if tsv else '.csv'} file is read as separated by {'tabs' if tsv else 'commas'}; {fix}"
        )
    twice = next((n for i, n in enumerate(names) if n and n in names[:i]), None)
    if twice is not None:
        own = f"rename one of them (a reader keeps the first as {twice!r} and the second as '{twice}.1')"
        raise UserError(f"{where}: {path}'s header names the column {twice!r} twice; {fix or own}")
    if len(first) > len(names):
        own = f"quote a field that holds a {'tab' if tsv else 'comma'}, or remove the separator ending each line"
        raise UserError(
            f"{where}: {path}'s first row has {len(first)} fields but its header names {len(names)} columns, "
            f"so a reader takes the first for row names; {fix or own}"
        )
    return len(names)


def load_local(paths: dict[str, Path], where: str) -> dict:
    """{split: datasets.Dataset} read from local files ({split: path}), checked first; each file is read
    alone, so a file without a column is a split without it (the caller names it), not None labels or
    a schema error of `datasets`. A TSV's cells are checked by the caller, which knows its rows' lines
    (`check_unquoted`)."""
    for s, p in paths.items():
        if p.is_dir():  # was "does not exist", of a folder that does
            raise UserError(f"{where}: data.{s} {p} is a folder; name the data file itself")
        if p.exists() and not p.is_file():  # a named pipe was said not to exist
            raise UserError(
                f"{where}: data.{s} {p} is not a regular file (a pipe, socket or device); save the data as a file"
            )
        if not p.is_file():
            raise UserError(
                f"{where}: data.{s} file {p} does not exist; fix data.{s} (a relative path is read from the "
                "task file's folder)"
            )
    builder = builder_of(paths, where)
    for s, p in paths.items():
        if not _has_rows(p, builder, where):
            raise UserError(f"{where}: the {s} split is empty ({p}); add examples to it")
    tsv = builder == "csv" and all(plain_suffix(p) == ".tsv" for p in paths.values())
    extra = csv_options(paths.values(), tsv, where) if builder == "csv" else {}
    found = {}
    # read into memory through a cache of its own, removed after: `datasets`' own cache ($HF_DATASETS_CACHE) kept
    # an Arrow copy of every task file read, a refused command's too (a label column of names and numbers)
    with _quiet(import_datasets()), tempfile.TemporaryDirectory(prefix="encoderlab-task-data-") as scratch:
        for s, p in paths.items():  # one at a time: loaded together, a split took the first one's columns
            try:
                # escaped: `datasets` reads data_files as glob patterns, so `train[1].csv` read train1.csv
                # beside it, silently, and `train*.csv` every CSV file of the folder
                files = {s: glob.escape(str(p))}
                read = import_datasets().load_dataset(
                    builder, data_files=files, cache_dir=scratch, keep_in_memory=True, **extra
                )
                found[s] = read[s]
            except Exception as exc:  # noqa: BLE001 (a malformed file: pyarrow, pandas or json errors)
                if plain_suffix(p) == ".jsonl":
                    _name_bad_json_line(p, s, where)
                first = first_line(cause(exc))
                raise UserError(f"{where}: cannot read data.{s} ({p}): {first}") from None
    return found


def _name_bad_json_line(path: Path, split: str, where: str) -> None:
    """Refuse a JSON-lines file's first line that is not one JSON object, by its line number (1-based, as an
    editor counts). pyarrow's own message said "JSON parse error: ... in row 5" of the sixth line, counted
    from 0 and named with no fix; a file whose every line parses (pyarrow failed on something else, such
    as a column of mixed types) returns and is refused in pyarrow's words. `.jsonl` only: a `.json` file
    may be one JSON document over many lines, which a line scan would misname."""
    with text_lines(path, where) as text:
        try:
            for _ in json_objects(path, "".join(text)):
                pass
        except UserError as exc:
            raise UserError(f"{where}: cannot read data.{split}: {exc}") from None


def check_unquoted(data, split: str, places: RowPlaces, where: str, fix: str | None = None) -> None:
    """Refuse a TSV cell holding a tab. Only quoting puts one there, and a plain TSV does not quote: a
    text that starts with a double quote (`"Great" they said`) was read up to the next quote in the
    file, tabs and lines included, so the rows between became one cell of one example, without a word.
    The row is named as every row's refusal names it (`places`: its split and its line, where the
    quote opens). `fix`: what to do instead of editing the file (`csv_options`)."""
    for column in data.column_names:
        i = next((i for i, v in enumerate(data[column]) if isinstance(v, str) and "\t" in v), None)
        if i is not None:
            own = (
                'quote that field whole ("..." with inner quotes doubled) or remove the leading quote, or '
                "write the data as JSON lines"
            )
            raise UserError(
                f"{where}: {places.of(split, i)}: the row's {column!r} holds a tab: a field starting with a "
                f"double quote is read up to the next quote, across tabs and lines, so several rows became "
                f"one; {fix or own}"
            )


def cause(exc: BaseException) -> BaseException:
    """The parser's own error under `datasets`' "An error occurred while generating the dataset",
    which was all the line said (a CSV's unclosed quote: pandas' "EOF inside string starting at row 5")."""
    for _ in range(5):
        inner = exc.__cause__ or exc.__context__
        if inner is None or not str(exc).startswith("An error occurred while generating the dataset"):
            break
        exc = inner
    return exc


@contextlib.contextmanager
def _quiet(datasets) -> Iterator[None]:
    """`datasets` without its progress bars: a task's files are read in well under a second, and the
    bars ("Generating train split: 12 examples") were the stderr lines of every task-file run, so a
    command refused after the tasks were read printed them above its one error line. Nor its error
    log: a malformed file's "Failed to read file ..." came above the line that says the same."""
    was, verbosity = datasets.is_progress_bar_enabled(), datasets.logging.get_verbosity()
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)
    try:
        yield
    finally:
        datasets.logging.set_verbosity(verbosity)
        if was:
            datasets.enable_progress_bars()
