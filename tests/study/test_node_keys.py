"""Refactors keep what the built-in studies compute: their graphs' node keys against saved keys.

tests/study/golden/node_keys.json is written by golden_keys.py; see there for when to regenerate it.
"""

from __future__ import annotations

import json

from golden_keys import GOLDEN, all_keys


def test_every_built_in_study_at_every_scale_builds_the_saved_node_keys():
    got, want = all_keys(), json.loads(GOLDEN.read_text())
    assert sorted(got) == sorted(want), "the built-in studies or scales changed; regenerate golden_keys.py"
    changed = {
        graph: sorted(
            n for n in set(got[graph]) | set(want[graph]) if got[graph].get(n) != want[graph].get(n)
        )
        for graph in want
    }
    changed = {graph: nodes for graph, nodes in changed.items() if nodes}
    assert not changed, (
        f"node keys changed (state it in CHANGELOG, then run tests/study/golden_keys.py): {changed}"
    )
