"""One name for a retrieval example's hard negative: `spec.NEGATIVE`, read by every module that writes,
reads or counts it. The literal was written in five places (`families.py`, `preflight.py`,
`study/evalcount.py`, `beir.py`, the task files' column lists), so a rename of the column would have left
a counter or a reader looking for the old key without a word (a train split of triplets counted, checked
or trained as pairs)."""

from __future__ import annotations

import ast
from pathlib import Path

from encoderlab.eval.spec import NEGATIVE

SRC = Path(__file__).resolve().parents[2] / "src" / "encoderlab"
USERS = (
    "eval/families.py",
    "eval/preflight.py",
    "eval/tasks/beir.py",
    "eval/tasks/irpairs.py",
    "eval/tasks/custom.py",
    "eval/tasks/custom_examples.py",
    "eval/tasks/custom_family.py",
    "eval/tasks/custom_rows.py",
    "study/evalcount.py",
)
"""The modules that handle hard negatives (`spec.py` defines the name)."""


def _literals(path: Path) -> list[int]:
    """Lines of `path` holding the string constant NEGATIVE's value, docstrings and f-string text aside."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value == NEGATIVE
    ]


def test_the_hard_negative_is_named_by_spec_negative_only():
    written = {name: lines for name in USERS if (lines := _literals(SRC / name))}
    assert written == {}, f"write spec.NEGATIVE, not the literal {NEGATIVE!r}: {written}"


def test_the_scan_finds_a_literal(tmp_path):
    """The check itself: a module writing the literal is found."""
    module = tmp_path / "m.py"
    module.write_text('ROW = {"query": "q", "negative": "n"}\n', encoding="utf-8")
    assert _literals(module) == [1]
