"""`study run` into a finished study folder: it runs nothing, and says so in one line.

Found running paper2-detour's demo to its end (2026-12-07): the rerun printed a progress bar at 100% and the
report's paths, so a reader could not tell a rerun that reused every node from one that recomputed the
report or more. The study is `pair_spec` (76 nodes): what a rerun runs and says does not depend on how many
there are."""

from __future__ import annotations

from dataclasses import replace

from fake_study import backend, pair_spec

from encoderlab.study.graph import NodeKind, build_graph
from encoderlab.study.report import write_report
from encoderlab.study.runner import run_study


def _counting_backend(calls: list[str]):
    """The fake backend, noting each node it runs."""
    b = backend()
    for kind, k in list(b.kinds.items()):
        b.kinds[kind] = NodeKind(run=lambda ctx, _run=k.run: (calls.append(ctx.node.name), _run(ctx))[1])
    return b


def test_a_rerun_of_a_finished_study_runs_nothing_and_says_so(tmp_path, capsys):
    folder = tmp_path / "s"
    run_study(pair_spec(), folder, backend(), progress=False)
    assert "nothing to run" not in capsys.readouterr().err  # it ran every node
    report = (folder / "report" / "report.md").read_text()
    calls: list[str] = []
    run_study(pair_spec(), folder, _counting_backend(calls), progress=True)
    err = capsys.readouterr().err
    n = len(build_graph(pair_spec(), backend()))
    assert calls == []
    assert f"study folder {folder}: all {n} nodes finished, reused as they are; nothing to run" in err
    assert (folder / "report" / "report.md").read_text() == report


def test_a_rerun_with_a_node_to_run_does_not_say_nothing_to_run(tmp_path, capsys):
    folder = tmp_path / "s"
    run_study(pair_spec(), folder, backend(), progress=False)
    capsys.readouterr()
    spec = pair_spec()
    more = replace(spec, eval=replace(spec.eval, seeds=(*spec.eval.seeds, 9)))  # one fine-tuning seed more
    calls: list[str] = []
    run_study(more, folder, _counting_backend(calls), progress=False)
    assert calls and "nothing to run" not in capsys.readouterr().err


def test_study_report_on_a_finished_folder_writes_the_report_the_study_wrote(tmp_path):
    # the report's compute table counted the earlier report node when written again (found on paper2-detour's
    # demo, 2026-12-07): a `study report` of a finished folder must not depend on whether a report was written
    folder = tmp_path / "s"
    run_study(pair_spec(), folder, backend(), progress=False)
    written = {f: (folder / "report" / f).read_text() for f in ("report.md", "results.json")}
    assert '"report"' in (folder / "compute.jsonl").read_text()  # the report node has its compute line
    write_report(folder, figures=False)
    assert {f: (folder / "report" / f).read_text() for f in written} == written
