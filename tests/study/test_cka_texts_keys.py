"""A CKA node of a texts file on this machine is keyed by the file's content, not its path.

Its key held the path (`CkaSpec.texts`): an edited file kept the key and the old CKA was served for the new
texts; a file moved with the same content re-keyed the node and the CKA ran again. Now the key holds the
file's digest (`CkaNode.texts_digest`, `study/localtexts.py`), and the node checks the file again as it reads
it, so a file edited while the study runs is refused in one line and nothing is scored under the old key. The
study and its nodes are fake (`fake_study.py`) but for the real CKA node where the texts are read.
"""

from __future__ import annotations

import dataclasses
import shutil

import pytest
from fake_study import backend as fake_backend
from fake_study import small_spec
from tests.reliability.errors_doc import assert_printed_as_documented

from encoderlab.errors import UserError
from encoderlab.study.graph import NodeKind, build_graph
from encoderlab.study.localtexts import texts_identity
from encoderlab.study.runner import node_dir, run_study

CKA = "cka/clm-vs-mlm40"


def _texts(path, words="alpha"):
    """A texts file of 60 lines (more than the fake study's `n_texts`), each holding `words`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"text {i} of {words} and more words\n" for i in range(60)))
    return path


def _spec(texts):
    spec = small_spec()
    return dataclasses.replace(spec, cka=(dataclasses.replace(spec.cka[0], texts=str(texts)),))


def _backend(ran: list[str] | None = None, cka=None):
    """The fake backend keyed by the texts file's content (the real `texts_identity`); `ran` collects the CKA
    nodes run; `cka`: the CKA node kind (the fake's by default)."""
    backend = fake_backend()
    backend.texts_identity = texts_identity
    inner = cka or backend.kinds["cka"].run

    def run(ctx):
        if ran is not None:
            ran.append(ctx.node.name)
        return inner(ctx)

    backend.kinds["cka"] = NodeKind(run=run)
    return backend


def test_an_edited_texts_file_gets_a_new_key_and_its_cka_runs_again(tmp_path):
    texts, study, ran = _texts(tmp_path / "texts.txt"), tmp_path / "s", []
    run_study(_spec(texts), study, _backend(ran), progress=False)
    assert ran == [CKA]
    before = build_graph(_spec(texts), _backend()).nodes[CKA]
    _texts(texts, words="beta")  # the same path, other texts
    after = build_graph(_spec(texts), _backend()).nodes[CKA]
    assert after.key != before.key  # was the same key: the old CKA served for the new texts
    assert after.config["texts_digest"] == texts_identity(str(texts)) and after.config["texts"] == str(texts)
    run_study(_spec(texts), study, _backend(ran), progress=False)
    assert ran == [CKA, CKA]


def test_a_texts_file_moved_with_the_same_content_keeps_its_key_and_its_result(tmp_path):
    texts, study, ran = _texts(tmp_path / "texts.txt"), tmp_path / "s", []
    report = run_study(_spec(texts), study, _backend(ran), progress=False)
    first = build_graph(_spec(texts), _backend()).nodes[CKA]
    moved = tmp_path / "elsewhere" / "held-out.txt"
    moved.parent.mkdir()
    shutil.move(texts, moved)
    now = build_graph(_spec(moved), _backend()).nodes[CKA]
    assert now.key == first.key and now.config["texts"] == str(moved)  # the path recorded, not keyed
    assert run_study(_spec(moved), study, _backend(ran), progress=False) == report
    assert ran == [CKA]  # was run again: the key held the path


def test_an_asset_name_keys_the_node_as_before():
    """`fake` names no file: no digest, and the key the graph gave the node before (the golden keys keep
    every built-in study's, whose texts are assets)."""
    node = build_graph(small_spec(), _backend()).nodes[CKA]
    assert "texts_digest" not in node.config
    assert node.key == build_graph(small_spec(), fake_backend()).nodes[CKA].key


def _real_cka(ctx):
    from encoderlab.study.nodes import run_cka

    return run_cka(ctx)


def test_a_texts_file_edited_while_the_study_runs_is_refused_and_nothing_is_scored(tmp_path):
    """Edited once the data is prepared (after the graph was built): the real CKA node refuses it before it
    loads a model, and leaves no folder, so no CKA of the new texts lies under the old key."""
    texts, study = _texts(tmp_path / "texts.txt"), tmp_path / "s"
    backend = _backend(cka=_real_cka)
    prepare = backend.kinds["prepare"].run

    def prepare_then_edit(ctx):
        result = prepare(ctx)
        _texts(texts, words="beta")
        return result

    backend.kinds["prepare"] = NodeKind(run=prepare_then_edit)
    graph = build_graph(_spec(texts), _backend())
    with pytest.raises(UserError) as exc:
        run_study(_spec(texts), study, backend, progress=False)
    assert str(exc.value) == (
        f"study node {CKA}: CKA texts file {texts} changed since the study's graph was built, which keyed this "
        f"node by its content then; run `encoderlab study run {study}` again (its graph is rebuilt, keyed by the "
        "file as it is now; finished nodes are kept), or restore the file"
    )
    assert not node_dir(study, graph.nodes[CKA]).exists()
    assert_printed_as_documented(
        "study-cka-texts-changed-while-running", f"encoderlab: error: {exc.value}\n", tmp_path
    )


def test_a_texts_file_edited_during_the_read_is_refused(tmp_path, monkeypatch):
    """The node hashes the file again after reading it: an edit between the first check and the read is not
    scored under the old key either."""
    from encoderlab.analysis import inputs

    texts, study = _texts(tmp_path / "texts.txt"), tmp_path / "s"
    real = inputs.read_texts

    def read_then_edit(source):
        read = real(source)
        _texts(texts, words="beta")
        return read

    monkeypatch.setattr(inputs, "read_texts", read_then_edit)
    with pytest.raises(UserError, match=rf"^study node {CKA}: CKA texts file \S+ changed since"):
        run_study(_spec(texts), study, _backend(cka=_real_cka), progress=False)
    assert not list((study / "nodes" / "cka").glob("*"))


def test_a_texts_file_gone_while_the_study_runs_is_refused_naming_it(tmp_path):
    texts, study = _texts(tmp_path / "texts.txt"), tmp_path / "s"
    backend = _backend(cka=_real_cka)
    prepare = backend.kinds["prepare"].run
    backend.kinds["prepare"] = NodeKind(run=lambda ctx: (prepare(ctx), texts.unlink())[0])
    with pytest.raises(UserError) as exc:
        run_study(_spec(texts), study, backend, progress=False)
    assert str(exc.value) == (
        f"study node {CKA}: CKA texts file {texts} is gone since the study's graph was built, which keyed this "
        f"node by its content; put it back and run `encoderlab study run {study}` again"
    )
    assert_printed_as_documented(
        "study-cka-texts-gone-while-running", f"encoderlab: error: {exc.value}\n", tmp_path
    )


def test_a_finished_study_resumes_with_its_texts_file_gone(tmp_path):
    """The file gone, its digest is taken as graph.json recorded it (`absent._recorded_cka_texts`): the finished
    CKA keeps its key and result (the key fell back to the path, and the resume ran the CKA again, refused
    as "neither a file nor an asset" by a real study's start checks)."""
    texts, study, ran = _texts(tmp_path / "texts.txt"), tmp_path / "s", []
    report = run_study(_spec(texts), study, _backend(ran), progress=False)
    texts.unlink()
    assert run_study(_spec(texts), study, _backend(ran), progress=False) == report
    assert ran == [CKA]


def test_a_texts_file_moved_with_the_same_content_keeps_the_report_key(tmp_path):
    """The report node's key hashed the whole study spec, the CKA's texts path in it: a texts file moved (or a
    study folder moved with it) re-keyed the report and wrote it again, where the CKA node kept its key. The
    report reads the CKA's result, whose key holds the file's content: its path leaves the report's key."""
    texts = _texts(tmp_path / "texts.txt")
    first = build_graph(_spec(texts), _backend()).nodes["report"]
    moved = tmp_path / "elsewhere" / "held-out.txt"
    moved.parent.mkdir()
    shutil.move(texts, moved)
    assert build_graph(_spec(moved), _backend()).nodes["report"].key == first.key
    _texts(moved, words="beta")  # other texts: the CKA's key moves, and the report's with it
    assert build_graph(_spec(moved), _backend()).nodes["report"].key != first.key
