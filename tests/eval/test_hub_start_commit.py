"""`encoderlab eval` of a model named by a hub id records the commit it read, in every result record and
in summary.json and .md (`start_model`, env.json's record of a pretraining run's start): an unpinned id is
whatever the repo's default branch held, which a later push changes under the same name. The hub is the
local hub cache as huggingface_hub lays it out, read offline by the real `snapshot_download`."""

from __future__ import annotations

import json

import pytest
from tests.data.hub_cache_fixtures import SHA_A, SHA_B, cache_two_commits
from tests.eval.conftest import sc_examples
from tests.eval.fixtures import model_folder, write_jsonl, write_task_file
from tests.reliability.test_hostile_inputs import cli
from tests.reliability.treestate import assert_unchanged, world_state

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def _eval(tmp_path, model: str, out: str, capsys) -> tuple[list[dict], dict]:
    """`eval` of `model` on a small task file: its result records and summary.json."""
    data = {s: write_jsonl(tmp_path / f"{s}.jsonl", sc_examples(n, k)) for k, (s, n) in enumerate(
        (("train", 32), ("validation", 16), ("test", 16)))}  # fmt: skip
    spec = {"name": "mood", "family": "sc", "data": data, "columns": {"text": "text", "label": "label"}}
    spec["finetune"] = {"max_steps": 2, "batch_size": 8, "micro_batch_size": 8}  # the record, not learning
    task = write_task_file(tmp_path, "mood.yaml", **spec, max_length=32)
    argv = ["eval", model, "--task-file", task, "--lrs", "1e-4", "--seeds", "0", "--out", tmp_path / out]
    code, err = cli(argv, capsys)
    assert code == 0, err
    records = [json.loads(line) for line in (tmp_path / out / "results.jsonl").read_text().splitlines()]
    return records, json.loads((tmp_path / out / "summary.json").read_text())


def test_an_eval_of_a_hub_id_records_the_commit_it_read(tmp_path, monkeypatch, capsys):
    cache_two_commits(tmp_path, monkeypatch, lambda folder, sha: model_folder(folder))
    for model, out, commit in (("someone/enc", "main", SHA_B), ("someone/enc@v1", "v1", SHA_A)):
        records, summary = _eval(tmp_path, model, out, capsys)
        assert [r["start_model"] for r in records] == [{"hub_id": model, "commit": commit}]
        assert summary["start_model"] == {"hub_id": model, "commit": commit}
        assert (
            f"# Evaluation of {model} at commit `{commit}`\n" in (tmp_path / out / "summary.md").read_text()
        )
    records, summary = _eval(tmp_path, str(model_folder(tmp_path / "model")), "folder", capsys)
    assert records[0]["start_model"] == summary["start_model"] == {}  # a folder is its own record


def test_an_out_inside_a_hub_ids_cache_folder_is_refused_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """The hub id's cached snapshot is what the eval reads, as a local folder is: `--out` there (or in the
    repo's blobs/, which the snapshot's files link into) is refused before anything is written. Before, only
    a mirror folder was guarded and the evaluation was written into the hub cache."""
    storage = cache_two_commits(tmp_path, monkeypatch, lambda folder, sha: model_folder(folder))
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    before = world_state(tmp_path)  # the hub cache (storage) is in it
    for model, out in (
        ("someone/enc", storage / "snapshots" / SHA_B / "eval"),
        ("someone/enc@v1", storage / "snapshots" / SHA_A),
        ("someone/enc", storage / "blobs"),
    ):
        code, err = cli(
            ["eval", model, "--tasks", "boolq", "--lrs", "1e-4", "--seeds", "0", "--out", out], capsys
        )
        assert code == 2
        assert err.strip().splitlines() == [
            f"encoderlab: error: --out {out} is, contains or lies inside the source {storage}; "
            "writing there would destroy what is being read: choose another --out"
        ]
    assert_unchanged(before)
