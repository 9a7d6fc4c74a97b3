"""Resuming a study whose `--prepared` folder was deleted once its pretraining finished (`study/absent.py`).

The folder (hundreds of GB at paper scale) is read by the dataset's prepare node and the pretraining nodes
training on it, and by nothing else: evaluations read models, the report the counts the prepare node
recorded. Every resume with a node to run was refused ("... the report among them reads it (it counts
its tokens)"), so a seed or task added after deleting the folder could not run. Now only a resume that
trains on it is refused; the report says the figures it says with the folder there, and `study plan DIR`
plans what `study run DIR` runs. Fake nodes (`fake_study.py`) but the real prepare node of the folder.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil

from tests.reliability.treestate import assert_unchanged, tree_state, world_state
from tests.study.absent_fixtures import (
    absent_backend,
    absent_inputs_registry,
    absent_spec,
    plan_text,
    refusal_text,
    tiny_prepared_folder,
)

from encoderlab.study.graph import build_graph
from encoderlab.study.report import write_report
from encoderlab.study.runner import node_dir, run_study

__all__ = [
    "absent_inputs_registry"
]  # its autouse fixture: the task file's task registered, the CLI's backend fake


def _figures(study) -> tuple[str, dict]:
    """The report's Markdown and results.json, as written (no figures drawn, as the fake report node)."""
    return (study / "report" / "report.md").read_text(), json.loads(
        (study / "report" / "results.json").read_text()
    )


def _corpora(figures) -> list[str]:
    """The report's lines counting its corpora's unique tokens."""
    return [line for line in figures[0].splitlines() if "unique tokens (" in line]


def _seeds(spec, *seeds):
    return dataclasses.replace(spec, eval=dataclasses.replace(spec.eval, seeds=seeds))


def _notes(out: str) -> str:
    return "\n".join(line for line in out.splitlines() if not line.startswith("note: "))


def test_a_seed_added_after_the_prepared_folder_is_deleted_runs_and_the_report_says_the_same(
    tmp_path, capsys
):
    """Was refused: "..., and resuming DIR runs N nodes (...): the report among them reads it (it counts its
    tokens); ...". The new seed's evaluations and the report run; every finished node is kept; the report's
    figures (its corpus's unique tokens, counted, and the runs' passes) are those it has when written with
    the folder there (they were estimated once it was gone), and `study plan DIR` plans the same with it
    gone as with it there, and `study run DIR` runs what it planned."""
    data = tiny_prepared_folder(tmp_path)
    study, spec = tmp_path / "s", _seeds(absent_spec(tmp_path, str(data)), 0)
    run_study(spec, study, absent_backend(), progress=False)
    finished = {k: v for k, v in tree_state(study).items() if k.startswith("nodes/") and "/report/" not in k}
    evaluation = next(n for n in build_graph(_seeds(spec, 0, 1), absent_backend()) if n.name.endswith("/s1"))
    data.rename(tmp_path / "moved")
    run_study(_seeds(spec, 0, 1), study, absent_backend(), progress=False)
    now = tree_state(study)
    assert all(now.get(k) == v for k, v in finished.items())  # nothing trained or evaluated again
    added = {k.split("/")[2] for k in now if k.startswith("nodes/eval/") and k not in finished}
    assert added and all("_s1-" in name for name in added)
    written = _figures(study)  # by the report node, the folder gone
    assert _corpora(written) and all(
        "unique tokens (counted in the prepared folder" in c for c in _corpora(written)
    )
    write_report(study, figures=False)  # again, now the report node has finished: counts it too
    gone = _figures(study)
    (tmp_path / "moved").rename(data)
    write_report(study, figures=False)  # with the folder there: counted from it
    assert _figures(study) == gone
    shutil.rmtree(node_dir(study, evaluation))  # a node to run: the plan checks and counts as the run
    there = plan_text(capsys, study)
    data.rename(tmp_path / "moved")
    planned = plan_text(capsys, study)
    assert f"note: dataset main: the prepared folder {data} is not there" in planned
    assert "its unique tokens are as its prepare node counted them" in planned
    assert _notes(planned) == _notes(there) and "counted in the prepared folder" in planned
    run_study(_seeds(spec, 0, 1), study, absent_backend(), progress=False)  # the plan's node runs, as planned
    assert node_dir(study, evaluation).is_dir() and _corpora(_figures(study)) == _corpora(written)


def test_a_resume_that_would_train_on_the_deleted_folder_is_refused_by_plan_and_run_writing_nothing(
    tmp_path, capsys, monkeypatch
):
    """A pretraining node to run reads the folder's tokens: `study plan DIR` and `study run DIR` refuse it in
    the same one line naming that node, and leave every folder and file as it was."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    data = tiny_prepared_folder(tmp_path)
    study, spec = tmp_path / "s", _seeds(absent_spec(tmp_path, str(data)), 0)
    run_study(spec, study, absent_backend(), progress=False)
    trained = node_dir(study, build_graph(spec, absent_backend()).nodes["pretrain/clm"])
    data.rename(tmp_path / "moved")
    shutil.rmtree(trained)
    before = world_state(tmp_path)
    planned = refusal_text(capsys, ["study", "plan", str(study)])
    assert planned == refusal_text(capsys, ["study", "run", str(study)])
    assert planned.startswith(f"study fake-pfs, dataset main: the prepared folder {data} is not there")
    # clm and the run continued from it: its evaluations run too, but read models
    assert re.search(rf", and \d+ nodes? to run in {study} reads? its tokens \(pretrain/clm\); give", planned)
    assert "\n" not in planned
    assert_unchanged(before)
