"""`export_hf` / `encoderlab export` write folders that transformers loads with the same logits."""

from __future__ import annotations

import json

import pytest
import torch
from model_fixtures import VOCAB, logits, make_model, randomize, save_tiny_tokenizer

from encoderlab.cli import main
from encoderlab.errors import UserError
from encoderlab.model.export import export_hf
from encoderlab.model.hub import load_pretrained
from encoderlab.model.io import save_model_folder

TOL = 1e-5


def _masked_lm(folder):
    from transformers import AutoModelForMaskedLM

    return AutoModelForMaskedLM.from_pretrained(str(folder)).eval()


@pytest.fixture
def ids():
    return torch.randint(5, VOCAB, (2, 20), generator=torch.Generator().manual_seed(3))


@pytest.mark.parametrize(
    "overrides", [{}, {"tie_embeddings": True, "n_kv_heads": 1, "norm_eps": 1e-6, "rope_theta": 321.0}]
)
def test_export_loads_as_eurobert_with_the_same_logits(tmp_path, ids, overrides):
    model = randomize(make_model(**overrides))
    tok = save_tiny_tokenizer(tmp_path / "tok")
    export_hf(model, tok, tmp_path / "hf")
    ref = _masked_lm(tmp_path / "hf")
    assert type(ref).__name__ == "EuroBertForMaskedLM"
    with torch.no_grad():
        assert (ref(input_ids=ids).logits - logits(model, ids)).abs().max() <= TOL
    cfg = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert cfg["model_type"] == "eurobert"
    # ids are the tokenizer's, never EuroBERT's 128001/128002 defaults.
    assert (cfg["pad_token_id"], cfg["mask_token_id"]) == (tok.pad_token_id, tok.mask_token_id) == (0, 3)
    from transformers import AutoTokenizer

    assert AutoTokenizer.from_pretrained(str(tmp_path / "hf")).mask_token_id == 3


def test_export_of_a_qwen2_conversion_keeps_its_qkv_biases(tmp_path, ids):
    model = randomize(make_model(attention_bias=True, mask_id=3))
    export_hf(model, None, tmp_path / "hf")
    with torch.no_grad():
        assert (_masked_lm(tmp_path / "hf")(input_ids=ids).logits - logits(model, ids)).abs().max() <= TOL


@pytest.mark.parametrize(
    "overrides,match", [({"qk_norm": True, "mask_id": 3}, "q/k norms"), ({}, "mask token id")]
)
def test_unexportable_models_are_refused_and_nothing_is_written(tmp_path, overrides, match):
    with pytest.raises(UserError, match=match):
        export_hf(make_model(**overrides), None, tmp_path / "hf")
    assert not (tmp_path / "hf").exists() and not (tmp_path / "hf.tmp").exists()
    # Under folders still to be made: refused before any is made (they stayed behind, empty, and the
    # folder holding them changed), as `check_out` refuses.
    before = tmp_path.stat().st_mtime_ns
    with pytest.raises(UserError, match=match):
        export_hf(make_model(**overrides), None, tmp_path / "new" / "deeper" / "hf")
    assert sorted(p.name for p in tmp_path.iterdir()) == [] and tmp_path.stat().st_mtime_ns == before


def test_an_export_that_fails_while_writing_removes_the_folders_it_made(tmp_path, monkeypatch):
    from encoderlab.model.encoder import Encoder

    def failing(self, folder, spec=None):
        raise OSError(5, "Input/output error", str(folder))

    monkeypatch.setattr(Encoder, "save_hf", failing)
    (tmp_path / "keep").mkdir()
    with pytest.raises(OSError, match="Input/output error"):
        export_hf(make_model(mask_id=3), None, tmp_path / "keep" / "new" / "hf")
    assert list((tmp_path / "keep").iterdir()) == []


def test_existing_output_is_kept_unless_overwrite(tmp_path):
    out = tmp_path / "hf"
    export_hf(make_model(mask_id=3), None, out)
    with pytest.raises(UserError, match="--overwrite"):
        export_hf(make_model(mask_id=3), None, out)
    export_hf(make_model(mask_id=3), None, out, overwrite=True)
    assert (out / "model.safetensors").is_file()
    # A folder encoderlab did not create is never replaced, even with overwrite.
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="did not create"):
        export_hf(make_model(mask_id=3), None, tmp_path / "theirs", overwrite=True)
    assert (tmp_path / "theirs" / "keep.txt").read_text() == "mine"


