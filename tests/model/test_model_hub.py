"""`load_pretrained` on every supported family, against transformers' own classes, and its refusals."""

from __future__ import annotations

import json

import pytest
import torch
from model_fixtures import VOCAB, logits, make_model, randomize, save_tiny_tokenizer, small_config

from encoderlab.data.batch import TokenSpec
from encoderlab.errors import UserError
from encoderlab.model import Encoder
from encoderlab.model.hub import check_compatible, load_pretrained
from encoderlab.model.io import save_model_folder

TOL = 1e-5
BODY = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
)


def _decoder(family: str):
    """A tiny random decoder of `family` with non-default hyperparameters where the family has them."""
    import transformers as tf

    rope = {"rope_type": "default", "rope_theta": 5000.0}
    if family == "llama":  # Llama's rms eps default is 1e-6 (EuroBERT's is 1e-5): keep it
        return tf.LlamaForCausalLM(tf.LlamaConfig(**BODY, rope_parameters=rope))
    if family == "smollm2":  # Llama with tied embeddings
        return tf.LlamaForCausalLM(
            tf.LlamaConfig(**BODY, rope_parameters=rope, tie_word_embeddings=True, rms_norm_eps=1e-5)
        )
    if family == "qwen2":  # q/k/v biases
        return tf.Qwen2ForCausalLM(tf.Qwen2Config(**BODY, rope_parameters=rope, rms_norm_eps=3e-6))
    if family == "qwen3":  # q/k norms, head_dim not hidden/heads
        return tf.Qwen3ForCausalLM(tf.Qwen3Config(**BODY, rope_parameters=rope, head_dim=24))
    raise AssertionError(family)


def _save(hf_model, folder, tokenizer=True):
    hf_model.save_pretrained(str(folder))
    if tokenizer:
        save_tiny_tokenizer(folder)
    return folder


@pytest.fixture
def ids():
    return torch.randint(5, VOCAB, (2, 20), generator=torch.Generator().manual_seed(2))


@pytest.mark.parametrize("family", ["llama", "smollm2", "qwen2", "qwen3"])
def test_decoder_in_causal_mode_gives_causal_lm_logits(tmp_path, ids, family):
    from transformers import AutoModelForCausalLM

    _save(randomize(_decoder(family)), tmp_path)
    loaded = load_pretrained(tmp_path)
    assert isinstance(loaded.model, Encoder)
    ref = AutoModelForCausalLM.from_pretrained(str(tmp_path)).eval()
    with torch.no_grad():
        expected = ref(input_ids=ids).logits
    assert (logits(loaded.model, ids, attention_mode="causal") - expected).abs().max() <= TOL
    assert loaded.spec.mask_id == 3 and loaded.spec.vocab_size == VOCAB
    cfg = loaded.model.config
    assert cfg.tie_embeddings == (family == "smollm2")
    assert cfg.norm_eps == ref.config.rms_norm_eps and cfg.rope_theta == 5000.0


def test_eurobert_folder_gives_masked_lm_logits(tmp_path, ids):
    from transformers import AutoModelForMaskedLM, EuroBertConfig, EuroBertForMaskedLM

    cfg = EuroBertConfig(
        **BODY, mask_token_id=3, rope_parameters={"rope_type": "default", "rope_theta": 250.0}
    )
    _save(randomize(EuroBertForMaskedLM(cfg)), tmp_path)
    loaded = load_pretrained(tmp_path)
    assert loaded.family == "eurobert" and loaded.notes == []
    ref = AutoModelForMaskedLM.from_pretrained(str(tmp_path)).eval()
    with torch.no_grad():
        expected = ref(input_ids=ids).logits
    assert (logits(loaded.model, ids) - expected).abs().max() <= TOL


def test_base_decoder_without_head_gets_a_fresh_head_and_a_note(tmp_path, ids):
    from transformers import LlamaConfig, LlamaModel

    base = randomize(LlamaModel(LlamaConfig(**BODY)))
    _save(base, tmp_path, tokenizer=False)
    loaded = load_pretrained(tmp_path)
    assert any("LM head freshly initialised" in n for n in loaded.notes)
    assert loaded.tokenizer is None and loaded.spec.pad_id == 0
    with torch.no_grad():
        expected = base(input_ids=ids).last_hidden_state
        got = loaded.model(ids, attention_mode="causal").last_hidden_state
    assert (got - expected).abs().max() <= TOL


