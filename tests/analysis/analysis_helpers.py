"""Tiny models, a word-level tokenizer and texts, all made in the test (no assets, no hub).

Imported by name (`from analysis_helpers import ...`): tests/ folders are not packages."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from encoderlab.model import Encoder, ModelConfig

WORDS = [f"w{i}" for i in range(60)]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def make_tokenizer(words: list[str] = WORDS) -> PreTrainedTokenizerFast:
    vocab = {tok: i for i, tok in enumerate(SPECIALS + words)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


def make_config(**overrides) -> ModelConfig:
    base = dict(
        vocab_size=len(SPECIALS) + len(WORDS),
        hidden_size=32,
        n_layers=3,
        n_heads=2,
        n_kv_heads=1,
        head_dim=16,
        intermediate_size=64,
        max_seq_len=64,
    )
    return ModelConfig(**{**base, **overrides})


def make_model(seed: int, **overrides) -> Encoder:
    torch.manual_seed(seed)
    return Encoder(make_config(**overrides)).eval()


def make_texts(n: int, seed: int = 0, lo: int = 3, hi: int = 12) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(lo, hi))) for _ in range(n)]


def eval_records(task: str, table: dict, model: str = "fp-1", source: str = "m1") -> list[dict]:
    """{lr: [(val, test) per seed]} as the records `encoderlab eval` writes to results.jsonl."""
    from encoderlab.eval.tasks import get_task

    spec = get_task(task)
    return [
        {"model": model, "source": source, "task": task, "family": spec.family, "task_signature": spec.signature(),
         "metric": spec.metric, "lr": lr, "seed": seed, "val": {spec.metric: val}, "val_score": val,
         "test": {"test": {spec.metric: test}, "shifted": {spec.metric: 0.0}}, "test_score": test}
        for lr, pairs in table.items() for seed, (val, test) in enumerate(pairs)
    ]  # fmt: skip


def make_adapter(family: str, seed: int, **overrides):
    """A tiny random BERT, RoBERTa, RoBERTa-PreLayerNorm, ELECTRA, MPNet, ALBERT, DistilBERT, DeBERTa (v1 or v3) or ModernBERT built by transformers from a config (no download), behind
    encoderlab's adapter, over `make_tokenizer`'s vocabulary. Every parameter gets seeded noise
    (transformers inits norms to 1 and biases to 0, which would make two seeds agree there)."""
    from transformers import ModernBertConfig, ModernBertForMaskedLM

    from encoderlab.model.hf_registry import ADAPTERS

    common = dict(vocab_size=len(SPECIALS) + len(WORDS), hidden_size=32, num_hidden_layers=3, pad_token_id=0)
    if family in ("bert", "roberta", "roberta-prelayernorm", "electra", "mpnet", "albert"):
        import transformers

        fields = dict(num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
        fields.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        if family in (
            "electra",
            "albert",
        ):  # a narrower embedding, projected into the blocks (ELECTRA-small's shape)
            fields.update(embedding_size=16)
        if family == "mpnet":  # the pad id its embeddings hard-code (positions start after it)
            fields.update(pad_token_id=1)
        prefix = {
            "bert": "Bert",
            "roberta": "Roberta",
            "roberta-prelayernorm": "RobertaPreLayerNorm",
            "electra": "Electra",
            "mpnet": "MPNet",
            "albert": "Albert",
        }
        prefix = prefix[family]
        config = getattr(transformers, f"{prefix}Config")(**{**common, **fields, **overrides})
        cls = getattr(transformers, f"{prefix}ForMaskedLM")
    elif family == "distilbert":  # its own field names (no attribute_map for the MLP width)
        from transformers import DistilBertConfig, DistilBertForMaskedLM

        fields = dict(
            vocab_size=common["vocab_size"], dim=32, n_layers=3, n_heads=2, hidden_dim=64, pad_token_id=0
        )
        fields.update(max_position_embeddings=64, dropout=0.0, attention_dropout=0.0)
        config, cls = DistilBertConfig(**{**fields, **overrides}), DistilBertForMaskedLM
    elif family in ("deberta", "deberta-v2"):
        import transformers

        fields = dict(num_attention_heads=2, intermediate_size=64, max_position_embeddings=64, legacy=False)
        fields.update(relative_attention=True, pos_att_type=["p2c", "c2p"], position_biased_input=False)
        fields.update(type_vocab_size=0, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        if family == "deberta-v2":  # v3's log buckets and normalised table (v1 has neither)
            fields.update(position_buckets=8, norm_rel_ebd="layer_norm")
        prefix = "DebertaV2" if family == "deberta-v2" else "Deberta"
        config = getattr(transformers, f"{prefix}Config")(**{**common, **fields, **overrides})
        cls = getattr(transformers, f"{prefix}ForMaskedLM")
    else:
        # window 4 (|q - k| <= 2): a 12-token text sees both the global block 0 and local blocks 1-2
        fields = dict(
            num_attention_heads=2, intermediate_size=48, max_position_embeddings=64, local_attention=4
        )
        fields.update(bos_token_id=2, eos_token_id=3, cls_token_id=2, sep_token_id=3)
        config, cls = ModernBertConfig(**{**common, **fields, **overrides}), ModernBertForMaskedLM
    config._attn_implementation = ADAPTERS[family].attention_kernel
    torch.manual_seed(seed)
    hf = cls(config)
    g = torch.Generator().manual_seed(1000 + seed)
    with torch.no_grad():
        for p in hf.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.1)
    return ADAPTERS[family](hf.eval())


def one_line_error(capsys, argv, message):
    """Run the CLI on `argv`: exit 2 and one line on stderr holding `message`."""
    from encoderlab.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and message in err[0], err


def t_interval(values, overlap=0.0):
    """95% Student-t interval written out with scipy (independent of eval.stats), widened for draws that
    share a share `overlap` of their texts (the plain interval with 0)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    widen = math.sqrt((1 + (len(v) - 1) * overlap) / (1 - overlap))
    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)) * widen
    return v.mean() - half, v.mean() + half
