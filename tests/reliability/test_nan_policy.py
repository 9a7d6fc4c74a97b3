"""NaN/inf policy `stop | skip | rollback` through `encoderlab pretrain` (issue 8, item 2).

A bad batch is injected for real, not faked at the loss: the run starts from a model whose last
embedding row is NaN, and a data-source wrapper puts that token id only into the batches of the
chosen steps, so those steps (and only those) produce a non-finite loss and gradient.
(tests/train/test_trainer.py covers the same policies through the Python API.)
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from safetensors.torch import load_file
from tests.reliability.killharness import read_jsonl
from tests.reliability.test_hostile_inputs import TINY_RUN, assert_one_line, cli

from encoderlab.data.batch import PackedBatch
from encoderlab.model import Encoder, ModelConfig
from encoderlab.model.io import save_model_folder
from encoderlab.train import checkpoint as ckpt
from encoderlab.train import step, trainer

VOCAB, POISON = 64, 63


@dataclasses.dataclass
class BadBatches:
    """Wraps a BatchSource; the batches of `bad_steps` (0-based) carry the NaN-embedding id."""

    inner: object
    bad_steps: tuple[int, ...]

    @property
    def spec(self):
        return self.inner.spec

    @property
    def layout(self):
        return self.inner.layout

    def batch(self, step, micro_step, rank):
        b = self.inner.batch(step, micro_step, rank)
        ids = b.input_ids.clamp(max=POISON - 1)
        if step in self.bad_steps:
            ids[0, 3] = POISON
        return PackedBatch(input_ids=ids, doc_ids=b.doc_ids, position_ids=b.position_ids)


@pytest.fixture
def poisoned(tmp_path, monkeypatch):
    """`run(policy, bad_steps, *extra)`: a 4-step run from the NaN-row model, checkpoints every 2 steps."""
    torch.manual_seed(0)
    model = Encoder(ModelConfig.from_size("tiny", vocab_size=VOCAB))
    with torch.no_grad():
        model.embed_tokens.weight[POISON] = float("nan")
    save_model_folder(model, tmp_path / "init")
    (tmp_path / "run.yaml").write_text(TINY_RUN)
    real = step.build_source  # the run's stream, built by its `TrainStep`
    loads: list[str] = []
    real_load = trainer.Trainer._load

    def run(policy, bad_steps, *extra, capsys):
        monkeypatch.setattr(
            step, "build_source", lambda d, lay, meta: BadBatches(real(d, lay, meta), bad_steps)
        )
        monkeypatch.setattr(trainer.Trainer, "_load", lambda self, p: loads.append(p) or real_load(self, p))
        argv = ["pretrain", "--config", tmp_path / "run.yaml", "--out", tmp_path / policy, "--set"]
        sets = [
            "phases.0.steps=4",
            "checkpoint.every=2",
            f"model.init={tmp_path / 'init'}",
            f"nan_policy={policy}",
            *extra,
        ]
        return cli([*argv, *sets], capsys)

    run.loads = loads
    return run


def _finite_except_poison(folder) -> bool:
    w = load_file(str(folder / "model.safetensors"))
    return all(torch.isfinite(t).all() for k, t in w.items() if k != "embed_tokens.weight")


def test_stop_exits_naming_the_step_and_keeps_the_last_good_checkpoint(poisoned, tmp_path, capsys):
    code, err = poisoned("stop", (2,), capsys=capsys)
    assert_one_line(
        code, err, r"non-finite loss .* at step 3 .*last good checkpoint is step 2 .*\(intact\)", 4
    )
    run = tmp_path / "stop"
    assert ckpt.complete_checkpoints(run) == [2]
    assert _finite_except_poison(ckpt.checkpoint_dir(run, 2) / "model")
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == [1, 2]


def test_skip_counts_the_bad_batch_and_rollback_reloads_then_skips_it(poisoned, tmp_path, capsys):
    code, err = poisoned("skip", (2,), capsys=capsys)
    assert code == 0, err
    rows = read_jsonl(tmp_path / "skip" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    assert [bool(r.get("skipped")) for r in rows] == [False, False, True, False]
    assert rows[2]["loss"] is None  # non-finite: null, which every JSON reader reads
    state = ckpt.read_state(ckpt.checkpoint_dir(tmp_path / "skip", 4))
    assert state["progress"]["skipped"] == [2] and state["progress"]["bad_steps"] == 1
    assert _finite_except_poison(tmp_path / "skip" / "final")
    assert poisoned.loads == []  # skip never reloads

    code, err = poisoned("rollback", (2,), capsys=capsys)
    assert code == 0, err
    run = tmp_path / "rollback"
    assert poisoned.loads == [ckpt.checkpoint_dir(run, 2)]
    state = ckpt.read_state(ckpt.checkpoint_dir(run, 4))
    assert state["progress"]["skipped"] == [2] and state["progress"]["bad_steps"] == 1
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == [1, 2, 3, 4]
    # Reloading step 2 and skipping step 3's batch is exactly what skip did in place.
    a = load_file(str(tmp_path / "skip" / "final" / "model.safetensors"))
    b = load_file(str(run / "final" / "model.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a if k != "embed_tokens.weight")


def test_a_rollback_into_a_freezing_phase_does_not_say_its_blocks_again(poisoned, tmp_path, capsys):
    # the rollback re-enters the phase it was in (its optimizer is rebuilt); the run said which blocks it
    # freezes once, when it entered it
    code, err = poisoned("rollback", (2,), "phases.0.freeze=0-1", capsys=capsys)
    assert code == 0, err
    assert poisoned.loads == [ckpt.checkpoint_dir(tmp_path / "rollback", 2)]  # it did roll back
    n_layers = ModelConfig.from_size("tiny", vocab_size=VOCAB).n_layers
    notes = [line for line in err.splitlines() if "freezes blocks" in line]
    assert notes == [f"encoderlab: note: phase 0-clm freezes blocks 0-1 of {n_layers}"]


@pytest.mark.parametrize("policy", ["skip", "rollback"])
def test_retry_cap_stops_with_a_clear_line(poisoned, tmp_path, capsys, policy):
    code, err = poisoned(policy, (1, 3), "max_bad_steps=1", capsys=capsys)
    assert_one_line(
        code,
        err,
        r"stopped after 1 bad steps: non-finite loss .* at step 4 .*last good checkpoint is step 2",
        4,
    )
    state = ckpt.read_state(ckpt.checkpoint_dir(tmp_path / policy, 2))
    assert ckpt.complete_checkpoints(tmp_path / policy)[-1] == 2 and state["progress"]["skipped"] == [1]
