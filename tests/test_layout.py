"""The test tree itself: pytest imports test files by basename (rootdir `prepend` mode, which the
sibling-helper imports rely on), so two test files with one name break collection of the whole suite."""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from importlib.metadata import packages_distributions
from pathlib import Path


def test_test_file_basenames_are_unique():
    root = Path(__file__).parent
    # helper modules too: a test imports them by basename, so two of one name shadow each other
    names = Counter(p.name for p in root.rglob("*.py") if p.name != "conftest.py")
    clashes = sorted(n for n, c in names.items() if c > 1)
    assert not clashes, f"rename one of each: {clashes} (pytest cannot collect two test modules of one name)"


def _declared_distributions() -> set[str]:
    import tomllib

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        specs += extra
    return {_normalise(re.split(r"[<>=!~\[; ]", s, maxsplit=1)[0]) for s in specs}


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _top_level_imports(root: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], path)
    return found


def test_every_third_party_import_is_a_declared_dependency():
    """CI installs only what pyproject.toml names: a test importing a package that merely happens to be
    in a developer's venv (statsmodels once) fails there and nowhere else."""
    repo = Path(__file__).parents[1]
    local = {p.stem for p in (repo / "tests").rglob("*.py")} | {"tests", "encoderlab"}
    installed = packages_distributions()
    declared = _declared_distributions()
    missing = []
    for root in ("src", "tests", "scripts"):
        for module, where in _top_level_imports(repo / root).items():
            if module in sys.stdlib_module_names or module in local:
                continue
            dists = {_normalise(d) for d in installed.get(module, [module])}
            if not dists & declared:
                missing.append(f"{module} ({where.relative_to(repo)})")
    assert not missing, (
        f"declare these in pyproject.toml (dependencies or the dev extra): {sorted(set(missing))}"
    )


def test_the_transformers_pin_excludes_releases_without_the_classes_we_import():
    """The source imports `EuroBertConfig` and transformers 5's config API (`rope_parameters`,
    `StrictDataclassError`). Their wheels, checked: 4.56.0 and 5.0.0 ship no `models/eurobert/`, 5.6.0 does;
    5.23 is the release the project was built on (docs/ecosystem choices). A looser pin let pip keep an
    old transformers, and export or EuroBERT loading then died on an ImportError."""
    import tomllib

    import transformers

    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    (pin,) = [s for s in project["dependencies"] if re.match(r"transformers\b", s)]
    floor = re.fullmatch(r"transformers>=(\d+)\.(\d+)(?:\.\d+)?(?:,<[\d.]+)?", pin)
    assert floor, f"pin transformers with a floor, as transformers>=5.23: {pin}"
    assert tuple(map(int, floor.groups())) >= (5, 23), pin
    installed = tuple(int(p) for p in transformers.__version__.split(".")[:2])
    assert installed >= tuple(map(int, floor.groups()))
