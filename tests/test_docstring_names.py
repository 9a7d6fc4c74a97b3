"""The module names and `module.name` references that encoderlab's own docstrings and comments give
must exist, as the docs' must (tests/test_doc_code_names.py, which reads README.md and docs/*.md only).

Two kinds of drift go unseen otherwise, since nothing imports a docstring:

- a function moved to another module while a docstring still names its old home (`hub.check_embedding_rows`
  after it moved to `model/headercheck.py`): a backticked `module.name`, where `module` is a module of the
  writer's own package or a dotted path from `encoderlab` (`study.needs`), whose `name` that module lacks
  but another module of its package defines, or that is written as a call (`name()`) or from `encoderlab.`.
  A dotted config path (`validation.rows`, `model.init`) or an attribute of a variable that happens to start
  with a module's name is none of these, so it is left alone.
- a package's module list (the `Modules:` or `Layout:` paragraph of its `__init__` docstring) that leaves out
  a module added since, or names one that is gone. Every package says what it is in a docstring.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "encoderlab"
SPAN = re.compile(r"`([^`\n]+)`")
REFERENCE = re.compile(r"(?:encoderlab\.)?([a-z_][a-z0-9_]*(?:\.[A-Za-z_]\w*)+)(\(.*\))?")
LIST_HEAD = re.compile(r"^(Modules|Layout):", re.MULTILINE)


def module_paths(root: Path = SRC) -> dict[str, Path]:
    """Dotted module path relative to the package root (`study.runner`, `eval.tasks`) -> its file."""
    out = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


@cache
def top_names(path: Path) -> dict[str, bool]:
    """The names a module binds at top level (also inside top-level `if`/`try`), each with whether it
    is a function or class."""
    names: dict[str, bool] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        for sub in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names[sub.name] = True
            elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                names.update({(a.asname or a.name).split(".")[0]: False for a in sub.names})
            elif isinstance(sub, (ast.Assign, ast.AnnAssign)):
                targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                names.update({n.id: False for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)})
    return names


def stale_references(text: str, package: str, modules: dict[str, Path]) -> list[str]:
    """The backticked `module.name` references in `text` (written in package `package`, dotted from the
    root, "" for the root) whose name is not in that module, as `span: where it is`."""
    defined_in: dict[str, list[str]] = {}
    for dotted, path in modules.items():
        for name, is_def in top_names(path).items():
            if is_def:
                defined_in.setdefault(name, []).append(dotted or "encoderlab")
    found = []
    for span in SPAN.findall(text):
        match = REFERENCE.fullmatch(span)
        if not match:
            continue
        parts = match.group(1).split(".")
        for cut in range(len(parts), 0, -1):
            head = ".".join(parts[:cut])
            module = next((m for m in (f"{package}.{head}".lstrip("."), head) if m in modules), None)
            if module is None:
                continue
            if cut == len(parts):
                break  # the span names a module
            name, top = parts[cut], module.split(".")[0]
            if name in top_names(modules[module]):
                break
            # Moved: another module of the same package defines it. A package's `__init__` holds few
            # names, so `data.path`, `model.init` or `model.to(dtype)` is a config path or a variable
            # unless written from `encoderlab.`.
            elsewhere = [m for m in defined_in.get(name, []) if m != module and m.split(".")[0] == top]
            explicit = span.startswith("encoderlab.")
            if modules[module].name == "__init__.py" and not explicit:
                break
            if elsewhere or explicit or match.group(2) is not None:
                found.append(
                    f"`{span}`: {module} has no {name}"
                    + (f" ({', '.join(elsewhere)} has)" if elsewhere else "")
                )
            break
    return found


def test_docstrings_name_only_what_the_named_modules_hold():
    modules = module_paths()
    stale = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).parts[:-1]
        for line in stale_references(path.read_text(encoding="utf-8"), ".".join(parts), modules):
            stale.append(f"{path.relative_to(SRC)}: {line}")
    assert not stale, "docstrings or comments name what is not there:\n" + "\n".join(stale)


def test_a_moved_function_is_seen(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "__init__.py").write_text("")
    (tmp_path / "model" / "hub.py").write_text("def load_hub(): ...\nCONFIG_KEYS = ()\n")
    (tmp_path / "model" / "headercheck.py").write_text("def check_embedding_rows(): ...\n")
    (tmp_path / "study").mkdir()
    (tmp_path / "study" / "__init__.py").write_text("")
    (tmp_path / "study" / "needs.py").write_text("class Needs: ...\n")
    modules = module_paths(tmp_path)
    text = (
        "as `hub.check_embedding_rows` does, `hub.load_hub()`, `hub.CONFIG_KEYS`, `headercheck.check_embedding_rows`;"
        " `study.needs.Needs`, `encoderlab.study.needs.Gone`, `study.needs.gone()`, `study.needs`;"
        " config paths and variables: `hub.revision`, `model.init`, `model.to(dtype)`, `study.name`"
    )
    assert stale_references(text, "model", modules) == [
        "`hub.check_embedding_rows`: model.hub has no check_embedding_rows (model.headercheck has)",
        "`encoderlab.study.needs.Gone`: study.needs has no Gone",
        "`study.needs.gone()`: study.needs has no gone",
    ]


def listed_modules(doc: str) -> set[str] | None:
    """The backticked names of a package docstring's module list (from `Modules:` or `Layout:` to the end of
    that paragraph), a subpackage's trailing `/` dropped; None when it has no list."""
    head = LIST_HEAD.search(doc)
    if head is None:
        return None
    paragraph = doc[head.start() :].split("\n\n", 1)[0]
    return {span.rstrip("/") for span in SPAN.findall(paragraph) if re.fullmatch(r"[a-z_][a-z0-9_]*/?", span)}


def package_problems(package: Path) -> list[str]:
    """What a package's `__init__` docstring gets wrong about its modules."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
    if not doc:
        return ["no docstring: say what the package is for and how its modules divide the work"]
    listed = listed_modules(doc)
    if listed is None:
        return []
    modules = {p.stem for p in package.glob("*.py") if not p.name.startswith("_")}
    modules |= {p.parent.name for p in package.glob("*/__init__.py")}
    defined = set().union(*(top_names(p) for p in package.glob("*.py")))
    problems = [f"its module list leaves out `{m}`" for m in sorted(modules - listed)]
    return problems + [
        f"its module list names `{n}`, which is no module" for n in sorted(listed - modules - defined)
    ]


def test_every_package_docstring_lists_its_modules_as_they_are():
    problems = [
        f"{pkg.relative_to(SRC.parent)}/__init__.py: {problem}"
        for pkg in sorted(p.parent for p in SRC.rglob("__init__.py"))
        for problem in package_problems(pkg)
    ]
    assert not problems, "\n".join(problems)


def test_a_module_list_missing_a_module_or_naming_a_gone_one_is_seen(tmp_path):
    (tmp_path / "__init__.py").write_text(
        '"""Things.\n\nModules: `fit` (fits), `gone` (was split), `RULES`.\n"""\n'
    )
    for name in ("fit", "options", "_private"):
        (tmp_path / f"{name}.py").write_text("RULES = ()\n")
    assert package_problems(tmp_path) == [
        "its module list leaves out `options`",
        "its module list names `gone`, which is no module",
    ]
    (tmp_path / "__init__.py").write_text("")
    assert package_problems(tmp_path)[0].startswith("no docstring")
