"""Resuming a study whose local inputs that only finished nodes read were moved or deleted since.

The start checks (`checks.check_inputs`) looked for every local corpus file, tokenizer folder and start
model of the study, so a finished study whose start model folder or corpus was since moved or deleted
was refused on a resume (to render its report again) for inputs no node would read again; hub ids were
already asked for only when a node still to run reads them. Now the local inputs are looked for on
the same terms (`reads.unread_inputs`): a node still to run (unfinished, or downstream of one:
`runner.pending_nodes`) still has its inputs checked first. The nodes are fake (`fake_study.py`), the
checks real.
"""

from __future__ import annotations

import dataclasses
import shutil

import pytest
from fake_study import backend as fake_backend
from fake_study import small_spec, tiny_corpus
from tests.reliability.test_hostile_arguments import model_folder
from tests.reliability.treestate import assert_unchanged, tree_state, world_state

from encoderlab.errors import UserError
from encoderlab.study.checks import check_start
from encoderlab.study.graph import build_graph
from encoderlab.study.runner import node_dir, run_study
from encoderlab.study.spec import DataSpec


def _backend():
    backend = fake_backend()
    backend.check_start = lambda spec, study_dir, graph: check_start(spec, study_dir, graph)
    return backend


def _spec(tmp_path):
    """`small_spec` reading a local corpus and tokenizer, run mlm20 continuing a local model folder."""
    corpus = tiny_corpus(tmp_path / "corpus.jsonl", 60)
    model_folder(tmp_path)
    model = str(tmp_path / "model")
    spec = small_spec()
    runs = tuple(dataclasses.replace(r, init=model) if r.name == "mlm20" else r for r in spec.runs)
    data = (DataSpec(name="main", corpus=(str(corpus),), tokenizer=model, decontaminate=False),)
    claims = tuple(c for c in spec.claims if c.kind != "cka_low_layers")
    return dataclasses.replace(spec, data=data, runs=runs, cka=(), claims=claims)


def _node(spec, study, name):
    return node_dir(study, build_graph(spec, _backend()).nodes[name])


def test_a_finished_study_resumes_with_its_local_inputs_gone(tmp_path):
    spec, study = _spec(tmp_path), tmp_path / "s"
    run_study(spec, study, _backend(), progress=False)
    shutil.move(tmp_path / "model", tmp_path / "moved")  # the tokenizer and mlm20's start model
    (tmp_path / "corpus.jsonl").unlink()
    before = {k: v for k, v in tree_state(study).items() if k.startswith("nodes/")}
    run_study(spec, study, _backend(), progress=False)  # was: "... 'model' is not a folder ..."
    assert {k: v for k, v in tree_state(study).items() if k.startswith("nodes/")} == before


@pytest.mark.parametrize("unfinished", ["pretrain/mlm20", "prepare/main"])
def test_the_inputs_of_a_node_still_to_run_are_still_checked(tmp_path, unfinished, monkeypatch):
    """mlm20 unfinished, or finished downstream of the prepare node that runs again: it reads its start
    model again, which is refused before anything runs."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    spec, study = _spec(tmp_path), tmp_path / "s"
    run_study(spec, study, _backend(), progress=False)
    shutil.move(tmp_path / "model", tmp_path / "moved")
    shutil.rmtree(_node(spec, study, unfinished))
    before = world_state(tmp_path)
    with pytest.raises(UserError, match=r"^study fake-pfs, (dataset main|run mlm20): .*\bmodel\b"):
        run_study(spec, study, _backend(), progress=False)
    assert_unchanged(before)
