"""`eval --check` says what a rerun into the same --out would reuse, in the run's own line
(`commands.cache_lines`), and reads the weights only where --out holds results (the cache is keyed by a
hash of the weights); it says whether it compared a hub id's embedding rows, reading the weights' headers
from the local hub cache where an earlier download left them and downloading none. Before, --check said
nothing of a rerun, and passed a hub id's weights unchecked without a word."""

from __future__ import annotations

import json
import shutil

import huggingface_hub
import pytest
from huggingface_hub import constants
from tests.eval.fixtures import model_folder, run_cli, sentiment_files, write_task_file

from encoderlab.data.hub import HUB_MODELS_ENV

pytestmark = pytest.mark.usefixtures("isolated_tasks")
HUB_ID = "someone/enc"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _task(tmp_path):
    spec = {**sentiment_files(tmp_path), "max_length": 32}
    spec["finetune"] = {"max_steps": 1, "batch_size": 8, "micro_batch_size": 8}
    return write_task_file(tmp_path, name="mine", **spec)


def test_check_prints_the_reuse_a_rerun_prints_and_changes_nothing(tmp_path, capsys):
    out = tmp_path / "e"
    argv = ["eval", str(model_folder(tmp_path / "m")), "--task-file", str(_task(tmp_path)), "--out", str(out)]
    argv += ["--device", "cpu", "--lrs", "1e-3"]
    assert run_cli([*argv, "--seeds", "0"], capsys)[0] == 0
    results = out / "results.jsonl"
    results.write_bytes(
        results.read_bytes() + b'{"model": "torn'
    )  # a crash mid-write: the run cuts it, --check not
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    code, checked, err = run_cli([*argv, "--seeds", "0", "1", "--check"], capsys)
    assert code == 0, err
    assert {
        p: p.read_bytes() for p in out.rglob("*") if p.is_file()
    } == before  # nothing written, nothing cut
    code, ran, err = run_cli([*argv, "--seeds", "0", "1"], capsys)
    assert code == 0, err
    reuse = ran.splitlines()[0]
    assert (
        reuse == f"reusing 1 of 2 runs (task x LR x seed) already in {results}; they are not fine-tuned again"
    )
    assert reuse in checked.splitlines(), checked
    assert f"weights read only to fingerprint it for {out}'s results" in checked.splitlines()[0], checked


def _hub_copy(tmp_path, monkeypatch, with_weights: bool):
    """`someone/enc` in a hub cache of the test's own, as a download of its configs and tokenizer leaves it
    (and, `with_weights`, an earlier download of the whole repo); the hub asked for nothing else."""
    storage = tmp_path / "hub-cache" / "models--someone--enc"
    snapshot = storage / "snapshots" / COMMIT  # the layout huggingface_hub keeps, read by its own code
    shutil.copytree(model_folder(tmp_path / "repo"), snapshot)
    (storage / "refs").mkdir()
    (storage / "refs" / "main").write_text(COMMIT)
    if not with_weights:
        (snapshot / "model.safetensors").unlink()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.delenv(HUB_MODELS_ENV, raising=False)
    real = huggingface_hub.snapshot_download

    def snapshot_download(repo_id, *, allow_patterns=None, local_files_only=False, **kwargs):
        if local_files_only:
            return real(repo_id, local_files_only=True, **kwargs)
        assert repo_id == HUB_ID and not any(p.endswith("safetensors") for p in allow_patterns), (
            allow_patterns
        )
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    return snapshot


def test_a_hub_id_whose_weights_are_cached_has_its_embedding_rows_checked(tmp_path, capsys, monkeypatch):
    snapshot = _hub_copy(tmp_path, monkeypatch, with_weights=True)
    argv = ["eval", HUB_ID, "--task-file", str(_task(tmp_path)), "--out", str(tmp_path / "e"), "--check"]
    argv += ["--lrs", "1e-3", "--seeds", "0"]
    code, said, err = run_cli(argv, capsys)
    assert code == 0 and "embedding rows checked against its config" in said.splitlines()[0], (said, err)
    meta = json.loads((snapshot / "config.json").read_text())
    meta["model"]["vocab_size"] += (
        8  # the config no longer the stored rows: the load's line, from the headers
    )
    (snapshot / "config.json").write_text(json.dumps(meta))
    code, said, err = run_cli(argv, capsys)
    assert code == 2 and said == "" and len(err.strip().splitlines()) == 1 and "embed" in err, (said, err)


