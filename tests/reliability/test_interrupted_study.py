"""A study interrupted before its first node leaves nothing behind; one with work, or a folder the user made, stays.

`study run` makes its folder before its checks, to hold its lock while it checks and fetches its assets. A
refusal removed the folder again, but Ctrl-C (or SIGTERM) while the assets were fetched exited 130 and left
an empty study folder that was not there before (`paper1-pfs --scale demo --out st`, 2 to 3.5 s in). Now an
interrupt removes, as a refusal does, the folder and the parents it made, with the records it wrote before a
node started (`outdir.undo_output`). The real SIGINT, sent to a command while it fetches, is in test_signals.py.
"""

from __future__ import annotations

import dataclasses

import pytest
from tests.study.fake_study import backend, small_spec

from encoderlab.data import assets
from encoderlab.outdir import MARKER
from encoderlab.study import runner
from encoderlab.study.runner import run_study


def _interrupted_fetch(monkeypatch):
    """The study misses an asset, and Ctrl-C lands while it is fetched."""

    def fetch(names):
        raise KeyboardInterrupt

    monkeypatch.setattr(assets, "fetch", fetch)
    b = backend()
    b.required_assets = lambda spec: ["tweets"]
    return b


def test_an_empty_folder_the_user_made_stays_when_the_study_is_interrupted(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    mine = tmp_path / "mine"
    mine.mkdir()
    with pytest.raises(KeyboardInterrupt):
        run_study(small_spec(), mine, _interrupted_fetch(monkeypatch), progress=False)
    assert mine.is_dir() and list(mine.iterdir()) == []


def test_a_study_interrupted_after_its_records_but_before_a_node_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))

    def graph_interrupted(spec, graph, backend, study_dir, **kw):
        assert {p.name for p in study_dir.iterdir()} >= {MARKER, "study.json", "graph.json"}
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_graph", graph_interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_study(small_spec(), tmp_path / "st", backend(), progress=False)
    assert list(tmp_path.iterdir()) == [], "the records of a study that ran no node were left behind"


def test_a_new_study_interrupted_in_a_node_keeps_its_folder_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    b = backend()

    def pretrain_interrupted(ctx):
        (ctx.out_dir / "partial.txt").write_text("a checkpoint on its way")
        raise KeyboardInterrupt

    kinds = {**b.kinds, "pretrain": dataclasses.replace(b.kinds["pretrain"], run=pretrain_interrupted)}
    with pytest.raises(KeyboardInterrupt):
        run_study(small_spec(), tmp_path / "st", dataclasses.replace(b, kinds=kinds), progress=False)
    assert list((tmp_path / "st").rglob("node.json"))  # the prepare node's
    assert list((tmp_path / "st").rglob("partial.txt")), "a node's work was removed"
    run_study(small_spec(), tmp_path / "st", backend(), progress=False)  # the rerun resumes in it
