"""No code shipped with a tokenizer or model folder runs, whatever stdin says.

transformers' `AutoTokenizer.from_pretrained` defaults `trust_remote_code` to None, which, for a
`tokenizer_config.json` with `auto_map`, asks on stdin whether to run the folder's code: a "y" (typed
at a terminal, or piped into a script) imported the folder's Python file. Each test feeds that "y"
and checks that the file did not run.
"""

from __future__ import annotations

import io
import json
import sys

import pytest
from model_fixtures import make_model, save_tiny_tokenizer

from encoderlab.data.tokenizer import load_tokenizer
from encoderlab.errors import UserError
from encoderlab.model.hub import load_pretrained
from encoderlab.model.io import save_model_folder

SHIPS_CODE = r"ships its own code \(auto_map in .*tokenizer_config.json\), which encoderlab never runs"


def plant_tokenizer_code(folder, marker) -> None:
    """Give the tokenizer in `folder` an auto_map to a Python file that writes `marker` when imported."""
    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text())
    config.pop("tokenizer_class", None)  # no class of transformers' own to fall back on
    config["auto_map"] = {"AutoTokenizer": [None, "evil_tok.EvilTokenizer"]}
    path.write_text(json.dumps(config))
    (folder / "evil_tok.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
        "from transformers import PreTrainedTokenizerFast\n\n\n"
        "class EvilTokenizer(PreTrainedTokenizerFast):\n    pass\n"
    )


@pytest.fixture
def yes_on_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n" * 4))


def test_a_tokenizer_with_its_own_code_is_refused_and_its_code_never_runs(tmp_path, yes_on_stdin):
    save_tiny_tokenizer(tmp_path / "tok")
    plant_tokenizer_code(tmp_path / "tok", tmp_path / "ran")
    with pytest.raises(UserError, match=SHIPS_CODE):
        load_tokenizer(tmp_path / "tok")
    assert not (tmp_path / "ran").exists()


def test_a_model_folder_whose_tokenizer_ships_code_runs_none_even_when_trusted(tmp_path, yes_on_stdin):
    save_model_folder(make_model(), tmp_path / "model", save_tiny_tokenizer(tmp_path / "tok"))
    plant_tokenizer_code(tmp_path / "model", tmp_path / "ran")
    for trust in (False, True):  # trust_remote_code is about the model's code, which never runs either
        with pytest.raises(UserError, match=SHIPS_CODE):
            load_pretrained(tmp_path / "model", trust_remote_code=trust)
    assert not (tmp_path / "ran").exists()


def test_a_tokenizer_that_lists_code_but_names_a_transformers_class_still_loads(tmp_path, yes_on_stdin):
    """auto_map beside a class transformers has: the class is used and no code is needed or run."""
    tok = save_tiny_tokenizer(tmp_path / "tok")
    path = tmp_path / "tok" / "tokenizer_config.json"
    config = json.loads(path.read_text())
    config["auto_map"] = {"AutoTokenizer": [None, "evil_tok.EvilTokenizer"]}
    path.write_text(json.dumps(config))
    (tmp_path / "tok" / "evil_tok.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').write('ran')\n")
    assert load_tokenizer(tmp_path / "tok")("a b").input_ids == tok("a b").input_ids
    assert not (tmp_path / "ran").exists()


def test_a_model_folder_whose_config_names_code_runs_none_through_its_tokenizer(tmp_path, yes_on_stdin):
    """The tokenizer load reads the folder's config.json too (transformers' AutoConfig): an encoderlab
    model folder with an `auto_map` planted in config.json ran that code on "y", though the model loader
    itself ignores the key. Now the model and its tokenizer load and nothing runs."""
    save_model_folder(make_model(), tmp_path / "model", save_tiny_tokenizer(tmp_path / "tok"))
    path = tmp_path / "model" / "config.json"
    path.write_text(
        json.dumps({**json.loads(path.read_text()), "auto_map": {"AutoConfig": "evil_cfg.EvilConfig"}})
    )
    (tmp_path / "model" / "evil_cfg.py").write_text(
        f"import pathlib\npathlib.Path({str(tmp_path / 'ran')!r}).write_text('ran')\n"
        "from transformers import PretrainedConfig\n\n\nclass EvilConfig(PretrainedConfig):\n    model_type = 'evil'\n"
    )
    loaded = load_pretrained(tmp_path / "model")
    assert loaded.tokenizer is not None and loaded.spec.mask_id == 3
    assert not (tmp_path / "ran").exists()
