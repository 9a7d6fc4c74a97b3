"""DeBERTa v1 checkpoints (`model_type` "deberta") behind the LanguageModel protocol, against transformers'
`DebertaForMaskedLM`.

The folder is laid out as microsoft/deberta-base is on the hub (main at dc4db1a99f3fe29fe50fe0bd31e5a97336b7d8f9):
  * config.json's fields exactly (`pos_att_type` as the string "c2p|p2c", `position_biased_input`
    false, no token types, no `legacy` key; blob 3546ffd1ff3c2e48321e2d5ca513dd7c8aa7377f/config.json),
    at a tiny width;
  * a GPT-2 byte-level BPE vocabulary (vocab.json + merges.txt, [PAD] 0, [CLS] 1, [SEP] 2, [UNK] 3,
    [MASK] last), a 52-byte tokenizer_config.json `{"do_lower_case": false, "vocab_type": "gpt2"}`,
    and the original repo's pickled `bpe_encoder.bin`, which transformers does not read;
  * weights as pytorch_model.bin, pickle only (also tf_model.h5, rust_model.ot), holding the original
    MLM head (`lm_predictions.lm_head.*`) and an absolute position table
    (`deberta.embeddings.position_embeddings.weight`) that the config switches off: the keys
    transformers reports as not used when it loads the repo (huggingface/transformers#15216).
    main has no model.safetensors; the safetensors bot's unmerged refs/pr/4 (315ff8e) adds one.
Causal mode has no transformers reference (the class has no decoder mode), so a one-layer model is
checked against the direct computation: position i under a causal mask is the bidirectional output
of the prefix ending at i.
"""

from __future__ import annotations

import json

import pytest
import torch
from model_fixtures import VOCAB, exported_gap, logits, packed_minus_alone, randomize, serve_hub_repo

from encoderlab.errors import UserError
from encoderlab.model.hf_deberta import DebertaAdapter
from encoderlab.model.hub import load_pretrained

TOL = 1e-5
BASE = {  # microsoft/deberta-base's config.json fields, at a tiny size
    "model_type": "deberta",
    "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 32,
    "initializer_range": 0.02,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
    "relative_attention": True,
    "pos_att_type": "c2p|p2c",
    "layer_norm_eps": 1e-7,
    "max_relative_positions": -1,
    "position_biased_input": False,
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "type_vocab_size": 0,
    "vocab_size": VOCAB,
}
POSITIONS = "deberta.embeddings.position_embeddings.weight"
DROPPED_NOTE = (
    "1 weight of absolute positions (config.json's position_biased_input is false, so the model adds none) "
    f"left out (e.g. ['{POSITIONS}'])"
)


def _tokenizer(folder) -> None:
    """deberta-base's tokenizer files in miniature: byte-level BPE with its special tokens."""
    words = ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "t", "h", "e", "\u0120", "c", "a", "th", "the"]
    words += ["\u0120c", "\u0120ca", "\u0120cat", "[MASK]"]
    (folder / "vocab.json").write_text(json.dumps({w: i for i, w in enumerate(words)}))
    merges = ["t h", "th e", "\u0120 c", "\u0120c a", "\u0120ca t"]
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False, "vocab_type": "gpt2"}))


def _write(folder, raw: dict, legacy: bool, positions: bool = True, bin_only: bool = False):
    """A checkpoint folder: config.json as `raw` (exactly), random weights with the head `legacy` names
    and (`positions`) a stored absolute position table; as safetensors, or only as the hub's pickle."""
    from safetensors.torch import save_file
    from transformers import DebertaConfig, DebertaForMaskedLM

    folder.mkdir(parents=True, exist_ok=True)
    model = randomize(DebertaForMaskedLM(DebertaConfig(**{**raw, "legacy": legacy})))
    state = {k: v.clone().contiguous() for k, v in model.state_dict().items() if "decoder" not in k}
    if positions and POSITIONS not in state:
        state[POSITIONS] = torch.randn(raw["max_position_embeddings"], raw["hidden_size"])
    if bin_only:
        torch.save(state, folder / "pytorch_model.bin")
    else:
        save_file(state, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(raw))
    _tokenizer(folder)
    return folder


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return _write(tmp_path_factory.mktemp("deberta_base"), BASE, legacy=False)


