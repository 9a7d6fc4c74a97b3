"""Every `encoderlab ...` command the docs show names a command that exists and only flags it takes.

README.md and docs/*.md write commands in code blocks and inline code; a renamed or removed flag,
or a command word that moved, would leave them quietly wrong (test_readme.py runs only the
Quickstart). Each command line is walked through the CLI's own table (`cli.COMMANDS`) and its flags
checked against the ones tyro builds from the command's function (`cliargs._flags`, the table the
repeated-flag check uses), `--param NAME=` against the recipe's parameters. docs/errors.md is left
out: its rows are bad inputs on purpose, and tests/reliability runs them. The tests the docs cite as
proof (`tests/...py`, `test_...`) must exist too, errors.md's included, and every argument of every
command's `--help` must say what it is.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import pytest
import tyro

from encoderlab.cli import COMMANDS, resolve
from encoderlab.cliargs import _flags
from encoderlab.train.recipes import RECIPES, recipe_params

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "errors.md")]
COMMAND = re.compile(r"(?:^\s*(?:[A-Z_]+=\S*\s+)*|[\"'(]|-m\s+)encoderlab(?:\.cli)?\s+([a-z].*)")
"""A command starts a code line or span (after any `VAR=value` settings), follows a quote (`sbatch --wrap
"encoderlab ..."`) or `-m`."""
END = re.compile(r"\s(?:#|;|&&|>|2>)\s|\s[|]\s|\"|$")


def code_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) of every code line: code-block lines (a trailing backslash joins the
    next) and inline code spans, a span wrapped over lines of one paragraph joined (numbered by
    the line that closes it)."""
    out, block, pending, carry = [], False, "", None
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            block, pending, carry = not block, "", None
            continue
        if block:
            pending += line.rstrip().removesuffix("\\") + " "
            if not line.rstrip().endswith("\\"):
                out.append((number, pending))
                pending = ""
        elif not line.strip():
            carry = None  # a span does not cross a paragraph
        else:
            joined = line if carry is None else f"`{carry} {line.strip()}"
            closed, _, tail = joined.rpartition("`") if joined.count("`") % 2 else (joined, "", "")
            carry = tail.strip() if joined.count("`") % 2 else None
            out += [(number, span) for span in re.findall(r"`([^`]+)`", closed)]
    return out


def problems(text: str) -> list[str]:
    """What is wrong with each `encoderlab` command in `text`: an unknown command, a flag it does not
    take, a recipe parameter the recipe does not have."""
    found = []
    for number, code in code_lines(text):
        for match in COMMAND.finditer(code):
            words = match.group(1)[: END.search(match.group(1)).start()].split()
            node, path = COMMANDS, []
            while isinstance(node, dict) and words and words[0] in node:
                node, path = node[words[0]], [*path, words.pop(0)]
            if isinstance(node, dict) and words and all(w in node for w in words[0].split("\\|")):
                continue  # `encoderlab analyze cka\|transplant`: alternatives, each a command
            if isinstance(node, dict) and words:
                found.append(f"line {number}: no command 'encoderlab {' '.join(path + words[:1])}'")
                continue
            if isinstance(node, dict):
                continue  # a command group named alone (`encoderlab analyze`)
            flags = _flags(resolve(node))
            for word in words:
                flag = word.strip("[]()'\"`").partition("=")[0]
                if re.fullmatch(r"--[a-z][a-z0-9.-]*", flag) and flag not in flags:
                    found.append(f"line {number}: encoderlab {' '.join(path)} has no {flag}")
            recipe = next((b for a, b in zip(words, words[1:]) if a == "--recipe"), None)
            for name in re.findall(r"--param ([a-z_]+)=", " ".join(words)):
                if recipe in RECIPES and name not in recipe_params(recipe):
                    found.append(f"line {number}: recipe {recipe} has no parameter {name}")
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_documented_command_exists_with_its_flags(doc):
    found = problems(doc.read_text(encoding="utf-8"))
    assert not found, f"{doc.relative_to(ROOT)}: " + "; ".join(found)


def test_the_check_sees_a_wrong_command_flag_or_parameter():
    text = (
        "Run `encoderlab eval m --suite pocket --bogus 1`, then\n```bash\nencoderlab data prepare --source a \\\n"
        "    --tokens t --out d   # continued\nencoderlab frobnicate x\n"
        "encoderlab pretrain --recipe smoke-mlm --param steps=4 --param nope=1 --out r\n```\n"
        "`encoderlab recipes` and `encoderlab study run x --scale demo > log`\n"
        "A span wrapped over lines: `encoderlab bench train --size S\n[--bogus-wrapped] [--out F]`, then\n"
        "\nan open ` that a blank line ends\n\n`OMP_NUM_THREADS=2 encoderlab recipes --nope`\n"
    )
    assert problems(text) == [
        "line 1: encoderlab eval has no --bogus",
        "line 4: encoderlab data prepare has no --tokens",
        "line 5: no command 'encoderlab frobnicate'",
        "line 6: recipe smoke-mlm has no parameter nope",
        "line 10: encoderlab bench train has no --bogus-wrapped",
        "line 14: encoderlab recipes has no --nope",
    ]


