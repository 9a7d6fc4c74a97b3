"""Refactors of the results layer keep the report's numbers: a fake study against saved numbers.

tests/study/golden/fake_report.json was first written by golden_report.py from the code before the
results layer was rebuilt (one EvalRecord, eval/summary.py, analysis/curves.py as the only curves
code, claims as a table of evaluators), which this test then checked. Regenerated since, for changes
stated in CHANGELOG: claims over pretraining seeds with Holm's correction (the claims' sentences, their
`p_holm`, `level` and `checkpoint` numbers; every number the old file had is the same), and the CKA
claim read from `analysis.cka_report.low_layer_summary` (its numbers and sentence only), and the claims note
naming Welch's test for runs that share fewer than two pretraining seeds (that one line), and the CKA
claim's sentence saying what its intervals cover and that Holm's correction leaves it out, and which
pretraining seed of each run it compared (words only).
The CKA claim's verdict says it compares one checkpoint of each run (its sentence's prefix only).
The mask-ratio figure's `model` column names runs by label, as every other figure does (that column only).
The results note names each task's metric (that one line). Every p-value is printed by `eval.stats.p_text`
(the results table's cells at 3 significant digits, as the claims already were, and "p < 0.001" below 0.001 in
both; the printed text only). The CKA claim's sentence says when the other layers too lie above seed noise and
the seed twin's training seed offset, and the CKA figure's CSV gains a `low_layer` column (words and a column
only). The fake study's four tested claims are at one
pretraining seed: each now gives a direction only ("holds in direction", `significant` null, `p_holm` null,
its p kept as `checkpoint_p`), with its sentence and the claims note saying so; no other number changed.
Scores and differences are printed to the digits of their interval (`words.estimate_text`: the
half-width at two significant digits, the score at its place; a difference rounding to zero unsigned): the
results table's cells and the claims' sentences only, every number in results.json the same.
The CKA figure's CSV gains `ratio_ci_low` and `ratio_ci_high` columns, each layer's interval (columns only).
The claims note says a reference was scored at one fine-tuning seed only where one was (that line only).
What may differ without changing a number: figure columns renamed (`RENAMED`), columns or keys the
old output did not have, a key the old output left out now present as null, and the order of the
rows of a figure.
"""

from __future__ import annotations

import json

import pytest
from golden_report import GOLDEN, make_fake_report

RENAMED = {"mask_ratio": {"ratio": "mask_ratio", "family": "name"}, "data_efficiency": {"family": "name"}}
"""Figure columns renamed since the golden file: figure -> {old name: new name}."""
AXES = {"layer", "step", "lr", "mask_ratio", "ratio_pct"}
"""Numeric columns that place a row (with the text columns, they identify it)."""


def _close(got, want, where: str) -> None:
    if isinstance(want, float) or isinstance(got, float):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12), where
    elif isinstance(want, dict):
        missing = sorted(set(want) - set(got))
        assert not missing, f"{where}: keys {missing} are gone"
        for k in want:
            _close(got[k], want[k], f"{where}.{k}")
        assert all(got[k] is None for k in set(got) - set(want) if k == "vs_baseline"), where
    elif isinstance(want, list):
        assert len(got) == len(want), f"{where}: {len(got)} vs {len(want)} items"
        for i, (x, y) in enumerate(zip(got, want)):
            _close(x, y, f"{where}[{i}]")
    else:
        assert got == want, where


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return text


def _figure_rows(got: list[dict], want: list[dict], rename: dict[str, str], where: str) -> None:
    """The same rows (in any order) with the same numbers in every column the old figure had."""
    want = [{rename.get(k, k): _number(v) for k, v in row.items()} for row in want]
    got = [{k: _number(row[k]) for k in want[0]} for row in got]
    ident = [k for k, v in want[0].items() if isinstance(v, str) or k in AXES]

    def key(row):
        return tuple(str(row[k]) for k in ident)

    assert sorted(map(key, got)) == sorted(map(key, want)), where
    by_key = {key(r): r for r in got}
    for row in want:
        _close(by_key[key(row)], row, f"{where}{key(row)}")


def test_the_fake_studys_report_says_the_saved_numbers(tmp_path):
    got = json.loads(json.dumps(make_fake_report(tmp_path)))  # tuples and int keys as JSON has them
    want = json.loads(GOLDEN.read_text())
    for part in ("table", "claims", "results_md", "claims_md"):
        _close(got[part], want[part], part)
    assert set(got["figures"]) == set(want["figures"])
    for name, rows in want["figures"].items():
        _figure_rows(got["figures"][name], rows, RENAMED.get(name, {}), f"figures.{name}")