def test_own_model_run_and_checkpoint_folders(tmp_path, ids):
    model = make_model()
    save_model_folder(model, tmp_path / "run" / "final")
    save_model_folder(model, tmp_path / "run" / "checkpoints" / "step_0000010" / "model")
    for source in ("run", "run/final", "run/checkpoints/step_0000010"):
        loaded = load_pretrained(tmp_path / source)
        assert loaded.family == "encoderlab"
        assert torch.equal(logits(loaded.model, ids), logits(model, ids))
    (tmp_path / "run" / "final").rename(tmp_path / "run" / "moved")
    (tmp_path / "run" / "checkpoints" / "step_0000010" / "state.json").write_text("{}")  # written last
    with pytest.raises(
        UserError, match=r"no final model yet; pass .*the latest, .*run/checkpoints/step_0000010$"
    ):
        load_pretrained(tmp_path / "run")
    (tmp_path / "unfinished" / "checkpoints" / "step_0000005.tmp").mkdir(parents=True)
    # "pass one of its checkpoints" of a run that has none complete
    with pytest.raises(UserError, match=r"no final model yet, nor a complete checkpoint .* --resume`"):
        load_pretrained(tmp_path / "unfinished")


# --- refusals: one clear line each -------------------------------------------------------------


def _llama_folder(tmp_path, **config):
    from transformers import LlamaConfig, LlamaForCausalLM

    return _save(LlamaForCausalLM(LlamaConfig(**{**BODY, **config})), tmp_path, tokenizer=False)


def _edit_config(folder, **changes):
    path = folder / "config.json"
    raw = json.loads(path.read_text())
    raw.update(changes)
    path.write_text(json.dumps(raw))


def test_remote_code_folder_needs_trust(tmp_path):
    folder = _llama_folder(tmp_path)
    _edit_config(folder, auto_map={"AutoModelForCausalLM": "modeling_evil.Evil"})
    (folder / "modeling_evil.py").write_text("raise SystemExit('remote code ran')\n")
    with pytest.raises(UserError, match="trust_remote_code"):
        load_pretrained(folder)
    loaded = load_pretrained(folder, trust_remote_code=True)
    assert any("not run" in n for n in loaded.notes)


def test_pickle_weights_need_allow_pickle(tmp_path, ids):
    from transformers import LlamaConfig, LlamaForCausalLM

    ref = randomize(LlamaForCausalLM(LlamaConfig(**BODY)))
    _save(ref, tmp_path, tokenizer=False)
    (tmp_path / "model.safetensors").unlink()
    torch.save(ref.state_dict(), tmp_path / "pytorch_model.bin")
    with pytest.raises(UserError, match="pickle"):
        load_pretrained(tmp_path)
    loaded = load_pretrained(tmp_path, allow_pickle=True)
    with torch.no_grad():
        expected = ref(input_ids=ids).logits
    assert (logits(loaded.model, ids, attention_mode="causal") - expected).abs().max() <= TOL


def test_corrupt_safetensors_is_one_line(tmp_path):
    folder = _llama_folder(tmp_path)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(UserError, match="corrupt") as exc:
        load_pretrained(folder)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    "changes,match",
    [
        (
            {"model_type": "gpt2"},
            "supported: eurobert, llama, qwen2, qwen3, bert, modernbert, roberta, xlm-roberta, camembert, "
            "roberta-prelayernorm, electra, distilbert, mpnet, albert, deberta, deberta-v2",
        ),
        (
            {"rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}},
            "RoPE scaling 'linear'",
        ),
        ({"hidden_act": "gelu"}, "activation 'gelu'"),
        ({"attention_bias": True}, "o_proj"),
        ({"intermediate_size": 80}, "has shape"),
    ],
)
def test_unsupported_configs_are_refused(tmp_path, changes, match):
    folder = _llama_folder(tmp_path)
    _edit_config(folder, **changes)
    with pytest.raises(UserError, match=match):
        load_pretrained(folder)


