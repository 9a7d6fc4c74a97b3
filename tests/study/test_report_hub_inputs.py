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
from test_start_commits import STUDY, _world
from tests.data.test_hubmodels import SHA_A
from tests.reliability.test_hostile_inputs import cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
from corpus_fixtures import tokenizer_dir  # noqa: E402, F401 (fixture)
from hub_corpus_fixtures import FINEWEB_EDU  # noqa: E402
from test_hub_revision import SHA_A as AT_V1  # noqa: E402 (v1's commit of the corpus)
from test_hub_revision import SHA_B, fake_hub  # noqa: E402, F401 (fixture)
from test_stale_corpus import _backend  # noqa: E402

from encoderlab.study.data import load_study  # noqa: E402
from encoderlab.study.runner import run_study  # noqa: E402
from encoderlab.study.spec import DataSpec  # noqa: E402


def _row(report: str) -> str:
    return next(line for line in report.splitlines() if line.startswith("| hub inputs |"))


def test_the_report_says_the_hub_tokenizer_and_start_model_were_read_unpinned_and_at_which_commit(
    tmp_path, monkeypatch, capsys
):
    _world(tmp_path, monkeypatch)  # main at commit A
    argv = ["study", "run", tmp_path / "drift.yaml", "--out", tmp_path / "out", "--no-fetch"]
    assert cli(argv, capsys)[0] == 0
    report = (tmp_path / "out" / "report" / "report.md").read_text()
    assert _row(report) == (
        f"| hub inputs | tokenizer someone/enc (data main): unpinned, read at commit {SHA_A[:12]}; start model "
        f"someone/enc: unpinned, read at commit {SHA_A[:12]} |"
    )


def test_the_report_says_a_pinned_start_model_is_pinned(tmp_path, monkeypatch, capsys):
    _world(tmp_path, monkeypatch)
    pinned = STUDY.replace("init: someone/enc}", f"init: someone/enc@{SHA_A}}}")
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
    from fake_study import small_spec

    corpus = f"hf:{FINEWEB_EDU}#hf_config=sample-10BT{pin}"
    data = DataSpec(name="main", corpus=(corpus,), tokenizer=str(tokenizer_dir), decontaminate=False)
    spec = small_spec()
    spec = dataclasses.replace(
        spec,
        name="mini",
        data=(data,),
        cka=(),
        claims=tuple(c for c in spec.claims if c.kind != "cka_low_layers"),
    )
    run_study(spec, tmp_path / "s", _backend(), progress=False)
    assert load_study(tmp_path / "s").hub_inputs_text() == f"corpus {FINEWEB_EDU} (data main): {expected}"


def test_the_report_names_the_hub_datasets_its_evaluations_read(tmp_path, monkeypatch):
    """Was: tokenizers, corpora and start models only, though the scores rest on hub datasets (GLUE, SQuAD,
    ...) just as much. An evaluation records no commit of them (`EvalRecord`), so the row says so; a pin
    that is a branch (BigBio's parquet export) says nothing of the commit either."""
    from fake_study import backend, small_spec

    from encoderlab.eval.spec import HubRepo
    from encoderlab.eval.tasks import TASKS
    from encoderlab.eval.tasks.hub import PARQUET_EXPORT

    # the fake backend's tasks, registered as reading hub datasets (`Task.hub_repos`)
    glue, bigbio = HubRepo("nyu-mll/glue"), HubRepo("bigbio/blurb", PARQUET_EXPORT)
    for name, repos in (("sst", (glue,)), ("mnli", (glue,)), ("ner", (bigbio,))):
        monkeypatch.setitem(TASKS, name, dataclasses.replace(TASKS["paper-sst2"], name=name, hub_repos=repos))
    spec = small_spec()
    run_study(spec, tmp_path / "s", backend(), progress=False)
    row = load_study(tmp_path / "s").hub_inputs_text()
    assert row == (
        "dataset nyu-mll/glue (eval sst, mnli): unpinned, the commit read not recorded; dataset bigbio/blurb "
        "(eval ner): pinned at refs/convert/parquet, the commit read not recorded"
    ), row


def test_the_report_names_the_hub_dataset_a_task_file_reads(tmp_path):
    """Was: only built-in tasks' datasets were listed; a task file whose data names a hub dataset had no
    `Task.hub_repos`, and a report not in the process that registered it (`study report`, a worker) had
    no task at all. Its file's spec is read (no data): present, its dataset is listed; gone, none is."""
    from types import SimpleNamespace

    from tests.eval.fixtures import write_task_file

    from encoderlab.eval.spec import HubRepo
    from encoderlab.study.hubinputs import eval_datasets

    data = {"hub": "nyu-mll/glue", "config": "sst2", "revision": "v1"}
    path = write_task_file(tmp_path, name="my-sst2", family="sc", data=data, columns={"text": "sentence"})
    node = SimpleNamespace(kind="eval", name="e", config={"task": "my-sst2", "task_files": [str(path)]})
    study = SimpleNamespace(nodes=[node, node], markers={"e": {}})  # two nodes of one task: named once
    assert eval_datasets(study) == {HubRepo("nyu-mll/glue", "v1"): ["my-sst2"]}
    path.unlink()
    assert eval_datasets(study) == {}
