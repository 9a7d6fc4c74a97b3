"""A study's start model named by a hub id has its positions checked before anything runs, as a folder's are.

`study plan` and `study run` read a start model's positions from its config (`model.sources.max_positions`)
to refuse an eval task or rows it cannot take, but only for a folder, an asset or a mirror: a hub id
was left to its node, hours into the study (here, the eval node of a run evaluated as is, whose task's
512 tokens its 256 positions cannot take, after the other runs trained). Now a hub id's snapshot in the
local hub cache is read (plan and run, no network), and `study run` downloads an uncached one's configs
and tokenizer, never its weights, after `check_hub_ids` asked the hub for it. The hub cache is the
layout `huggingface_hub` keeps (`models--OWNER--NAME/refs/main`, `snapshots/COMMIT/`), read by the
real `snapshot_download`; a download is a fake `snapshot_download` copying the repo's files that match
its patterns from a folder: no network.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import huggingface_hub
import pytest
from huggingface_hub import constants
from tests.eval.fixtures import model_folder
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import cli
from tests.reliability.treestate import assert_unchanged, world_state
from tests.study.study_fixtures import (
    HUB_ID,
    hub_position_cache,
    hub_position_study,
)

from encoderlab.data.hub import HUB_MODELS_ENV
from encoderlab.data.hubmodels import TOKENIZER_GLOBS

REFUSED = (
    "encoderlab: error: study my-study, evaluating start: task polarity: max_length 512 is more than the "
    "model's 256 positions; set `max_length:` to at most 256 in its task file, or null for 0.99 x the model's"
)


@pytest.fixture
def world(tmp_path, monkeypatch) -> Path:
    """The repo `someone/enc` (the eval tests' model of 256 positions, weights and tokenizer), an empty hub
    cache of the test's own, no mirror, the hub online but never reached (`repo_info` and downloads fail)."""
    model_folder(tmp_path / "repo")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(HUB_MODELS_ENV, raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.chdir(tmp_path)
    _hub(monkeypatch, tmp_path, reachable=False)
    return tmp_path


def _hub(monkeypatch, root: Path, reachable: bool) -> list[tuple[str, ...]]:
    """The hub: `repo_info` and downloads of `someone/enc` (each one's patterns recorded) when `reachable`,
    else each an AssertionError; `snapshot_download(local_files_only=True)` is the real one (the cache)."""
    downloads: list[tuple[str, ...]] = []
    real = huggingface_hub.snapshot_download

    def repo_info(self, repo_id, **kwargs):
        assert reachable and repo_id == HUB_ID, f"the hub was asked for {repo_id}"

    def snapshot_download(repo_id, *, allow_patterns=None, local_files_only=False, **kwargs):
        if local_files_only:
            return real(repo_id, local_files_only=True, **kwargs)
        assert reachable and repo_id == HUB_ID, f"{repo_id} was downloaded"
        downloads.append(tuple(allow_patterns))
        names = [
            p.name
            for p in (root / "repo").iterdir()
            if any(fnmatch.fnmatch(p.name, g) for g in allow_patterns)
        ]
        return str(hub_position_cache(root, names))

    monkeypatch.setattr(huggingface_hub.HfApi, "repo_info", repo_info)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    return downloads


def _refused_untouched(world: Path, capsys, argv: list) -> None:
    before = world_state(world)
    code, err = cli(argv, capsys)
    assert code == 2 and err.strip() == REFUSED, err
    assert_printed_as_documented("study-eval-max-length-over-positions", err, world)
    assert_unchanged(before)


@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_cached_hub_id_with_too_few_positions_is_refused_before_anything_is_written(world, capsys, command):
    study = hub_position_study(world, 512)
    hub_position_cache(world, ["config.json"])  # a snapshot holding its config (the weights are not needed)
    out = ["--out", world / "out", "--no-fetch"] if command == "run" else []
    _refused_untouched(world, capsys, ["study", command, study, *out])  # the hub never asked


def test_an_uncached_hub_id_is_refused_by_study_run_from_its_configs_alone(world, capsys, monkeypatch):
    study = hub_position_study(world, 512)
    downloads = _hub(monkeypatch, world, reachable=True)
    code, err = cli(["study", "run", study, "--out", world / "out", "--no-fetch"], capsys)
    assert code == 2 and err.strip() == REFUSED, err
    assert downloads == [TOKENIZER_GLOBS]  # configs and tokenizer: what `eval --check` downloads
    cached = {p.name for p in Path(constants.HF_HUB_CACHE).rglob("*") if p.is_file()}
    assert "config.json" in cached and not any(n.endswith(".safetensors") for n in cached)
    assert not (world / "out").exists()


def test_study_plan_asks_no_hub_for_an_uncached_hub_id(world, capsys):
    """Offline-safe as before: the hub id is the run's to check (`_hub` fails any request)."""
    code, err = cli(["study", "plan", hub_position_study(world, 512)], capsys)
    assert code == 0, err


def test_a_hub_id_whose_positions_fit_is_planned_and_passes_the_runs_checks(world, capsys, monkeypatch):
    from encoderlab.study.checks import check_start
    from encoderlab.study.files import load_study_file
    from encoderlab.study.graph import build_graph
    from encoderlab.study.nodes import real_backend

    study = hub_position_study(world, 256)
    downloads = _hub(monkeypatch, world, reachable=True)
    spec = load_study_file(study)
    check_start(spec, None, list(build_graph(spec, real_backend()).nodes.values()))  # downloads its configs
    assert downloads == [TOKENIZER_GLOBS]
    _hub(monkeypatch, world, reachable=False)
    code, err = cli(["study", "plan", study], capsys)  # read from the cache it was downloaded to
    assert code == 0, err


@pytest.mark.parametrize("cached", [True, False])
def test_a_run_continued_from_a_hub_id_with_fewer_positions_than_its_rows_is_refused(
    world, monkeypatch, cached
):
    """`check_start_models`: the rows of a run continued from `someone/enc` (cached, or at `study run`
    downloaded, configs only), in the pretraining node's line."""
    import dataclasses

    from encoderlab.errors import UserError
    from encoderlab.study.files import load_study_file
    from encoderlab.study.positions import check_start_models

    spec = load_study_file(hub_position_study(world, 256))
    cpt = dataclasses.replace(spec.run("start"), recipe="cpt-mlm", params={"seq_len": 512}, group="cpt")
    spec = dataclasses.replace(spec, runs=(spec.run("mlm"), cpt))
    if cached:
        hub_position_cache(world, ["config.json"])
    downloads = _hub(monkeypatch, world, reachable=not cached)
    if not cached:  # a plan's check (no `fetch`) leaves it to the node, asking no hub
        assert check_start_models(spec)[cpt_model(spec)] is None
    refused = (
        r"^study my-study: run start starts from someone/enc, which accepts 256 tokens, but its rows are 512 "
    )
    with pytest.raises(UserError, match=refused):
        check_start_models(spec, fetch=frozenset() if cached else frozenset({HUB_ID}))
    assert downloads == ([] if cached else [TOKENIZER_GLOBS])


def cpt_model(spec) -> str:
    from encoderlab.study.graph import pretraining

    return next(p.model for p in pretraining(spec) if p.run.name == "start")


def test_an_id_the_hub_would_refuse_is_in_no_cache_and_left_to_the_hubs_line(world):
    """`some--one/enc` is shaped OWNER/NAME for encoderlab, not for the hub: reading the cache for it
    raised HFValidationError (a traceback from `study plan`); `study run`'s hub check names it in one line."""
    from encoderlab.model.sources import max_positions

    assert max_positions("some--one/enc") is None
