"""Objectives against direct computations: mask statistics, CLM targets, the sparse loss."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from encoderlab.config import from_dict, to_dict
from encoderlab.data.batch import BatchLayout, TokenSpec
from encoderlab.data.synthetic import SyntheticSource, synthetic_spec
from encoderlab.errors import UserError
from encoderlab.model import Encoder, ModelConfig
from encoderlab.objectives import CLM, IGNORE, MLM, Objective, lm_loss, objective_generator

SPEC = synthetic_spec(512)


def _batch(rows=8, seq_len=256, seed=0):
    return SyntheticSource(BatchLayout(seq_len=seq_len, micro_batch_size=rows), SPEC, seed=seed).batch(
        0, 0, 0
    )


def test_mlm_selects_exact_count_per_row_and_never_special():
    batch = _batch()
    out = MLM(mask_ratio=0.3).prepare(batch, SPEC, objective_generator(0, 0, 0))
    special = torch.isin(batch.input_ids, torch.tensor(SPEC.special_ids))
    selected = out.targets != IGNORE
    assert not (selected & special).any()
    expected = torch.round((~special).sum(1).double() * 0.3).long()
    assert torch.equal(selected.sum(1), expected)
    # targets hold the original ids; inputs hold the mask id there and the original elsewhere
    assert torch.equal(out.targets[selected], batch.input_ids[selected])
    assert (out.input_ids[selected] == SPEC.mask_id).all()
    assert torch.equal(out.input_ids[~selected], batch.input_ids[~selected])
    assert out.attention_mode == "bidirectional"


def test_mlm_selection_is_uniform_over_positions():
    # Each maskable position is selected with probability ~ratio: a chi-square-free check that the
    # draw has no positional bias (first vs second half of the rows).
    batch = _batch(rows=64, seq_len=128)
    special = torch.isin(batch.input_ids, torch.tensor(SPEC.special_ids))
    hits = torch.zeros(128)
    for step in range(20):
        sel = MLM(mask_ratio=0.4).select(batch, SPEC, objective_generator(1, step, 0))
        hits += sel.float().sum(0)
    maskable = (~special).float().sum(0) * 20
    first, second = hits[:64].sum() / maskable[:64].sum(), hits[64:].sum() / maskable[64:].sum()
    assert abs(first - 0.4) < 0.01 and abs(second - 0.4) < 0.01


def test_80_10_10_split_statistics():
    batch = _batch(rows=64, seq_len=256)
    out = MLM(mask_ratio=0.5, replacement="80-10-10").prepare(batch, SPEC, objective_generator(0, 3, 1))
    sel = out.targets != IGNORE
    n = int(sel.sum())
    masked = (out.input_ids[sel] == SPEC.mask_id).float().mean()
    kept = (out.input_ids[sel] == batch.input_ids[sel]).float().mean()
    # random replacements equal the original by chance with probability ~1/507: negligible here
    assert n > 3000
    assert abs(masked - 0.8) < 0.03 and abs(kept - 0.1) < 0.02
    random = out.input_ids[sel & (out.input_ids != SPEC.mask_id) & (out.input_ids != batch.input_ids)]
    assert not torch.isin(random, torch.tensor(SPEC.special_ids)).any()


def _modernbert_masking(ids, spec, p, generator):
    """ModernBERT's rule (SequencePacker.mlm_masking) written out: one uniform r per token; r < 0.8p
    mask, 0.8p <= r < 0.9p a random token, 0.9p <= r < p kept; all r < p predicted. Special tokens
    are never chosen and random tokens are non-special (our documented differences)."""
    r = torch.rand(ids.shape, generator=generator, dtype=torch.float64)
    ordinary = torch.tensor([i for i in range(spec.vocab_size) if i not in spec.special_ids])
    random_ids = ordinary[torch.randint(len(ordinary), ids.shape, generator=generator)]
    maskable = ~torch.isin(ids, torch.tensor(spec.special_ids))
    inputs, targets = ids.clone(), torch.full_like(ids, IGNORE)
    for index in zip(*torch.nonzero(maskable, as_tuple=True)):
        if r[index] < p:
            targets[index] = ids[index]
            if r[index] < 0.8 * p:
                inputs[index] = spec.mask_id
            elif r[index] < 0.9 * p:
                inputs[index] = random_ids[index]
    return inputs, targets


def test_bernoulli_80_10_10_is_modernberts_rule():
    batch = _batch(rows=4, seq_len=128)
    mlm = MLM(mask_ratio=0.3, replacement="80-10-10", selection="bernoulli")
    out = mlm.prepare(batch, SPEC, objective_generator(2, 5, 1))
    inputs, targets = _modernbert_masking(batch.input_ids, SPEC, 0.3, objective_generator(2, 5, 1))
    assert torch.equal(out.targets, targets) and torch.equal(out.input_ids, inputs)
    assert out.attention_mode == "bidirectional"


def test_bernoulli_selection_statistics():
    """Per-token Bernoulli(p): the count per row fluctuates (binomial), the rate and the 80/10/10
    split hold in expectation; the exact mode's count never fluctuates."""
    batch = _batch(rows=64, seq_len=256)
    special = torch.isin(batch.input_ids, torch.tensor(SPEC.special_ids))
    mlm = MLM(mask_ratio=0.15, replacement="80-10-10", selection="bernoulli")
    out = mlm.prepare(batch, SPEC, objective_generator(0, 3, 1))
    sel = out.targets != IGNORE
    assert not (sel & special).any()
    n, maskable = int(sel.sum()), int((~special).sum())
    sd = (maskable * 0.15 * 0.85) ** 0.5
    assert abs(n - 0.15 * maskable) < 4 * sd  # n is about 2400
    per_row = sel.sum(1).double() / (~special).sum(1)
    assert per_row.std() > 0.01  # rows differ: not an exact count
    exact = MLM(mask_ratio=0.15).select(batch, SPEC, objective_generator(0, 3, 1))
    assert torch.equal(exact.sum(1), torch.round((~special).sum(1).double() * 0.15).long())
    masked = (out.input_ids[sel] == SPEC.mask_id).double().mean()
    kept = (out.input_ids[sel] == batch.input_ids[sel]).double().mean()
    assert abs(masked - 0.8) < 0.04 and abs(kept - 0.1) < 0.03
    # with replacement=mask every selected position is the mask token
    plain = MLM(mask_ratio=0.15, selection="bernoulli").prepare(batch, SPEC, objective_generator(0, 3, 1))
    assert torch.equal(plain.targets, out.targets) and (plain.input_ids[sel] == SPEC.mask_id).all()


