"""Checkpoints that carry a pretraining objective's second head beside their MLM head: BERT's
next-sentence prediction (`cls.seq_relationship`, in the original google-bert checkpoints, whose config.json
names BertForMaskedLM: transformers warns "Some weights of the model checkpoint at bert-base-cased were not
used when initializing BertForMaskedLM: ['cls.seq_relationship.weight', 'cls.seq_relationship.bias']",
huggingface/transformers#5404) and ALBERT's sentence-order prediction (`sop_classifier`,
`AlbertForPreTraining`). Both were refused, as a checkpoint unlike its config ("re-download the model") or as
"a fine-tuned task model (BertForPreTraining)"; they now load with the head left out and a note, as
ELECTRA's replaced-token-detection head is, and with their pretrained MLM head, which matches transformers'."""

from __future__ import annotations

import json

import pytest
import torch
from model_fixtures import VOCAB, albert_config, bert_config, logits, randomize, save_tiny_tokenizer
from safetensors.torch import load_file

from encoderlab.model.hub import load_pretrained

TOL = 1e-5


def _bert_as_google_ships_it(folder):
    """BertForPreTraining's weights (MLM and NSP heads) under a config.json naming BertForMaskedLM."""
    from transformers import BertForMaskedLM, BertForPreTraining

    randomize(BertForPreTraining(bert_config())).save_pretrained(str(folder))
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "architectures": ["BertForMaskedLM"]}))
    return BertForMaskedLM, "cls.seq_relationship.", "the next-sentence-prediction head"


def _albert_for_pretraining(folder):
    from transformers import AlbertForMaskedLM, AlbertForPreTraining

    randomize(AlbertForPreTraining(albert_config())).save_pretrained(str(folder))
    return AlbertForMaskedLM, "sop_classifier.", "the sentence-order-prediction head"


@pytest.mark.parametrize("write", [_bert_as_google_ships_it, _albert_for_pretraining], ids=["bert", "albert"])
def test_a_pretraining_checkpoints_second_head_is_left_out_and_its_mlm_head_kept(tmp_path, write):
    masked_lm, fragment, head = write(tmp_path)
    save_tiny_tokenizer(tmp_path)
    assert any(
        k.startswith(fragment) for k in load_file(tmp_path / "model.safetensors")
    )  # the head is stored
    loaded = load_pretrained(tmp_path)  # was refused: "... have no place in BertForMaskedLM ..."
    left = [n for n in loaded.notes if head in n]
    assert len(left) == 1 and fragment in left[0]
    assert not any("freshly initialised" in n for n in loaded.notes)  # the pretrained MLM head is loaded
    ids = torch.randint(5, VOCAB, (2, 20), generator=torch.Generator().manual_seed(3))
    reference = masked_lm.from_pretrained(str(tmp_path), attn_implementation="sdpa").eval()
    with torch.no_grad():
        expected = reference(input_ids=ids).logits
    assert (logits(loaded.model, ids) - expected).abs().max() <= TOL


def test_other_stray_weights_of_a_pretraining_class_are_not_called_a_fine_tuned_task_model(tmp_path):
    """BertForPreTraining names a pretraining checkpoint: a weight nothing has a place for beside its heads is
    a checkpoint unlike its config (`hf_registry.unplaced_fix`), where it was "a fine-tuned task model"."""
    from safetensors.torch import save_file
    from transformers import BertForPreTraining

    from encoderlab.errors import UserError

    randomize(BertForPreTraining(bert_config())).save_pretrained(str(tmp_path))
    weights = load_file(tmp_path / "model.safetensors")
    save_file(
        {**weights, "extra.weight": torch.zeros(2)}, tmp_path / "model.safetensors", metadata={"format": "pt"}
    )
    with pytest.raises(
        UserError, match=r"\['extra\.weight'\]\); the checkpoint does not match its config\.json"
    ):
        load_pretrained(tmp_path)
