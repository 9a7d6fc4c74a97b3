"""A study's start model of one's own is priced by its own files (`scales.start_model_size`).

`study plan` knew the parameters and blocks of the built-in studies' start models only (a table), so a
run continuing, or evaluating, a folder of one's own was priced "?" and its evaluation "not counted".
Now a start model on this machine is read for them: its safetensors headers and config, no weights.
"""

from __future__ import annotations

import json

import pytest
from fake_study import tiny_corpus
from tests.eval.fixtures import model_folder
from tests.study.study_fixtures import MINE, polarity_task_file

from encoderlab.cli import main
from encoderlab.model.sizeof import stored_size
from encoderlab.model.sources import max_positions
from encoderlab.study.scales import START_MODEL_PARAMS, start_model_size


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    model_folder(tmp_path / "enc")
    tiny_corpus(tmp_path / "corpus.jsonl", 300)
    polarity_task_file(tmp_path)
    study = MINE.replace("  - {name: clm, recipe: pfs-clm}\n", "  - {name: start, init: enc}\n")
    (tmp_path / "my-study.yaml").write_text(study.replace("b: clm", "b: start"))
    return tmp_path


def test_a_start_folder_of_ones_own_is_sized_by_its_files(world):
    params, layers, positions = start_model_size(str(world / "enc"))
    size = stored_size(world / "enc")
    assert params == size.params > 0 and layers == size.layers
    assert layers == json.loads((world / "enc" / "config.json").read_text())["model"]["n_layers"]
    assert positions == max_positions(world / "enc") == 256
    assert start_model_size(str(world / "nowhere")) == (None, None, None)
    name = next(iter(START_MODEL_PARAMS))
    assert start_model_size(name)[0] == START_MODEL_PARAMS[name]  # the table first: no files read


def test_the_plan_prices_the_evaluation_of_a_start_folder_of_ones_own(world, capsys):
    """Was: "evaluation: 1 task not counted (size or model parameters unknown): polarity"."""
    capsys.readouterr()
    main(["study", "plan", str(world / "my-study.yaml")])
    out = capsys.readouterr().out
    assert "evaluation: ~" in out and "not counted" not in out, out


def test_a_table_model_pinned_to_a_revision_is_priced_as_the_table_prices_it():
    """`answerdotai/ModernBERT-base@SHA` (a pinned revision) was priced "?", as no start model of the table."""
    hub_id = "answerdotai/ModernBERT-base"
    assert hub_id in START_MODEL_PARAMS
    assert start_model_size(f"{hub_id}@{'c' * 40}") == start_model_size(hub_id)
    assert start_model_size(f"{hub_id}@main")[0] == START_MODEL_PARAMS[hub_id]
