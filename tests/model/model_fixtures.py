"""Helpers for model tests: a small config and the matching transformers reference models.

The reference configs are written out field by field here, independently of the code under test,
so a wrong mapping in `hub` or `export` cannot hide behind a shared helper.
"""

from __future__ import annotations

import torch

from encoderlab.data.synthetic import synthetic_spec, synthetic_tokenizer
from encoderlab.model import Encoder, ModelConfig

VOCAB = 97
ADAPTED_FAMILIES = (
    "bert",
    "roberta",
    "roberta-prelayernorm",
    "electra",
    "distilbert",
    "mpnet",
    "albert",
    "modernbert",
    "deberta",
    "deberta-v2",
)
"""The adapter families the parametrized tests build (here and in `analysis_helpers.make_adapter`): a new
family is added to them all by adding it here."""


def small_config(**overrides) -> ModelConfig:
    fields = dict(
        vocab_size=VOCAB,
        hidden_size=64,
        n_layers=2,
        n_heads=4,
        n_kv_heads=2,
        head_dim=16,
        intermediate_size=96,
        norm_eps=1e-5,
        rope_theta=10_000.0,
        max_seq_len=128,
    )
    fields.update(overrides)
    return ModelConfig(**fields)


def make_model(seed: int = 0, **overrides) -> Encoder:
    torch.manual_seed(seed)
    return Encoder(small_config(**overrides)).eval()


def _hf_body(model: Encoder) -> dict:
    """The HF config fields that describe `model`'s body (shared by the EuroBERT and Llama references)."""
    c = model.config
    return dict(
        vocab_size=c.vocab_size,
        hidden_size=c.hidden_size,
        intermediate_size=c.intermediate_size,
        num_hidden_layers=c.n_layers,
        num_attention_heads=c.n_heads,
        num_key_value_heads=c.n_kv_heads,
        head_dim=c.head_dim,
        rms_norm_eps=c.norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": c.rope_theta},
        max_position_embeddings=c.max_seq_len,
        tie_word_embeddings=c.tie_embeddings,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )


def eurobert_reference(model: Encoder):
    """transformers' EuroBertForMaskedLM with `model`'s weights (keys prefixed by `model.`)."""
    from transformers import EuroBertConfig, EuroBertForMaskedLM

    ref = EuroBertForMaskedLM(EuroBertConfig(**_hf_body(model), mask_token_id=3)).eval()
    _load_prefixed(ref, model)
    return ref


def llama_reference(model: Encoder):
    """transformers' LlamaForCausalLM with `model`'s weights."""
    from transformers import LlamaConfig, LlamaForCausalLM

    ref = LlamaForCausalLM(LlamaConfig(**_hf_body(model))).eval()
    _load_prefixed(ref, model)
    return ref


def _load_prefixed(ref, model: Encoder) -> None:
    state = {(k if k.startswith("lm_head") else f"model.{k}"): v for k, v in model.state_dict().items()}
    missing, unexpected = ref.load_state_dict(state, strict=False)
    assert not unexpected, unexpected
    assert not [k for k in missing if "rotary" not in k], missing


def logits(model, ids: torch.Tensor, **kwargs) -> torch.Tensor:
    with torch.no_grad():
        return model.lm_logits(model(ids, **kwargs).last_hidden_state)


def packed_minus_alone(model, mode: str, lengths=(6, 9, 5), seed: int = 6) -> float:
    """The largest logit difference between documents packed in one row (document mask, positions
    restarting at 0) and each run alone: 0 for a model whose packing is exact."""
    from encoderlab.data.synthetic import positions_from_doc_ids

    g = torch.Generator().manual_seed(seed)
    docs = [torch.randint(5, VOCAB, (n,), generator=g) for n in lengths]
    doc_ids = torch.cat([torch.full((n,), i) for i, n in enumerate(lengths)])[None]
    packed = logits(
        model,
        torch.cat(docs)[None],
        attention_mode=mode,
        doc_ids=doc_ids,
        position_ids=positions_from_doc_ids(doc_ids),
    )
    alone = torch.cat([logits(model, d[None], attention_mode=mode) for d in docs], dim=1)
    return float((packed - alone).abs().max())


