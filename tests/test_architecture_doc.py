"""docs/architecture.md names code as `path.py:name` (a function, class or method); every such name
must exist, so the reading paths it gives (a mask ratio from the CLI to the masked tokens) stay true. Its
folder list names every package and core module, and it names every seam written as a `typing.Protocol`."""

from __future__ import annotations

import ast
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


def protocol_members() -> set[str]:
    """The names `model/protocol.py:LanguageModel` declares: its methods, properties and annotated
    attributes (not `__call__`, which every nn.Module has)."""
    tree = ast.parse((ROOT / "src" / "encoderlab" / "model" / "protocol.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "LanguageModel")
    names = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    names |= {
        n.target.id for n in cls.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    return {n for n in names if not n.startswith("_")}


def test_the_models_contract_names_every_member_of_the_protocol():
    text = (ROOT / "docs" / "architecture.md").read_text()
    contract = text.split("**Models**", 1)[1].split("\n\n", 1)[0]
    unnamed = [n for n in sorted(protocol_members()) if not re.search(rf"`\.?{n}[`(]", contract)]
    assert not unnamed, f"docs/architecture.md's Models contract leaves out LanguageModel's {unnamed}"


def test_the_protocol_reader_sees_methods_and_attributes():
    assert {"forward", "lm_loss", "config", "anatomy", "add_token_rows"} <= protocol_members()


def protocol_classes(root: Path) -> dict[str, str]:
    """Each `typing.Protocol` class under `root` -> its module path (`train/metrics.py`)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                getattr(base, "id", getattr(base, "attr", None)) == "Protocol" for base in node.bases
            ):
                found[node.name] = path.relative_to(root).as_posix()
    return found


def unnamed_protocols(text: str, protocols: dict[str, str]) -> list[str]:
    """The protocols `text` names neither as `Name` (or `Name.method`, `Name(...)`) nor as `path.py:Name`."""
    return [
        f"{path}:{name}"
        for name, path in sorted(protocols.items())
        if not re.search(rf"[`:]{name}[`.(]", text)
    ]


def test_every_protocol_is_a_seam_the_architecture_doc_names():
    protocols = protocol_classes(ROOT / "src" / "encoderlab")
    assert {"LanguageModel", "BatchSource"} <= set(protocols)
    unnamed = unnamed_protocols((ROOT / "docs" / "architecture.md").read_text(), protocols)
    assert not unnamed, f"docs/architecture.md leaves out these seams (typing.Protocol classes): {unnamed}"


def test_a_new_protocol_left_out_of_the_doc_is_seen(tmp_path):
    (tmp_path / "sinks.py").write_text(
        "import typing\nfrom typing import Protocol\n"
        "class Sink(Protocol): ...\nclass Form(typing.Protocol): ...\nclass Plain: ...\n"
    )
    protocols = protocol_classes(tmp_path)
    assert protocols == {"Sink": "sinks.py", "Form": "sinks.py"}
    assert unnamed_protocols("the sink (`sinks.py:Sink`); a Form, unquoted", protocols) == ["sinks.py:Form"]
