"""Resuming a study whose task files were moved or deleted since the nodes that read them finished.

Building the graph read every task file (`backend.file_tasks`: their tasks' families and signatures are
in the eval nodes' keys), so such a study could not be resumed, even with every node finished ("task
file ... does not exist"). Now the files are taken as the study folder's graph.json recorded them
(`absent.recorded_backend`), and an evaluation node still to run that reads them is refused before
anything runs (`absent.refuse_absent_task_files`). The nodes are fake (`fake_study.py`), the task file
real (loaded and registered by `needs.file_tasks`).
"""

from __future__ import annotations

import dataclasses
import shutil

import pytest
from fake_study import backend as fake_backend
from fake_study import small_spec
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.treestate import assert_unchanged, tree_state, world_state
from tests.study.study_fixtures import polarity_task_file

from encoderlab.errors import UserError
from encoderlab.eval.tasks.testtexts import task_test_name
from encoderlab.study.absent import recorded_backend
from encoderlab.study.graph import build_graph
from encoderlab.study.needs import file_tasks, keyed_sets
from encoderlab.study.runner import node_dir, run_study

REFUSED = (
    r"^study fake-pfs: task file \S+/tasks/polarity.yaml is not there \(moved or deleted\), and (\d+) "
    r"evaluation nodes? still to run reads? it \(eval/[^)]*polarity[^)]*\); put it back \(finished nodes are "
    r"kept\), or name where it is now in the study file's eval.task_files and run that file with --out \S+ "
    r"\(the evaluation nodes of its task files run again: their keys hold the files' paths\)$"
)
PARTLY = (
    r"^study fake-pfs: task file \S+/tasks/polarity.yaml is not there \(moved or deleted\), while its other "
    r"task files are; none is taken from \S+/s/graph.json while the others are read: put it back where it was "
    r"\(finished nodes are kept\); naming it elsewhere in eval.task_files runs the evaluation nodes of its tasks "
    r"again \(their keys hold their task files' paths\)$"
)


def _backend():
    backend = fake_backend()
    backend.file_tasks = file_tasks  # the real loader: a missing file is refused as a real study's
    return backend


def _spec(tmp_path):
    """`small_spec`, its fake suite's tasks and the task of a real task file, one LR and seed."""
    (tmp_path / "tasks").mkdir()
    polarity_task_file(tmp_path / "tasks")
    ev = dataclasses.replace(
        small_spec().eval, lrs=(1e-4,), seeds=(0,), task_files=(str(tmp_path / "tasks" / "polarity.yaml"),)
    )
    return small_spec(eval=ev)


def _run(spec, study):
    return run_study(spec, study, _backend(), progress=False)


def test_a_finished_study_cleaned_against_its_task_file_resumes_with_it_moved(tmp_path):
    """Its prepare node's key holds the digest of the task file's test texts (`needs.keyed_sets`): with the
    file gone, that digest is taken as graph.json recorded it (`absent._recorded_sets`), not read (the
    resume said "task file ... does not exist", building the graph)."""
    backend = _backend()
    # the fake suite reads no assets: the sets are the task files' test splits alone
    backend.decontamination = lambda spec, d: tuple(task_test_name(f) for f in spec.eval.task_files)
    backend.keyed_sets = keyed_sets
    spec, study = _spec(tmp_path), tmp_path / "s"
    report = run_study(spec, study, backend, progress=False)
    assert all("test_texts" in n.config for n in build_graph(spec, backend) if n.kind == "prepare")
    shutil.move(tmp_path / "tasks", tmp_path / "moved")
    nodes = {k: v for k, v in tree_state(study).items() if k.startswith(("nodes/", "report/"))}
    assert run_study(spec, study, backend, progress=False) == report
    assert {k: v for k, v in tree_state(study).items() if k.startswith(("nodes/", "report/"))} == nodes


def test_a_finished_study_resumes_with_its_task_file_moved(tmp_path):
    spec, study = _spec(tmp_path), tmp_path / "s"
    report = _run(spec, study)
    assert any("polarity" in n for n in build_graph(spec, _backend()).nodes)
    shutil.move(tmp_path / "tasks", tmp_path / "moved")
    nodes = {k: v for k, v in tree_state(study).items() if k.startswith(("nodes/", "report/"))}
    assert _run(spec, study) == report  # was: "task file .../polarity.yaml does not exist; give the path ..."
    assert {k: v for k, v in tree_state(study).items() if k.startswith(("nodes/", "report/"))} == nodes


