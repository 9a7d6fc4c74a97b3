"""A model evaluated as is from a folder on this machine is keyed by the files its load reads, not its path.

Its eval (and CKA) nodes held the folder's path in their key: a model replaced in place kept the scores of the
model it replaced (the node was found finished), and a moved one was evaluated again. Now the key holds the
identity of the files the load reads (`needs.model_identity`, `readfiles.files_identity`, the hash a training
start records of its `model.init`), and the config keeps the path the node loads (`EvalNode.source_files`). A
finished study whose folder is gone since resumes as graph.json recorded it (`absent._recorded_models`). The
study, its nodes and the model are real; the tokenizer its corpus is prepared with is a copy beside it, so
moving the model moves nothing else.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fake_study import tiny_corpus
from tests.eval.fixtures import model_folder
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.reliability.treestate import assert_unchanged, tree_state, world_state
from tests.study.study_fixtures import eval_records, local_model_study, polarity_task_file

from encoderlab.study import real_backend
from encoderlab.study.files import load_study_file
from encoderlab.study.graph import build_graph
from encoderlab.study.runner import run_study


def _evals(study: Path) -> dict[str, str]:
    """Every file of the study's eval nodes, by path: what a node run again would rewrite."""
    return {k: v for k, v in tree_state(study).items() if k.startswith("nodes/eval/")}


def _run(root: Path, model: str) -> dict[str, str]:
    run_study(load_study_file(local_model_study(root, model)), root / "out", real_backend(), progress=False)
    return eval_records(root / "out")


def test_a_model_replaced_in_place_is_evaluated_again_and_a_moved_one_is_not(tmp_path):
    tiny_corpus(tmp_path / "corpus.jsonl", 40)
    polarity_task_file(tmp_path)
    model_folder(tmp_path / "model", seed=0)
    shutil.copytree(tmp_path / "model", tmp_path / "tok")
    (first,) = _run(tmp_path, "model").items()

    model_folder(tmp_path / "other", seed=1)  # another model: its weights copied over the first's
    shutil.copy(tmp_path / "other" / "model.safetensors", tmp_path / "model" / "model.safetensors")
    after = _run(tmp_path, "model")
    assert len(after) == 2 and first in after.items()  # was: one node, the first model's score kept
    (replaced,) = set(after.values()) - {first[1]}

    # the same files elsewhere: the same key (the report, whose spec digest holds the path, is written again)
    shutil.move(tmp_path / "model", tmp_path / "moved")
    evals = _evals(tmp_path / "out")
    assert _run(tmp_path, "moved") == after and _evals(tmp_path / "out") == evals
    assert replaced in after.values()

    shutil.rmtree(tmp_path / "moved")  # gone: its finished node keyed as graph.json recorded it
    assert _run(tmp_path, "moved") == after and _evals(tmp_path / "out") == evals


def test_the_key_holds_the_files_the_load_reads_not_the_path(tmp_path):
    tiny_corpus(tmp_path / "corpus.jsonl", 40)
    polarity_task_file(tmp_path)
    model_folder(tmp_path / "model", seed=0)
    shutil.copytree(tmp_path / "model", tmp_path / "tok")

    def keys(model: str) -> dict[str, str]:
        graph = build_graph(load_study_file(local_model_study(tmp_path, model)), real_backend())
        return {n.name: n.key for n in graph if n.kind == "eval"}

    before = keys("model")
    (tmp_path / "model" / "README.md").write_text("notes the load never reads\n")
    shutil.copytree(tmp_path / "model", tmp_path / "copy")
    assert keys("copy") == before
    model_folder(tmp_path / "other", seed=1)
    shutil.copy(tmp_path / "other" / "model.safetensors", tmp_path / "copy" / "model.safetensors")
    assert keys("copy").keys() == before.keys() and keys("copy") != before


