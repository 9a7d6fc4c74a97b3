"""Every module path and dotted name of encoderlab that README.md and docs/*.md name must exist.

Modules get split and renamed (`study/workers.py` out of `runner.py`, `eval/summarypage.py` out of
`protocol.py`); a doc that still names the old home reads as true and is not. This checks the names
the docs write in code spans: a module path under a package of encoderlab (`study/runner.py`,
`src/encoderlab/data/batch.py`, `encoderlab/outdir.py`), a `path.py:name` (the name must be in that
module), and a dotted `encoderlab.pkg.module.name` (it must import and resolve). Paths of other
projects (`run_qa.py`, `bigbio/hub/.../blurb.py`) start with no package of ours and are left alone.
docs/architecture.md's own reading path is held to the same rule by tests/test_architecture_doc.py.
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
