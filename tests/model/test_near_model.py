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
    code, err = cli(["eval", out, "--tasks", "tweets", "--out", tmp_path / "e"], capsys)
    assert_one_line(
        code, err, rf"{out} holds no model itself \(no config.json\) but its subfolders {out / 'checkpoint-1000'}, "
        rf"{out / 'checkpoint-500'} do; pass one of them$",
    )  # fmt: skip
    assert not (tmp_path / "e").exists()


def test_a_folder_near_no_model_keeps_the_general_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("not a model\n")
    for given in (tmp_path / "empty", tmp_path / "notes.txt"):
        code, err = cli(["export", given, "--out", tmp_path / "x"], capsys)
        assert_one_line(
            code, err, rf"{given} is neither an encoderlab model/run/checkpoint folder nor a Hugging Face"
        )