@pytest.fixture
def ids():
    return torch.randint(5, VOCAB, (2, 20), generator=torch.Generator().manual_seed(4))


def _reference(folder, **config):
    from transformers import DebertaForMaskedLM

    return DebertaForMaskedLM.from_pretrained(str(folder), **config).eval()


def test_deberta_base_keeps_its_own_head_drops_the_position_table_and_matches_transformers(base, ids):
    loaded = load_pretrained(base)
    model = loaded.model
    assert isinstance(model, DebertaAdapter) and loaded.family == "deberta" and not model.hf.legacy
    assert loaded.notes == [DROPPED_NOTE]
    assert type(loaded.tokenizer).__name__ == "DebertaTokenizer" and loaded.spec.mask_id == 15
    ref = _reference(base, legacy=False)
    pad = torch.ones_like(ids, dtype=torch.bool)
    pad[1, 13:] = False
    with torch.no_grad():
        assert (logits(model, ids) - ref(input_ids=ids).logits).abs().max() <= TOL
        padded = ref(input_ids=ids, attention_mask=pad.long()).logits
        # transformers' default (legacy) would have dropped that head for a fresh one
        assert (_reference(base)(input_ids=ids).logits - ref(input_ids=ids).logits).abs().max() > 0.1
    assert (logits(model, ids, padding_mask=pad) - padded)[pad].abs().max() <= TOL
    assert model.config.max_seq_len == 64 and model.attn_impl == "eager"


def test_a_legacy_head_checkpoint_keeps_the_legacy_head(tmp_path, ids):
    folder = _write(tmp_path / "legacy", {**BASE, "legacy": True}, legacy=True, positions=False)
    loaded = load_pretrained(folder)
    assert loaded.model.hf.legacy and loaded.notes == []
    with torch.no_grad():
        assert (logits(loaded.model, ids) - _reference(folder)(input_ids=ids).logits).abs().max() <= TOL


def test_absolute_positions_switched_on_are_kept_and_used(tmp_path, ids):
    folder = _write(tmp_path / "absolute", {**BASE, "position_biased_input": True}, legacy=False)
    loaded = load_pretrained(folder)
    assert loaded.notes == [] and loaded.model.body.embeddings.position_embeddings is not None
    shifted = torch.arange(20).expand(2, 20) + 3
    with torch.no_grad():
        ref = _reference(folder, legacy=False)
        assert (logits(loaded.model, ids) - ref(input_ids=ids).logits).abs().max() <= TOL
        moved = ref(input_ids=ids, position_ids=shifted).logits
    assert (logits(loaded.model, ids, position_ids=shifted) - moved).abs().max() <= TOL
    assert (moved - ref(input_ids=ids).logits).abs().max() > 1e-3  # the positions reached the model


def test_causal_position_is_the_bidirectional_output_of_its_prefix(tmp_path):
    folder = _write(tmp_path / "one", {**BASE, "num_hidden_layers": 1}, legacy=False)
    model, ref = load_pretrained(folder).model, _reference(folder, legacy=False)
    row = torch.randint(5, VOCAB, (1, 12), generator=torch.Generator().manual_seed(2))
    causal = logits(model, row, attention_mode="causal")
    with torch.no_grad():
        prefixes = torch.stack([ref(input_ids=row[:, : i + 1]).logits[0, -1] for i in range(12)])
    assert (causal[0] - prefixes).abs().max() <= TOL
    assert (causal[0] - logits(model, row)[0]).abs().max() > 1e-3  # and it is not bidirectional


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute-too"])
@pytest.mark.parametrize("mode", ["bidirectional", "causal"])
def test_packed_documents_equal_the_documents_alone(tmp_path, mode, absolute):
    raw = {**BASE, "position_biased_input": absolute}
    folder = _write(tmp_path / "packed", raw, legacy=False, positions=False)
    assert packed_minus_alone(load_pretrained(folder).model, mode) <= TOL


def test_round_trip_and_export_keep_the_head(base, tmp_path, ids):
    assert (
        exported_gap(base, tmp_path, ids, _reference) <= TOL
    )  # transformers reads the export with the same head, no flag needed


