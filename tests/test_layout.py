"""The test tree itself: pytest imports test files by basename (rootdir `prepend` mode, which the
sibling-helper imports rely on), so two test files with one name break collection of the whole suite."""

from __future__ import annotations

from collections import Counter
from pathlib import Path


def test_test_file_basenames_are_unique():
    root = Path(__file__).parent
    # helper modules too: a test imports them by basename, so two of one name shadow each other
    names = Counter(p.name for p in root.rglob("*.py") if p.name != "conftest.py")
    clashes = sorted(n for n, c in names.items() if c > 1)
    assert not clashes, f"rename one of each: {clashes} (pytest cannot collect two test modules of one name)"
