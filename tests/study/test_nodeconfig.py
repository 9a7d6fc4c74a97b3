"""The typed node configs (`study/nodeconfig.py`) carry every node's config whole.

For every node of every built-in study at the demo, cpu and smallest GPU scale (the larger GPU
scales repeat the smallest one's graph shape with other sizes; test_node_keys.py holds them), reading its config typed and writing it back
gives the very data its key hashes, so nothing the graph stores is lost or reshaped on the way to the
node functions (pretraining branches included). A config of another shape is refused naming the node.
"""

from __future__ import annotations

import pytest

from encoderlab.errors import UserError
from encoderlab.study.catalog import STUDIES, get_study, scales_of
from encoderlab.study.graph import Graph, build_graph
from encoderlab.study.nodeconfig import BranchFrom, CkaNode, EvalNode, PrepareNode, PretrainNode
from encoderlab.study.nodes import real_backend

TYPED = {"prepare": PrepareNode, "pretrain": PretrainNode, "eval": EvalNode, "cka": CkaNode}
SCALES = ("demo", "cpu", "gpu-210m")


@pytest.mark.parametrize("study", STUDIES)
def test_every_node_config_reads_back_typed_and_writes_the_same_data(study):
    kinds, branches = set(), 0
    for scale in (s for s in SCALES if s in scales_of(study)):
        for node in build_graph(get_study(study, scale), real_backend()):
            if node.kind in TYPED:
                typed = TYPED[node.kind].of(node)
                assert typed.data() == node.config, node.name
                kinds.add(node.kind)
                branches += isinstance(typed, PretrainNode) and typed.branch is not None
    assert {"prepare", "pretrain", "eval"} <= kinds
    if study == "paper1-pfs":
        assert "cka" not in kinds and branches > 0  # its shorter budgets branch from the longest run


def test_a_task_file_eval_node_keeps_its_files_and_a_suite_task_has_none():
    node = dict(model="m", source="asset", step=None, suite="pocket", task="t", task_signature="s",
                family="sc", lr=1e-4, seed=0, max_steps=None)  # fmt: skip
    assert "task_files" not in EvalNode(**node).data()
    graph = Graph()
    typed = EvalNode(**node, task_files=("tasks/a.yaml",))
    read = EvalNode.of(graph.add("eval", "eval/m/t/lr0.0001/s0", typed.data()))
    assert read == typed and read.data()["task_files"] == ["tasks/a.yaml"]


def test_a_branch_is_carried_as_the_node_it_starts_from():
    graph = build_graph(get_study("paper1-pfs", "demo"), real_backend())
    branched = [PretrainNode.of(n) for n in graph if n.kind == "pretrain" and "branch" in n.config]
    assert branched and all(
        isinstance(p.branch, BranchFrom) and p.branch.node in graph.nodes for p in branched
    )


def test_a_config_of_another_shape_is_refused_naming_the_node():
    graph = Graph()
    node = graph.add("eval", "eval/x", {"model": "m", "lr": "fast"})
    with pytest.raises(UserError, match="eval/x"):
        EvalNode.of(node)


def test_a_dataset_prepared_elsewhere_is_keyed_by_its_content_not_its_path():
    from encoderlab.study.spec import DataSpec

    d = DataSpec(name="main", corpus=("wiki-leads",), prepared="/somewhere/prepared")
    node = Graph().add("prepare", "prepare/main", PrepareNode(dataset=d, seq_len=128, prepared="ab12").data())
    assert "/somewhere" not in str(node.config) and node.config["prepared"] == "ab12"
    read = PrepareNode.of(node)
    assert (read.prepared, read.seq_len, read.dataset.name, read.dataset.prepared) == (
        "ab12",
        128,
        "main",
        None,
    )
    assert read.data() == node.config
    here = PrepareNode(dataset=d, seq_len=128).data()  # prepared by the study: no digest key at all
    assert (
        "prepared" not in here
        and PrepareNode.of(Graph().add("prepare", "prepare/main", here)).prepared is None
    )


def test_a_studys_data_types_each_eval_node_once_however_often_the_report_asks(monkeypatch):
    """`StudyData.eval_nodes`: the report asks `unfinished_evals` and `planned_tasks` per model and checkpoint,
    and typing every eval node's config on each call was a third of a small study's report."""
    from fake_study import backend, small_spec

    from encoderlab.study import data as study_data

    spec = small_spec()
    data = study_data.StudyData(spec=spec, nodes=list(build_graph(spec, backend())))
    evals = [n for n in data.nodes if n.kind == "eval"]
    typed = []
    monkeypatch.setattr(EvalNode, "of", classmethod(lambda cls, node: typed.append(node) or TYPED_OF(node)))
    models = sorted({TYPED_OF(n).model for n in evals})
    for model in models:
        final = [n for n in evals if TYPED_OF(n).model == model and TYPED_OF(n).step is None]
        assert data.unfinished_evals([model], None) == (len(final), len(final))
        assert set(data.planned_tasks([model], None)) == {model}
    assert len(typed) == len(evals) > 1


TYPED_OF = EvalNode.of
"""`EvalNode.of` as the module found it (the test above counts its calls)."""
