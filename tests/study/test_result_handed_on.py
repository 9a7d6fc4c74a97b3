"""A finished node's result is handed to the nodes downstream of it as its node.json reads back: in the
run that produced it, a NaN went on as NaN and a tuple as a tuple, which a later run (resuming, or
rendering the report again) reads as null and a list, so the two could disagree."""

from __future__ import annotations

from fake_study import small_spec

from encoderlab.study.graph import Backend, Graph, NodeKind
from encoderlab.study.runner import MARKER, node_dir, run_graph

RETURNED = {"loss": float("nan"), "pair": (1, 2), "ratios": [float("inf"), 0.5], "by_seed": {1: "a"}}
READ_BACK = {"loss": None, "pair": [1, 2], "ratios": [None, 0.5], "by_seed": {"1": "a"}}


def _graph() -> Graph:
    graph = Graph()
    graph.add("source", "source", {"n": 1})
    graph.add("sink", "sink", {"n": 1}, ("source",))
    return graph


def test_a_downstream_node_gets_the_same_result_in_the_first_run_and_on_resume(tmp_path):
    seen: list[dict] = []
    backend = Backend(
        kinds={
            "source": NodeKind(run=lambda ctx: dict(RETURNED)),
            "sink": NodeKind(run=lambda ctx: (seen.append(ctx.inputs["source"].result), {})[1]),
        },
        suite_tasks=lambda suite: {},
    )
    graph = _graph()
    first = run_graph(small_spec(), graph, backend, tmp_path, progress=False)
    (
        node_dir(tmp_path, graph.nodes["sink"]) / MARKER
    ).unlink()  # resumed: the sink runs again, reading source
    again = run_graph(small_spec(), _graph(), backend, tmp_path, progress=False)
    assert seen == [READ_BACK, READ_BACK]
    assert first == again == {"source": READ_BACK, "sink": {}}