def test_cli_exports_a_run_folder(tmp_path, ids, capsys):
    model = randomize(make_model())
    tok = save_tiny_tokenizer(tmp_path / "tok")
    save_model_folder(model, tmp_path / "run" / "final", tok)
    main(["export", str(tmp_path / "run"), "--out", str(tmp_path / "hf")])
    assert "EuroBertForMaskedLM" in capsys.readouterr().out
    with torch.no_grad():
        assert (_masked_lm(tmp_path / "hf")(input_ids=ids).logits - logits(model, ids)).abs().max() <= TOL
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["export", str(tmp_path / "run"), "--out", str(tmp_path / "hf")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--overwrite" in err[0]


def test_adapter_exports_as_its_own_class(tmp_path, ids):
    from transformers import BertConfig, BertForMaskedLM

    cfg = BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64
    )
    randomize(BertForMaskedLM(cfg)).save_pretrained(str(tmp_path / "bert"))
    loaded = load_pretrained(tmp_path / "bert")
    export_hf(loaded.model, None, tmp_path / "hf")
    with torch.no_grad():
        assert (
            _masked_lm(tmp_path / "hf")(input_ids=ids).logits - logits(loaded.model, ids)
        ).abs().max() <= TOL


def test_exported_folder_loads_back_into_encoderlab(tmp_path, ids):
    model = randomize(make_model(mask_id=3))
    export_hf(model, None, tmp_path / "hf")
    again = load_pretrained(tmp_path / "hf")
    assert again.family == "eurobert"
    assert again.model.config == model.config  # every field survives the round trip
    assert (logits(again.model, ids) - logits(model, ids)).abs().max() <= 1e-6


def test_exported_tokenizer_truncates_at_the_models_positions(tmp_path):
    """A trained tokenizer has no length limit (model_max_length 1e30): exported as it was,
    `truncation=True` cut nothing and rows past the model's positions reached it."""
    from transformers import AutoTokenizer

    model = make_model()
    tok = save_tiny_tokenizer(tmp_path / "tok")
    before = tok.model_max_length
    export_hf(model, tok, tmp_path / "hf")
    again = AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    limit = model.config.max_seq_len
    assert again.model_max_length == limit
    assert len(again(" ".join(["t5"] * (2 * limit)), truncation=True).input_ids) == limit
    assert tok.model_max_length == before  # the caller's tokenizer is left as it was


def test_export_over_a_symlink_to_an_earlier_export_replaces_that_export(tmp_path):
    """Was an OSError traceback ("Cannot call rmtree on a symbolic link"), exit 1, after the export."""
    export_hf(make_model(mask_id=3), None, tmp_path / "v1")
    (tmp_path / "current").symlink_to(tmp_path / "v1")
    save_model_folder(make_model(mask_id=3, n_kv_heads=1), tmp_path / "model")
    main(["export", str(tmp_path / "model"), "--out", str(tmp_path / "current"), "--overwrite"])
    assert (tmp_path / "current").is_symlink()
    assert json.loads((tmp_path / "v1" / "config.json").read_text())["num_key_value_heads"] == 1


def test_a_tilde_in_out_is_the_home_folder(tmp_path, monkeypatch):
    """`--out=~/hf` meets no shell expansion (bash expands `~` only at a word's start): it made a
    folder named `~` in the working folder, as a config's `out: ~/x` did before pretrain expanded it."""
    save_model_folder(make_model(mask_id=3), tmp_path / "model")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    main(["export", str(tmp_path / "model"), "--out=~/hf"])
    assert (tmp_path / "home" / "hf" / "config.json").is_file()
    assert not (tmp_path / "~").exists()


@pytest.mark.parametrize("inside", ["final", "checkpoints/step_0000009"])
def test_an_out_inside_a_runs_final_or_checkpoints_is_refused(tmp_path, capsys, inside):
    """Exported into an unfinished run's `final/` or `checkpoints/`, the export was replaced or deleted
    by the run's next --resume, without a word."""
    from encoderlab.outdir import create_output

    run = create_output(tmp_path / "run", "pretrain")
    save_model_folder(make_model(mask_id=3), run / "checkpoints" / "step_0000001" / "model")
    source = run / "checkpoints" / "step_0000001"
    with pytest.raises(SystemExit) as exc:
        main(["export", str(source), "--out", str(run / inside)])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and "pretrain replaces on --resume" in err[0]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_0000001"]
    assert not (run / "final").exists()
