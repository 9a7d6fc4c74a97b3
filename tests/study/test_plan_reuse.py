"""`study plan FILE --out DIR` says what a rerun into DIR reuses and runs: after an edit of a study file,
which finished nodes were kept and which would run was said nowhere before anything ran (`study status`
reads the study as it last ran, not the edited file)."""

from __future__ import annotations

from dataclasses import replace

from fake_study import backend, small_spec

from encoderlab.study.cli import _reused_line
from encoderlab.study.graph import build_graph
from encoderlab.study.runner import run_study


def test_the_plan_of_an_edited_study_names_what_a_rerun_reuses_and_runs(tmp_path):
    spec, out = small_spec(), tmp_path / "study"
    run_study(spec, out, backend(), progress=False)
    nodes = list(build_graph(spec, backend()))
    assert (
        _reused_line(out, nodes)
        == f"study folder {out}: all {len(nodes)} nodes finished, reused as they are; nothing to run"
    )

    edited = replace(spec, eval=replace(spec.eval, seeds=(*spec.eval.seeds, 9)))  # one fine-tuning seed more
    graph = list(build_graph(edited, backend()))
    new = [n for n in graph if n.key not in {m.key for m in nodes}]
    evals = sum(n.kind == "eval" for n in new)
    assert evals and {n.kind for n in new} == {"eval", "report"}
    assert _reused_line(out, graph) == (
        f"study folder {out}: {len(graph) - len(new)} of {len(graph)} nodes finished, reused as they are; to run: "
        f"{evals} eval, 1 report (a node whose config changed runs as a new node; its old folder is kept)"
    )