def exported_gap(folder, tmp_path, ids: torch.Tensor, reference) -> float:
    """Load `folder`, save it as a model folder and reload it (asserted: the same family, equal logits),
    export it (`save_hf`) and return the largest logit difference between the loaded model and
    transformers' own class reading the export (`reference(export_folder)`, a model in eval mode)."""
    from encoderlab.model.hub import load_pretrained
    from encoderlab.model.io import save_model_folder

    loaded = load_pretrained(folder)
    save_model_folder(loaded.model, tmp_path / "m", loaded.tokenizer)
    again = load_pretrained(tmp_path / "m")
    assert again.family == loaded.family and torch.equal(logits(again.model, ids), logits(loaded.model, ids))
    loaded.model.save_hf(tmp_path / "hf")
    with torch.no_grad():
        exported = reference(tmp_path / "hf")(input_ids=ids).logits
    return float((exported - logits(loaded.model, ids)).abs().max())


def randomize(module: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Random values in every parameter (norm weights and biases too, which HF inits to 1 or 0),
    so a parameter mapped to the wrong place or dropped changes the outputs."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.1)
    return module.eval()


def save_tiny_tokenizer(folder, vocab_size: int = VOCAB):
    """A word-level fast tokenizer with ids 0-4 = pad, bos, eos, mask, unk (`synthetic_spec`'s), saved."""
    tok = synthetic_tokenizer(synthetic_spec(vocab_size))
    tok.save_pretrained(str(folder))
    return tok


def bert_config(cls_name: str = "BertConfig", **overrides):
    """A two-layer BertConfig (or another class of BERT's fields, by name) without dropout."""
    import transformers

    fields = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        pad_token_id=0,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return getattr(transformers, cls_name)(**{**fields, **overrides})


def roberta_config(cls_name: str = "RobertaConfig", **overrides):
    """`bert_config` as a RoBERTa-style config (RobertaConfig or XLMRobertaConfig) of 66 position rows;
    pad id 0, the tiny tokenizer's, so positions start at 1 and 65 are usable."""
    return bert_config(cls_name, **{"max_position_embeddings": 66, "type_vocab_size": 1, **overrides})


def modernbert_config():
    """A three-layer ModernBertConfig (local, global, local attention)."""
    from transformers import ModernBertConfig

    # Window 4 (|q - k| <= 2), local first: a 20-token row exercises both layer types.
    return ModernBertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=48,
        max_position_embeddings=64,
        local_attention=4,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        cls_token_id=1,
        sep_token_id=2,
    )


def electra_config(**overrides):
    """A two-layer ElectraConfig with a narrower embedding (16 into 32, as ELECTRA-small's 128 into 256)."""
    from transformers import ElectraConfig

    fields = dict(
        vocab_size=VOCAB,
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return ElectraConfig(**{**fields, **overrides})


def mpnet_config(**overrides):
    """A two-layer MPNetConfig without dropout; pad id 1, the one MPNet's embeddings hard-code."""
    from transformers import MPNetConfig

    fields = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=66,
        pad_token_id=1,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return MPNetConfig(**{**fields, **overrides})


def distilbert_config(**overrides):
    """A two-layer DistilBertConfig in its own field names (dim, n_layers, n_heads, hidden_dim), no dropout."""
    from transformers import DistilBertConfig

    fields = dict(
        vocab_size=VOCAB,
        dim=32,
        n_layers=2,
        n_heads=4,
        hidden_dim=64,
        max_position_embeddings=64,
        pad_token_id=0,
        dropout=0.0,
        attention_dropout=0.0,
    )
    return DistilBertConfig(**{**fields, **overrides})


def deberta_config(**overrides):
    """A two-layer DeBERTa-v3-style DebertaV2Config (relative attention only, the original MLM head)."""
    from transformers import DebertaV2Config

    fields = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        relative_attention=True,
        position_buckets=8,
        norm_rel_ebd="layer_norm",
        pos_att_type=["p2c", "c2p"],
        position_biased_input=False,
        type_vocab_size=0,
        legacy=False,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return DebertaV2Config(**{**fields, **overrides})


def deberta_v1_config(**overrides):
    """A two-layer DeBERTa v1 DebertaConfig in deberta-base's layout (relative attention only, c2p and
    p2c, no token types) with the original MLM head."""
    from transformers import DebertaConfig

    fields = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        relative_attention=True,
        pos_att_type=["c2p", "p2c"],
        position_biased_input=False,
        type_vocab_size=0,
        legacy=False,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return DebertaConfig(**{**fields, **overrides})


SPM_TEXTS = ["the cat sat on the mat", "a dog sat on a log", "the question is what the context says"]


def save_deberta_v3_tokenizer(folder) -> None:
    """microsoft/deberta-v3-base's tokenizer files: a SentencePiece unigram model (`spm.model`, trained
    here by the `sentencepiece` package with DeBERTa-v3's special pieces [PAD] 0, [CLS] 1, [SEP] 2,
    [UNK] 3) and its 52-byte tokenizer_config.json; no tokenizer.json."""
    import io
    import json

    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(SPM_TEXTS * 50), model_writer=model, vocab_size=28, model_type="unigram",
        pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]", bos_piece="[CLS]", eos_piece="[SEP]",
        unk_piece="[UNK]", minloglevel=2,
    )  # fmt: skip
    (folder / "spm.model").write_bytes(model.getvalue())
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False, "vocab_type": "spm"}))


