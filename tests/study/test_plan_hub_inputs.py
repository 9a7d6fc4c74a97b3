"""`study plan` says, before anything runs, whether each hub start model and tokenizer is pinned and which
commit a load of it reads as told without the network (`hubinputs.plan_hub_inputs`).

The report's `hub inputs` row said it of the finished nodes only: a built-in's unpinned start model (none
is pinned, no commit sha of theirs was verified) was seen unpinned after the runs, and the plan never
named the commit a rerun pins. The hub is the local hub cache as huggingface_hub lays it out
(`models--someone--enc/snapshots/COMMIT/`, `refs/main`, the tag `refs/v1`), read offline by the real
`snapshot_download` (`test_start_commits._world`); the default branch moves by rewriting `refs/main`,
as a download after a push does.
"""

from __future__ import annotations

import json

import pytest
from tests.data.hub_cache_fixtures import SHA_A, SHA_B, commit_model_folder, download_record
from tests.reliability.test_hostile_inputs import cli
from tests.study.study_fixtures import HUB_START_STUDY, hub_start_world

from encoderlab.cli import main
from encoderlab.data.hub import HUB_MODELS_ENV
from encoderlab.study.hubinputs import PLAN_HEAD


def _plan(tmp_path, capsys, *args) -> list[str]:
    """The `hub inputs` head and lines of `study plan drift.yaml ARGS` (exit 0)."""
    capsys.readouterr()
    main(["study", "plan", str(tmp_path / "drift.yaml"), *map(str, args)])
    out = capsys.readouterr().out.splitlines()
    if PLAN_HEAD not in out:
        return []
    start = out.index(PLAN_HEAD)
    return [out[start], *[line for line in out[start + 1 :] if line.startswith("  ")]]


def _read_at(what: str, sha: str, extra: str = "") -> str:
    return f"  {what}: unpinned: read at commit {sha} (the local hub cache{extra}); someone/enc@{sha} pins it"


def test_the_plan_says_an_unpinned_hub_start_and_tokenizer_and_the_commit_the_cache_holds(
    tmp_path, monkeypatch, capsys
):
    storage = hub_start_world(tmp_path, monkeypatch)  # main at A, the hub offline
    assert _plan(tmp_path, capsys) == [
        PLAN_HEAD,
        _read_at("tokenizer someone/enc (data main)", SHA_A),
        _read_at("start model someone/enc (run cpt)", SHA_A),
    ]
    (storage / "refs" / "main").write_text(SHA_B)  # the repo moved: the plan reads the branch's ref
    assert _plan(tmp_path, capsys)[2] == _read_at("start model someone/enc (run cpt)", SHA_B)
    monkeypatch.delenv("HF_HUB_OFFLINE")  # online, the run reads the branch as it is then: said, not guessed
    online = "; online, `study run` reads what its default branch holds then"
    assert _plan(tmp_path, capsys)[2] == _read_at("start model someone/enc (run cpt)", SHA_B, online)


@pytest.mark.parametrize(
    ("pin", "expected"),
    [
        (f"@{SHA_B}", f"pinned at commit {SHA_B}"),
        (
            "@v1",
            f"pinned at v1, a branch or tag (it can move): read at commit {SHA_A} (the local hub cache); "
            f"someone/enc@{SHA_A} pins it",
        ),
    ],
    ids=["commit", "tag"],
)
def test_the_plan_says_a_pinned_start_model_is_pinned(tmp_path, monkeypatch, capsys, pin, expected):
    hub_start_world(tmp_path, monkeypatch)
    study = HUB_START_STUDY.replace("init: someone/enc}", f"init: someone/enc{pin}}}")
    (tmp_path / "drift.yaml").write_text(study)
    assert _plan(tmp_path, capsys)[2] == f"  start model someone/enc{pin} (run cpt): {expected}"


def test_an_uncached_hub_start_model_is_said_unknown_not_guessed(tmp_path, monkeypatch, capsys):
    hub_start_world(tmp_path, monkeypatch)
    (tmp_path / "drift.yaml").write_text(
        HUB_START_STUDY.replace("init: someone/enc}", "init: someone/other}")
    )
    assert _plan(tmp_path, capsys)[2] == (
        "  start model someone/other (run cpt): unpinned: not in the local hub cache, so the commit `study run` "
        "reads (its default branch when it downloads) is not known yet"
    )


def test_a_prepared_folder_s_tokenizer_is_the_commit_the_folder_recorded(tmp_path, monkeypatch, capsys):
    storage = hub_start_world(tmp_path, monkeypatch)  # main at A
    prepared = tmp_path / "prepared"
    argv = ["data", "prepare", "--source", tmp_path / "corpus.jsonl", "--tokenizer", "someone/enc"]
    code, err = cli([*argv, "--seed", "0", "--decontaminate", "none", "--out", prepared], capsys)
    assert code == 0, err
    assert json.loads((prepared / "meta.json").read_text())["tokenizer"]["commit"] == SHA_A
    (storage / "refs" / "main").write_text(SHA_B)  # the start model is read at B now, the tokenizer was A
    assert _plan(tmp_path, capsys, "--prepared", f"main={prepared}") == [
        PLAN_HEAD,
        f"  tokenizer someone/enc (data main): read in the prepared folder {prepared}, at commit {SHA_A}",
        _read_at("start model someone/enc (run cpt)", SHA_B),
    ]


@pytest.mark.parametrize("recorded", [True, False], ids=["download-records", "no-records"])
def test_a_mirrored_start_model_is_the_commit_its_download_records_name(
    tmp_path, monkeypatch, capsys, recorded
):
    hub_start_world(tmp_path, monkeypatch)  # the cache holds A and B; a mirror is read in its place
    repo = commit_model_folder(tmp_path / "hub" / "someone" / "enc", SHA_B)
    for path in repo.iterdir():
        if path.is_file() and recorded:
            download_record(repo, path.name, SHA_B)
    monkeypatch.setenv(HUB_MODELS_ENV, str(tmp_path / "hub"))
    told = (
        f"read at commit {SHA_B} (its mirror {repo}'s download records); someone/enc@{SHA_B} pins it"
        if recorded
        else f"its mirror {repo} records no one commit (its download records), so none is told"
    )
    assert _plan(tmp_path, capsys)[2] == f"  start model someone/enc (run cpt): unpinned: {told}"
