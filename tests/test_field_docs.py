"""Every field of the schemas users and callers read is documented where it is declared.

The configs promise a docstring per field (tyro shows them in `--help`, docs/ points at them), and
issue 19 asked for per-family task options "each field documented". A dataclass field counts as
documented when a string literal follows it in the class body; `ClassVar`s are not fields.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "encoderlab"

SCHEMAS = (
    "config.py",
    "train/config.py",
    "model/config.py",
    "data/sources.py",
    "eval/spec.py",
    "eval/tasks/custom.py",
    "eval/tasks/custom_data.py",
    "study/spec.py",
    "study/scales.py",
)
"""Modules whose dataclasses are configs, task and study schemas, or the records they load into."""


def _is_dataclass(cls: ast.ClassDef) -> bool:
    return any(
        getattr(d.func if isinstance(d, ast.Call) else d, "id", None) == "dataclass"
        for d in cls.decorator_list
    )


def undocumented_fields(source: str) -> list[str]:
    """'Class.field' for each dataclass field in `source` with no docstring after it."""
    missing = []
    for cls in ast.walk(ast.parse(source)):
        if not (isinstance(cls, ast.ClassDef) and _is_dataclass(cls)):
            continue
        for stmt, after in zip(cls.body, [*cls.body[1:], None], strict=True):
            if not isinstance(stmt, ast.AnnAssign) or ast.unparse(stmt.annotation).startswith("ClassVar"):
                continue
            doc = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            if not (doc and isinstance(after.value.value, str)):
                missing.append(f"{cls.name}.{ast.unparse(stmt.target)}")
    return missing


@pytest.mark.parametrize("module", SCHEMAS)
def test_every_schema_field_has_a_docstring(module):
    missing = undocumented_fields((SRC / module).read_text())
    assert not missing, f"document these fields of {module} (a string literal under each): {missing}"


def test_the_check_sees_a_missing_docstring_and_skips_classvars():
    source = (
        "@dataclass(frozen=True)\nclass A:\n    family: ClassVar[str] = 'x'\n    a: int\n"
        '    """Doc."""\n    b: int = 0\n\nclass NotData:\n    c: int\n'
    )
    assert undocumented_fields(source) == ["A.b"]
