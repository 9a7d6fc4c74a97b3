"""A path that holds no model, near one: the refusal names the folder to pass (model/nearmodel.py).

Found by a new-user hunt (2026-12-06): the model's `model.safetensors` or `config.json` given for its
folder, a sentence-transformers folder of the old layout (its transformer in `0_Transformer/`) and
Hugging Face Trainer's `output_dir` (`checkpoint-N/` folders) were each "is neither an encoderlab
model/run/checkpoint folder nor a Hugging Face folder (no config.json); pass a folder that holds a
model", which left the user to find the folder. Nothing is written by the refused command.
"""

from __future__ import annotations

import json
import shutil

import pytest
from model_fixtures import bert_config, save_tiny_tokenizer
from tests.reliability.test_hostile_inputs import assert_one_line, cli


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    """A tiny Hugging Face BERT folder with its tokenizer."""
    from transformers import BertModel

    folder = tmp_path_factory.mktemp("near") / "bert"
    BertModel(bert_config()).save_pretrained(folder)
    save_tiny_tokenizer(folder)
    return folder


@pytest.mark.parametrize("name", ["model.safetensors", "config.json"])
def test_a_file_of_a_model_folder_names_the_folder(bert, tmp_path, capsys, name):
    code, err = cli(["export", bert / name, "--out", tmp_path / "x"], capsys)
    assert_one_line(
        code, err, rf"{bert / name} is a file of the model folder {bert}; pass the folder: {bert}$"
    )
    assert not (tmp_path / "x").exists()


def test_a_sentence_transformers_folder_of_the_old_layout_names_its_transformer(bert, tmp_path, capsys):
    st = tmp_path / "st"
    shutil.copytree(bert, st / "0_Transformer")
    (st / "1_Pooling").mkdir()
    (st / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))  # no model
    (st / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "0_Transformer"}]))
    code, err = cli(["export", st, "--out", tmp_path / "x"], capsys)
    assert_one_line(
        code, err, rf"{st} holds no model itself \(no config.json\) but its subfolder {st / '0_Transformer'} does; "
        r"pass that folder$",
    )  # fmt: skip
    assert not (tmp_path / "x").exists()


def test_a_trainer_output_folder_names_its_checkpoints(bert, tmp_path, capsys):
    out = tmp_path / "trainer"
    for step in (500, 1000):
        shutil.copytree(bert, out / f"checkpoint-{step}")
    (out / "runs").mkdir()  # TensorBoard's logs beside them: no model
    code, err = cli(["export", out, "--out", tmp_path / "x"], capsys)
    assert_one_line(
        code, err, rf"{out} holds no model itself \(no config.json\) but its subfolders {out / 'checkpoint-500'}, "
        rf"{out / 'checkpoint-1000'} do; pass one of them \(the latest: {out / 'checkpoint-1000'}\)$",
    )  # fmt: skip
    assert not (tmp_path / "x").exists()


def test_many_checkpoints_are_listed_by_step_and_the_latest_is_named(tmp_path):
    """A plain sort put checkpoint-1000 before checkpoint-500, and of many it showed the first three by
    name, which need not hold the latest; by step, the earliest three are shown and the latest named."""
    from encoderlab.model.nearmodel import near_model

    out = tmp_path / "trainer"
    steps = (2500, 500, 10000, 1000, 1500)
    for step in steps:  # a config.json beside weights is a Hugging Face folder by the loaders' marks
        (out / f"checkpoint-{step}").mkdir(parents=True)
        (out / f"checkpoint-{step}" / "config.json").write_text("{}")
        (out / f"checkpoint-{step}" / "model.safetensors").write_bytes(b"")
    first = ", ".join(str(out / f"checkpoint-{s}") for s in sorted(steps)[:3])
    assert near_model(out) == (
        f"{out} holds no model itself (no config.json) but its subfolders {first} and 2 more do; "
        f"pass one of them (the latest: {out / f'checkpoint-{max(steps)}'})"
    )


def test_subfolders_other_than_checkpoints_are_listed_by_number_without_a_latest(tmp_path):
    from encoderlab.model.nearmodel import near_model

    for name in ("run10", "run9"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
        (tmp_path / name / "model.safetensors").write_bytes(b"")
    assert near_model(tmp_path) == (
        f"{tmp_path} holds no model itself (no config.json) but its subfolders {tmp_path / 'run9'}, "
        f"{tmp_path / 'run10'} do; pass one of them"
    )


def test_a_folder_near_no_model_keeps_the_general_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("not a model\n")
    for given in (tmp_path / "empty", tmp_path / "notes.txt"):
        code, err = cli(["export", given, "--out", tmp_path / "x"], capsys)
        assert_one_line(
            code, err, rf"{given} is neither an encoderlab model/run/checkpoint folder nor a Hugging Face"
        )


def test_a_runs_checkpoints_folder_names_its_steps_and_the_latest(tmp_path):
    """A run's `checkpoints/` (its `step_N/` folders hold the model in `model/`, which the loads read) was
    "neither an encoderlab model/run/checkpoint folder nor a Hugging Face folder": the step folders were not
    seen as holding a model, as a Trainer's `checkpoint-N/` were. Found by the paper-2 hunt (2026-12-06), passing a
    study run's `run/checkpoints` to `analyze cka` for the decay trajectory docs/reproduce.md describes."""
    from encoderlab.model.nearmodel import near_model
    from encoderlab.model.sources import FORMAT

    ckpts = tmp_path / "run" / "checkpoints"
    for step in (40, 44):
        (ckpts / f"step_{step:07d}" / "model").mkdir(parents=True)
        (ckpts / f"step_{step:07d}" / "model" / "config.json").write_text(json.dumps({"format": FORMAT}))
    assert near_model(ckpts) == (
        f"{ckpts} holds no model itself (no config.json) but its subfolders {ckpts / 'step_0000040'}, "
        f"{ckpts / 'step_0000044'} do; pass one of them (the latest: {ckpts / 'step_0000044'})"
    )


def test_a_file_beside_a_model_subfolder_is_not_called_a_file_of_a_model_folder(tmp_path):
    """A checkpoint's `model/` counts for the subfolders of a folder given (above), not for a file's folder: a
    project folder holding `model/` beside `texts.txt` made `export PROJECT/texts.txt` say "texts.txt is a
    file of the model folder PROJECT" (the refusal sweep's `export-a-text-file`)."""
    from encoderlab.model.nearmodel import near_model
    from encoderlab.model.sources import FORMAT

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps({"format": FORMAT}))
    (tmp_path / "texts.txt").write_text("a text\n")
    assert near_model(tmp_path / "texts.txt") is None  # the general line
    assert near_model(tmp_path / "model" / "config.json") == (
        f"{tmp_path / 'model' / 'config.json'} is a file of the model folder {tmp_path / 'model'}; pass the "
        f"folder: {tmp_path / 'model'}"
    )
