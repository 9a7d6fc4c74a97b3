"""A study resumed after its unpinned hub start model moved to another commit is refused before anything
runs (`study.startcommits`): its finished run continued commit A, and the start model evaluated as is,
added since, would have read commit B under the same name. The hub is the local hub cache as
huggingface_hub lays it out (`snapshots/COMMIT/`, `refs/main`), read offline by the real
`snapshot_download`; the default branch moves by rewriting `refs/main`, as a download after a push does."""

from __future__ import annotations

import json

from tests.data.hub_cache_fixtures import SHA_A, SHA_B
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import cli
from tests.reliability.treestate import assert_unchanged, world_state
from tests.study.study_fixtures import HUB_START_STUDY, hub_start_world

AS_IS = "  - {name: start, init: someone/enc}\n"


def test_a_resumed_study_whose_hub_start_moved_is_refused_before_anything_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    storage = hub_start_world(tmp_path, monkeypatch)
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

    (tmp_path / "drift.yaml").write_text(
        HUB_START_STUDY.replace("runs:\n", "runs:\n" + AS_IS)
    )  # evaluate it as is too
    (storage / "refs" / "main").write_text(SHA_B)  # the repo moved on
    before = world_state(tmp_path / "out", tmp_path)
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
    assert_unchanged(before)

    (storage / "refs" / "main").write_text(SHA_A)  # back at the commit the run read: the study resumes
    code, err = cli(argv, capsys)
    assert code == 0, err
    assert len(list((tmp_path / "out" / "nodes" / "eval").iterdir())) == 2


def test_a_resumed_study_whose_hub_start_moved_is_refused_when_only_evaluations_as_is_read_it(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    storage = hub_start_world(tmp_path, monkeypatch)
    as_is = HUB_START_STUDY.replace("  - {name: cpt, recipe: cpt-mlm, init: someone/enc}\n", AS_IS)
    (tmp_path / "drift.yaml").write_text(as_is.replace("baseline: cpt", "baseline: start"))
    argv = ["study", "run", tmp_path / "drift.yaml", "--out", tmp_path / "out", "--no-fetch"]
    code, err = cli(argv, capsys)
    assert code == 0, err
    assert not (tmp_path / "out" / "nodes" / "pretrain").exists()  # evaluations as is only
    report = (tmp_path / "out" / "report" / "report.md").read_text()
    assert f"| start | start | (evaluated as is) | – | someone/enc (commit {SHA_A[:12]}) |" in report

    (tmp_path / "drift.yaml").write_text(
        HUB_START_STUDY.replace("runs:\n", "runs:\n" + AS_IS)
    )  # a run continues it now
    (storage / "refs" / "main").write_text(SHA_B)  # the repo moved on
    before = world_state(tmp_path / "out", tmp_path)
    code, err = cli(argv, capsys)
    assert (
        code == 2
        and f"(start (evaluated as is) read commit {SHA_A}; it resolves to commit {SHA_B} now)" in err
    )
    assert_unchanged(before)
