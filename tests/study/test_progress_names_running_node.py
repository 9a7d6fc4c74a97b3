"""The study's progress bar names the node that is running, while it runs.

At `--jobs 1` (the default) a node runs inside `submit` (`workers.InProcess`), and the bar's postfix was set
after it: for the minutes a pretraining node trained, the bar still named the node before it, finished
(`my-detour: 8%| 1/12 [10:08 ..., prepare/biomed]`)."""

from __future__ import annotations

from fake_study import small_spec

from encoderlab.study.graph import Backend, Graph, NodeKind
from encoderlab.study.runner import run_graph


def test_the_bar_names_each_node_before_it_runs(tmp_path, capsys):
    shown: dict[str, str] = {}

    def run(ctx):
        shown[ctx.node.name] = capsys.readouterr().err  # what the bar wrote since the last node ran
        return {}

    graph = Graph()
    graph.add("step", "prepare/main", {"n": 1})
    graph.add("step", "pretrain/slow-run", {"n": 2}, ("prepare/main",))
    run_graph(
        small_spec(), graph, Backend(kinds={"step": NodeKind(run=run)}, suite_tasks=lambda s: {}), tmp_path
    )
    assert "pretrain/slow-run" in shown["pretrain/slow-run"].rsplit("\r", 1)[-1]
    assert "prepare/main" in shown["prepare/main"]
