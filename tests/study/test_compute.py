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


def test_a_damaged_count_that_may_be_null_names_the_node_json_fix_alone(tmp_path):
    """`tokens` and `flops` may be null (not counted): a wrong type there went through `coerce`'s union
    branch, which re-raised the member's refusal as a plain UserError, so the damaged node.json line kept
    the config fix "give a number such as 3e-4" beside its own "delete ... and run the study again"
    (`problem_of` found no `WrongType` to strip); `wall_s`, typed float alone, already said it without."""
    import pytest

    from encoderlab.errors import UserError
    from encoderlab.study.compute import _typed
    from encoderlab.study.data import StudyData
    from encoderlab.study.graph import Node

    node = Node(kind="eval", name="eval/x", config={}, deps=(), key="k")
    data = StudyData(spec=None, nodes=[node], folder=tmp_path)  # type: ignore[arg-type]
    for field_, kind in (("flops", "float"), ("tokens", "int"), ("wall_s", "float")):
        with pytest.raises(UserError) as refused:
            _typed(data, {"node": "eval/x", "kind": "eval", field_: "lots"})
        said = str(refused.value)
        assert f"is damaged (compute.{field_}: expected {kind}, got 'lots'); delete " in said, said
        assert "give" not in said, said
