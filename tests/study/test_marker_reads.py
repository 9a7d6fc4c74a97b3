"""`study run` reads each node's marker (node.json) once before its nodes run, and once in its report
(`marker.markers_read_once`): its checks, the plan and the resume each read every marker, and the report
read them all twice (its table, its compute summary), so a rerun of a finished study read each file three
to five times, a fresh run three. A study of ~90,000 eval nodes (gpu-210m) paid that per run."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

from fake_study import backend, pair_spec

from encoderlab.study.graph import build_graph
from encoderlab.study.marker import MARKER
from encoderlab.study.reads import unread_inputs
from encoderlab.study.runner import run_study


def _reading_backend():
    """The fake backend whose start check reads every marker as the real one does (`checks.check_start`
    asks `unread_inputs`, which reads them all, more than once)."""
    b = backend()
    b.check_start = lambda spec, study_dir, graph: [unread_inputs(spec, study_dir, graph) for _ in range(2)]
    return b


def _counting_reads(monkeypatch) -> Counter:
    reads: Counter = Counter()
    real = Path.read_text

    def read_text(self, *args, **kwargs):
        if self.name == MARKER:
            reads[self] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    return reads


def test_a_study_run_reads_each_marker_once_before_its_nodes_and_once_in_its_report(tmp_path, monkeypatch):
    """Was three reads of each marker in a fresh run, and three in a rerun of a finished study."""
    spec = pair_spec(eval=dataclasses.replace(pair_spec().eval, seeds=(0,)))  # 28 nodes: a tenth of a second
    reads = _counting_reads(monkeypatch)
    run_study(spec, tmp_path / "s", _reading_backend(), progress=False)
    markers = set((tmp_path / "s" / "nodes").rglob(MARKER))
    assert len(markers) == len(build_graph(spec, backend()).nodes)
    # looked for before any node runs (none there), then read by the report, written during the run
    assert set(reads) == markers and set(reads.values()) == {2}
    reads.clear()
    run_study(spec, tmp_path / "s", _reading_backend(), progress=False)  # finished: nothing runs
    assert set(reads) == markers and set(reads.values()) == {1}
