"""DistilBERT checkpoints (`model_type` "distilbert") behind the LanguageModel protocol, against
transformers' `DistilBertForMaskedLM`.

The hub folder is laid out as distilbert/distilbert-base-uncased is: config.json in DistilBERT's own
field names (dim, hidden_dim, n_layers, n_heads, the legacy `tie_weights_`, `architectures`
["DistilBertForMaskedLM"]; the fields as transformers 4.9.1 logs them when it loads the repo, quoted in
a stored notebook, file id 45972179265 of the code index: no repository or commit is named there),
the masked LM's weights with the tied `vocab_projector.weight` stored too (that log lists it among the
keys a classifier does not use), a BERT WordPiece vocab.txt, tokenizer.json and a one-field
tokenizer_config.json (`do_lower_case`), beside tf_model.h5, flax_model.msgpack, rust_model.ot and
pytorch_model.bin that a download leaves alone. The file list is main's at 12040ac (the hub's tree
page): config.json (483 bytes), model.safetensors (268 MB, merged from the conversion PR #6 at
1c4513b), tokenizer.json, tokenizer_config.json (48 bytes since #12; it was the one-field 28-byte file
before), vocab.txt.

Causal mode has no transformers decoder flag: transformers' own class is run with `is_causal` set on
each attention module (its SDPA path's causal kernel) and with a causal 4D additive mask, and one layer
is checked against the bidirectional output of each prefix.
"""

from __future__ import annotations

import json

import pytest
import torch
from model_fixtures import (
    VOCAB,
    distilbert_config,
    exported_gap,
    logits,
    packed_minus_alone,
    randomize,
    serve_hub_repo,
)

from encoderlab.model.hf_adapters import DistilBertAdapter
from encoderlab.model.hub import load_pretrained

TOL = 1e-5
HUB_ID = "distilbert/distilbert-base-uncased"
HUB_FIELDS = {  # distilbert-base-uncased's config.json fields beside the sizes
    "activation": "gelu",
    "architectures": ["DistilBertForMaskedLM"],
    "initializer_range": 0.02,
    "model_type": "distilbert",
    "qa_dropout": 0.1,
    "seq_classif_dropout": 0.2,
    "sinusoidal_pos_embds": False,
    "tie_weights_": True,
}


def _write(folder, **overrides):
    """A distilbert-base-uncased-style folder at a tiny size (no dropout, so logits compare exactly)."""
    from safetensors.torch import save_file
    from transformers import BertTokenizer, DistilBertForMaskedLM

    folder.mkdir(parents=True, exist_ok=True)
    model = randomize(DistilBertForMaskedLM(distilbert_config(**overrides)))
    save_file(
        {k: v.clone().contiguous() for k, v in model.state_dict().items()}, str(folder / "model.safetensors")
    )
    raw = {**model.config.to_diff_dict(), **HUB_FIELDS}
    raw = {k: v for k, v in raw.items() if k not in ("transformers_version", "dtype", "tie_word_embeddings")}
    (folder / "config.json").write_text(json.dumps(raw, indent=2))
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"]
    words += [f"w{i}" for i in range(VOCAB - len(words))]
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    BertTokenizer(vocab=str(folder / "vocab.txt"), do_lower_case=True).save_pretrained(str(folder))
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    return folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return _write(tmp_path_factory.mktemp("distilbert"))


@pytest.fixture
def ids():
    return torch.randint(5, VOCAB, (2, 20), generator=torch.Generator().manual_seed(4))


def _reference(folder, causal: bool = False):
    from transformers import DistilBertForMaskedLM

    ref = DistilBertForMaskedLM.from_pretrained(str(folder), attn_implementation="sdpa").eval()
    for layer in ref.distilbert.transformer.layer:
        layer.attention.is_causal = causal
    return ref


def test_distilbert_matches_transformers_bidirectional_padded_and_causal(folder, ids):
    loaded = load_pretrained(folder)
    model = loaded.model
    assert type(model) is DistilBertAdapter and loaded.family == "distilbert" and loaded.notes == []
    assert model.segment_types == 1 and model.config.max_seq_len == 64 and model.config.hidden_size == 32
    assert model.config.matmul_shape().intermediate_size == 64  # config.json's hidden_dim
    pad = torch.ones_like(ids, dtype=torch.bool)
    pad[1, 13:] = False
    causal4d = torch.zeros(20, 20).masked_fill(
        ~torch.ones(20, 20, dtype=torch.bool).tril(), torch.finfo().min
    )
    with torch.no_grad():
        assert (logits(model, ids) - _reference(folder)(input_ids=ids).logits).abs().max() <= TOL
        padded = _reference(folder)(input_ids=ids, attention_mask=pad.long()).logits
        causal = _reference(folder, causal=True)(input_ids=ids).logits
        masked = _reference(folder)(
            input_ids=ids, attention_mask=causal4d[None, None].expand(2, 1, 20, 20)
        ).logits
    assert (logits(model, ids, padding_mask=pad) - padded)[pad].abs().max() <= TOL
    assert (logits(model, ids, attention_mode="causal") - causal).abs().max() <= TOL
    assert (masked - causal).abs().max() <= TOL  # the 4D additive mask is taken as is
    assert (logits(model, ids) - causal).abs().max() > 1e-3  # and causal is not bidirectional


def test_causal_position_is_the_bidirectional_output_of_its_prefix(tmp_path):
    one = _write(tmp_path / "one", n_layers=1)
    model, ref = load_pretrained(one).model, _reference(one)
    row = torch.randint(5, VOCAB, (1, 12), generator=torch.Generator().manual_seed(2))
    causal = logits(model, row, attention_mode="causal")
    with torch.no_grad():
        prefixes = torch.stack([ref(input_ids=row[:, : i + 1]).logits[0, -1] for i in range(12)])
    assert (causal[0] - prefixes).abs().max() <= TOL


@pytest.mark.parametrize("mode", ["bidirectional", "causal"])
def test_packed_documents_equal_the_documents_alone(folder, mode):
    assert packed_minus_alone(load_pretrained(folder).model, mode) <= TOL


def test_round_trip_and_export(folder, tmp_path, ids):
    assert exported_gap(folder, tmp_path, ids, _reference) <= TOL


def test_the_hub_id_loads_through_the_download(tmp_path, monkeypatch, ids):
    repo = _write(tmp_path / "repo")
    for other in ("pytorch_model.bin", "tf_model.h5", "flax_model.msgpack", "rust_model.ot"):
        (repo / other).write_bytes(b"not for encoderlab")
    fetched = serve_hub_repo(monkeypatch, tmp_path, HUB_ID, repo)
    loaded = load_pretrained(HUB_ID)
    assert sorted(fetched) == [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.txt",
    ]
    assert loaded.family == "distilbert" and loaded.notes == []
    assert loaded.tokenizer("the cat")["input_ids"] == [2, 5, 6, 3] and loaded.spec.mask_id == 4
    with torch.no_grad():
        reference = _reference(repo)(input_ids=ids).logits
    assert (logits(loaded.model, ids) - reference).abs().max() <= TOL