def test_null_kv_heads_and_head_dim_are_derived_as_transformers_does(tmp_path, ids):
    """null is transformers' "derive it" for these two (as many KV heads as heads, hidden / heads); the
    size checks refuse a 0 or a string there, not a null."""
    folder = _llama_folder(tmp_path, num_key_value_heads=BODY["num_attention_heads"])
    _edit_config(folder, num_key_value_heads=None, head_dim=None)
    cfg = load_pretrained(folder).model.config
    assert (cfg.n_kv_heads, cfg.head_dim) == (4, 64 // 4)


def test_a_damaged_model_config_has_no_position_limit_and_loads_as_one_line(tmp_path):
    """`max_positions` (read before a pretraining run starts from the folder) got an AttributeError
    from a config.json whose `model` is not a mapping; it now leaves the verdict to the load."""
    from encoderlab.model.sources import max_positions

    save_model_folder(make_model(), tmp_path / "m")
    _edit_config(tmp_path / "m", model=[1])
    assert max_positions(tmp_path / "m") is None
    with pytest.raises(UserError, match=r"its 'model' is not a mapping .*the file is corrupt"):
        load_pretrained(tmp_path / "m")


def test_sliding_window_qwen2_is_refused(tmp_path):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(**BODY, use_sliding_window=True, sliding_window=8, max_window_layers=0)
    _save(Qwen2ForCausalLM(cfg), tmp_path, tokenizer=False)
    with pytest.raises(UserError, match="sliding-window"):
        load_pretrained(tmp_path)


def test_unknown_sources_are_refused(tmp_path):
    with pytest.raises(UserError, match="not a folder, an asset"):
        load_pretrained("no-such-model")
    with pytest.raises(UserError, match="hub is offline"):
        load_pretrained("no-such-org/no-such-model")  # HF_HUB_OFFLINE=1 in tests
    with pytest.raises(UserError, match="no config.json"):
        load_pretrained(tmp_path)


def test_check_compatible():
    model = make_model()
    check_compatible(model, TokenSpec(vocab_size=VOCAB, mask_id=3), small_config(pad_id=0, attn_impl="flex"))
    with pytest.raises(UserError, match="embedding has 97 rows"):
        check_compatible(model, TokenSpec(vocab_size=VOCAB + 1))
    with pytest.raises(UserError, match=r"special token ids \[200\]"):
        check_compatible(model, TokenSpec(vocab_size=VOCAB, mask_id=200))
    with pytest.raises(UserError, match="hidden_size 64 != 128"):
        check_compatible(model, TokenSpec(vocab_size=VOCAB), small_config(hidden_size=128))


def test_legacy_rope_fields_are_read(tmp_path):
    # transformers 4 wrote `rope_theta` / `rope_scaling` at the top level of config.json.
    folder = _llama_folder(tmp_path)
    raw = json.loads((folder / "config.json").read_text())
    raw.pop("rope_parameters")
    (folder / "config.json").write_text(json.dumps({**raw, "rope_theta": 1234.0, "rope_scaling": None}))
    assert load_pretrained(folder).model.config.rope_theta == 1234.0
    llama3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}
    (folder / "config.json").write_text(json.dumps({**raw, "rope_theta": 1234.0, "rope_scaling": llama3}))
    with pytest.raises(UserError, match="RoPE scaling 'llama3'"):
        load_pretrained(folder)


def test_adapter_is_not_an_encoderlab_architecture(tmp_path):
    from transformers import BertConfig, BertForMaskedLM

    cfg = BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64
    )
    BertForMaskedLM(cfg).save_pretrained(str(tmp_path))
    model = load_pretrained(tmp_path).model
    check_compatible(model, TokenSpec(vocab_size=VOCAB))
    with pytest.raises(UserError, match="is a bert model, not an encoderlab encoder"):
        check_compatible(model, TokenSpec(vocab_size=VOCAB), small_config())


