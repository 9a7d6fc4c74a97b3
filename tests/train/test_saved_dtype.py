"""A run continued from a float16 Hugging Face folder trains and saves float32 weights: the config.json
saved beside them says float32 (it kept the start folder's float16, which `export` already corrected)."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file
from tests.train.helpers import save_tiny_bert, tiny_run

from encoderlab.objectives import MLM
from encoderlab.train import Phase, pretrain
from encoderlab.train.config import ModelSpec


def test_a_run_from_a_float16_folder_saves_a_config_that_names_the_saved_dtype(tmp_path):
    save_tiny_bert(tmp_path / "bert", dtype=torch.float16)
    start = json.loads((tmp_path / "bert" / "config.json").read_text())
    assert "float16" in {start.get("dtype"), start.get("torch_dtype")}  # the start folder says float16
    phases = (Phase(objective=MLM(mask_ratio=0.3), steps=2),)
    cfg = tiny_run(tmp_path / "run", phases=phases, model=ModelSpec(init=str(tmp_path / "bert")))
    pretrain(cfg)
    for folder in (Path(cfg.out) / "final", *sorted(Path(cfg.out).glob("checkpoints/*/model"))):
        saved = {
            str(w.dtype).removeprefix("torch.") for w in load_file(str(folder / "model.safetensors")).values()
        }
        assert saved == {"float32"}
        hf = json.loads((folder / "config.json").read_text())["hf_config"]
        named = {hf[key] for key in ("dtype", "torch_dtype") if key in hf}
        assert named == {"float32"}, f"{folder}/config.json names {named}, its weights are float32"
