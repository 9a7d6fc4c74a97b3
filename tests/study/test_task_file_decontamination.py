# ruff: noqa: F811 (the fixture, imported)
"""A study's own task files are checked against its own corpus (`needs.decontamination_sets`): the test
split of each (`task-test:PATH`, read by `eval.tasks.testtexts` and handed to the data layer as a
`decontaminate.TextSet`) is one more evaluation set its prepare node removes documents by, said in the plan
as the built-in sets are. Before, a study whose tasks were all its own was
"decontaminated against nothing", and a corpus holding the user's test sentences trained on them unsaid."""

from __future__ import annotations

import csv
import dataclasses
import json
import random

import pytest
from fake_study import small_spec, tiny_corpus
from tests.eval.fixtures import write_task_file
from tests.eval.test_hub_csv_snapshot import cache  # noqa: F401

from encoderlab.data.decontaminate import build_contamination
from encoderlab.errors import UserError
from encoderlab.study.graph import build_graph
from encoderlab.study.nodes import real_backend, run_prepare
from encoderlab.study.plantext import _decontamination_text
from encoderlab.study.runner import NodeContext, run_study
from encoderlab.study.spec import DataSpec, EvalSpec, RunSpec


def task_test_set(task_file: str) -> str:
    """A task file's test split as a study's plan names it (docs/data.md), spelt out: the old code lacks it."""
    return f"task-test:{task_file}"


WORDS = [f"v{i}" for i in range(60)]  # words the tiny corpus does not hold


