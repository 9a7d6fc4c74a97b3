"""Every module path and dotted name of encoderlab that README.md and docs/*.md name must exist.

Modules get split and renamed (`study/workers.py` out of `runner.py`, `eval/summarypage.py` out of
`protocol.py`); a doc that still names the old home reads as true and is not. This checks the names
the docs write in code spans: a module path under a package of encoderlab (`study/runner.py`,
`src/encoderlab/data/batch.py`, `encoderlab/outdir.py`), a `path.py:name` (the name must be in that
module), and a dotted `encoderlab.pkg.module.name` (it must import and resolve). Paths of other
projects (`run_qa.py`, `bigbio/hub/.../blurb.py`) start with no package of ours and are left alone.
docs/architecture.md's own reading path is held to the same rule by tests/test_architecture_doc.py.
Markdown files the docs, docstrings and comments name must be shipped (docs/*.md, the root's) or written by
encoderlab (`report.md`):
project notes kept outside the repository (a `papers.md`) are no reference a reader can follow.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "encoderlab"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PACKAGES = {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()}
MODULE_PATH = re.compile(r"`(?:src/)?(?:encoderlab/)?((?:[a-z_]+/)+[a-z_]+\.py)(?::([A-Za-z_][\w.]*))?`")
DOTTED = re.compile(r"`(encoderlab(?:\.[A-Za-z_]\w*)+)(?:\(|`)")


def resolves(dotted: str) -> bool:
    """Whether `encoderlab.a.b.c` is a module, or a name reached by attributes from the longest
    importable module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for part in parts[cut:]:
            if not hasattr(obj, part):
                return False
            obj = getattr(obj, part)
        return True
    return False


def missing_names(text: str) -> list[str]:
    """The module paths, `path.py:name`s and dotted names of encoderlab in `text` that do not exist."""
    found = []
    for path, name in MODULE_PATH.findall(text):
        if path.split("/")[0] not in PACKAGES:
            continue  # another project's file
        if not (SRC / path).is_file():
            found.append(path)
        elif name and not resolves("encoderlab." + path.removesuffix(".py").replace("/", ".") + "." + name):
            found.append(f"{path}:{name}")
    return found + [d for d in DOTTED.findall(text) if not resolves(d)]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_module_and_name_the_docs_give_exists(doc):
    missing = missing_names(doc.read_text(encoding="utf-8"))
    assert not missing, f"{doc.relative_to(ROOT)} names code that does not exist: {missing}"


def test_a_moved_module_or_renamed_name_is_seen():
    text = (
        "the pool is in `study/runner.py:_pool`, summaries in `eval/protocol.py:write_summary_page`, "
        "splits in `src/encoderlab/eval/tasks/custom_split.py`, the lock in `encoderlab.locks.gone_lock()`; "
        "fine: `study/workers.py:node_pool`, `encoderlab/outdir.py`, `encoderlab.eval.summary.EvalRecord`, "
        "another project's `bigbio/hub/blurb.py`, `run_qa.py`"
    )
    assert missing_names(text) == [
        "study/runner.py:_pool",
        "eval/protocol.py:write_summary_page",
        "eval/tasks/custom_split.py",
        "encoderlab.locks.gone_lock",
    ]


MARKDOWN_FILE = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*)([\w-]+\.md)\b")
"""A Markdown file name and the folders written before it (`docs/`, `report/`, another project's `Data/`)."""


def written_markdown(src: Path = SRC) -> set[str]:
    """The Markdown files encoderlab writes (`report.md`, `summary.md`, a model card's `README.md`): names
    given as a string literal of its source."""
    names = set()
    for path in src.rglob("*.py"):
        names |= set(re.findall(r"[\"'/]([\w-]+\.md)[\"']", path.read_text(encoding="utf-8")))
    return names


def unshipped_markdown(text: str, shipped: set[str], written: set[str]) -> list[str]:
    """The `*.md` files `text` names that are neither a doc of the repository nor a file encoderlab writes. A
    name under another folder than docs/ is another project's file or a path an output lands at, left alone."""
    found = {name for folder, name in MARKDOWN_FILE.findall(text) if folder in ("", "docs/")}
    return sorted(found - shipped - written)


def test_every_markdown_file_the_docs_name_is_shipped_or_written():
    shipped = {p.name for p in (ROOT / "docs").glob("*.md")} | {p.name for p in ROOT.glob("*.md")}
    written = written_markdown()
    assert {"report.md", "summary.md"} <= written
    found = {doc.name: unshipped_markdown(doc.read_text(encoding="utf-8"), shipped, written) for doc in DOCS}
    found = {name: files for name, files in found.items() if files}
    assert not found, f"docs name Markdown files the repository does not ship: {found}"


def test_a_notes_file_outside_the_repository_is_seen():
    text = (
        "see docs/studies.md, report/report.md and OUT/summary.md; the recap (papers.md, *Results*), "
        "`hub-schemas.md` s.1, docs/gone.md; another project's `Data/Dataset_Card/tner_ontonotes5.md`"
    )
    assert unshipped_markdown(text, {"studies.md"}, {"report.md", "summary.md"}) == [
        "gone.md",
        "hub-schemas.md",
        "papers.md",
    ]


def test_every_markdown_file_the_source_names_is_shipped_or_written():
    shipped = {p.name for p in (ROOT / "docs").glob("*.md")} | {p.name for p in ROOT.glob("*.md")}
    written = written_markdown()
    files = sorted([*SRC.rglob("*.py"), *(ROOT / "scripts").rglob("*.py")])
    found = {
        str(path.relative_to(ROOT)): unshipped_markdown(path.read_text(encoding="utf-8"), shipped, written)
        for path in files
    }
    found = {name: names for name, names in found.items() if names}
    assert not found, f"docstrings and comments cite Markdown files the repository does not ship: {found}"
