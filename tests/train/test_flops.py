"""Counted FLOPs (`train/flops.py`, what MFU divides by) against torch's own FLOP counter.

`torch.utils.flop_counter.FlopCounterMode` counts every matmul a real training step dispatches
(forward, backward and the fused head's in-forward gradients). With SDPA's math backend attention
is two batched matmuls over every (query, key) pair of a row, so on one bidirectional document per
row the two counts must agree exactly; where the mask removes pairs (causal, packed documents) ours
counts only the allowed ones, and the difference must be exactly the removed pairs' cost.
"""

from __future__ import annotations

import pytest
import torch
from tests.model.model_fixtures import ADAPTED_FAMILIES
from tests.train.flops_fixtures import LENGTH as T
from tests.train.flops_fixtures import ROWS as B
from tests.train.flops_fixtures import adapter_step
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from encoderlab.data.batch import PackedBatch
from encoderlab.data.synthetic import positions_from_doc_ids, synthetic_spec
from encoderlab.model import Encoder, ModelConfig
from encoderlab.objectives import CLM, MLM
from encoderlab.objectives.base import ObjectiveInputs, lm_loss
from encoderlab.train.flops import attended_pairs, forward_flops, train_flops

SPEC = synthetic_spec(300)
CONFIG = ModelConfig.from_size("tiny", vocab_size=300, mask_id=3, pad_id=0, bos_id=1, eos_id=2)


def _inputs(objective, doc_lengths: list[list[int]]):
    docs = torch.tensor([[d for d, n in enumerate(row) for _ in range(n)] for row in doc_lengths])
    assert docs.shape == (B, T)
    ids = torch.randint(5, SPEC.vocab_size, (B, T), generator=torch.Generator().manual_seed(0))
    batch = PackedBatch(input_ids=ids, doc_ids=docs, position_ids=positions_from_doc_ids(docs))
    return objective.prepare(batch, SPEC, torch.Generator().manual_seed(1))


def _torch_count(x) -> int:
    """Matmul FLOPs of one training step's forward and backward, as torch counts them."""
    model = Encoder(CONFIG)
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        hidden = model(
            x.input_ids, attention_mode=x.attention_mode, position_ids=x.position_ids, doc_ids=x.doc_ids
        ).last_hidden_state
        lm_loss(model, hidden, x.targets)[0].backward()
    return counter.get_total_flops()


def _pair_cost(pairs: int) -> int:
    """Forward + backward FLOPs of `pairs` (query, key) pairs in every layer: scores and weighted sum."""
    return 3 * CONFIG.n_layers * 4 * CONFIG.n_heads * CONFIG.head_dim * pairs


