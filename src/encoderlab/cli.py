"""The `encoderlab` command: a table of subcommands, each a typed function parsed by tyro.

The table maps command words to "module:function" so `encoderlab --help` imports nothing heavy
and each concern keeps its command code in its own package. Every `UserError` (and a full disk)
is printed as one line and exits non-zero; anything else is a bug and keeps its traceback. Every
command runs with SIGTERM turned into Ctrl-C (`interrupts.sigterm_as_interrupt`), so a scheduler's stop
and a Ctrl-C end the same way: cleanup runs, "interrupted; completed work is kept", exit 130.
Under `torchrun` every rank runs the command: an argument error and the interrupted line are said by
each node's first process (LOCAL_RANK 0, `launchenv.first_on_its_node`), and a command's refusals are agreed between the ranks and
said by rank 0 (`UserError.quiet` on the others; see `train.distributed.agreed`).
"""

from __future__ import annotations

import ast
import errno
import importlib
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

from encoderlab.errors import NO_ROOM, UserError, file_in_the_way, no_room, warnings_as_notes
from encoderlab.interrupts import (
    INTERRUPTED,
    forget_outputs,
    interrupts_in_shutdown,
    nothing_written,
    sigterm_as_interrupt,
    work_complete,
)
from encoderlab.launchenv import children_without_working_folder, first_on_its_node

Commands = dict[str, "str | Commands"]

COMMANDS: Commands = {
    "advise": "encoderlab.advise.commands:advise_command",
    "analyze": {
        "cka": "encoderlab.analysis.commands:cka_command",
        "transplant": "encoderlab.analysis.transplant_command:transplant_command",
        "probe": "encoderlab.analysis.commands:probe_command",
        "curves": "encoderlab.analysis.commands:curves_command",
    },
    "assets": {
        "list": "encoderlab.data.assets.commands:list_command",
        "fetch": "encoderlab.data.assets.commands:fetch_command",
    },
    "data": {
        "tokenizer": "encoderlab.data.commands:tokenizer",
        "prepare": "encoderlab.data.commands:prepare",
        "merge": "encoderlab.data.commands:merge",
        "inspect": "encoderlab.data.commands:inspect",
    },
    "export": "encoderlab.model.export:export_command",
    "eval": "encoderlab.eval.commands:eval_command",
    "bench": {
        "data": "encoderlab.bench.data:bench_data_command",
        "train": "encoderlab.bench.train:bench_train_command",
        "table": "encoderlab.bench.table:bench_table_command",
    },
    "pretrain": "encoderlab.train.cli:pretrain_command",
    "recipes": "encoderlab.train.recipelist:recipes_command",
    "study": {
        "run": "encoderlab.study.cli:run_command",
        "plan": "encoderlab.study.cli:plan_command",
        "show": "encoderlab.study.cli:show_command",
        "list": "encoderlab.study.cli:list_command",
        "report": "encoderlab.study.cli:report_command",
        "status": "encoderlab.study.cli:status_command",
    },
}


_PATH_ERRORS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR, errno.ELOOP}


def resolve(target: str) -> Callable:
    """Import the function named by "module:function"."""
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