def test_hub_ids_resolve_through_the_models_mirror(tmp_path, ids, monkeypatch):
    """A hub id is read from `ENCODERLAB_HUB_MODELS/<owner>/<name>` by data/hubmodels.py's resolver, the one
    tokenizers use: the same model as the folder, `source_folder` names the mirror (so no output lands
    in it), and a root without the repo is one line with the download command."""
    from encoderlab.data.hub import HUB_MODELS_ENV
    from encoderlab.data.tokenizer import load_tokenizer
    from encoderlab.model.sources import source_folder

    folder = _save(randomize(_decoder("llama")), tmp_path / "models" / "org" / "tiny-llama")
    monkeypatch.setenv(HUB_MODELS_ENV, str(tmp_path / "models"))
    loaded = load_pretrained("org/tiny-llama")
    expected = load_pretrained(folder)
    assert torch.equal(logits(loaded.model, ids), logits(expected.model, ids))
    assert loaded.spec == expected.spec
    assert load_tokenizer("org/tiny-llama").get_vocab() == loaded.tokenizer.get_vocab()
    assert source_folder("org/tiny-llama") == folder
    assert source_folder("org/absent") is None
    with pytest.raises(
        UserError,
        match=r"has no mirror of org/absent, and there is no folder .*org/absent; check the path, or download it "
        r"with: hf download org/absent",
    ):
        load_pretrained("org/absent")


def test_swish_is_silu_as_transformers_reads_it(tmp_path):
    """transformers maps both `silu` and `swish` to SiLU; `swish` was refused as another activation."""
    import torch

    silu = load_pretrained(_llama_folder(tmp_path / "a")).model
    folder = _llama_folder(tmp_path / "b")
    _edit_config(folder, hidden_act="swish")
    swish = load_pretrained(folder).model
    swish.load_state_dict(silu.state_dict())
    ids = torch.arange(8).unsqueeze(0)
    assert torch.equal(swish(ids).last_hidden_state, silu(ids).last_hidden_state)


