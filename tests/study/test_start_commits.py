"""A study resumed after its unpinned hub start model moved to another commit is refused before anything
runs (`study.startcommits`): its finished run continued commit A, and the start model evaluated as is,
added since, would have read commit B under the same name. The hub is the local hub cache as
huggingface_hub lays it out (`snapshots/COMMIT/`, `refs/main`), read offline by the real
`snapshot_download`; the default branch moves by rewriting `refs/main`, as a download after a push does."""

from __future__ import annotations

import json

from fake_study import tiny_corpus
from test_files import _task_file
from tests.data.test_hubmodels import SHA_A, SHA_B, cache_two_commits
from tests.eval.fixtures import model_folder
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import cli, snapshot

STUDY = """
name: drift
description: continued pretraining of a hub model
size: tiny
seq_len: 32
micro_batch: 2
grad_accum: 2
steps: 3
run_overrides: {precision: fp32}
data: [{name: main, corpus: [corpus.jsonl], tokenizer: someone/enc, decontaminate: false}]
runs:
  - {name: cpt, recipe: cpt-mlm, init: someone/enc}
eval: {suite: null, task_files: [polarity.yaml], lrs: [0.002], seeds: [0], max_steps: 2}
baseline: cpt
"""
AS_IS = "  - {name: start, init: someone/enc}\n"


def _world(tmp_path, monkeypatch):
    storage = cache_two_commits(tmp_path, monkeypatch, lambda folder, sha: model_folder(folder))
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    (storage / "refs" / "main").write_text(SHA_A)
    tiny_corpus(tmp_path / "corpus.jsonl", 300)
    _task_file(tmp_path)
    (tmp_path / "drift.yaml").write_text(STUDY)
    return storage


def test_a_resumed_study_whose_hub_start_moved_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys):
    storage = _world(tmp_path, monkeypatch)
    argv = ["study", "run", tmp_path / "drift.yaml", "--out", tmp_path / "out", "--no-fetch"]
    code, err = cli(argv, capsys)
    assert code == 0, err
    env = next((tmp_path / "out" / "nodes" / "pretrain").glob("*/run/env.json"))
    assert json.loads(env.read_text())["start_model"] == {"hub_id": "someone/enc", "commit": SHA_A}
    report = (tmp_path / "out" / "report" / "report.md").read_text()
    assert "| cpt | cpt | cpt-mlm | " in report and f"| someone/enc (commit {SHA_A[:12]}) |" in report
    meta = next((tmp_path / "out" / "nodes" / "prepare").rglob("meta.json"))  # the tokenizer, read unpinned
    assert json.loads(meta.read_text())["tokenizer"]["commit"] == SHA_A
    assert f"tokenizer someone/enc (commit {SHA_A[:12]})" in report

    (tmp_path / "drift.yaml").write_text(STUDY.replace("runs:\n", "runs:\n" + AS_IS))  # evaluate it as is too
    (storage / "refs" / "main").write_text(SHA_B)  # the repo moved on
    before = snapshot(tmp_path / "out")
    code, err = cli(argv, capsys)
    assert code == 2 and err.strip() == (
        "encoderlab: error: study drift: start model 'someone/enc' is read unpinned, and it has moved: its "
        f"finished nodes read other weights than its nodes still to run would (cpt read commit {SHA_A}; it "
        f"resolves to commit {SHA_B} now); to finish the study with the weights they read, mirror that commit "
        f"(hf download --revision {SHA_A} someone/enc --local-dir DIR/someone/enc, then set "
        f"ENCODERLAB_HUB_MODELS=DIR), or name someone/enc@{SHA_B} in the study to run every node reading it "
        "again at the new one"
    ), err
    assert_printed_as_documented("study-hub-start-moved", err, tmp_path)
    assert snapshot(tmp_path / "out") == before

    (storage / "refs" / "main").write_text(SHA_A)  # back at the commit the run read: the study resumes
    code, err = cli(argv, capsys)
    assert code == 0, err
    assert len(list((tmp_path / "out" / "nodes" / "eval").iterdir())) == 2


def test_a_resumed_study_whose_hub_start_moved_is_refused_when_only_evaluations_as_is_read_it(
    tmp_path, monkeypatch, capsys
):
    storage = _world(tmp_path, monkeypatch)
    as_is = STUDY.replace("  - {name: cpt, recipe: cpt-mlm, init: someone/enc}\n", AS_IS)
    (tmp_path / "drift.yaml").write_text(as_is.replace("baseline: cpt", "baseline: start"))
    argv = ["study", "run", tmp_path / "drift.yaml", "--out", tmp_path / "out", "--no-fetch"]
    code, err = cli(argv, capsys)
    assert code == 0, err
    assert not (tmp_path / "out" / "nodes" / "pretrain").exists()  # evaluations as is only
    report = (tmp_path / "out" / "report" / "report.md").read_text()
    assert f"| start | start | (evaluated as is) | – | someone/enc (commit {SHA_A[:12]}) |" in report

    (tmp_path / "drift.yaml").write_text(
        STUDY.replace("runs:\n", "runs:\n" + AS_IS)
    )  # a run continues it now
    (storage / "refs" / "main").write_text(SHA_B)  # the repo moved on
    before = snapshot(tmp_path / "out")
    code, err = cli(argv, capsys)
    assert (
        code == 2
        and f"(start (evaluated as is) read commit {SHA_A}; it resolves to commit {SHA_B} now)" in err
    )
    assert snapshot(tmp_path / "out") == before
