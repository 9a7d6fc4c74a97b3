"""Every built-in study's graph as node keys, to catch a change of what a study computes.

`python tests/study/golden_keys.py` writes tests/study/golden/node_keys.json from the built-in studies
(`study/catalog.py`) at every scale with the current code; test_node_keys.py checks the code still
builds the same graphs. A node's key hashes its resolved config and its dependencies' keys, so a
changed key means a study would train or evaluate something else (and recompute it in an existing
study folder). Regenerate only for a change whose effect on node keys is stated in CHANGELOG.

The file keeps the key of every prepare, pretrain, analysis and report node by name, and for the
evaluation nodes (thousands at the GPU scales) their count and one digest of their names and keys.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

HERE = Path(__file__).parent
GOLDEN = HERE / "golden" / "node_keys.json"


def graph_keys(study: str, scale: str) -> dict:
    """The keys of `study` at `scale`: {node name: key} except evaluations, which are summarized."""
    from encoderlab.study.catalog import get_study
    from encoderlab.study.graph import build_graph
    from encoderlab.study.nodes import real_backend

    graph = build_graph(get_study(study, scale), real_backend())
    evals = sorted((n.name, n.key) for n in graph if n.kind == "eval")
    keys = {n.name: n.key for n in graph if n.kind != "eval"}
    keys["eval/*"] = {"count": len(evals), "digest": hashlib.sha256(json.dumps(evals).encode()).hexdigest()}
    return keys


def all_keys() -> dict:
    """`graph_keys` for every built-in study x scale, as `study@scale`."""
    from encoderlab.study.catalog import built_in

    return {f"{study}@{scale}": graph_keys(study, scale) for study, scale in built_in()}


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(all_keys(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
