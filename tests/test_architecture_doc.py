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


def listed_paths(text: str) -> set[str]:
    """Paths under src/encoderlab named in the folder list (the first code block), nesting by indent:
    `data/` then an indented `assets/` is `data/assets`."""
    block = text.split("```\nsrc/encoderlab/\n", 1)[1].split("```", 1)[0]
    found, parents = set(), {}
    for line in block.splitlines():
        name = line.split()[0] if line.strip() else ""
        if not name.endswith(("/", ".py")):
            continue
        depth = (len(line) - len(line.lstrip())) // 2
        path = "/".join([*(parents[d] for d in range(1, depth)), name.rstrip("/")])
        parents[depth] = name.rstrip("/")
        found.add(path)
    return found


def source_paths() -> set[str]:
    """Every package (at any depth) and top-level module of src/encoderlab, as the folder list names them."""
    src = ROOT / "src" / "encoderlab"
    packages = {p.parent.relative_to(src).as_posix() for p in src.rglob("*/__init__.py")}
    modules = {p.name for p in src.glob("*.py") if p.name != "__init__.py"}
    return packages | modules


def test_the_folder_list_names_every_package_and_core_module():
    listed = listed_paths((ROOT / "docs" / "architecture.md").read_text())
    assert not source_paths() - listed, (
        f"explain these in docs/architecture.md's folder list: {sorted(source_paths() - listed)}"
    )
    assert not listed - source_paths(), (
        f"docs/architecture.md lists what does not exist: {sorted(listed - source_paths())}"
    )


def test_the_folder_list_parser_nests_by_indent():
    text = "```\nsrc/encoderlab/\n  data/   x\n    assets/  y\n  eval/  z\n  cli.py  w\n  core: text\n```\n"
    assert listed_paths(text) == {"data", "data/assets", "eval", "cli.py"}