def summary(target: str) -> str:
    """First docstring paragraph of the function named by "module:function", on one line (a summary
    wrapped over two lines was cut mid-sentence), read from its source file with `ast`, so listing the
    commands imports none of their modules (torch, sklearn, ...)."""
    module, name = target.split(":")
    # found by path: importlib's find_spec would import the parent packages (torch among them)
    path = Path(__file__).parent.joinpath(*module.split(".")[1:])
    source = (path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return " ".join((ast.get_docstring(node) or "").strip().partition("\n\n")[0].split())
    return ""


def _usage(path: list[str], node: Commands) -> str:
    prog = " ".join(["encoderlab", *path])
    version = "" if path else "  (or: encoderlab --version)"
    lines = [f"usage: {prog} COMMAND [ARGS]{version}", "", "commands:"]
    for word, sub in node.items():
        if isinstance(sub, str):
            lines.append(f"  {word:<12} {summary(sub)}")
        else:
            lines.append(f"  {word:<12} {' | '.join(sub)}")
    return "\n".join(lines)


def _dispatch(argv: list[str]) -> None:
    import tyro

    from encoderlab.cliargs import path_registry

    try:
        found = _command(argv)
    except UserError as exc:
        _once_per_node(exc)
        raise
    if found is None:
        return
    target, path = found
    with _tyro_errors().on_parse_error(_raise_parse_error):
        tyro.cli(resolve(target), args=argv, prog=" ".join(["encoderlab", *path]), registry=path_registry())


def _command(argv: list[str]) -> tuple[str, list[str]] | None:
    """The command `argv` names ("module:function") and its words, popped from `argv`; None once
    `--version` or a usage is printed. What it refuses, the arguments alone decide."""
    _refuse_undecodable(argv)
    if argv == ["--version"]:
        print(_version())
        return None
    node: str | Commands = COMMANDS
    path: list[str] = []
    while isinstance(node, dict):
        if not argv or argv[0] in ("-h", "--help"):
            print(_usage(path, node))
            return None
        word = argv.pop(0)
        if word not in node:
            where = " ".join(["encoderlab", *path])
            raise UserError(f"'{where}' has no command '{word}'; valid: {', '.join(node)}")
        node, path = node[word], [*path, word]
    from encoderlab.cliargs import refuse_repeated_flags

    refuse_repeated_flags(resolve(node), argv)
    return node, path


def _once_per_node(exc: UserError) -> UserError:
    """`exc`, which the arguments alone decide (the same in every process `torchrun` starts with them),
    said by each node's first process only: each rank printed it."""
    exc.quiet = exc.quiet or not first_on_its_node()
    return exc


def _version() -> str:
    """encoderlab's version and the libraries a bug report needs, read from their metadata (no import)."""
    from importlib import metadata

    from encoderlab import __version__

    def installed(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    libraries = ", ".join(f"{name} {installed(name)}" for name in ("torch", "transformers", "tokenizers"))
    return f"encoderlab {__version__} ({libraries}; Python {sys.version.split()[0]})"


def _refuse_undecodable(argv: list[str]) -> None:
    """An argument whose bytes are not UTF-8 (a name from a latin-1 file system) reaches Python as lone
    surrogates, which nothing that writes UTF-8 can encode: `pretrain --out $'r\\xff'` made the folder,
    then failed with a UnicodeEncodeError traceback when the tokenizer was saved into it."""
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise UserError(
                f"argument '{shown}' is not valid UTF-8; rename the file or folder it names to a UTF-8 name"
            ) from None


def _tyro_errors():
    """tyro's parse-error hook module: private in tyro 1.0 (pinned in pyproject), hence one seam."""
    from tyro import _errors

    return _errors


def _raise_parse_error(event) -> None:
    """Turn tyro's boxed parse error into the one-line UserError every other bad input gets."""
    te = _tyro_errors()
    if isinstance(event, te.UnrecognizedArgs):
        what = f"unrecognized arguments: {' '.join(event.tokens)}"
    elif isinstance(event, te.MissingArgs):
        names = [_display_name(a.arg) for a in event.missing_arguments]
        what = f"missing required arguments: {', '.join(names)}"
    elif isinstance(event, te.InvalidChoice):
        # sorted: for an optional choice tyro hands over a set's order, a different one in every process;
        # without "None": every optional choice defaults to None, which leaving the flag out says
        valid = sorted(c for c in event.choices if c != "None")
        what = f"{event.argument.display_name()} got {event.value!r}; valid: {', '.join(valid)}"
    elif isinstance(event, te.InstantiationFailure):
        what = _instantiation_line(event)
    elif isinstance(event, te.BadValue) and event.offending_value is None:
        what = _no_value(event.argument, event.prog)
    elif isinstance(event, te.BadValue):
        what = f"bad value {event.offending_value!r} for {event.argument.display_name()}"
    else:  # an event kind this version does not know: name it rather than guess
        what = f"the arguments were rejected ({type(event).__name__})"
    raise _once_per_node(UserError(f"{what}; see: {event.prog} --help"))


def _instantiation_line(event) -> str:
    """tyro's "no type matching ... could be instantiated from [...]" as what was wrong with the value, and
    for a list flag (`--lrs`, `--seeds`) the form that works: values as separate arguments, each a number."""
    name = event.argument.display_name() if event.argument is not None else "an argument"
    what = f"bad value for {name}: {event.message.strip().splitlines()[0].rstrip('.')}"
    given = re.search(r"instantiated from (\[.*\])$", what)
    tokens = ast.literal_eval(given.group(1)) if given else []
    kind = re.search(r"no type matching \{None\}\|(\{\[)?(INT|FLOAT)[ }]", what)
    noun = "an integer" if kind and kind.group(2) == "INT" else "a number"
    if kind and not kind.group(1) and len(tokens) == 1:  # an optional number: "{None}|FLOAT could be ..."
        return f"bad value for {name}: {tokens[0]!r} is not {noun}"
    # the value as typed, not tyro's type text ("no type matching {None}|{[FLOAT ...]}"), which says
    # nothing to someone who wrote a list as other tools take one
    given_as = f"bad value for {name}: {' '.join(tokens)!r}"
    if any("," in t for t in tokens):  # `--lrs 1e-4,5e-4`, as other tools take lists
        spaced = " ".join(v for t in tokens for v in t.split(",") if v)
        return f"{given_as} (values joined by commas); give several values separated by spaces, not commas: {name} {spaced}"
    if any(len(t.split()) > 1 for t in tokens):  # `--lrs "1e-4 5e-4"`: quoted, one argument
        spaced = " ".join(v for t in tokens for v in t.split())
        return f"{given_as} (one quoted argument); give several values as separate arguments, not one quoted one: {name} {spaced}"
    if kind and (bad := [t for t in tokens if not _reads_as(t, kind.group(2))]):  # `--seeds 1.5`
        return f"bad value for {name}: {bad[0]!r} is not {noun}"
    return what


def _reads_as(token: str, kind: str) -> bool:
    """Whether `token` reads as tyro's INT or FLOAT."""
    try:
        (int if kind == "INT" else float)(token)
    except ValueError:
        return False
    return True


def _no_value(argument, prog: str) -> str:
    """tyro's "bad value None": a flag given without its value, or a positional left out while a flag
    that is not one was given (`eval --model x`), which read as if None had been typed."""
    name = _display_name(argument)
    if name.startswith("-"):
        return f"{name} needs a value"
    return f"missing required arguments: {name} (given without a flag: {prog} {name} ...)"


def _display_name(argument) -> str:
    """A flag as typed; a positional as its usage line shows it (`RUN`, not the parameter's name `ckpt`)."""
    metavar = getattr(argument.lowered, "metavar", None)
    return metavar if argument.is_positional() and metavar else argument.display_name()


def _stdout_broken() -> bool:
    """Whether stdout is a pipe whose reader has gone: polled, its descriptor reports an error."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(event & select.POLLERR for _, event in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll() on this system, or no descriptor
        return False


def _unusable_path(exc: OSError) -> str:
    """The line for a path the user chose that cannot be used (read-only, a file where a folder must
    be, ...). A path through a file names the file: "Not a directory; ... fix its permissions" sent
    users to chmod a path whose fix is to name another."""
    blocking = file_in_the_way(exc.filename) if exc.errno == errno.ENOTDIR and exc.filename else None
    if blocking is not None and str(blocking) != str(exc.filename):
        return f"{blocking} is a file, so {exc.filename} cannot exist; fix the path"
    if blocking is not None:
        return f"{blocking} is a file, not a folder; fix the path"
    return f"cannot use {exc.filename}: {exc.strerror}; choose another path or fix its permissions"


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script (`argv` None: the interpreter's shutdown follows, and a signal
    during it gives the interrupted line and 130 too: `interrupts_in_shutdown`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is not None:
        _run(args)
        return
    with interrupts_in_shutdown(lambda: _said or _say_interrupted(args)):
        _run(args)


def _run(args: list[str]) -> None:
    """The command `args` names, its refusals and interruptions said in one line with their exit codes."""
    forget_outputs()
    try:
        # SIGTERM stops a command as Ctrl-C does; its own Python children never import from the working folder
        with sigterm_as_interrupt(), warnings_as_notes(), children_without_working_folder():
            _dispatch(list(args))  # it pops the command words; the interrupted line reads them
            work_complete()  # returned: a signal now, as the handlers are restored, is a note and exit 0
    except UserError as exc:
        if not exc.quiet:
            print(f"encoderlab: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        if not _stdout_broken():
            raise  # another pipe (a worker's): a bug, with its traceback
        # The reader of stdout went away (`... | head`): stop quietly, as `yes | head` does. Python's
        # own flush at exit would raise again, so stdout points at /dev/null from here on.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)  # 128 + SIGPIPE, what a shell reports for a process a closed pipe ended
    except OSError as exc:
        _exit_if_no_room(exc, args)
        if exc.errno not in _PATH_ERRORS:
            raise
        print(f"encoderlab: error: {_unusable_path(exc)}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        _interrupted(args)
    except RuntimeError as exc:
        _exit_if_no_room(exc, args)
        # A Ctrl-C (or SIGTERM) landing in a class body's `__set_name__` while torch imports (the first
        # seconds of a command) reaches here wrapped: "RuntimeError: Error calling __set_name__", a traceback.
        if not isinstance(exc.__cause__, KeyboardInterrupt):
            raise
        _interrupted(args)
    except Exception as exc:  # a Rust library's own exception for a full disk (`errors.no_room`)
        _exit_if_no_room(exc, args)
        raise


def _exit_if_no_room(exc: Exception, args: list[str]) -> None:
    """Exit 3 with one line when `exc` is a write that found no room (`errors.no_room`: a full disk, a spent
    quota, a file past the size limit); return otherwise."""
    room = no_room(exc)
    if room is None:
        return
    said, fix = NO_ROOM[room.errno]
    where = room.filename or "output"
    again = (
        "rerun with --resume (completed work is kept)"
        if _is_pretrain(args)
        else "rerun (completed work is kept and resumes)"
    )
    print(f"encoderlab: error: {said} while writing {where}; {fix} and {again}", file=sys.stderr)
    sys.exit(3)


_said: list[bool] = []
"""Whether this process said the interrupted line: a signal during its shutdown then says nothing more."""


def _interrupted(args: list[str]) -> None:
    """Say the command was interrupted (once per node) and exit 130."""
    _say_interrupted(args)
    sys.exit(INTERRUPTED)


def _say_interrupted(args: list[str]) -> None:
    _said.append(True)
    if not first_on_its_node():
        return
    if nothing_written():  # before its folder was made: there is nothing to keep or resume
        print("encoderlab: interrupted before anything was written; rerun the command", file=sys.stderr)
    else:
        print(f"encoderlab: interrupted; completed work is kept ({_how_to_resume(args)})", file=sys.stderr)


def _how_to_resume(args: list[str]) -> str:
    """What continues an interrupted command (`_is_pretrain`)."""
    return "rerun with --resume to continue" if _is_pretrain(args) else "rerun to resume"


def _is_pretrain(args: list[str]) -> bool:
    """Every command resumes when rerun as it was but `pretrain`, whose rerun without `--resume` is refused
    ("already holds a run"): "rerun to resume" after an interrupt or a full disk sent users into that
    refusal first."""
    return args[:1] == ["pretrain"]


if __name__ == "__main__":
    main()