def _task_file(folder) -> tuple[str, list[str]]:
    """A task file of one's own whose test reviews are 20 words long (past the 13-word n-gram); its path
    and its test texts."""
    rng = random.Random(0)
    texts = {}
    for split, n in (("train", 60), ("test", 20)):
        with open(folder / f"{split}.csv", "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["review", "stars"])
            texts[split] = []
            for i in range(n):
                label = rng.choice(["good", "bad"])
                text = " ".join(rng.sample(WORDS, 18) + [label, f"{split}{i}"])
                texts[split].append(text)
                writer.writerow([text, label])
    path = folder / "mine.yaml"
    path.write_text(
        "name: mine\nfamily: sc\ndata: {train: train.csv, test: test.csv}\n"
        "columns: {text: review, label: stars}\nlabels: [bad, good]\nmax_length: 32\n"
    )
    return str(path), texts["test"]


def _spec(corpus, task_file):
    return small_spec(
        seq_len=32,
        steps=2,
        data=(DataSpec(name="main", corpus=(str(corpus),), vocab_size=300),),
        runs=(RunSpec(name="mlm40", recipe="pfs-mlm", params={"ratio": 0.4}),),
        eval=EvalSpec(suite=None, task_files=(task_file,), lrs=(1e-4,), seeds=(0,)),
        cka=(),
        claims=(),
    )


def _prepared(tmp_path, spec) -> dict:
    node = build_graph(spec, real_backend()).nodes["prepare/main"]
    out = tmp_path / "node"
    out.mkdir()
    run_prepare(NodeContext(node=node, out_dir=out, inputs={}, study_dir=tmp_path, spec=spec))
    return json.loads((out / "data" / "meta.json").read_text())["decontamination"]


def _corpus(tmp_path, extra: list[str]):
    docs = [json.loads(line) for line in tiny_corpus(tmp_path / "base.jsonl", 120).read_text().splitlines()]
    docs += [{"id": f"x{i}", "text": f"as said {t} then"} for i, t in enumerate(extra)]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return corpus


@pytest.mark.parametrize("holds_test", [True, False])
def test_a_corpus_holding_a_task_files_test_sentence_loses_that_document(tmp_path, monkeypatch, holds_test):
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    (tmp_path / "tasks").mkdir()
    task_file, tests = _task_file(tmp_path / "tasks")
    corpus = _corpus(tmp_path, [tests[3]] if holds_test else [])
    spec = _spec(corpus, task_file)
    info = _prepared(tmp_path, spec)
    assert info["against"] == [task_test_set(task_file)]  # was [], "against nothing"
    assert info["removed_by_ngram"] == (1 if holds_test else 0)
    assert info["removed_by_id"] == 0  # the task's row numbers are not matched against the corpus's ids
    said = _decontamination_text(spec, spec.data[0])
    assert said == f"decontaminated against {task_test_set(task_file)}"


def test_a_changed_test_file_is_hashed_again(tmp_path, monkeypatch):
    """The decontamination cache is keyed by the task's data hash: an edited test file is read again."""
    from encoderlab.eval.tasks.testtexts import task_test_set as read_set

    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    (tmp_path / "tasks").mkdir()
    task_file, tests = _task_file(tmp_path / "tasks")
    before = build_contamination([], text_sets=(read_set(task_test_set(task_file)),))
    test_csv = tmp_path / "tasks" / "test.csv"
    test_csv.write_text(test_csv.read_text().replace(tests[0].split()[0], "changedword", 1))
    after = build_contamination([], text_sets=(read_set(task_test_set(task_file)),))
    assert before.eval_texts == after.eval_texts == len(tests)
    assert before.against == after.against == [task_test_set(task_file)]
    assert not set(after.hashes.tolist()) <= set(before.hashes.tolist())


def test_a_task_file_of_a_hub_dataset_not_cached_offline_is_one_line_before_anything_is_written(
    tmp_path, cache, monkeypatch
):
    """A study cleans its corpus against the test split of a task file reading a hub dataset: offline, with
    the hub cache holding nothing of it, the study is refused in the line that names the dataset and the
    download (it said "check the name and your connection"), before the study folder or anything in
    ENCODERLAB_HOME is written. The hub cache is the simulated one of tests/eval/test_hub_csv_snapshot.py."""
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    data = {"hub": "nyu-mll/glue", "config": "sst2", "splits": {"test": "validation", "validation": None}}
    task_file = write_task_file(
        tmp_path, "sst2.yaml", name="my-sst2", family="sc", columns={"text": "sentence"}, data=data
    )
    spec = _spec(_corpus(tmp_path, []), str(task_file))
    with pytest.raises(UserError) as err:
        run_study(spec, tmp_path / "study", real_backend(), progress=False)
    assert str(err.value).startswith(
        "cannot load nyu-mll/glue (config sst2): the hub is offline (HF_HUB_OFFLINE=1) and the local hub cache "
        "holds nothing of nyu-mll/glue; download it with the hub online (hf download --repo-type dataset "
        "nyu-mll/glue)"
    ), str(err.value)
    assert not (tmp_path / "study").exists()
    assert not (tmp_path / "encoderlab-home" / "cache" / "decontam").exists()


def _keys(spec) -> dict[str, str]:
    return {n.name: n.key for n in build_graph(spec, real_backend())}


def test_an_edited_test_split_changes_the_prepare_key_and_an_edited_train_split_does_not(
    tmp_path, monkeypatch
):
    """The prepare node's key held `task-test:PATH`, the file's name: a test split edited after the study
    prepared its data kept the key, and the study reused data cleaned against the old test texts. Now it
    holds the digest of the test texts (`needs.keyed_sets`): what the cleaned corpus depends on, so an edit
    of the train split (which re-keys the evaluations) leaves the prepared data and the pretraining."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    (tmp_path / "tasks").mkdir()
    task_file, tests = _task_file(tmp_path / "tasks")
    spec = _spec(_corpus(tmp_path, []), task_file)
    before = _keys(spec)
    test_csv = tmp_path / "tasks" / "test.csv"
    test_csv.write_text(test_csv.read_text().replace(tests[5], tests[5].replace("test5", "test5 more"), 1))
    edited = _keys(spec)
    assert edited["prepare/main"] != before["prepare/main"]
    assert all(edited[n] != before[n] for n in edited if n.startswith("pretrain/"))
    test_csv.write_text(test_csv.read_text().replace(" more", "", 1))  # the same texts again: the same keys
    assert _keys(spec) == before
    train_csv = tmp_path / "tasks" / "train.csv"
    train_csv.write_text(train_csv.read_text().replace("train7", "train7 more", 1))
    trained = _keys(spec)
    assert trained["prepare/main"] == before["prepare/main"]
    assert {n for n in trained if trained[n] != before[n]} == {
        n for n in trained if n.startswith(("eval/", "report"))
    }


def test_a_moved_task_file_with_the_same_test_texts_keeps_the_prepared_data_and_the_models(
    tmp_path, monkeypatch
):
    """A task file moved or copied elsewhere (or a study moved with its task files) with the same test texts
    cleans the corpus alike: its prepare node and the pretraining on it keep their keys (the path re-keyed
    them, and so trained every run again on the same data); its evaluation nodes run again, as their keys
    hold the task files' paths (docs/data.md, "Decontamination")."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    (tmp_path / "tasks").mkdir()
    task_file, _ = _task_file(tmp_path / "tasks")
    corpus = _corpus(tmp_path, [])
    before = _keys(_spec(corpus, task_file))
    moved = tmp_path / "elsewhere"
    (tmp_path / "tasks").rename(moved)
    after = _keys(_spec(corpus, str(moved / "mine.yaml")))
    assert {n: k for n, k in after.items() if n.startswith(("prepare/", "pretrain/"))} == {
        n: k for n, k in before.items() if n.startswith(("prepare/", "pretrain/"))
    }
    assert all(after[n] != before[n] for n in after if n.startswith("eval/"))


def test_a_test_split_edited_after_the_graph_was_built_is_refused_before_the_prepare_writes(
    tmp_path, monkeypatch
):
    """The prepare node reads the task files where the study names them (its key holds their texts' digest,
    not their paths) and refuses texts other than those it was keyed by, before training a tokenizer or
    writing data: cleaned against them, the data would not be what its key says."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    (tmp_path / "tasks").mkdir()
    task_file, tests = _task_file(tmp_path / "tasks")
    spec = _spec(_corpus(tmp_path, []), task_file)
    node = build_graph(spec, real_backend()).nodes["prepare/main"]
    test_csv = tmp_path / "tasks" / "test.csv"
    test_csv.write_text(test_csv.read_text().replace(tests[0], tests[0] + " changed", 1))
    out = tmp_path / "node"
    out.mkdir()
    with pytest.raises(UserError) as err:
        run_prepare(NodeContext(node=node, out_dir=out, inputs={}, study_dir=tmp_path, spec=spec))
    assert str(err.value) == (
        f"dataset main: the test split of task file {task_file} changed while the study ran (its prepare node "
        "was keyed by the texts it had); run the study again"
    )
    assert not any(out.iterdir())


def test_the_plans_command_to_prepare_across_machines_names_no_set_data_prepare_refuses(
    tmp_path, monkeypatch
):
    """`study plan`'s "across machines" command for a large corpus said `--decontaminate task-test:PATH`,
    which `data prepare` refuses (it takes asset names and files; a task file is neither a set of texts nor
    read by it). Now it passes the sets `data prepare` takes and names the task file with the way to clean
    against its test texts."""
    from encoderlab.data.decontaminate import resolve_eval_sets
    from encoderlab.study.needs import dataset_decontamination
    from encoderlab.study.plantext import prepare_command

    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    (tmp_path / "tasks").mkdir()
    task_file, _ = _task_file(tmp_path / "tasks")
    spec = _spec(_corpus(tmp_path, []), task_file)
    command = prepare_command(spec.data[0], 1e9, dataset_decontamination(spec, spec.data[0]))
    sets = command.split(" --decontaminate ")[1].split(" --out ")[0].split()
    with pytest.raises(UserError):  # what the command said
        resolve_eval_sets([task_test_set(task_file)])
    assert sets == ["none"] and resolve_eval_sets(sets) == ([], [])
    assert command.endswith(
        f"; `data prepare` reads no task file, so to clean it against the test split of {task_file} as the "
        'study does, add to --decontaminate a JSONL file of those test texts (a {"text": ...} record each)'
    )


def test_building_the_graph_loads_each_task_file_once(tmp_path, monkeypatch):
    """Building the graph loaded each task file twice since its prepare key holds the test texts' digest:
    for that digest (`needs.keyed_sets`), then for the tasks keying the evaluations (`needs.file_tasks`),
    each a full load (a hub dataset's too). Within one build it is loaded once (`custom.read_once`); the
    prepare node still reads it afresh to check its test texts. Counted, not timed."""
    import encoderlab.eval.tasks.custom as custom

    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    (tmp_path / "tasks").mkdir()
    task_file, _ = _task_file(tmp_path / "tasks")
    spec = _spec(_corpus(tmp_path, []), task_file)
    loaded: list[str] = []
    real = custom.load_splits  # a task file's data read (by path: the folder of its task file)

    def counted(data, base, *args, **kwargs):
        loaded.append(str(base))
        return real(data, base, *args, **kwargs)

    monkeypatch.setattr(custom, "load_splits", counted)
    graph = build_graph(spec, real_backend())
    assert "test_texts" in graph.nodes["prepare/main"].config and any(n.kind == "eval" for n in graph)
    assert loaded == [str(tmp_path / "tasks")]  # was twice
    build_graph(spec, real_backend())
    assert loaded == [str(tmp_path / "tasks")] * 2  # a build of its own reads the file as it is then


def test_building_the_graph_extracts_each_task_files_test_texts_once(tmp_path, monkeypatch):
    """The prepare key's digest of the test texts and each file's own digest (handed to the node beside its key)
    were two readings, each extracting and hashing every test text (`keyed_sets`, then `set_versions`); one
    now (`graph.KeyedSets`). Counted on the real extraction, `testtexts.task_test_set`, not timed."""
    import encoderlab.eval.tasks.testtexts as testtexts

    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    (tmp_path / "tasks").mkdir()
    task_file, _ = _task_file(tmp_path / "tasks")
    spec = _spec(_corpus(tmp_path, []), task_file)
    read: list[str] = []
    real = testtexts.task_test_set

    def counted(name):
        read.append(name)
        return real(name)

    monkeypatch.setattr(testtexts, "task_test_set", counted)
    node = build_graph(spec, real_backend()).nodes["prepare/main"]
    assert read == [testtexts.task_test_name(task_file)]  # was twice
    assert node.config["test_texts"] and node.aside["test_texts"] == {read[0]: real(read[0]).version}


@pytest.mark.parametrize("edited", [("a",), ("a", "b")])
def test_the_refusal_of_test_splits_changed_while_running_names_the_files_that_changed(
    tmp_path, monkeypatch, edited
):
    """The prepare node's key holds one digest of all the task files' test texts; the refusal named every
    file, in the singular ("the test split of task file A, B"). The graph hands the node each file's digest
    beside its key (`Node.aside`), so it names the files whose test texts changed, in the right number."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    files, tests = {}, {}
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        files[folder], tests[folder] = _task_file(tmp_path / folder)
        spec_file = tmp_path / folder / "mine.yaml"
        spec_file.write_text(spec_file.read_text().replace("name: mine\n", f"name: mine-{folder}\n"))
    spec = _spec(_corpus(tmp_path, []), files["a"])
    spec = dataclasses.replace(spec, eval=dataclasses.replace(spec.eval, task_files=(files["a"], files["b"])))
    node = build_graph(spec, real_backend()).nodes["prepare/main"]
    for folder in edited:
        test_csv = tmp_path / folder / "test.csv"
        test_csv.write_text(test_csv.read_text().replace(tests[folder][0], tests[folder][0] + " changed", 1))
    out = tmp_path / "node"
    out.mkdir()
    with pytest.raises(UserError) as err:
        run_prepare(NodeContext(node=node, out_dir=out, inputs={}, study_dir=tmp_path, spec=spec))
    named = "split of task file" if len(edited) == 1 else "splits of task files"
    assert str(err.value) == (
        f"dataset main: the test {named} {', '.join(files[f] for f in edited)} changed while the study ran "
        "(its prepare node was keyed by the texts it had); run the study again"
    )
    assert not any(out.iterdir())


def test_a_prepare_interrupted_then_its_task_file_moved_resumes(tmp_path, monkeypatch, caplog):
    """The prepare node keeps its key when its task file moves with the same test texts; its data folder's
    recipe held the file's path (`task-test:PATH`), so the resumed prepare warned "another recipe" and started
    over. It continues from its checkpoint now (the recipe holds the texts' digest: `prepare._recipe`)."""
    from functools import partial

    from tests.data.prepare_fixtures import RESUMABLE, fail_after

    import encoderlab.data.prepare as prep

    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(prep, "prepare", partial(prep.prepare, **RESUMABLE))
    (tmp_path / "tasks").mkdir()
    task_file, _ = _task_file(tmp_path / "tasks")
    corpus = _corpus(tmp_path, [])
    out = tmp_path / "node"
    out.mkdir()

    def run(task_file):
        spec = _spec(corpus, task_file)
        node = build_graph(spec, real_backend()).nodes["prepare/main"]
        run_prepare(NodeContext(node=node, out_dir=out, inputs={}, study_dir=tmp_path, spec=spec))
        return node.key

    with pytest.MonkeyPatch.context() as mp, pytest.raises(KeyboardInterrupt):
        fail_after(mp, 11, KeyboardInterrupt())
        run(task_file)
    assert (out / "data.tmp" / "progress.json").is_file()
    (tmp_path / "tasks").rename(tmp_path / "moved")
    with caplog.at_level("WARNING"):
        run(str(tmp_path / "moved" / "mine.yaml"))
    assert "starting over" not in caplog.text  # was: "... of another recipe (or version); starting over"
    meta = json.loads((out / "data" / "meta.json").read_text())
    assert meta["resumed_after_docs"] > 0
    assert meta["decontamination"]["against"] == [task_test_set(str(tmp_path / "moved" / "mine.yaml"))]