def test_unknown_selection_is_a_user_error():
    with pytest.raises(UserError, match="selection must be exact or bernoulli"):
        MLM(selection="poisson")


def test_masks_are_deterministic_per_seed_step_slot():
    batch = _batch()
    mlm = MLM()
    a = mlm.prepare(batch, SPEC, objective_generator(5, 7, 2)).input_ids
    b = mlm.prepare(batch, SPEC, objective_generator(5, 7, 2)).input_ids
    c = mlm.prepare(batch, SPEC, objective_generator(5, 7, 3)).input_ids
    d = mlm.prepare(batch, SPEC, objective_generator(5, 8, 2)).input_ids
    assert torch.equal(a, b) and not torch.equal(a, c) and not torch.equal(a, d)


def test_mlm_without_mask_token_is_a_user_error():
    spec = TokenSpec(vocab_size=512, bos_id=1, eos_id=2, special_ids=(1, 2))
    with pytest.raises(UserError, match="needs a mask token"):
        MLM().prepare(_batch(), spec, objective_generator(0, 0, 0))


@pytest.mark.parametrize("ratio", [0.0, 1.0, -0.1])
def test_mlm_ratio_out_of_range(ratio):
    with pytest.raises(UserError, match="mask_ratio"):
        MLM(mask_ratio=ratio)


def test_clm_targets_never_cross_documents():
    batch = _batch(rows=4, seq_len=200)
    out = CLM().prepare(batch, SPEC, objective_generator(0, 0, 0))
    ids, docs = batch.input_ids, batch.doc_ids
    assert out.attention_mode == "causal" and torch.equal(out.input_ids, ids)
    for r in range(ids.shape[0]):
        for t in range(ids.shape[1]):
            last_of_doc = t == ids.shape[1] - 1 or docs[r, t + 1] != docs[r, t]
            want = IGNORE if last_of_doc else int(ids[r, t + 1])
            assert int(out.targets[r, t]) == want


@pytest.mark.parametrize("objective", [MLM(mask_ratio=0.3), CLM()])
def test_sparse_loss_equals_full_logits_cross_entropy(objective):
    torch.manual_seed(0)
    model = Encoder(ModelConfig.from_size("tiny", vocab_size=512)).eval()
    batch = _batch(rows=2, seq_len=64)
    x = objective.prepare(batch, SPEC, objective_generator(0, 0, 0))
    hidden = model(
        x.input_ids, attention_mode=x.attention_mode, position_ids=x.position_ids, doc_ids=x.doc_ids
    ).last_hidden_state
    total, n = lm_loss(model, hidden, x.targets)
    full = model.lm_logits(hidden)  # (B, T, V) dense reference
    ref = F.cross_entropy(full.reshape(-1, 512).float(), x.targets.reshape(-1), ignore_index=IGNORE)
    assert n == x.n_targets
    torch.testing.assert_close(total / n, ref, rtol=1e-5, atol=1e-6)


def test_objectives_roundtrip_through_config_dicts():
    for obj in (MLM(mask_ratio=0.2, replacement="80-10-10", selection="bernoulli"), CLM()):
        data = to_dict(obj)
        assert data["type"] == type(obj).type_tag
        from dataclasses import dataclass

        @dataclass(frozen=True, kw_only=True)
        class Holder:
            objective: Objective

        assert from_dict(Holder, {"objective": data}).objective == obj