def test_a_flag_made_without_its_no_pair_has_none():
    """`study plan --probe` is opt-in, made without tyro's `--no-probe` (FlagCreatePairsOff), which the
    parser refuses: a doc naming `--no-probe` was passed all the same, the check assuming every bool paired."""
    assert problems("`encoderlab study plan paper1-pfs --probe --no-probe`\n") == [
        "line 1: encoderlab study plan has no --no-probe"
    ]


def appending_flags() -> set[str]:
    """Every flag that keeps its values when repeated (`cliargs.Repeated`), over every command."""

    def leaves(node):
        for sub in node.values():
            yield from leaves(sub) if isinstance(sub, dict) else [sub]

    return {
        flag
        for target in leaves(COMMANDS)
        for flag, appends, _ in _flags(resolve(target)).values()
        if appends
    }


def test_the_readme_lists_the_flags_that_keep_every_value():
    """README says which flags keep every value when repeated and that any other given twice is
    refused; `--decontaminate` kept its values but was missing from the list."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = re.search(r"The flags\s+(.*?)\s+keep every value", text, re.DOTALL)
    assert listed, "README's sentence on repeated flags moved; update this test"
    assert set(re.findall(r"`(--[a-z-]+)`", listed.group(1))) == appending_flags()


def test_a_listed_flag_keeps_every_value_on_every_command_that_takes_several():
    """The README's list names flags, not commands: `analyze probe --tasks a --tasks b` was refused
    ("given more than once") while `eval --tasks a --tasks b` kept both. A listed flag that takes
    several values must append wherever it does (`bench data --source` takes one corpus)."""
    listed = appending_flags()
    wrong = [
        f"encoderlab {' '.join(words)} {flag}"
        for words in leaf_commands()
        for flag, appends, several in _flags(resolve(command_at(words))).values()
        if flag in listed and several and not appends
    ]
    assert not wrong, "take several values but refuse a repeat: " + ", ".join(sorted(set(wrong)))


def command_at(words: tuple[str, ...]) -> str:
    """The target (`module:function`) of the command named by `words`."""
    node = COMMANDS
    for word in words:
        node = node[word]
    return node


def positional_usage(fn) -> list[str]:
    """Positional arguments whose `--help` name misreads their count: one that takes several values
    must say so (`RUN ...`) and one that may be left out must be bracketed (`[NAME ...]`); the usage
    line `encoderlab assets fetch NAME [--all]` read as if a name were required."""
    import inspect
    import typing

    wrong = []
    for name, param in inspect.signature(fn).parameters.items():
        tp = typing.get_type_hints(fn, include_extras=True)[name]
        meta = tp.__metadata__ if typing.get_origin(tp) is Annotated else ()
        if not any(m is tyro.conf.Positional for m in meta):
            continue
        metavar = next((m.metavar for m in meta if getattr(m, "metavar", None)), name.upper())
        several = "tuple" in str(tp) or "list" in str(tp)
        required = any(
            getattr(m, "help_behavior_hint", None) == "(required)" for m in meta
        )  # refused when empty
        optional = param.default is not inspect.Parameter.empty and not required
        if several != metavar.rstrip("]").endswith("...") or optional != metavar.startswith("["):
            wrong.append(metavar)
    return wrong


def test_positional_arguments_show_their_count_in_usage():
    wrong = {" ".join(w): positional_usage(resolve(command_at(w))) for w in leaf_commands()}
    assert not {k: v for k, v in wrong.items() if v}


def missing_tests(text: str) -> list[str]:
    """Test files (`tests/...py`) and test functions (`test_...`) named in `text` that do not exist."""
    tests = ROOT / "tests"
    defined = {m for p in tests.rglob("*.py") for m in re.findall(r"^\s*def (test_\w+)", p.read_text(), re.M)}
    files = [f for f in re.findall(r"\btests/[\w/]+\.py\b", text) if not (ROOT / f).is_file()]
    return files + [t for t in re.findall(r"`(?:[\w/]+\.py::)?(test_\w+)`", text) if t not in defined]


@pytest.mark.parametrize("doc", [*DOCS, ROOT / "docs" / "errors.md"], ids=lambda p: p.name)
def test_every_test_the_docs_cite_exists(doc):
    """The docs prove claims by naming tests ("tested in `tests/train/test_trainer.py::test_...`"); a
    renamed or removed test must take its citation with it."""
    assert not missing_tests(doc.read_text(encoding="utf-8"))


def test_a_missing_test_citation_is_seen():
    text = "see `tests/train/test_gone.py::test_nothing_here`, `test_the_check_sees_a_wrong_command_flag_or_parameter`"
    assert missing_tests(text) == ["tests/train/test_gone.py", "test_nothing_here"]


def leaf_commands(node=COMMANDS, path=()) -> list[tuple[str, ...]]:
    """The command words of every command (`("study", "run")`, ...)."""
    out = []
    for word, sub in node.items():
        out += leaf_commands(sub, (*path, word)) if isinstance(sub, dict) else [(*path, word)]
    return out


def undescribed(help_text: str) -> list[str]:
    """Arguments in a tyro `--help` whose description is missing or one word (a parameter's bare name).
    tyro boxes the entries on a terminal (`│ NAME  description │`) and indents them by two spaces
    elsewhere; a description too long for the line goes on the lines below, further indented."""
    lines = []
    for line in help_text.splitlines():
        if line.startswith("│ "):
            line = "  " + line[2:].rstrip().removesuffix("│")
        if line.startswith("  ") and line.strip():
            lines.append(line.rstrip())
    found = []
    for i, line in enumerate(lines):
        if line.startswith("   "):
            continue  # the description of the entry above, continued
        name, _, desc = line.strip().partition("  ")
        if not desc.strip() and i + 1 < len(lines) and lines[i + 1].startswith("   "):
            desc = lines[i + 1]
        desc = re.sub(r"\((default|fixed to): [^)]*\)|\((required|repeatable)\)", "", desc).strip()
        if len(desc.split()) < 2:
            found.append(name.strip())
    return found


@pytest.mark.parametrize("words", leaf_commands(), ids=" ".join)
def test_every_argument_in_help_is_described(words, capsys, monkeypatch):
    """`encoderlab study report --help` described its folder as "folder" (tyro's fallback, the
    parameter's name, when the function's docstring has no `Args:` entry)."""
    from encoderlab.cli import main

    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit):
        main([*words, "--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: ") and re.search(r"\n +-h, --help +show this help message", out)
    assert not undescribed(out)


@pytest.mark.parametrize("words", leaf_commands(), ids=" ".join)
def test_no_help_names_a_constant_for_its_value(words, capsys, monkeypatch):
    """`bench train --help` said "profile ... for `PROFILE_STEPS` more steps", a name in the code the
    user cannot read; a help text gives the value (the bench test checks that one's number)."""
    from encoderlab.cli import main

    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit):
        main([*words, "--help"])
    assert not re.findall(r"`[A-Z][A-Z0-9]*_[A-Z0-9_]+`", capsys.readouterr().out)


@pytest.mark.parametrize("words", leaf_commands(), ids=" ".join)
def test_a_repeatable_flag_without_a_default_says_it_is_required(words, capsys, monkeypatch):
    """`data prepare --help` said only "(repeatable)" of --source, which the command will not run
    without: tyro's append action never marks a flag required (`cliargs.RequiredRepeated` does)."""
    import inspect

    from encoderlab.cli import main

    fn = resolve(command_at(words))
    flags = _flags(fn)
    needed = [
        f"--{name.replace('_', '-')}"
        for name, param in inspect.signature(fn).parameters.items()
        if param.default is inspect.Parameter.empty
        and flags.get(f"--{name.replace('_', '-')}", ("", False))[1]
    ]
    monkeypatch.setenv("COLUMNS", "300")
    with pytest.raises(SystemExit):
        main([*words, "--help"])
    options = " ".join(capsys.readouterr().out.replace("│", " ").split()).partition(" options ")[2]
    for flag in needed:
        entry = re.search(rf"{re.escape(flag)} (.*?)(?= --[a-z]|$)", options)
        assert entry and "(required" in entry.group(1), f"{flag}: {entry and entry.group(1)}"


def test_a_bare_help_entry_is_seen():
    boxed = "│ PATH        folder (required)  │\n│ --out PATH  Where it goes. (required) │\n│ --suite {a,b}\n│             Which suite. │"
    plain = " options\n ---\n  PATH        folder (required)\n  --suite {a,b}\n              Which suite.\n  --n INT     \n"
    assert undescribed(boxed) == ["PATH"] and undescribed(plain) == ["PATH", "--n INT"]


def missing_scripts_and_targets(text: str, makefile: str) -> list[str]:
    """Scripts (`scripts/NAME`) and make targets (`make NAME` as a command) named in `text` that the
    repository lacks: `python scripts/cpu_ladder.py > ladder-cpu.yaml` and `make demo` are commands the
    docs tell a reader to run, which `problems` (encoderlab's own commands only) does not read."""
    targets = set(re.findall(r"^([a-z][a-z0-9-]*)\s*:", makefile, re.M))
    scripts = [s for s in re.findall(r"\bscripts/[\w.-]+\.(?:py|sh)\b", text) if not (ROOT / s).is_file()]
    spans = [code for _, code in code_lines(text)]
    named = {m for code in spans for m in re.findall(r"(?:^|[;&|]\s*)make ([a-z][a-z0-9-]*)", code.strip())}
    return scripts + [f"make {t}" for t in sorted(named - targets)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_script_and_make_target_the_docs_name_exists(doc):
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert not missing_scripts_and_targets(doc.read_text(encoding="utf-8"), makefile)


def test_a_missing_script_or_make_target_is_seen():
    text = "```bash\nmake demo\nmake bogus   # no such target\npython scripts/gone.py > x\n```\nthen `scripts/cpu_ladder.py`\n"
    assert missing_scripts_and_targets(text, "demo: venv\n\tencoderlab study run\n") == [
        "scripts/gone.py",
        "make bogus",
    ]
