"""Refactors of the results layer keep the report's numbers: a fake study against saved numbers.

tests/study/golden/fake_report.json was written by golden_report.py from the code before the
results layer was rebuilt (one EvalRecord, eval/summary.py, one curves module); each regeneration
since is for a change stated in CHANGELOG.
"""

from __future__ import annotations

import json

import pytest
from golden_report import GOLDEN, make_fake_report


def _close(a, b, where: str) -> None:
    if isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), where
    elif isinstance(a, dict):
        assert set(a) == set(b), f"{where}: keys {sorted(set(a) ^ set(b))}"
        for k in a:
            _close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), f"{where}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def test_the_fake_studys_report_says_the_saved_numbers(tmp_path):
    got = json.loads(json.dumps(make_fake_report(tmp_path)))  # tuples and int keys as JSON has them
    want = json.loads(GOLDEN.read_text())
    for part in want:
        _close(got[part], want[part], part)