def _hub_repo(tmp_path, safetensors: bool):
    """microsoft/deberta-base's files: main (pickle weights only), or with refs/pr/4's model.safetensors."""
    repo = _write(tmp_path / "repo", BASE, legacy=False, bin_only=True)
    for other in ("bpe_encoder.bin", "tf_model.h5", "rust_model.ot"):
        (repo / other).write_bytes(b"not for encoderlab")
    (repo / "README.md").write_text("DeBERTa: Decoding-enhanced BERT with Disentangled Attention\n")
    if safetensors:
        from safetensors.torch import save_file

        state = torch.load(repo / "pytorch_model.bin", weights_only=True)
        save_file(state, str(repo / "model.safetensors"))
    return repo


def test_the_hub_id_on_main_has_no_safetensors_and_is_refused_before_reading_a_pickle(tmp_path, monkeypatch):
    """The download fetches configs, safetensors and tokenizer files only; main's weights are pickle,
    so none come, and the load says so in one line naming where a safetensors copy usually is (was
    "SNAPSHOT has no weights ...; re-download the model", which would fetch the same files again)."""
    repo = _hub_repo(tmp_path, safetensors=False)
    fetched = serve_hub_repo(monkeypatch, tmp_path, "microsoft/deberta-base", repo)
    with pytest.raises(UserError) as exc:
        load_pretrained("microsoft/deberta-base")
    assert sorted(fetched) == ["config.json", "merges.txt", "tokenizer_config.json", "vocab.json"]
    assert str(exc.value) == (
        "hub repo microsoft/deberta-base has no safetensors weights (model.safetensors) to download, and "
        "encoderlab downloads no pickled ones (pytorch_model.bin, which older repos hold only); many such repos "
        "have a safetensors copy on the hub's conversion pull request: pass microsoft/deberta-base@refs/pr/N (N "
        "from the repo's Community tab), or convert the pickle in a folder you trust and pass the folder"
    )


def test_the_hub_id_with_safetensors_loads_through_the_download(tmp_path, monkeypatch, ids):
    repo = _hub_repo(tmp_path, safetensors=True)
    fetched = serve_hub_repo(monkeypatch, tmp_path, "microsoft/deberta-base", repo)
    loaded = load_pretrained("microsoft/deberta-base")
    assert sorted(fetched) == [
        "config.json",
        "merges.txt",
        "model.safetensors",
        "tokenizer_config.json",
        "vocab.json",
    ]
    assert loaded.family == "deberta" and loaded.notes == [DROPPED_NOTE]
    assert loaded.tokenizer("the cat")["input_ids"] == [1, 11, 14, 2]  # [CLS] the \u0120cat [SEP]
    with torch.no_grad():
        reference = _reference(repo, legacy=False)(input_ids=ids).logits
    assert (logits(loaded.model, ids) - reference).abs().max() <= TOL


def test_the_hub_id_pinned_to_its_conversion_pull_request_loads_its_safetensors(tmp_path, monkeypatch, ids):
    """The fix the refusal above names: main holds pickle only, the bot's pull request safetensors."""
    repos = {
        None: _hub_repo(tmp_path / "main", safetensors=False),
        "refs/pr/4": _hub_repo(tmp_path, safetensors=True),
    }
    fetched = serve_hub_repo(monkeypatch, tmp_path, "microsoft/deberta-base", repos)
    loaded = load_pretrained("microsoft/deberta-base@refs/pr/4")
    assert "model.safetensors" in fetched and loaded.family == "deberta"
    with torch.no_grad():
        reference = _reference(repos["refs/pr/4"], legacy=False)(input_ids=ids).logits
    assert (logits(loaded.model, ids) - reference).abs().max() <= TOL


def test_export_of_the_hub_id_on_main_is_one_line_naming_the_conversion_and_writes_nothing(
    tmp_path, monkeypatch, capsys
):
    from tests.reliability.errors_doc import assert_printed_as_documented

    from encoderlab.cli import main

    serve_hub_repo(monkeypatch, tmp_path, "microsoft/deberta-base", _hub_repo(tmp_path, safetensors=False))
    with pytest.raises(SystemExit) as exc:
        main(["export", "microsoft/deberta-base", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert_printed_as_documented("hub-repo-without-safetensors", err, tmp_path)
    assert not (tmp_path / "x").exists()