def test_a_node_still_to_run_that_reads_the_moved_task_file_is_refused_before_anything_is_written(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    spec, study = _spec(tmp_path), tmp_path / "s"
    _run(spec, study)
    graph = build_graph(spec, _backend())
    own = [n for n in graph if n.kind == "eval" and "polarity" in n.name]
    shutil.move(tmp_path / "tasks", tmp_path / "moved")
    shutil.rmtree(node_dir(study, own[0]))
    before = world_state(tmp_path)
    with pytest.raises(UserError, match=REFUSED) as exc:
        _run(spec, study)
    assert int(exc.value.args[0].split(", and ")[1].split()[0]) == 1  # the other models' nodes finished
    assert_unchanged(before)
    assert_printed_as_documented(
        "study-resume-task-file-moved", f"encoderlab: error: {exc.value}\n", tmp_path
    )


def test_a_node_whose_config_the_record_has_not_is_to_run_and_so_refused(tmp_path, monkeypatch):
    """Another `max_steps`: the task's signature under it is not recorded (the file is not there to
    say it), so no finished node is taken for it, whatever the fine-tuning cap of the recorded ones."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    spec, study = _spec(tmp_path), tmp_path / "s"
    _run(spec, study)
    shutil.move(tmp_path / "tasks", tmp_path / "moved")
    capped = dataclasses.replace(spec, eval=dataclasses.replace(spec.eval, max_steps=5))
    before = world_state(tmp_path)
    with pytest.raises(UserError, match=REFUSED):
        _run(capped, study)
    assert_unchanged(before)
    built = build_graph(capped, recorded_backend(capped, study, _backend()))
    assert {n.config["task_signature"] for n in built if "polarity" in n.name} == {"?"}


def test_a_task_file_that_is_there_is_read_not_taken_from_the_record(tmp_path):
    """Only a task file not there is taken as recorded: one there (changed or not) is read, as before."""
    spec, study = _spec(tmp_path), tmp_path / "s"
    _run(spec, study)
    backend = _backend()
    assert recorded_backend(spec, study, backend) is backend
    shutil.move(tmp_path / "tasks", tmp_path / "moved")
    assert recorded_backend(spec, tmp_path / "first-run", backend) is backend  # nothing recorded there
    with pytest.raises(UserError, match=r"^task file \S+polarity.yaml does not exist"):
        _run(spec, tmp_path / "first-run")
    assert not (tmp_path / "first-run").exists()


def test_with_only_some_task_files_gone_none_is_taken_from_the_record_and_the_resume_is_refused(
    tmp_path, monkeypatch
):
    """With one of two task files gone none is taken as recorded (files read now are not mixed with tasks
    taken from graph.json). Was "task file ... does not exist; give the path of a task YAML
    file ...", the line of a first run, which did not say why the record is not used nor what keeps the
    finished nodes; put back, the study resumes with every node kept."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    spec, study = _spec(tmp_path), tmp_path / "s"
    (tmp_path / "more").mkdir()
    polarity_task_file(tmp_path / "more")
    tone = tmp_path / "more" / "tone.yaml"
    tone.write_text((tmp_path / "more" / "polarity.yaml").read_text().replace("name: polarity", "name: tone"))
    (tmp_path / "more" / "polarity.yaml").unlink()
    files = (*spec.eval.task_files, str(tone))
    spec = dataclasses.replace(spec, eval=dataclasses.replace(spec.eval, task_files=files))
    report = _run(spec, study)
    nodes = {k: v for k, v in tree_state(study).items() if k.startswith("nodes/")}
    shutil.move(tmp_path / "tasks", tmp_path / "moved")
    before = world_state(tmp_path)
    with pytest.raises(UserError, match=PARTLY) as exc:
        _run(spec, study)
    assert_unchanged(before)
    assert_printed_as_documented(
        "study-resume-some-task-files-moved", f"encoderlab: error: {exc.value}\n", tmp_path
    )
    shutil.move(tmp_path / "moved", tmp_path / "tasks")
    assert _run(spec, study) == report
    assert {k: v for k, v in tree_state(study).items() if k.startswith("nodes/")} == nodes


def test_a_finished_study_resumes_with_its_prepared_folder_moved_and_one_to_run_is_refused(
    tmp_path, monkeypatch
):
    """Was "... holds no prepared data (no meta.json); prepare it first with `encoderlab data prepare`",
    even with every node finished. The folder is keyed by its content, recorded in graph.json: a finished
    study resumes without it, and so does one whose evaluation node is to run (it reads a model; the
    report, the counts its prepare node recorded: was refused, "the report among them reads it"). A
    pretraining node to run reads its tokens: refused, and given where it is now, every finished node is
    kept."""
    from fake_study import tiny_corpus

    from encoderlab.data.prepare import PrepareConfig, prepare
    from encoderlab.data.sources import SourceConfig, parse_source
    from encoderlab.data.tokenizer import train_tokenizer
    from encoderlab.study.spec import DataSpec

    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    corpus = tiny_corpus(tmp_path / "corpus.jsonl", 60)
    train_tokenizer(SourceConfig(location=str(corpus)), 300, tmp_path / "tok", progress=False)
    cfg = PrepareConfig(
        sources=(parse_source(str(corpus)),), tokenizer=str(tmp_path / "tok"), decontaminate=()
    )
    data = prepare(cfg, tmp_path / "prepared", workers=1, progress=False)

    def spec(folder):
        main = DataSpec(
            name="main", corpus=(str(corpus),), tokenizer=str(tmp_path / "tok"), prepared=str(folder)
        )
        return small_spec(data=(main,))

    def outputs():
        return {k: v for k, v in tree_state(study).items() if k.startswith(("nodes/", "report/"))}

    def kept(files, rerun):
        return {
            k: v for k, v in files.items() if k.startswith("nodes/") and rerun not in k and "report" not in k
        }

    study = tmp_path / "s"
    report = _run(spec(data), study)
    done = outputs()
    moved = data.rename(tmp_path / "moved")
    assert _run(spec(data), study) == report and outputs() == done  # every node finished: nothing reads it
    graph = build_graph(spec(moved), _backend())
    evaluated = node_dir(study, graph.nodes["eval/clm/sst/lr0.0001/s0"])
    shutil.rmtree(evaluated)
    assert _run(spec(data), study) == report  # it runs again, and the report, without the folder
    assert kept(outputs(), evaluated.name) == kept(done, evaluated.name) and evaluated.is_dir()
    done = outputs()
    trained = node_dir(study, graph.nodes["pretrain/mlm20"])
    shutil.rmtree(trained)
    before = world_state(tmp_path)
    with pytest.raises(UserError) as exc:
        _run(spec(data), study)
    assert_unchanged(before)
    assert_printed_as_documented("study-resume-prepared-moved", f"encoderlab: error: {exc.value}\n", tmp_path)
    with pytest.raises(
        UserError, match=r"folder \S+/typo is not there .*, and \S+/s did not run with it, so"
    ):
        _run(spec(tmp_path / "typo"), study)  # not the folder the study ran with: nothing recorded of it
    assert_unchanged(before)
    _run(spec(moved), study)  # the fix: its place now; only that node, its evaluations and the report run
    assert kept(outputs(), "mlm20") == kept(done, "mlm20") and any(
        "nodes/pretrain/" in k for k in kept(done, "mlm20")
    )


def test_a_prepare_node_still_to_run_that_cleans_against_the_moved_task_file_is_refused(
    tmp_path, monkeypatch
):
    """A dataset added to a study whose task files are gone: its prepare node cleans its corpus against their
    test splits (its key holds their digest as recorded), so it reads them when it runs. It was not counted
    among the nodes reading them (only evaluation nodes were): `study plan` said "no node to run reads it",
    and `study run` began, to fail in that node ("task file ... does not exist"). Refused before anything
    runs or is written, as an evaluation node to run is."""
    from encoderlab.study.spec import DataSpec, RunSpec

    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    backend = _backend()
    backend.decontamination = lambda spec, d: tuple(task_test_name(f) for f in spec.eval.task_files)
    backend.keyed_sets = keyed_sets
    spec, study = _spec(tmp_path), tmp_path / "s"
    run_study(spec, study, backend, progress=False)
    shutil.move(tmp_path / "tasks", tmp_path / "moved")
    extra = RunSpec(name="extra", recipe="pfs-mlm", data="extra", evaluate=False, group="other")
    added = dataclasses.replace(
        spec, data=(*spec.data, DataSpec(name="extra", corpus=("fake",), seed=1)), runs=(*spec.runs, extra)
    )
    before = world_state(tmp_path)
    with pytest.raises(UserError) as exc:
        run_study(added, study, backend, progress=False)
    assert str(exc.value).startswith(
        f"study fake-pfs: task file {tmp_path}/tasks/polarity.yaml is not there (moved or deleted), and 1 node "
        "still to run reads it (prepare/extra); put it back"
    ), str(exc.value)
    assert_unchanged(before)
