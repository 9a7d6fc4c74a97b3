"""A study refused by a start check fetches no asset and writes nothing.

`run_study` fetched the assets it was missing (into $ENCODERLAB_HOME) before its start checks
(`Backend.check_start`), so a study those checks refused had downloaded and written into the cache
first. Now every check runs before any fetch (an asset not fetched yet is not read by them,
`checks._here`), and the checks of what a fetched asset holds run once it is fetched
(`Backend.check_fetched`): only those, so no check runs twice (a hub id was asked for twice). The fetcher
is replaced: nothing downloads.
"""

from __future__ import annotations

import pytest
import yaml
from fake_study import backend, pair_spec, small_spec, tiny_corpus
from tests.reliability.test_hostile_arguments import model_folder, write_texts
from tests.reliability.test_hostile_study_files import MINI_STUDY
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.data import assets
from encoderlab.errors import UserError
from encoderlab.study.runner import run_study


def _fetcher(monkeypatch, home):
    """Replace the asset fetcher with one that records its calls and writes into `home`, as it would."""
    calls = []

    def fetch(names):
        calls.append(list(names))
        (home / "assets").mkdir(parents=True, exist_ok=True)
        (home / "assets" / "fetched.txt").write_text(" ".join(names))

    monkeypatch.setattr(assets, "fetch", fetch)
    return calls


def _refused(spec, study_dir, graph):
    raise UserError(f"study {spec.name}, run b: refused by a start check")


def test_a_study_refused_by_a_start_check_fetches_nothing_and_writes_nothing(tmp_path, monkeypatch):
    home, out = tmp_path / "home", tmp_path / "out"
    monkeypatch.setenv("ENCODERLAB_HOME", str(home))
    calls = _fetcher(monkeypatch, home)
    b = backend()
    b.required_assets = lambda spec: ["tweets"]
    b.check_start = _refused
    with pytest.raises(UserError, match="refused by a start check"):
        run_study(small_spec(), out, b, progress=False)
    assert calls == [] and not home.exists() and not out.exists()

    mine = tmp_path / "mine"  # an empty --out the user made: left as it was
    mine.mkdir()
    with pytest.raises(UserError, match="refused by a start check"):
        run_study(small_spec(), mine, b, progress=False)
    assert calls == [] and not home.exists() and list(mine.iterdir()) == []


def test_what_the_missing_assets_hold_is_checked_once_they_are_fetched(tmp_path, monkeypatch):
    """A check may read an asset only once it is fetched: every check runs before the fetch, and those
    of what the fetched assets hold after it (`Backend.check_fetched`)."""
    home = tmp_path / "home"
    monkeypatch.setenv("ENCODERLAB_HOME", str(home))
    calls, checked = _fetcher(monkeypatch, home), []
    b = backend()
    b.required_assets = lambda spec: ["tweets"]
    b.check_start = lambda spec, study_dir, graph: checked.append(("start", list(calls)))
    b.check_fetched = lambda spec, study_dir, graph, fetched: checked.append((sorted(fetched), list(calls)))
    run_study(pair_spec(), tmp_path / "out", b, progress=False)  # half small_spec's nodes: the same checks
    assert checked == [("start", []), (["tweets"], [["tweets"]])]


def test_a_hub_id_is_asked_for_once_when_assets_are_fetched(tmp_path, monkeypatch):
    """The real checks, a run starting from a hub id: the checks ran again in full once the missing
    assets were fetched, so the hub was asked for each id twice (`hubmodels.check_model_repo`)."""
    import dataclasses

    from encoderlab.data import hubmodels
    from encoderlab.model import sources as model_sources
    from encoderlab.study.checks import check_fetched, check_start
    from encoderlab.study.spec import DataSpec

    home = tmp_path / "home"
    monkeypatch.setenv("ENCODERLAB_HOME", str(home))
    calls, asked = _fetcher(monkeypatch, home), []
    monkeypatch.setattr(
        hubmodels, "check_model_repo", lambda hub_id, what="model", base=None: asked.append(hub_id)
    )
    # the hub that check_model_repo stands for also gives the id's configs (`model.sources.config_folder`)
    configs, fetched = tmp_path / "someone-enc", []
    configs.mkdir()
    (configs / "config.json").write_text('{"model_type": "bert", "max_position_embeddings": 4096}')
    monkeypatch.setattr(
        model_sources, "source_path", lambda source, patterns=(): fetched.append(source) or configs
    )
    spec = small_spec()
    runs = tuple(dataclasses.replace(r, init="someone/enc") if r.name == "mlm20" else r for r in spec.runs)
    claims = tuple(c for c in spec.claims if c.kind != "cka_low_layers")
    data = (DataSpec(name="main", corpus=(str(tiny_corpus(tmp_path / "c.jsonl", 60)),), decontaminate=False),)
    spec = dataclasses.replace(spec, data=data, runs=runs, cka=(), claims=claims)
    b = backend()
    b.required_assets = lambda spec: ["tweets"]
    b.check_start, b.check_fetched = check_start, check_fetched
    run_study(spec, tmp_path / "out", b, progress=False)
    assert calls == [["tweets"]] and asked == ["someone/enc"] and fetched == ["someone/enc"]


def test_a_real_start_check_refuses_before_the_study_fetches_its_cka_texts(tmp_path, monkeypatch, capsys):
    """The real backend: a CKA of too few texts (`checks.check_analyses`) whose texts are an asset not
    fetched yet is refused with the cache and the study folder untouched."""
    from tests.reliability.test_hostile_inputs import cli

    from encoderlab.analysis.cka import MIN_TEXTS

    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    home, out = tmp_path / "home", tmp_path / "out"
    home.mkdir()
    (home / "keep.txt").write_text("mine\n")
    monkeypatch.setenv("ENCODERLAB_HOME", str(home))
    calls = _fetcher(monkeypatch, home)
    write_texts(tmp_path)
    model_folder(tmp_path)  # run b's start model
    study = yaml.safe_load(yaml.safe_dump(MINI_STUDY))
    study["cka"] = [{"a": "a", "b": "b", "texts": "wiki-leads", "n_texts": MIN_TEXTS - 1}]
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    assert not assets.is_fetched("wiki-leads")
    before = world_state(tmp_path)
    code, err = cli(["study", "run", tmp_path / "s.yaml", "--out", out], capsys)
    assert code == 2 and f"n_texts must be at least {MIN_TEXTS}" in err, err
    assert calls == [] and not out.exists()
    assert_unchanged(before)
