"""The import rule of docs/architecture.md ("Layers"), enforced on every module of src/encoderlab.

Every `import` and `from ... import` is read with ast, at module level, inside functions (the lazy
imports that keep commands light) and under TYPE_CHECKING alike: a lazy import is still a dependency.
A module may import its own package, and any package of a lower layer; packages of one layer do not
import each other. A forbidden import fails naming the file, the line and the two layers.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "encoderlab"

CORE = (
    "__init__",
    "errors",
    "config",
    "atomic",
    "jsonlines",
    "paths",
    "locks",
    "outdir",
    "interrupts",
    "cliargs",
    "words",
    "lazy",
    "yamltext",
)
"""Single-module foundations (errors, configs, atomic writes, output folders, locks, ...): one layer,
`core`, whose modules may import each other and nothing above."""

LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("data",),
    ("model",),
    ("objectives",),
    ("train", "eval"),
    ("analysis",),
    ("study", "bench"),
    ("advise",),
    ("cli", "__main__"),
)
"""Bottom to top (docs/architecture.md, "Layers"); `__main__` is `python -m encoderlab`, the cli's twin."""

RANK = {name: rank for rank, layer in enumerate(LAYERS) for name in layer}


def _component(root: Path, module: str) -> str:
    """The layer name of `encoderlab.<first>...`: a package's folder name, `core` or `cli`."""
    first = module.split(".")[1] if "." in module else "__init__"
    if (root / first).is_dir():
        return first
    return "cli" if first in ("cli", "__main__") else "core"


def _imported(tree: ast.AST, module: str, is_package: bool):
    """(line, imported module) for every encoderlab import in `tree`, relative ones resolved."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "encoderlab")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                parts = parts[: len(parts) - node.level + (1 if is_package else 0)]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            if base == "encoderlab":  # `from encoderlab import x`: x is a module or a root name
                yield from ((node.lineno, f"encoderlab.{a.name}") for a in node.names)
            elif base.startswith("encoderlab."):
                yield node.lineno, base


def forbidden_imports(root: Path = SRC) -> list[str]:
    """Every import in the package at `root` that the layers forbid, as 'file:line: a -> b (why)'."""
    errors = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent)
        module = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        source = _component(root, module)
        if source not in RANK:
            errors.append(
                f"{rel}: package '{source}' is in no layer; add it to LAYERS and docs/architecture.md"
            )
            continue
        for line, target in _imported(
            ast.parse(path.read_text(encoding="utf-8")), module, path.stem == "__init__"
        ):
            dest = _component(root, target)
            if dest == source or RANK.get(dest, len(LAYERS)) < RANK[source]:
                continue
            why = "the same layer" if RANK.get(dest) == RANK[source] else "a higher layer"
            errors.append(f"{rel}:{line}: {source} imports {target} ({dest}, {why})")
    return errors


def private_imports(root: Path = SRC) -> list[str]:
    """Every `from encoderlab.X import _name` in the package at `root` where X is another module, as
    'file:line: module imports X._name'. An underscore name is its module's own: a second module that
    needs it makes it a public name of that module (or moves it), so renaming it inside its module
    cannot break a module that never says it uses it."""
    errors = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent)
        module = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level or node.module == module:
                continue
            if not (node.module or "").startswith("encoderlab"):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    errors.append(f"{rel}:{node.lineno}: {module} imports {node.module}.{alias.name}")
    return errors


def test_no_module_imports_another_modules_private_name():
    """`study/figures.py` imported `_figure`, `_save`, `_fig_loss` and `_fig_validation` from the modules
    split from it, and `bench/data.py` `data.prepare._wrap_ids`."""
    errors = private_imports()
    assert not errors, "private names imported across modules:\n" + "\n".join(errors)


@pytest.mark.parametrize(
    "code,expected",
    [
        (
            "from encoderlab.study.figurefile import Figure, _save\n",
            "imports encoderlab.study.figurefile._save",
        ),
        (
            "def f():\n    from encoderlab.data.prepare import _wrap_ids\n",
            "encoderlab.data.prepare._wrap_ids",
        ),
        ("from encoderlab.study.figurefile import Figure, save_figure\nfrom os import _exit\n", None),
        ("from encoderlab import __version__\n", None),
    ],
)
def test_a_private_import_is_named(tmp_path, code, expected):
    root = tmp_path / "encoderlab"
    (root / "study").mkdir(parents=True)
    (root / "study" / "bad.py").write_text(code)
    errors = private_imports(root)
    if expected is None:
        assert errors == []
    else:
        assert len(errors) == 1 and expected in errors[0] and "bad.py:" in errors[0], errors


def test_every_import_follows_the_layers():
    errors = forbidden_imports()
    assert not errors, "imports against docs/architecture.md's layers:\n" + "\n".join(errors)


def test_every_package_has_a_layer():
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in SRC.glob("*.py")}
    assert packages <= set(RANK), sorted(packages - set(RANK))
    assert modules <= set(CORE) | {"cli", "__main__"}, sorted(modules - set(CORE) - {"cli", "__main__"})


@pytest.mark.parametrize(
    "where,code,expected",
    [
        (
            "model/bad.py",
            "def f():\n    from encoderlab.eval.spec import Task\n",
            "model imports encoderlab.eval.spec",
        ),
        ("data/bad.py", "import encoderlab.train.config\n", "data imports encoderlab.train.config"),
        ("train/bad.py", "from ..eval import spec\n", "train imports encoderlab.eval (eval, the same layer)"),
        ("errors2.py", "from encoderlab import study\n", "core imports encoderlab.study"),
        ("study/ok.py", "from encoderlab.train import config\nfrom . import spec\n", None),
    ],
)
def test_a_forbidden_import_is_named(tmp_path, where, code, expected):
    root = tmp_path / "encoderlab"
    for package in ("data", "model", "eval", "train", "study"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / where).write_text(code)
    errors = forbidden_imports(root)
    if expected is None:
        assert errors == []
    else:
        assert len(errors) == 1 and expected in errors[0] and f"{where}:" in errors[0].replace("\\", "/"), (
            errors
        )


def doc_layers(text: str) -> dict[int, set[str]]:
    """docs/architecture.md's layer table: layer number -> the names in its packages column
    (`study/` as `study`, `cli.py` as `cli`, `encoderlab/__init__` as `__init__`)."""
    layers = {}
    for number, packages in re.findall(r"^\| (\d+) \| ([^|]+) \|", text, re.M):
        names = re.findall(r"`([^`]+)`", packages)
        layers[int(number)] = {
            n.removeprefix("encoderlab/").removesuffix("/").removesuffix(".py") for n in names
        }
    return layers


def test_the_architecture_docs_layer_table_is_the_one_enforced():
    """The doc's layer 0 listed the core modules but not `words`, which LAYERS counts as core."""
    layers = doc_layers((SRC.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8"))
    enforced = {rank: set(layer) for rank, layer in enumerate(LAYERS)}
    enforced[RANK["core"]] = set(CORE)
    assert layers == enforced


def test_the_layer_table_reader_sees_a_missing_module():
    text = "| 1 | `data/` | core only |\n| 0 | core: `errors`, `encoderlab/__init__` | x |\n| 2 | `cli.py` | all |\n"
    assert doc_layers(text) == {1: {"data"}, 0: {"errors", "__init__"}, 2: {"cli"}}
