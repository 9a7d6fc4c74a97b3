"""`data.attend=row`: a packed row read as one sequence (Optimus' default packing), against the
default reading that keeps attention, positions and next-token targets inside each document."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from tests.train.helpers import metrics, tiny_run

from encoderlab.config import apply_overrides, from_dict, to_dict
from encoderlab.data.batch import BatchLayout
from encoderlab.errors import UserError
from encoderlab.model.config import ModelConfig
from encoderlab.model.encoder import Encoder
from encoderlab.objectives import CLM, MLM
from encoderlab.objectives.base import IGNORE, batch_loss, objective_generator
from encoderlab.train import CheckpointConfig, DataConfig, Phase, RunConfig, Schedule, pretrain
from encoderlab.train.build import build_source

LAYOUT = BatchLayout(seq_len=64, micro_batch_size=3)
DATA = DataConfig(synthetic_vocab=128, synthetic_doc_len=12)  # several documents per row


def _batches():
    apart = build_source(DATA, LAYOUT).batch(2, 0, 0)
    joined = build_source(DataConfig(**{**to_dict(DATA), "attend": "row"}), LAYOUT).batch(2, 0, 0)
    return apart, joined


def test_the_default_leaves_the_key_and_written_config_as_they_were(tmp_path):
    default, row = tiny_run(tmp_path), tiny_run(tmp_path, data=DataConfig(synthetic_vocab=128, attend="row"))
    assert "attend" not in to_dict(default)["data"]  # old study folders keep their node keys
    assert to_dict(row)["data"]["attend"] == "row"
    assert from_dict(RunConfig, to_dict(row)) == row
    assert from_dict(RunConfig, to_dict(default)) == default
    assert (
        apply_overrides(default, ["data.attend=row"]) == row
    )  # a dotted override reaches the unwritten field
    with pytest.raises(UserError, match="data.attend: must be one of 'document', 'row'"):
        apply_overrides(default, ["data.attend=rows"])


def test_a_row_is_the_same_tokens_read_as_one_sequence():
    apart, joined = _batches()
    assert torch.equal(apart.input_ids, joined.input_ids)
    assert int(apart.doc_ids.max()) > 0, "the fixture must pack several documents in a row"
    assert not joined.doc_ids.any()
    assert torch.equal(joined.position_ids, torch.arange(64).expand(3, 64))


def test_clm_targets_cross_document_ends_only_when_rows_are_joined():
    apart, joined = _batches()
    spec = build_source(DATA, LAYOUT).spec
    gen = lambda: objective_generator(0, 2, 0)  # noqa: E731
    x_apart, x_joined = CLM().prepare(apart, spec, gen()), CLM().prepare(joined, spec, gen())
    assert (x_joined.targets[:, :-1] == apart.input_ids[:, 1:]).all()
    ends = apart.doc_ids[:, 1:] != apart.doc_ids[:, :-1]
    assert (x_apart.targets[:, :-1][ends] == IGNORE).all() and ends.any()
    assert x_joined.whole_rows and not x_apart.whole_rows
    # MLM draws the same masks either way: only attention and positions differ
    m_apart, m_joined = (
        MLM(mask_ratio=0.3).prepare(apart, spec, gen()),
        MLM(mask_ratio=0.3).prepare(joined, spec, gen()),
    )
    assert torch.equal(m_apart.targets, m_joined.targets) and m_joined.whole_rows


def test_whole_rows_skip_the_mask_and_score_as_an_all_allowed_one():
    """The fused path (no document mask) gives the losses the dense mask of one document per row does."""
    _, joined = _batches()
    spec = build_source(DATA, LAYOUT).spec
    torch.manual_seed(0)
    model = Encoder(ModelConfig.from_size("nano", vocab_size=spec.vocab_size, max_seq_len=64)).eval()
    for objective in (CLM(), MLM(mask_ratio=0.3)):
        x = objective.prepare(joined, spec, objective_generator(0, 2, 0))
        masked = type(x)(**{**x.__dict__, "whole_rows": False})
        with torch.no_grad():
            fast, slow = batch_loss(model, x)[0], batch_loss(model, masked)[0]
        torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-5)


def test_a_run_trains_on_joined_rows(tmp_path):
    phases = (Phase(objective=CLM(), steps=2, schedule=Schedule(kind="constant")),)
    apart = tiny_run(tmp_path / "apart", phases, data=DATA, checkpoint=CheckpointConfig())
    joined = DataConfig(**{**to_dict(DATA), "attend": "row"})
    pretrain(apart), pretrain(replace(apart, data=joined, out=str(tmp_path / "joined")))
    loss = lambda run: [r["loss"] for r in metrics(run) if "loss" in r]  # noqa: E731
    assert len(loss(tmp_path / "joined")) == len(loss(tmp_path / "apart")) == 2
    assert loss(tmp_path / "joined") != loss(tmp_path / "apart")
