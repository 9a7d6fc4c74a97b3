"""The import rule of docs/architecture.md ("Layers"), enforced on every module of src/encoderlab.

Every `import` and `from ... import` is read with ast, at module level, inside functions (the lazy
imports that keep commands light) and under TYPE_CHECKING alike: a lazy import is still a dependency.
A module may import its own package, and any package of a lower layer; packages of one layer do not
import each other. A forbidden import fails naming the file, the line and the two layers.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import deque
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "encoderlab"

CORE = (
    "__init__",
    "errors",
    "config",
    "configforms",
    "atomic",
    "jsonlines",
    "paths",
    "locks",
    "outdir",
    "interrupts",
    "launchenv",
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


@functools.cache
def _nodes(text: str) -> tuple[ast.AST, ...]:
    """The nodes of the module `text` that the scans below read (imports, and `name.attr` reads), in
    `ast.walk`'s order. Parsed and walked once per text: the scans read src/encoderlab twice and walked
    each test module twice, and parsing and walking were all of this file's time. Only these few nodes
    are kept (keeping every node of ~700 modules made the garbage collector's passes slower than the
    walks saved); the cache keys on the text, so a file a test writes under tmp_path is read afresh.

    The walk is ast.walk's (breadth first, fields in order) written out: ast.walk's generators
    (iter_child_nodes, iter_fields) cost more than the parse over ~1 million nodes."""
    kept, todo = [], deque([ast.parse(text)])
    while todo:
        node = todo.popleft()
        if isinstance(node, (ast.Import, ast.ImportFrom)) or (
            isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
        ):
            kept.append(node)
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                todo.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                todo.append(value)
    return tuple(kept)


def _read_nodes(path: Path) -> tuple[ast.AST, ...]:
    return _nodes(path.read_text(encoding="utf-8"))


def _imported(nodes: tuple[ast.AST, ...], module: str, is_package: bool):
    """(line, imported module) for every encoderlab import in `nodes`, relative ones resolved."""
    for node in nodes:
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
        for line, target in _imported(_read_nodes(path), module, path.stem == "__init__"):
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
        for node in _read_nodes(path):
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


TESTS = SRC.parents[1] / "tests"


def _tests_module(root: Path, stems: dict[str, Path], module: str | None) -> Path | None:
    """The file under `root` (the tests folder) that `module` names: `tests.study.fake_study` by its path,
    a bare `fake_study` (a test folder is on sys.path while its tests run) by its file name (`stems`)."""
    if not module:
        return None
    if module.split(".")[0] == root.name:
        path = root.parent.joinpath(*module.split("."))
        return next((p for p in (path.with_suffix(".py"), path / "__init__.py") if p.is_file()), None)
    return stems.get(module)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_test_imports(root: Path = TESTS) -> list[str]:
    """Every underscore name a module under `root` takes from another one, as 'file:line: a imports b._name':
    `from test_x import _helper`, or `from tests.eval import test_x` then `test_x._helper`. A helper two
    test modules share is a public name of a helper module (tests/study/study_fixtures.py, tests/eval/fixtures.py,
    ...), so renaming a test's own helper cannot break another test module that never said it uses it."""
    errors, files = [], sorted(root.rglob("*.py"))
    stems = {p.stem: p for p in reversed(files)}
    for path in files:
        rel = path.relative_to(root.parent)
        nodes = _read_nodes(path)
        aliases = {}  # a local name bound to another module under `root` -> that module's file
        for node in nodes:
            if isinstance(node, ast.ImportFrom) and not node.level:
                source = _tests_module(root, stems, node.module)
                for alias in node.names:
                    if source not in (None, path) and _private(alias.name):
                        errors.append(f"{rel}:{node.lineno}: imports {node.module}.{alias.name}")
                    whole = _tests_module(root, stems, f"{node.module}.{alias.name}")
                    if whole not in (None, path):
                        aliases[alias.asname or alias.name] = (node.module + "." + alias.name, whole)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    whole = _tests_module(root, stems, alias.name)
                    if whole not in (None, path) and alias.asname:
                        aliases[alias.asname] = (alias.name, whole)
        for node in nodes:
            named = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            if named and _private(node.attr) and node.value.id in aliases:
                errors.append(f"{rel}:{node.lineno}: reads {aliases[node.value.id][0]}.{node.attr}")
    return errors


