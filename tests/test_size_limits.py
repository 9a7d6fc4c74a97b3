"""Issue 19's size rule, enforced: no module of src/encoderlab over about 500 lines and no function
over about 60, except declarative tables.

"About" is taken as 520 lines for a file (a docstring's growth should not fail the suite) and 60 for
a function, counted from its `def` (decorators aside) to its last line, docstring included. The
exceptions are named below, each with its reason; an exception that no longer needs to be one fails
too, so the list cannot outlive what it excuses.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "encoderlab"

MAX_FILE_LINES = 520
MAX_FUNCTION_LINES = 60

LONG_FUNCTIONS_ALLOWED = {
    # Declarative tables: one Task literal per built-in task, nothing but data.
    "eval/tasks/registry.py:_pocket_tasks": "the pocket suite's task table",
    "eval/tasks/registry.py:_paper_tasks": "paper 1's task table",
}


def _functions(root: Path = SRC):
    """(relative path:qualified name, lines) of every function and method in the package."""
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        stack: list[tuple[ast.AST, str]] = [(ast.parse(path.read_text()), "")]
        while stack:
            node, prefix = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{child.name}"
                    if not isinstance(child, ast.ClassDef):
                        yield f"{rel}:{name}", child.end_lineno - child.lineno + 1
                    stack.append((child, name + "."))


def test_no_module_is_over_about_500_lines():
    long = {
        p.relative_to(SRC).as_posix(): n
        for p in sorted(SRC.rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES
    }
    assert not long, f"split these modules (lines; at most {MAX_FILE_LINES}): {long}"


def test_no_function_is_over_60_lines_except_declarative_tables():
    lengths = dict(_functions())
    long = {k: n for k, n in lengths.items() if n > MAX_FUNCTION_LINES and k not in LONG_FUNCTIONS_ALLOWED}
    assert not long, f"split these functions into named helpers (lines; at most {MAX_FUNCTION_LINES}): {long}"
    stale = sorted(k for k in LONG_FUNCTIONS_ALLOWED if lengths.get(k, 0) <= MAX_FUNCTION_LINES)
    assert not stale, f"no longer over the limit (or gone): remove them from LONG_FUNCTIONS_ALLOWED: {stale}"


def test_the_check_finds_a_long_nested_function(tmp_path):
    body = "\n".join(f"        x{i} = {i}" for i in range(61))
    (tmp_path / "m.py").write_text(f"class A:\n    def f(self):\n{body}\n")
    assert dict(_functions(tmp_path)) == {"m.py:A.f": 62}
