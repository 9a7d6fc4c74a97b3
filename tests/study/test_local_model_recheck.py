"""A node reading a local model folder checks, just before it loads it, that the folder still holds the files its
key names (`study.localmodels.check_model`).

A study's eval nodes of a folder evaluated as is, and the pretraining node continuing one, are keyed by the
identity of the files the load reads, hashed when the graph is built. A folder replaced between the build and the
node (a long study; the user retrains into the same folder) was loaded all the same and scored under the old key
(the eval node kept loaded served the old model, the next one loaded the new). Now such a node is refused in one
line naming the folder, the file that changed and the fix, writes nothing, and the study stops as for any failing
node; run again, the graph is rebuilt keyed by the new files. The recheck reuses the build's read while no file
under the folder moved (`localmodels.read_model`). The study, its nodes and the model are real.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from fake_study import tiny_corpus
from tests.eval.fixtures import model_folder
from tests.study.study_fixtures import eval_records, local_model_study, polarity_task_file

from encoderlab.cli import main
from encoderlab.errors import UserError
from encoderlab.study import real_backend
from encoderlab.study.files import load_study_file
from encoderlab.study.graph import NodeKind, build_graph
from encoderlab.study.runner import run_study


def _folders(root: Path, recipe: str = "", seeds: str = "[0]") -> Path:
    """A tiny corpus, a task file, the model folder `root/model` (seed 0), its tokenizer copied beside it and a
    study file evaluating it as is (continuing it first with `recipe`) at fine-tuning `seeds`."""
    tiny_corpus(root / "corpus.jsonl", 40)
    polarity_task_file(root)
    model_folder(root / "model", seed=0)
    shutil.copytree(root / "model", root / "tok")
    model_folder(root / "other", seed=1)  # the weights copied over the first's while the study runs
    study = local_model_study(root, "model", recipe)
    study.write_text(study.read_text().replace("seeds: [0]", f"seeds: {seeds}"))
    return study


def _replace_weights(root: Path) -> None:
    shutil.copy(root / "other" / "model.safetensors", root / "model" / "model.safetensors")


def _backend_replacing(root: Path, after: str, runs: int = 1, change=_replace_weights):
    """The real backend, `change` made to the model folder once `runs` nodes of kind `after` have run (the
    graph was built before any of them): the user retraining into the folder while the study runs."""
    backend = real_backend()
    real, done = backend.kinds[after].run, []

    def run(ctx):
        result = real(ctx)
        done.append(ctx.node.name)
        if len(done) == runs:
            change(root)
        return result

    backend.kinds[after] = NodeKind(run=run)
    return backend


def _refusal(study: Path, out: Path, backend) -> str:
    with pytest.raises(UserError) as exc:
        run_study(load_study_file(study), out, backend, progress=False)
    return str(exc.value)


def test_a_model_replaced_between_two_eval_nodes_is_refused_not_served_from_memory(tmp_path, capsys):
    """The first eval node loads and keeps the model; the folder is replaced; the second node, keyed by the
    old files, was served the kept model (and a study in workers loaded the new one under the old key)."""
    study, out = _folders(tmp_path, seeds="[0, 1]"), tmp_path / "out"
    line = _refusal(study, out, _backend_replacing(tmp_path, "eval"))
    assert re.fullmatch(
        rf"study node eval/start/polarity/lr0\.002/s1: model\.safetensors of model folder {tmp_path / 'model'} "
        r"changed since the study's graph was built, which keyed this node by the files as they were then; run "
        rf"`encoderlab study run {out}` again \(its graph is rebuilt, keyed by the files as they are now; "
        r"finished nodes are kept\), or restore the files",
        line,
    ), line
    (first,) = eval_records(out).items()  # the refused node wrote nothing: no score under the old key
    assert [p.name for p in (out / "nodes" / "eval").iterdir()] == [first[0]]
    capsys.readouterr()
    main(["study", "status", str(out)])  # the refused node is one still to run, as a failed node is
    status = capsys.readouterr().out
    assert "not running; rerun `encoderlab study run" in status, status

    run_study(
        load_study_file(study), out, real_backend(), progress=False
    )  # the rerun: keyed by the new files
    after = eval_records(out)
    assert len(after) == 3 and first in after.items()  # the old node's folder is kept, unused
    assert len(set(after.values()) - {first[1]}) == 1  # both new nodes score the new model


def _eval_then_replace(ctx):
    """The eval kind for `--jobs` workers (spawned: a module-level function, which they import): the first eval
    node to finish replaces the study's model folder (the study folder is ROOT/out) once it has scored it.
    The first to finish, not a named one: with two workers, the other could score every other node while a
    named one was still loading (the test then saw no refusal); after the first, at least two are still to run."""
    from encoderlab.study.nodes import run_eval

    result = run_eval(ctx)
    root = ctx.study_dir.parent
    try:
        (root / "replaced").open("x").close()  # one worker wins
    except FileExistsError:
        return result
    # renamed into place: a node loading beside it reads either file whole
    shutil.copy(root / "other" / "model.safetensors", root / "new.safetensors")
    os.replace(root / "new.safetensors", root / "model" / "model.safetensors")
    return result


def test_a_node_in_a_worker_names_the_file_from_the_digests_handed_beside_its_key(tmp_path):
    """A `--jobs` worker starts afresh, without the graph's read: it reads the folder itself, and names the file
    that changed from the digests the graph handed the node (`Node.aside`). Which node is refused depends on
    which finished first; every score written is of the files its key names."""
    study, out = _folders(tmp_path, seeds="[0, 1, 2, 3]"), tmp_path / "out"
    backend = real_backend()
    backend.kinds["eval"] = NodeKind(run=_eval_then_replace)
    with pytest.raises(UserError) as exc:
        run_study(load_study_file(study), out, backend, progress=False, jobs=2)
    assert re.fullmatch(
        rf"study node eval/start/polarity/lr0\.002/s[0-3]: model\.safetensors of model folder {tmp_path / 'model'} "
        r"changed since the study's graph was built, .*",
        str(exc.value),
    ), exc.value
    scored = eval_records(out)
    assert 1 <= len(scored) < 4 and len(set(scored.values())) == 1  # all of the first model, under its key


@pytest.mark.parametrize("recipe", ["", ", recipe: cpt-mlm, steps: 2"])
def test_a_model_replaced_after_the_graph_is_built_is_refused_before_it_is_loaded(tmp_path, recipe):
    """Replaced once the data is prepared: the eval node of the model as is, or the pretraining node continuing
    it, is refused before it loads anything; neither leaves a folder, so no score or run lies under the old key."""
    study, out = _folders(tmp_path, recipe), tmp_path / "out"
    line = _refusal(study, out, _backend_replacing(tmp_path, "prepare"))
    node = "pretrain/start" if recipe else "eval/start/polarity/lr0.002/s0"
    assert line.startswith(
        f"study node {node}: model.safetensors of model folder {tmp_path / 'model'} changed"
    )
    assert list((out / "nodes" / node.split("/")[0]).glob("*")) == []  # its folder gone again
    run_study(load_study_file(study), out, real_backend(), progress=False)
    assert len(eval_records(out)) == 1  # one eval node, of the new files' key


def test_a_model_folder_gone_after_the_graph_is_built_is_refused_naming_it(tmp_path):
    study, out = _folders(tmp_path), tmp_path / "out"
    line = _refusal(
        study, out, _backend_replacing(tmp_path, "prepare", change=lambda r: shutil.rmtree(r / "model"))
    )
    assert line == (
        f"study node eval/start/polarity/lr0.002/s0: model folder {tmp_path / 'model'} is gone since the study's "
        f"graph was built, which keyed this node by its files; put it back and run `encoderlab study run {out}` "
        "again"
    )
    assert eval_records(out) == {}


def test_the_recheck_reads_the_files_again_only_when_their_stats_moved(tmp_path, monkeypatch):
    """The graph's read is reused while no file under the folder moved; a same-size rewrite with its mtime put
    back moves the ctime, so it is read again and its new identity found."""
    import encoderlab.data.filerecords as filerecords
    from encoderlab.data import txtscans
    from encoderlab.study.needs import model_identity

    monkeypatch.setattr(txtscans, "SETTLE_NS", 0)  # the folders were just written: remembered at once here
    real, hashed = filerecords.sha256_of, []
    monkeypatch.setattr(filerecords, "sha256_of", lambda p, limit=None: hashed.append(p) or real(p, limit))
    model_folder(tmp_path / "model", seed=0)
    model_folder(tmp_path / "other", seed=1)
    source, weights = str(tmp_path / "model"), tmp_path / "model" / "model.safetensors"
    first = model_identity(source)
    assert weights in hashed
    hashed.clear()
    assert model_identity(source) == first and hashed == []  # the build's read, reused
    st = weights.stat()
    weights.write_bytes((tmp_path / "other" / "model.safetensors").read_bytes())
    assert weights.stat().st_size == st.st_size
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert model_identity(source) != first and weights in hashed


def test_a_model_saved_again_within_its_filesystems_tick_is_read_again(tmp_path, monkeypatch):
    """On a filesystem of coarse times (1 s; FAT's 2 s) a same-size save just after the read can leave every stat
    as it was; the read was reused and the old identity served for the new weights (found by review,
    2026-12-07). A read is reused only once every file's last change lay `txtscans.SETTLE_NS` before it."""
    import time

    from encoderlab.study import localmodels
    from encoderlab.study.needs import model_identity

    model_folder(tmp_path / "model", seed=0)
    model_folder(tmp_path / "other", seed=1)
    source, weights = str(tmp_path / "model"), tmp_path / "model" / "model.safetensors"
    second = time.time_ns() // 10**9 * 10**9  # this second, as a 1 s filesystem stamps every write in it
    coarse = ((0, str(weights), 1, 2, 3, second, second),)
    monkeypatch.setattr(localmodels, "tree_stats", lambda folder: coarse)  # the save moves no stat
    first = model_identity(source)
    weights.write_bytes((tmp_path / "other" / "model.safetensors").read_bytes())
    assert model_identity(source) != first  # was: the first read's identity


def test_a_cka_node_refuses_a_model_compared_as_is_replaced_since_the_graph_was_built(tmp_path):
    """The real CKA node of a graph keyed by the real identity: the model it compares as is from a local folder
    is replaced after the build, and the node is refused before it loads any model (its dependencies' folders
    hold nothing here), naming the file from the digests the graph handed it beside the key."""
    from dataclasses import replace

    from fake_study import backend as fake_backend
    from fake_study import small_spec

    from encoderlab.study.localmodels import model_files
    from encoderlab.study.needs import model_identity
    from encoderlab.study.nodes import run_cka
    from encoderlab.study.runner import NodeContext, NodeOutput
    from encoderlab.study.spec import CkaSpec, RunSpec

    model_folder(tmp_path / "model", seed=0)
    model_folder(tmp_path / "other", seed=1)
    texts = tmp_path / "texts.txt"
    texts.write_text("".join(f"text number {i} of the pool\n" for i in range(60)))
    spec = small_spec()
    runs = (*spec.runs, RunSpec(name="start", label="Start", init=str(tmp_path / "model")))
    analysis = CkaSpec(a="start", b="mlm40", noise=("mlm40-s2", "mlm40"), texts=str(texts), n_texts=50)
    backend = fake_backend()
    backend.model_identity, backend.model_files = model_identity, model_files
    graph = build_graph(replace(spec, runs=runs, cka=(analysis,), claims=()), backend)
    node = graph.nodes["cka/start-vs-mlm40"]
    assert "model.safetensors" in node.aside["source_files"]["start"]
    _replace_weights(tmp_path)
    inputs = {d: NodeOutput(tmp_path / "none" / d, {}, graph.nodes[d]) for d in node.deps}
    ctx = NodeContext(node, tmp_path / "out" / "cka", inputs, tmp_path / "out", spec)
    with pytest.raises(
        UserError, match=r"^model\.safetensors of model folder .* changed since the study's graph"
    ):
        run_cka(ctx)


def test_a_model_replaced_between_the_recheck_and_the_trainers_load_is_refused_before_the_run_writes(
    tmp_path, monkeypatch
):
    """The pretraining node rechecks its start folder, then builds the run; the folder replaced in between was
    loaded, trained and scored under the old key. Now the identity the trainer records of what it loaded
    (`Trainer.start_model_identity`) is compared with the key before the run writes anything: refused as a
    folder changed since the graph was built, with no run folder left; the rerun trains the new files."""
    from encoderlab.study import localmodels

    study, out = _folders(tmp_path, ", recipe: cpt-mlm, steps: 2"), tmp_path / "out"
    real, checked = localmodels.check_model, []

    def check_then_replace(*args, **kwargs):
        real(*args, **kwargs)  # the node's recheck passes: the folder is as keyed
        if not checked:  # then the user replaces it, before the trainer loads it
            checked.append(args[0])
            _replace_weights(tmp_path)

    monkeypatch.setattr(localmodels, "check_model", check_then_replace)
    line = _refusal(study, out, real_backend())
    assert checked == [str(tmp_path / "model")]
    assert re.fullmatch(
        rf"study node pretrain/start: model\.safetensors of model folder {tmp_path / 'model'} changed since the "
        r"study's graph was built, which keyed this node by the files as they were then; run "
        rf"`encoderlab study run {out}` again \(its graph is rebuilt, keyed by the files as they are now; "
        r"finished nodes are kept\), or restore the files",
        line,
    ), line
    # no run, half-trained or not, under the old key
    assert list((out / "nodes" / "pretrain").glob("*")) == []
    assert eval_records(out) == {}
    monkeypatch.undo()
    run_study(load_study_file(study), out, real_backend(), progress=False)
    assert len(eval_records(out)) == 1  # the rerun: keyed by the new files


def test_a_file_edited_in_a_linked_subfolder_moves_the_remembered_stats(tmp_path):
    """The memory of a read (`localmodels.tree_stats`) walked no linked subfolder, though the load reads through
    it (a sentence-transformers folder's `1_Pooling/` linked from elsewhere): a file edited there left the stats
    as they were, and the stale read stood. A link back to an ancestor is walked once, not forever."""
    from encoderlab.study.localmodels import tree_stats

    elsewhere = tmp_path / "pooling"
    elsewhere.mkdir()
    (elsewhere / "config.json").write_text('{"pooling_mode_mean_tokens": true}')
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "1_Pooling").symlink_to(elsewhere, target_is_directory=True)
    (folder / "again").symlink_to(folder, target_is_directory=True)  # a cycle
    before = tree_stats(folder)
    (elsewhere / "config.json").write_text('{"pooling_mode_cls_token": true}')
    assert tree_stats(folder) != before