def test_a_hub_id_whose_weights_are_not_cached_says_its_rows_were_not_checked(tmp_path, capsys, monkeypatch):
    _hub_copy(tmp_path, monkeypatch, with_weights=False)
    argv = ["eval", HUB_ID, "--task-file", str(_task(tmp_path)), "--out", str(tmp_path / "e"), "--check"]
    code, said, err = run_cli([*argv, "--lrs", "1e-3", "--seeds", "0"], capsys)
    assert code == 0, err
    assert said.splitlines()[0].endswith(
        "embedding rows not checked: its weights are not in the local hub cache and --check downloads none "
        "(the run downloads and checks them)"
    ), said


def test_results_of_a_hub_id_whose_weights_are_not_cached_are_said_not_counted(tmp_path, capsys, monkeypatch):
    _hub_copy(tmp_path, monkeypatch, with_weights=False)
    out, task = tmp_path / "e", str(_task(tmp_path))
    grid = ["--lrs", "1e-3", "--seeds", "0", "--device", "cpu"]
    ran = run_cli(["eval", str(tmp_path / "repo"), "--task-file", task, "--out", str(out), *grid], capsys)
    assert ran[0] == 0, ran  # results of the same model, evaluated from the folder the repo was made of
    code, said, err = run_cli(
        ["eval", HUB_ID, "--task-file", task, "--out", str(out), *grid, "--check"], capsys
    )
    assert code == 0, err
    assert (
        f"{out / 'results.jsonl'} holds results, but what a rerun would reuse is not counted: they are keyed by "
        "the model's weights, which are not in the local hub cache, and --check downloads none"
    ) in said.splitlines(), said
    assert "(weights not loaded)" in said.splitlines()[0], said


def test_a_rerun_of_a_hub_id_whose_weights_are_cached_is_counted_from_the_cache_alone(
    tmp_path, capsys, monkeypatch
):
    """The fingerprint of a cached hub id is read from its snapshot: before, --check loaded the id itself,
    which online is a `snapshot_download` of the whole repo (`MODEL_FILES`, weights too): the hub asked,
    and whatever the cache lacked fetched."""
    _hub_copy(tmp_path, monkeypatch, with_weights=True)
    fetched, fake = [], huggingface_hub.snapshot_download

    def snapshot_download(repo_id, **kwargs):
        # the weights asked of the hub: a download (a look in the cache, `local_files_only`, asks nothing)
        if any(p.endswith("safetensors") for p in kwargs.get("allow_patterns") or ()) and not kwargs.get(
            "local_files_only"
        ):
            fetched.append(kwargs)
        return fake(repo_id, **kwargs)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # online (tests/conftest.py sets it): a load may ask the hub
    out, task, grid = tmp_path / "e", str(_task(tmp_path)), ["--lrs", "1e-3", "--device", "cpu"]
    folder = ["eval", str(tmp_path / "repo"), "--task-file", task, "--out", str(out), *grid]
    assert run_cli([*folder, "--seeds", "0"], capsys)[0] == 0  # results of the repo's own weights
    argv = ["eval", HUB_ID, "--task-file", task, "--out", str(out), *grid, "--seeds", "0", "1", "--check"]
    code, checked, err = run_cli(argv, capsys)
    assert code == 0 and not fetched, (err, fetched)
    code, ran, err = run_cli([*folder, "--seeds", "0", "1"], capsys)  # the same weights: the same reuse
    assert code == 0 and ran.splitlines()[0].startswith("reusing 1 of 2 runs"), (ran, err)
    assert ran.splitlines()[0] in checked.splitlines(), checked


def test_check_counts_the_runs_a_rerun_fine_tunes_beside_those_it_reuses(tmp_path, capsys):
    """`eval --check` said "would run 2 fine-tuning runs" right below "reusing 1 of 2 runs": the rerun
    fine-tunes 1. Its last line now says how many of the grid's runs are fine-tuned, as the run decides."""
    out = tmp_path / "e"
    argv = ["eval", str(model_folder(tmp_path / "m")), "--task-file", str(_task(tmp_path)), "--out", str(out)]
    argv += ["--device", "cpu", "--lrs", "1e-3"]
    assert run_cli([*argv, "--seeds", "0"], capsys)[0] == 0
    lines = {}
    for seeds in (["0", "1", "2"], ["0"]):
        code, checked, err = run_cli([*argv, "--seeds", *seeds, "--check"], capsys)
        assert code == 0, err
        lines[len(seeds)] = checked.splitlines()[-1]
    assert lines[3].startswith(
        f"would run 3 fine-tuning runs (1 task; tasks sharing a run count once) into {out}, "
    )
    assert ", 2 of them fine-tuned (the others reused); checked, nothing trained or written" in lines[3], (
        lines
    )
    assert ", all reused (none fine-tuned); checked" in lines[1], lines
    code, ran, err = run_cli([*argv, "--seeds", "0", "1", "2"], capsys)
    assert code == 0, err
    records = [line for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]
    assert len(records) == 3  # the run fine-tuned the 2 the check counted, beside the 1 it reused