def test_no_test_module_imports_another_modules_private_name():
    """105 underscore names were taken across test modules: imports such as `from tests.study.test_files
    import _task_file` and `from test_mirror_pin import _cfg` of a test module's own helpers, and `hub._qrels`
    of one of hub_fixtures.py. The shared ones are public names of helper modules now."""
    errors = private_test_imports()
    assert not errors, "private names imported across test modules:\n" + "\n".join(errors)


def bare_cross_folder_imports(root: Path = TESTS) -> list[str]:
    """Every bare import of a test helper kept in another test folder (`from fake_study import ...` in
    tests/reliability), as 'file:line: module (in folder)', unless the file puts a folder on sys.path itself.
    pytest puts a test file's own folder on sys.path, and another one only once a test of that folder ran in
    the same process: under `-n 2 --dist loadfile` such an import worked or failed by which worker got the
    file (CI's collection error in tests/reliability/test_interrupted_study.py, 2026-12-07)."""
    errors, files = [], sorted(root.rglob("*.py"))
    homes: dict[str, list[Path]] = {}
    for p in files:
        homes.setdefault(p.stem, []).append(p.parent)
    for path in files:
        if "sys.path" in path.read_text(encoding="utf-8"):  # its own folders (a script, a hub fixture's)
            continue
        for node in _read_nodes(path):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                folders = homes.get(name.split(".")[0], [])
                if folders and name.split(".")[0] != root.name and path.parent not in folders:
                    where = ", ".join(str(f.relative_to(root.parent)) for f in folders)
                    errors.append(f"{path.relative_to(root.parent)}:{node.lineno}: {name} (in {where})")
    return errors


def test_a_test_helper_of_another_folder_is_imported_by_its_package_path():
    errors = bare_cross_folder_imports()
    assert not errors, "import these as tests.<folder>.<module>:\n" + "\n".join(errors)


def test_a_bare_import_from_another_test_folder_is_named(tmp_path):
    root = tmp_path / "tests"
    for folder in ("study", "reliability"):
        (root / folder).mkdir(parents=True)
    (root / "study" / "fake_study.py").write_text("X = 1\n")
    (root / "study" / "test_own.py").write_text("from fake_study import X\n")
    (root / "reliability" / "test_other.py").write_text(
        "from fake_study import X\nfrom tests.study.fake_study import X\n"
    )
    assert bare_cross_folder_imports(root) == [
        "tests/reliability/test_other.py:1: fake_study (in tests/study)"
    ]


@pytest.mark.parametrize(
    "code,expected",
    [
        ("from tests.study.test_a import _helper\n", "imports tests.study.test_a._helper"),
        ("def f():\n    from test_a import CASES, _helper\n", "imports test_a._helper"),
        ("from tests.study import test_a\n\nx = test_a._helper\n", "reads tests.study.test_a._helper"),
        ("import tests.study.test_a as a\n\nx = a._helper()\n", "reads tests.study.test_a._helper"),
        ("from tests.study.helpers import _helper\n", "imports tests.study.helpers._helper"),
        ("from tests.study.test_a import CASES, helper\nfrom os import _exit\n", None),
        ("from tests.study import test_a\n\nx = test_a.cache\n", None),
        ("from test_b import _own\n", None),  # its own name: a module may import itself
    ],
)
def test_a_private_test_import_is_named(tmp_path, code, expected):
    root = tmp_path / "tests"
    (root / "study").mkdir(parents=True)
    for name in ("test_a", "helpers"):
        (root / "study" / f"{name}.py").write_text("CASES = []\n\ndef _helper():\n    pass\n")
    (root / "study" / "test_b.py").write_text(code)
    errors = [e for e in private_test_imports(root) if "test_b.py:" in e]
    if expected is None:
        assert errors == []
    else:
        assert len(errors) == 1 and expected in errors[0], errors


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