def serve_hub_repo(monkeypatch, tmp_path, hub_id: str, repo) -> list[str]:
    """Make `hub_id` a hub repo holding `repo`'s files, for the download a hub-id load makes: a fake
    `snapshot_download` copies the files its patterns match into a snapshot folder and records their
    names in the returned list. `repo`: a folder (its default branch), or {revision: folder}, None the
    default branch (a revision it lacks fails the test). No mirror, not offline, `tmp_path` as the
    working folder."""
    import fnmatch
    import shutil

    import huggingface_hub

    from encoderlab.data.hub import HUB_MODELS_ENV

    fetched: list[str] = []

    revisions = repo if isinstance(repo, dict) else {None: repo}

    def snapshot_download(repo_id, *, allow_patterns=None, revision=None, local_files_only=False, **kwargs):
        if local_files_only:  # a look into the local hub cache (`guarded_folder`): no network, and empty
            from huggingface_hub.errors import LocalEntryNotFoundError

            raise LocalEntryNotFoundError("not in the local cache")
        assert repo_id == hub_id and revision in revisions, (repo_id, revision)
        files = revisions[revision]
        snap = tmp_path / "snapshot" / str(revision)
        snap.mkdir(parents=True, exist_ok=True)
        for p in sorted(q for q in files.rglob("*") if q.is_file()):
            name = p.relative_to(files).as_posix()  # the hub matches patterns on the path ('*' spans '/')
            if any(fnmatch.fnmatch(name, g) for g in allow_patterns):
                fetched.append(name)
                (snap / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(p, snap / name)
        return str(snap)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(HUB_MODELS_ENV, raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.chdir(tmp_path)
    return fetched


def albert_config(**overrides):
    """A three-layer AlbertConfig sharing one layer (as every released ALBERT), a narrower embedding
    (16 into 32, as albert-base-v2's 128 into 768), no dropout."""
    from transformers import AlbertConfig

    fields = dict(
        vocab_size=VOCAB,
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        hidden_act="gelu_new",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return AlbertConfig(**{**fields, **overrides})


def save_albert_tokenizer(folder) -> None:
    """albert-base-v2's vocabulary file: a SentencePiece unigram model (`spiece.model`, trained here by
    the `sentencepiece` package with ALBERT's special pieces <pad> 0, <unk> 1, [CLS] 2, [SEP] 3,
    [MASK] 4), lower-cased as ALBERT's is; no tokenizer_config.json (config.json names the class)."""
    import io

    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(SPM_TEXTS * 50), model_writer=model, vocab_size=30, model_type="unigram",
        pad_id=0, unk_id=1, bos_id=2, eos_id=3, pad_piece="<pad>", unk_piece="<unk>", bos_piece="[CLS]",
        eos_piece="[SEP]", user_defined_symbols=["[MASK]"], minloglevel=2,
    )  # fmt: skip
    (folder / "spiece.model").write_bytes(model.getvalue())