def test_a_non_ascii_config_reads_under_an_ascii_locale(tmp_path):
    """config.json is UTF-8 whatever the locale: under LC_ALL=C (no UTF-8 coercion) a hand-edited
    non-ASCII value made both folder kinds 'not valid JSON'."""
    import os
    import subprocess
    import sys

    folder = _llama_folder(tmp_path)
    _edit_config(folder, _name_or_path="modèle-ä")
    save_model_folder(make_model(), tmp_path / "m")
    raw = json.loads((tmp_path / "m" / "config.json").read_text(encoding="utf-8"))
    (tmp_path / "m" / "config.json").write_text(json.dumps({**raw, "note": "é"}, ensure_ascii=False), "utf-8")
    code = (
        "import sys; from pathlib import Path; from encoderlab.model.sources import read_config_json; "
        "from encoderlab.model.io import is_model_folder; "
        "assert sys.getfilesystemencoding() and __import__('locale').getpreferredencoding() != 'UTF-8'; "
        f"print(read_config_json(Path({str(folder)!r}))['_name_or_path'] == 'mod\\u00e8le-\\u00e4', "
        f"is_model_folder(Path({str(tmp_path / 'm')!r})))"
    )
    env = {**os.environ, "LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
    out = subprocess.run(
        [sys.executable, "-X", "utf8=0", "-c", code], env=env, capture_output=True, text=True
    )
    assert out.stdout.split() == ["True", "True"], out.stderr[-2000:]


def test_a_run_stopped_before_its_first_checkpoint_is_named_as_a_run(tmp_path):
    """It has no checkpoints/ folder yet: was "neither an encoderlab model/run/checkpoint folder nor a
    Hugging Face folder (no config.json)", of the folder pretrain had just made."""
    from encoderlab.outdir import create_output

    run = create_output(tmp_path / "run", "pretrain")
    (run / "config.yaml").write_text("seed: 0\n")
    with pytest.raises(UserError, match=r"^run .*run has no final model yet, nor a complete checkpoint"):
        load_pretrained(run)
    (run / ".encoderlab.json").unlink()  # a run written before the ownership marker
    (run / "env.json").write_text("{}")
    with pytest.raises(UserError, match=r"^run .*run has no final model yet, nor a complete checkpoint"):
        load_pretrained(run)


@pytest.mark.parametrize("family", ["eurobert", "bert"])
def test_a_tied_config_over_a_checkpoint_with_its_own_head_is_refused_and_writes_nothing(
    tmp_path, family, capsys
):
    """config.json says tie_word_embeddings but the weights hold a head unlike the embeddings: tying
    dropped one of the two silently, where transformers loads both untied (other logits)."""
    from transformers import BertConfig, BertForMaskedLM, EuroBertConfig, EuroBertForMaskedLM

    from encoderlab.cli import main

    if family == "bert":
        size = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=2)
        model = BertForMaskedLM(BertConfig(**size, intermediate_size=64, tie_word_embeddings=False))
    else:
        model = EuroBertForMaskedLM(EuroBertConfig(**BODY, mask_token_id=3, tie_word_embeddings=False))
    _save(randomize(model), tmp_path / "hf")
    _edit_config(tmp_path / "hf", tie_word_embeddings=True)
    capsys.readouterr()  # transformers' progress bar of the save
    with pytest.raises(SystemExit) as exc:
        main(["export", str(tmp_path / "hf"), "--out", str(tmp_path / "out" / "x")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1
    assert "ties the output head to the word embeddings" in err[0] and "tie_word_embeddings" in err[0]
    assert not (tmp_path / "out").exists()


def test_a_fine_tuned_classifier_is_refused_naming_the_fix_that_loads_its_body(tmp_path, capsys):
    """A BertForSequenceClassification folder said only "2 weights have no place in BertForMaskedLM";
    the fix it now names (its body alone) loads, with a fresh MLM head."""
    from safetensors.torch import load_file, save_file
    from transformers import BertConfig, BertForSequenceClassification

    from encoderlab.cli import main

    size = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=2)
    _save(BertForSequenceClassification(BertConfig(**size, intermediate_size=64)), tmp_path / "cls")
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["export", str(tmp_path / "cls"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and not (tmp_path / "out").exists()
    assert "fine-tuned task model (BertForSequenceClassification)" in err[0] and "'bert.'" in err[0]
    weights = load_file(tmp_path / "cls" / "model.safetensors")
    body = {k: v for k, v in weights.items() if k.startswith("bert.")}
    save_file(body, tmp_path / "cls" / "model.safetensors", metadata={"format": "pt"})
    assert any("MLM head freshly initialised" in n for n in load_pretrained(tmp_path / "cls").notes)


def test_a_config_without_model_type_names_the_family_its_architectures_say(tmp_path):
    """It said "has model_type 'None', which encoderlab cannot load", as if None were a family."""
    from transformers import BertConfig, BertForMaskedLM

    size = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=2)
    _save(BertForMaskedLM(BertConfig(**size, intermediate_size=64)), tmp_path / "bert")
    raw = json.loads((tmp_path / "bert" / "config.json").read_text())
    del raw["model_type"]
    (tmp_path / "bert" / "config.json").write_text(json.dumps(raw))
    with pytest.raises(UserError, match=r'names no model_type; add the family it is \("model_type": "bert"'):
        load_pretrained(tmp_path / "bert")


@pytest.mark.parametrize("task", [True, False])
def test_llama_weights_with_no_place_in_the_encoder_name_the_fix(tmp_path, task):
    """A Llama-style checkpoint with weights the encoder has no place for said only "N weights have no
    place in the encoder"; now the fix: a fine-tuned task model's body alone, else re-download."""
    from safetensors.torch import load_file, save_file
    from transformers import LlamaConfig, LlamaForSequenceClassification

    if task:
        _save(LlamaForSequenceClassification(LlamaConfig(**BODY, num_labels=2)), tmp_path, tokenizer=False)
        fix = r"fine-tuned task model \(LlamaForSequenceClassification\).*the weights under 'model\.'"
    else:
        folder = _llama_folder(tmp_path)
        weights = load_file(folder / "model.safetensors")
        save_file(
            {**weights, "extra.weight": torch.zeros(2)},
            folder / "model.safetensors",
            metadata={"format": "pt"},
        )
        fix = r"\['extra\.weight'\]\); the checkpoint does not match its config\.json: re-download the model"
    with pytest.raises(UserError, match=r"no place in the encoder .*" + fix):
        load_pretrained(tmp_path)
