"""ELECTRA checkpoints behind the LanguageModel protocol, against transformers' classes.

ELECTRA is BERT's body under its own names, with a projection from a narrower embedding width
(ELECTRA-small: 128 into 256; here 16 into 32). Two kinds of checkpoint are on the hub:
  * the discriminators (google/electra-{small,base,large}-discriminator, architecture
    `ElectraForPreTraining`), the ones ELECTRA's GLUE and SQuAD results are for: body plus a
    replaced-token-detection head (`discriminator_predictions.*`), no MLM head;
  * the generators (google/electra-*-generator, `ElectraForMaskedLM`), small masked LMs.
The hub repos (e.g. google/electra-base-discriminator, main at 1ae76a9) hold config.json,
tokenizer.json, a 48-byte tokenizer_config.json and vocab.txt, with weights as pytorch_model.bin,
tf_model.h5, flax and rust files; model.safetensors is on the conversion bot's refs/pr/4 (622038d).
"""

from __future__ import annotations

import pytest
import torch
from model_fixtures import (
    VOCAB,
    electra_config,
    exported_gap,
    logits,
    packed_minus_alone,
    randomize,
    save_tiny_tokenizer,
)

from encoderlab.model.hf_adapters import ElectraAdapter
from encoderlab.model.hub import load_pretrained

TOL = 1e-5
RTD_NOTE_START = "4 weights of the discriminator's replaced-token-detection head left out"


@pytest.fixture(scope="module")
def generator(tmp_path_factory):
    from transformers import ElectraForMaskedLM

    folder = tmp_path_factory.mktemp("electra_generator")
    randomize(ElectraForMaskedLM(electra_config())).save_pretrained(str(folder))
    save_tiny_tokenizer(folder)
    return folder


@pytest.fixture(scope="module")
def discriminator(tmp_path_factory):
    from transformers import ElectraForPreTraining

    folder = tmp_path_factory.mktemp("electra_discriminator")
    randomize(ElectraForPreTraining(electra_config(embedding_size=32))).save_pretrained(str(folder))
    save_tiny_tokenizer(folder)
    return folder


@pytest.fixture
def ids():
    return torch.randint(5, VOCAB, (2, 20), generator=torch.Generator().manual_seed(4))


def _reference(folder, cls="ElectraForMaskedLM", **config):
    import transformers

    return (
        getattr(transformers, cls).from_pretrained(str(folder), attn_implementation="sdpa", **config).eval()
    )


def test_a_generator_matches_transformers_bidirectional_padded_and_causal(generator, ids):
    loaded = load_pretrained(generator)
    assert type(loaded.model) is ElectraAdapter and loaded.family == "electra" and loaded.notes == []
    pad = torch.ones_like(ids, dtype=torch.bool)
    pad[1, 13:] = False
    ref = _reference(generator)
    with torch.no_grad():
        assert (logits(loaded.model, ids) - ref(input_ids=ids).logits).abs().max() <= TOL
        expected = ref(input_ids=ids, attention_mask=pad.long()).logits
        causal = _reference(generator, is_decoder=True)(input_ids=ids).logits
    assert (logits(loaded.model, ids, padding_mask=pad) - expected)[pad].abs().max() <= TOL
    assert (logits(loaded.model, ids, attention_mode="causal") - causal).abs().max() <= TOL


@pytest.mark.parametrize("mode", ["bidirectional", "causal"])
def test_packed_documents_equal_the_documents_alone(generator, mode):
    assert packed_minus_alone(load_pretrained(generator).model, mode) <= TOL


def test_segment_ids_reach_electras_token_types(generator, ids):
    types = torch.zeros_like(ids)
    types[:, 10:] = 1
    model = load_pretrained(generator).model
    assert model.segment_types == 2
    with torch.no_grad():
        ours = model(ids, segment_ids=types).last_hidden_state
        theirs = _reference(generator).electra(input_ids=ids, token_type_ids=types).last_hidden_state
    assert (ours - theirs).abs().max() <= TOL and (ours - model(ids).last_hidden_state).abs().max() > TOL


def test_a_discriminator_keeps_its_body_and_gets_one_seeded_mlm_head(discriminator, ids):
    """The body (what fine-tuning reads) equals the discriminator's own; the RTD head is left out with a
    note; the MLM head is fresh but the same on every load (the fingerprint keys caches)."""
    loaded = load_pretrained(discriminator)
    assert loaded.family == "electra" and len(loaded.notes) == 2
    assert loaded.notes[0].startswith(RTD_NOTE_START) and "MLM head freshly initialised" in loaded.notes[1]
    with torch.no_grad():
        ours = loaded.model(ids, output_hidden_states=True)
        theirs = _reference(discriminator, "ElectraForPreTraining").electra(input_ids=ids)
    assert (ours.last_hidden_state - theirs.last_hidden_state).abs().max() <= TOL
    assert torch.equal(logits(load_pretrained(discriminator).model, ids), logits(loaded.model, ids))


def test_round_trip_and_export(generator, tmp_path, ids):
    assert exported_gap(generator, tmp_path, ids, _reference) <= TOL


def test_the_anatomy_covers_the_projection_and_the_generator_head(generator, discriminator):
    narrow, wide = load_pretrained(generator).model, load_pretrained(discriminator).model
    assert narrow.anatomy.embeddings == ("hf.electra.embeddings", "hf.electra.embeddings_project")
    assert wide.anatomy.embeddings == ("hf.electra.embeddings",)  # no projection at equal widths
    assert narrow.anatomy.head == ("hf.generator_predictions", "hf.generator_lm_head")
