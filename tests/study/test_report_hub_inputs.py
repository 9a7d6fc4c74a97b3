# ruff: noqa: F811 (the fixtures, imported)
"""The report names each hub input of a study, whether it is pinned and the commit its nodes read (the
`hub inputs` row). The built-in studies name their hub tokenizer, start models and corpora unpinned (no
full commit sha of them was verified, so none is pinned), and a report that gave the tokenizer's and start
model's commit in passing, and no corpus's, did not say that the study's inputs were unpinned at all, nor
which commit of its hub corpus was read: what a rerun pins to read the same (`OWNER/NAME@SHA`,
`#hf_revision=SHA`). The hub is the local hub cache (models, `test_start_commits`) and a simulated
`datasets` hub at three commits (the corpus, `tests/data/test_hub_revision.py`)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from tests.data.hub_cache_fixtures import SHA_A
from tests.reliability.test_hostile_inputs import cli
from tests.study.study_fixtures import HUB_START_STUDY, hub_start_world

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
from corpus_fixtures import tokenizer_dir  # noqa: E402, F401 (fixture)
from hub_corpus_fixtures import FINEWEB_EDU  # noqa: E402
from test_hub_revision import SHA_A as AT_V1  # noqa: E402 (v1's commit of the corpus)
from test_hub_revision import SHA_B, fake_hub  # noqa: E402, F401 (fixture)
from tests.study.stale_fixtures import cut_spec, stale_backend  # noqa: E402

from encoderlab.study.data import load_study  # noqa: E402
from encoderlab.study.runner import run_study  # noqa: E402
from encoderlab.study.spec import DataSpec  # noqa: E402


def _row(report: str) -> str:
    return next(line for line in report.splitlines() if line.startswith("| hub inputs |"))


def test_the_report_says_the_hub_tokenizer_and_start_model_were_read_unpinned_and_at_which_commit(
    tmp_path, monkeypatch, capsys
):
    hub_start_world(tmp_path, monkeypatch)  # main at commit A
    argv = ["study", "run", tmp_path / "drift.yaml", "--out", tmp_path / "out", "--no-fetch"]
    assert cli(argv, capsys)[0] == 0
    report = (tmp_path / "out" / "report" / "report.md").read_text()
    assert _row(report) == (
        f"| hub inputs | tokenizer someone/enc (data main): unpinned, read at commit {SHA_A[:12]}; start model "
        f"someone/enc: unpinned, read at commit {SHA_A[:12]} |"
    )


def test_the_report_says_a_pinned_start_model_is_pinned(tmp_path, monkeypatch, capsys):
    hub_start_world(tmp_path, monkeypatch)
    pinned = HUB_START_STUDY.replace("init: someone/enc}", f"init: someone/enc@{SHA_A}}}")
    (tmp_path / "drift.yaml").write_text(pinned)
    argv = ["study", "run", tmp_path / "drift.yaml", "--out", tmp_path / "out", "--no-fetch"]
    assert cli(argv, capsys)[0] == 0
    row = _row((tmp_path / "out" / "report" / "report.md").read_text())
    assert row.endswith(f"; start model someone/enc@{SHA_A}: pinned at {SHA_A} |"), row


@pytest.mark.parametrize(
    ("pin", "expected"),
    [
        ("", f"unpinned, read at commit {SHA_B[:12]}"),  # main is at B
        (",hf_revision=v1", f"pinned at v1, read at commit {AT_V1[:12]}"),  # v1 is at A
    ],
    ids=["unpinned", "tag"],
)
def test_the_report_names_the_commit_a_hub_corpus_was_read_at(
    fake_hub, tmp_path, tokenizer_dir, pin, expected
):
    corpus = f"hf:{FINEWEB_EDU}#hf_config=sample-10BT{pin}"
    spec = cut_spec(
        DataSpec(name="main", corpus=(corpus,), tokenizer=str(tokenizer_dir), decontaminate=False)
    )
    run_study(spec, tmp_path / "s", stale_backend(), progress=False)
    assert load_study(tmp_path / "s").hub_inputs_text() == f"corpus {FINEWEB_EDU} (data main): {expected}"


def _recording(read: dict[str, list[dict]]):
    """The fake study's backend, its eval records naming the hub datasets `read` gives for their task (as
    `EvalRecord.hub_datasets`), and none for any other: records from before they were recorded."""
    from fake_study import backend, evaluate

    from encoderlab.study.graph import NodeKind

    def recording(ctx):
        record = evaluate(ctx)
        record.pop("hub_datasets", None)
        return record | ({"hub_datasets": read[task]} if (task := ctx.node.config["task"]) in read else {})

    world = backend()
    world.kinds["eval"] = NodeKind(run=recording)
    return world


def test_the_report_names_the_hub_datasets_its_evaluations_read(tmp_path, monkeypatch):
    """Was: tokenizers, corpora and start models only, though the scores rest on hub datasets (GLUE, SQuAD,
    ...) just as much. A record from before they were recorded (`EvalRecord.hub_datasets`) names none: its
    task's datasets are listed, and the row says their commit is not recorded; a pin that is a branch
    (BigBio's parquet export) says nothing of the commit either."""
    from fake_study import small_spec

    from encoderlab.eval.spec import HubRepo
    from encoderlab.eval.tasks import TASKS
    from encoderlab.eval.tasks.hubsource import PARQUET_EXPORT

    # the fake backend's tasks, registered as reading hub datasets (`Task.hub_repos`)
    glue, bigbio = HubRepo("nyu-mll/glue"), HubRepo("bigbio/blurb", PARQUET_EXPORT)
    for name, repos in (("sst", (glue,)), ("mnli", (glue,)), ("ner", (bigbio,))):
        monkeypatch.setitem(TASKS, name, dataclasses.replace(TASKS["paper-sst2"], name=name, hub_repos=repos))
    spec = small_spec()
    run_study(spec, tmp_path / "s", _recording({}), progress=False)
    row = load_study(tmp_path / "s").hub_inputs_text()
    assert row == (
        "dataset nyu-mll/glue (eval sst, mnli): unpinned, the commit read not recorded; dataset bigbio/blurb "
        "(eval ner): pinned at refs/convert/parquet, the commit read not recorded"
    ), row


def _eval(task: str, task_file: Path, hub_datasets=None):
    """A finished evaluation of `task` from `task_file` (`StudyData.evals`), its record naming `hub_datasets`
    read (None: a record from before they were recorded)."""
    from encoderlab.eval.summary import EvalRecord
    from encoderlab.study.data import StudyEval

    scores = dict(val={}, test={}, val_score=0.0, test_score=0.0, hub_datasets=hub_datasets)
    record = EvalRecord(
        model="m", task=task, family="sc", task_signature="s", metric="acc", lr=1e-5, seed=0, **scores
    )
    return StudyEval("m", None, record, (str(task_file),))


def test_the_report_names_the_hub_dataset_a_task_file_reads(tmp_path):
    """Was: only built-in tasks' datasets were listed; a task file whose data names a hub dataset had no
    `Task.hub_repos`, and a report not in the process that registered it (`study report`, a worker) had
    no task at all. Its file's spec is read (no data): present, its dataset is listed; gone, none is."""
    from types import SimpleNamespace

    from tests.eval.fixtures import write_task_file

    from encoderlab.eval.spec import HubRepo
    from encoderlab.study.hubinputs import eval_reads

    data = {"hub": "nyu-mll/glue", "config": "sst2", "revision": "v1"}
    path = write_task_file(tmp_path, name="my-sst2", family="sc", data=data, columns={"text": "sentence"})
    study = SimpleNamespace(evals=[_eval("my-sst2", path)] * 2)  # two evaluations of one task: named once
    assert {repo: read.tasks for repo, read in eval_reads(study)[0].items()} == {
        HubRepo("nyu-mll/glue", "v1"): ["my-sst2"]
    }
    path.unlink()
    assert eval_reads(study) == ({}, {})


GLUE_AT = "c" * 40


def test_the_report_names_the_commit_each_evaluation_recorded_reading(tmp_path, monkeypatch):
    """An evaluation records the hub datasets its task read and the commit read (`EvalRecord.hub_datasets`):
    the row names them as recorded (the fake tasks name no hub dataset now: the record, not the task, is
    read). A dataset whose evaluations recorded a commit only in part (a record from before, its task
    reading the dataset now) says so. Was "the commit read not recorded" for every evaluation dataset."""
    from fake_study import small_spec

    from encoderlab.eval.spec import HubRepo
    from encoderlab.eval.tasks import TASKS

    glue = HubRepo("nyu-mll/glue")
    monkeypatch.setitem(
        TASKS, "mnli", dataclasses.replace(TASKS["paper-sst2"], name="mnli", hub_repos=(glue,))
    )
    read = {  # mnli: a record from before, which names no dataset
        "sst": [{"hub_id": glue.repo, "revision": None, "commit": GLUE_AT}],
        "ner": [{"hub_id": "bigbio/blurb", "revision": "refs/convert/parquet", "commit": None}],
    }
    run_study(small_spec(), tmp_path / "s", _recording(read), progress=False)
    assert load_study(tmp_path / "s").hub_inputs_text() == (
        f"dataset nyu-mll/glue (eval sst, mnli): unpinned, read at commit {GLUE_AT[:12]}, by some of its "
        "evaluations (the others recorded none); dataset bigbio/blurb (eval ner): pinned at "
        "refs/convert/parquet, the commit read not recorded"
    )


def test_a_task_file_changed_since_its_evaluation_is_read_as_recorded_and_said_changed(tmp_path):
    """The row named the datasets a task file names at report time: a file edited after its evaluation
    gave the new dataset as the one read. Now the record's, and the change is said."""
    from types import SimpleNamespace

    from tests.eval.fixtures import write_task_file

    from encoderlab.eval.spec import HubRepo
    from encoderlab.eval.summary import HubRead
    from encoderlab.study.hubinputs import eval_reads

    data = {"hub": "nyu-mll/glue", "config": "sst2", "revision": "v1"}
    path = write_task_file(tmp_path, name="my-sst2", family="sc", data=data, columns={"text": "sentence"})
    read = (HubRead("nyu-mll/glue", None, GLUE_AT),)  # the file before its edit
    study = SimpleNamespace(evals=[_eval("my-sst2", path, read)])
    reads, changed = eval_reads(study)
    assert {repo: (r.tasks, r.commits) for repo, r in reads.items()} == {
        HubRepo("nyu-mll/glue"): (["my-sst2"], [GLUE_AT])
    }
    assert changed == {"my-sst2": "nyu-mll/glue at v1"}
