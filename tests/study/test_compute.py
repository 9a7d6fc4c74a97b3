"""The report's compute accounting (`study/compute.py`): records read at the file's boundary, totals
that keep unknown counts unknown."""

from __future__ import annotations

from encoderlab.study.compute import NodeCompute, Totals


def test_a_record_keeps_the_fields_the_report_reads_and_ignores_the_rest():
    record = {"node": "pretrain/clm", "kind": "pretrain", "key": "abc", "tokens": 64, "flops": None,
              "wall_s": None, "cpu_s": 2.5, "worker": 1, "started": "t0", "branched_from": "pretrain/mlm",
              "shared_steps": 2, "shared_tokens": 128}  # fmt: skip
    r = NodeCompute.of(record)
    assert (r.tokens, r.flops, r.wall_s, r.cpu_s) == (64, None, 0.0, 2.5)
    assert (r.branched_from, r.shared_steps, r.shared_tokens) == ("pretrain/mlm", 2, 128)
    assert NodeCompute.of({"node": "eval/x", "kind": "eval"}).shared_tokens == 0


def test_totals_keep_unknown_counts_unknown():
    t = Totals()
    t.add(None, None, 1.0, 2.0, 1)
    assert (t.tokens, t.flops, t.nodes) == (None, None, 1)
    t.add(10, 6e9, 0.5, 0.5, 3)
    t.add(None, None, 0.0, 0.0, 1)
    assert (t.tokens, t.flops, t.wall_s, t.cpu_s, t.nodes) == (10, 6e9, 1.5, 2.5, 5)
