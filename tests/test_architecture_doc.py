"""docs/architecture.md names code as `path.py:name` (a function, class or method); every such name
must exist, so the reading paths it gives (a mask ratio from the CLI to the masked tokens) stay true."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = re.compile(r"`([a-z_/]+\.py):([A-Za-z_][A-Za-z0-9_.]*)`")


def references(text: str) -> list[tuple[str, str]]:
    """(module path under src/encoderlab, dotted name) for each `path.py:name` in `text`."""
    return REFERENCE.findall(text)


def resolves(path: str, name: str) -> bool:
    module = importlib.import_module("encoderlab." + path.removesuffix(".py").replace("/", "."))
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def test_every_code_name_in_the_architecture_doc_exists():
    refs = references((ROOT / "docs" / "architecture.md").read_text())
    assert len(refs) >= 20, "the mask-ratio reading path cites its functions as `path.py:name`"
    missing = [f"{p}:{n}" for p, n in refs if not resolves(p, n)]
    assert not missing, f"docs/architecture.md names code that does not exist: {missing}"


def test_a_renamed_function_is_caught():
    assert not resolves("train/recipes.py", "build_recipe_from_strings")
    assert references("see `objectives/mlm.py:MLM.prepare` and `a.py`") == [
        ("objectives/mlm.py", "MLM.prepare")
    ]
