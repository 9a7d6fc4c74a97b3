"""A run continuing a model folder on this machine is keyed by the files its load reads, not its path.

Its pretraining node held the folder's path in its key (`model.init` of the resolved run): a start model
replaced in place kept the finished run trained from the model it replaced (stale, and every score below
it), and a moved one trained again. Now the key holds the identity of the files the load reads
(`needs.model_identity`, as an as-is evaluation's: `PretrainNode.init_files`), and the config keeps the path
the node trains from. A finished study whose start folder is gone since resumes as graph.json recorded it
(`absent._recorded_models`). The nodes are fake (`fake_study.py`), the keys, the start checks and the model
folder real; the tokenizer is a copy beside the model, so moving the model moves nothing else.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from fake_study import backend as fake_backend
from fake_study import small_spec, tiny_corpus
from tests.eval.fixtures import model_folder
from tests.reliability.treestate import tree_state

from encoderlab.study.absent import recorded_backend
from encoderlab.study.checks import check_start
from encoderlab.study.graph import build_graph
from encoderlab.study.needs import model_identity
from encoderlab.study.nodeconfig import PretrainNode
from encoderlab.study.runner import node_dir, read_marker, run_study
from encoderlab.study.spec import DataSpec


def _backend():
    backend = fake_backend()
    backend.model_identity = model_identity
    backend.check_start = lambda spec, study_dir, graph: check_start(spec, study_dir, graph)
    return backend


def _spec(root: Path, model: str):
    """`small_spec` on a local corpus and tokenizer, run mlm20 continuing the model folder `root/model`."""
    spec, start = small_spec(), str(root / model)
    runs = tuple(dataclasses.replace(r, init=start) if r.name == "mlm20" else r for r in spec.runs)
    corpus, tok = (str(root / "corpus.jsonl"),), str(root / "tok")
    data = (DataSpec(name="main", corpus=corpus, tokenizer=tok, decontaminate=False),)
    claims = tuple(c for c in spec.claims if c.kind != "cka_low_layers")
    return dataclasses.replace(spec, data=data, runs=runs, cka=(), claims=claims)


def _downstream(graph, name: str) -> set[str]:
    """`name` and every node that reads it, directly or not."""
    found = {name}
    for node in graph:  # nodes are in dependency order
        if found & set(node.deps):
            found.add(node.name)
    return found


def _folders(study: Path) -> set[str]:
    return {f"{p.parent.name}/{p.name}" for p in (study / "nodes").glob("*/*")}


def _files(study: Path, report: bool = False) -> dict[str, str]:
    """Every file of the study's nodes (the report node's only when `report`), by path."""
    out = {k: v for k, v in tree_state(study).items() if k.startswith("nodes/")}
    return out if report else {k: v for k, v in out.items() if not k.startswith("nodes/report/")}


def _run(root: Path, model: str, study: Path):
    spec = _spec(root, model)
    run_study(spec, study, _backend(), progress=False)
    return build_graph(spec, recorded_backend(spec, study, _backend()))  # the graph the run built


def test_a_start_replaced_in_place_trains_again_a_moved_one_does_not_and_a_gone_one_reports(tmp_path):
    tiny_corpus(tmp_path / "corpus.jsonl", 60)
    model_folder(tmp_path / "model", seed=0)
    shutil.copytree(tmp_path / "model", tmp_path / "tok")
    study = tmp_path / "s"
    first = _run(tmp_path, "model", study)
    done, files = _folders(study), _files(study)

    model_folder(tmp_path / "other", seed=1)  # another model: its weights copied over the start's
    shutil.copy(tmp_path / "other" / "model.safetensors", tmp_path / "model" / "model.safetensors")
    replaced = _run(tmp_path, "model", study)
    rerun = _downstream(replaced, "pretrain/mlm20")
    assert {n for n in rerun if n.startswith("eval/mlm20")} and "report" in rerun
    new = {f"{node_dir(study, replaced.nodes[n]).parent.name}/{node_dir(study, replaced.nodes[n]).name}"
           for n in rerun}  # fmt: skip
    assert _folders(study) == done | new and not done & new  # was: none new, mlm20's run and scores kept
    untouched = {k: v for k, v in _files(study, report=True).items() if k in files}
    assert untouched == files  # the folders of the others, and the first ones of mlm20, as they were
    kept = {n.name: n.key for n in replaced if n.name not in rerun}
    assert kept == {n.name: n.key for n in first if n.name not in rerun}

    # the same files elsewhere: the same keys, so nothing trains or evaluates again (the report, which names
    # the start model's path, is written again)
    shutil.move(tmp_path / "model", tmp_path / "moved")
    after, files = _folders(study), _files(study)
    moved = _run(tmp_path, "moved", study)
    assert {n.name: n.key for n in moved if n.kind != "report"} == {
        n.name: n.key for n in replaced if n.kind != "report"
    }  # was: mlm20 keyed by the new path, trained and evaluated again
    assert _files(study) == files and _folders(study) - after <= {
        f"report/{node_dir(study, moved.nodes['report']).name}"
    }

    # gone: the finished study keyed as graph.json recorded it (was: the start checks refused the missing
    # folder for the rerun of mlm20 its path's key asked for), its report written again
    shutil.rmtree(tmp_path / "moved")
    shutil.rmtree(node_dir(study, moved.nodes["report"]))
    gone = _run(tmp_path, "moved", study)
    assert {n.name: n.key for n in gone} == {n.name: n.key for n in moved}
    assert _files(study) == files and read_marker(study, gone.nodes["report"]) is not None


def test_the_pretraining_key_holds_the_start_files_not_the_path(tmp_path):
    """The node's config keeps the path it trains from and the files' identity; the key holds the identity
    alone (`PretrainNode.key_data`), so a copy is the same key and other weights another."""
    tiny_corpus(tmp_path / "corpus.jsonl", 60)
    model_folder(tmp_path / "model", seed=0)
    shutil.copytree(tmp_path / "model", tmp_path / "tok")

    def node(model: str):
        return build_graph(_spec(tmp_path, model), _backend()).nodes["pretrain/mlm20"]

    before = node("model")
    shutil.copytree(tmp_path / "model", tmp_path / "copy")
    assert node("copy").key == before.key
    typed = PretrainNode.of(node("copy"))
    assert typed.run.model.init == str(tmp_path / "copy")
    assert typed.init_files == model_identity(str(tmp_path / "model"))
    model_folder(tmp_path / "other", seed=1)
    shutil.copy(tmp_path / "other" / "model.safetensors", tmp_path / "copy" / "model.safetensors")
    assert node("copy").key != before.key
    assert node("model").key == before.key


def test_a_pretraining_node_interrupted_then_its_start_moved_resumes_from_the_new_place(tmp_path):
    """Same key, same start files: the unfinished run whose config.yaml names the old place is resumed at the
    new one (`nodes._moved_only`: `model.init` is a place the node fills in), as a moved study folder's is;
    another change of its config is still refused naming the fix."""
    import pytest

    from encoderlab.config import save_yaml
    from encoderlab.errors import UserError
    from encoderlab.study.nodes import _moved_only

    tiny_corpus(tmp_path / "corpus.jsonl", 60)
    model_folder(tmp_path / "model", seed=0)
    shutil.copytree(tmp_path / "model", tmp_path / "tok")
    old = PretrainNode.of(build_graph(_spec(tmp_path, "model"), _backend()).nodes["pretrain/mlm20"]).run
    (tmp_path / "run").mkdir()
    save_yaml(old, tmp_path / "run" / "config.yaml")
    shutil.move(tmp_path / "model", tmp_path / "moved")
    node = build_graph(_spec(tmp_path, "moved"), _backend()).nodes["pretrain/mlm20"]
    new = PretrainNode.of(node).run
    assert new.model.init == str(tmp_path / "moved") and _moved_only(tmp_path / "run", new)
    with pytest.raises(UserError, match=r"holds an unfinished run with another config \(seed: "):
        _moved_only(tmp_path / "run", dataclasses.replace(new, seed=new.seed + 1))