@pytest.mark.parametrize("recipe", ["", ", recipe: cpt-mlm, steps: 2"])
def test_a_model_file_the_key_cannot_read_is_one_line_before_anything_is_written(
    tmp_path, capsys, monkeypatch, recipe
):
    """The hash reads every file the load reads: one it cannot (permissions; the tests run as root, whom chmod
    does not stop, so the read fails as it would) is refused naming it, for `study plan` and `study run` alike,
    and no study folder is made; a model continued by a run with a recipe alike (its pretraining node is keyed
    by the files too: tests/study/test_local_start_keys.py), which failed in that node."""
    import encoderlab.data.filerecords as filerecords

    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    real = filerecords.sha256_of
    monkeypatch.setattr(
        filerecords,
        "sha256_of",
        lambda p, limit=None: real(p, limit) if Path(p).name != "model.safetensors" else _refused(p),
    )
    tiny_corpus(tmp_path / "corpus.jsonl", 40)
    polarity_task_file(tmp_path)
    model_folder(tmp_path / "model", seed=0)
    shutil.copytree(tmp_path / "model", tmp_path / "tok")
    study, weights = local_model_study(tmp_path, "model", recipe), tmp_path / "model" / "model.safetensors"
    before = world_state(tmp_path)
    for argv in (["run", study, "--out", tmp_path / "out"], ["plan", study]):
        code, err = cli(["study", *argv], capsys)
        assert_one_line(
            code,
            err,
            rf"^encoderlab: error: study mine: cannot read {weights} \(Permission denied\), a file of start "
            rf"model {tmp_path / 'model'}, which the study reads; make it readable by this user, or copy the "
            r"model again$",
        )
        assert_unchanged(before)


def _refused(path):
    raise PermissionError(13, "Permission denied", str(path))


def test_a_cka_of_a_local_model_as_is_is_keyed_by_its_files(tmp_path):
    """The CKA node holds the model's path as its source (`CkaNode.sources`, what it loads) and is keyed by
    the files (`CkaNode.source_files`), as the eval nodes of the same model are."""
    from dataclasses import replace

    from fake_study import backend as fake_backend
    from fake_study import small_spec

    from encoderlab.study.needs import model_identity
    from encoderlab.study.nodeconfig import CkaNode
    from encoderlab.study.spec import CkaSpec, RunSpec

    def cka(model: Path):
        spec = small_spec()
        runs = (*spec.runs, RunSpec(name="start", label="Start", init=str(model)))
        analysis = CkaSpec(a="start", b="mlm40", noise=("mlm40-s2", "mlm40"), texts="fake", n_texts=50)
        backend = fake_backend()
        backend.model_identity = model_identity
        graph = build_graph(replace(spec, runs=runs, cka=(analysis,), claims=()), backend)
        return graph.nodes["cka/start-vs-mlm40"]

    model_folder(tmp_path / "model", seed=0)
    node = cka(tmp_path / "model")
    assert CkaNode.of(node).sources == {"start": str(tmp_path / "model")}
    assert CkaNode.of(node).source_files == {"start": model_identity(str(tmp_path / "model"))}
    shutil.move(tmp_path / "model", tmp_path / "moved")
    assert cka(tmp_path / "moved").key == node.key
    model_folder(tmp_path / "other", seed=1)
    shutil.copy(tmp_path / "other" / "model.safetensors", tmp_path / "moved" / "model.safetensors")
    assert cka(tmp_path / "moved").key != node.key


def test_the_key_covers_the_tokenizer_files_its_class_reads_as_a_start_records_them(tmp_path):
    """The study hashed the tokenizer's files from the fixed list (`TOKENIZER_READS`), so a LUKE entity
    vocabulary (`LukeTokenizer.vocab_files_names`) edited in place left the node's key, and so its score, as
    they were; and the identity was not the one a training start records of the same folder, as the docs
    say. It now takes the files from the tokenizer's class, as `train.build.init_identity` does."""
    from tests.train.tokenizer_fixtures import edit_luke, hf_folder_with, luke_tokenizer

    from encoderlab.study.needs import model_identity
    from encoderlab.train import ModelSpec
    from encoderlab.train.build import init_identity

    folder = hf_folder_with(tmp_path, luke_tokenizer)
    before = model_identity(str(folder))
    assert before == init_identity(ModelSpec(init=str(folder)))  # one identity of one folder
    edit_luke(folder)
    assert model_identity(str(folder)) != before  # was the same key