@pytest.mark.parametrize("objective", [MLM(mask_ratio=0.3), CLM()], ids=["mlm", "clm"])
@pytest.mark.parametrize("doc_lengths", [[[T], [T]], [[12, 20], [5, 7, 20]]], ids=["one-doc", "packed"])
def test_counted_flops_are_torchs_minus_exactly_the_masked_pairs(objective, doc_lengths):
    x = _inputs(objective, doc_lengths)
    lengths = [n for row in doc_lengths for n in row]
    allowed = (
        sum(n * (n + 1) // 2 for n in lengths)
        if x.attention_mode == "causal"
        else sum(n * n for n in lengths)
    )
    assert _torch_count(x) - train_flops(CONFIG, [x]) == _pair_cost(B * T * T - allowed)


def test_one_bidirectional_document_per_row_counts_exactly_what_torch_counts():
    x = _inputs(MLM(mask_ratio=0.3), [[T], [T]])
    assert 0 < x.n_targets < B * T  # the sparse head: logits only where MLM has targets
    assert train_flops(CONFIG, [x]) == _torch_count(x)


@pytest.mark.parametrize("size", ["210m", "610m", "1b"])
def test_one_document_per_row_is_the_reference_cost_formula(size):
    """The MFU convention prices a token at 6 x (matmul weights) + 12 x L x d x T, the LM head at
    its targets (the sparse MLM column): with one bidirectional document per row, ours is that."""
    cfg = ModelConfig.from_size(size, vocab_size=32768, mask_id=3, pad_id=0, bos_id=1, eos_id=2)
    with torch.device("meta"):
        model = Encoder(cfg)
    body = sum(m.weight.numel() for m in model.layers.modules() if isinstance(m, torch.nn.Linear))
    rows, seq = 2, 2048
    x = MLM(mask_ratio=0.4).prepare(
        PackedBatch(
            input_ids=torch.randint(5, 32768, (rows, seq)),
            doc_ids=torch.zeros(rows, seq, dtype=torch.long),
            position_ids=torch.arange(seq).expand(rows, seq),
        ),
        synthetic_spec(32768),
        torch.Generator().manual_seed(0),
    )
    tokens, d = rows * seq, cfg.hidden_size
    expected = 6 * body * tokens + 12 * cfg.n_layers * d * seq * tokens + 6 * d * cfg.vocab_size * x.n_targets
    assert train_flops(cfg, [x]) == expected


@pytest.mark.parametrize("lengths", [[1, 2, 3, 7], [32], [5, 40, 9]])
@pytest.mark.parametrize("window", [None, 0, 1, 4, 100])
@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
def test_attended_pairs_are_the_pairs_within_each_document_and_window(lengths, window, causal):
    docs = torch.tensor([[d for d, n in enumerate(lengths) for _ in range(n)]])
    q, k = torch.arange(docs.shape[1])[:, None], torch.arange(docs.shape[1])[None, :]
    allowed = docs[0][:, None] == docs[0][None, :]
    if window is not None:
        allowed &= (q - k).abs() <= window
    if causal:
        allowed &= k <= q
    assert attended_pairs(docs, causal, window) == int(allowed.sum())


@pytest.mark.parametrize("mode", ["bidirectional", "causal"])
def test_modernbert_local_layers_count_only_the_pairs_their_window_allows(mode):
    """Was: every ModernBERT layer priced as global, so MFU counted pairs a local layer never looks at
    (at paper 2's 8192 tokens most of its attention FLOPs). Torch's count (SDPA's math backend: every
    pair of a row) less ours is exactly the pairs each layer's own mask, as the adapter builds it, leaves
    out."""
    from tests.model.model_fixtures import modernbert_config
    from transformers import ModernBertForMaskedLM

    from encoderlab.model.hf_registry import adapter_from_hf_state

    config = modernbert_config()
    model, _ = adapter_from_hf_state(config, ModernBertForMaskedLM(config).state_dict(), "test")
    docs = torch.tensor([[0] * 12 + [1] * 20, [0] * 5 + [1] * 7 + [2] * 20])
    ids = torch.randint(5, config.vocab_size, (B, T), generator=torch.Generator().manual_seed(0))
    none = torch.full_like(ids, -100)
    x = ObjectiveInputs(ids, positions_from_doc_ids(docs), docs, mode, none)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        model(ids, attention_mode=mode, position_ids=x.position_ids, doc_ids=docs)
    masks = model._mask(ids, mode, docs, None)
    allowed = sum(int((masks[kind] == 0).sum()) for kind in config.layer_types)
    masked = len(config.layer_types) * B * T * T - allowed
    shape = model.config.matmul_shape()
    assert (
        counter.get_total_flops() - forward_flops(model.config, x)
        == 4 * shape.n_heads * shape.head_dim * masked
    )
    assert shape.windowed_layers == 2 and model.config.n_layers == 3


@pytest.mark.parametrize(
    "family",
    [f for f in ADAPTED_FAMILIES if f != "deberta"],  # v1 and v2 apart: test_flops_deberta.py
)
def test_an_adapters_training_step_counts_its_heads_transform(family):
    """Was: the LM head priced as its vocabulary projection alone, though every adapter's head first
    transforms the hidden states (BERT's `cls.predictions.transform`, ModernBERT's `head`, DeBERTa's and
    ELECTRA's to their embedding width). A whole training step with MLM targets, one document per row:
    torch's count less ours is only the pairs ModernBERT's local layers leave out (none elsewhere).
    DistilBERT's MLP width is its config's `hidden_dim`; MPNet's relative-position bias is a table lookup
    added to the scores, no matmul, so nothing of it is missing from our count. ALBERT here has one
    width (its `embedding_hidden_mapping_in`, run whatever the widths, is in `input_projection`) and one
    layer applied at every depth: counted per application, as it runs. RoBERTa-PreLayerNorm moves
    BERT's LayerNorms before each part and adds one on the body's output: no matmul among them."""
    from tests.model.model_fixtures import (
        albert_config,
        bert_config,
        deberta_config,
        distilbert_config,
        electra_config,
        modernbert_config,
        mpnet_config,
        roberta_config,
    )

    configs = {"bert": bert_config, "roberta": roberta_config, "modernbert": modernbert_config}
    configs |= {"deberta-v2": deberta_config, "electra": lambda: electra_config(embedding_size=32)}
    configs |= {"distilbert": distilbert_config, "mpnet": mpnet_config}
    configs |= {"albert": lambda: albert_config(embedding_size=32)}
    configs |= {"roberta-prelayernorm": lambda: roberta_config("RobertaPreLayerNormConfig")}
    config = configs[family]()
    model, torchs, ours = adapter_step(family, config)
    shape = model.config.matmul_shape()
    whole = attended_pairs(torch.zeros(B, T, dtype=torch.long), False, shape.window)
    left_out = shape.windowed_layers * (B * T * T - whole)
    assert torchs - ours == 3 * 4 * config.hidden_size * left_out
    assert shape.head_transform == config.hidden_size


def test_a_narrower_electra_embeddings_projection_is_counted():
    """Was: ELECTRA-small's `embeddings_project` (every token's 128-wide embedding up to the 256-wide
    hidden states, forward and backward) left out of the count, so its MFU read low. With the fixture's
    16 into 32 a whole MLM training step counts exactly what torch counts; an ELECTRA of one width has
    no projection and counts none (exact in `test_an_adapters_training_step_counts_its_heads_transform`)."""
    from tests.model.model_fixtures import electra_config

    config = electra_config()
    model, torchs, ours = adapter_step("electra", config)
    shape = model.config.matmul_shape()
    assert ours == torchs
    assert shape.input_projection == shape.head_transform == config.embedding_size < config.hidden_size


def test_albert_s_embedding_projection_and_shared_layer_are_counted():
    """ALBERT's `embedding_hidden_mapping_in` (every token's 16-wide embedding up to the 32-wide hidden
    states, forward and backward), its head's transform back to 16, and its one layer applied three
    times: a whole MLM training step counts exactly what torch counts."""
    from tests.model.model_fixtures import albert_config

    config = albert_config()
    model, torchs, ours = adapter_step("albert", config)
    shape = model.config.matmul_shape()
    assert ours == torchs
    assert shape.input_projection == shape.head_transform == config.embedding_size != config.hidden_size
    assert model.config.n_layers == config.num_hidden_layers and len(set(map(id, model.layers))) == 1


def test_a_slow_cpu_matmul_is_timed_once(monkeypatch):
    """A CPU matmul of 0.2 s or more (bfloat16 without bf16 units: seconds) is its own measure: the peak
    measurement timed a second one after it, doubling the seconds every CPU run without peak_tflops spent."""
    import encoderlab.train.flops as flops

    clock, done, sizes = [0.0], [], []

    class Slow:  # a matmul operand that takes a second of the fake clock
        def __matmul__(self, other):
            clock[0] += 1.0
            done.append(1)

    monkeypatch.setattr(torch, "randn", lambda n, m, **k: sizes.append(n) or Slow())
    monkeypatch.setattr(flops.time, "perf_counter", lambda: clock[0])
    peak = flops.measured_peak_flops.__wrapped__("cpu", torch.bfloat16)
    assert len(done) == 1
    assert peak == 2 * sizes[0] ** 3  # that one matmul's FLOPs in its second
