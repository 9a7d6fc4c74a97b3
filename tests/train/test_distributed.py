"""Data parallelism on CPU (gloo, 2 processes) against one process over the same global batch.

One start of two ranks (`start_ranks`) runs every distributed job of this file (process start-up and imports
dominate on 2 cores); the tests then compare its outputs with single-process runs made here. The
workers join the process group the way `torchrun` makes them (RANK, WORLD_SIZE, MASTER_ADDR/PORT
in the environment), so `pretrain` (one job: `encoderlab pretrain` itself) runs unchanged and
creates and tears down the group itself.

Layouts: the reference accumulates 4 micro-batches of 2 rows on one process; the 2-process runs
accumulate 2 per rank (so `no_sync` on the first micro-step is exercised). Both see the same rows
with the same masks in the same slots. The single process adds the four micro-batch gradients as
((g0 + g1) + g2) + g3; two ranks add (g0 + g2) + (g1 + g3). Float addition is not associative, so
results agree to rounding (about 1e-7 relative per step, growing slowly through AdamW), not bit for
bit. Measured: 1e-7 relative on losses and gradient norms, 1.2e-7 absolute on weights of size
~0.07-1 after 6 steps; the tolerances are 1e-6.

The model is the 2-layer `nano` size (`run_cfg`), not `tiny_run`'s 4-layer `tiny`: a tenth less CPU for the
file, and the comparisons keep their power (a DDP comm hook and FSDP2 that average instead of summing, or a
sync on the first micro-batch instead of the last, fail both `..._with_accumulation` tests).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from tests.train.helpers import free_ports, metrics, start_ranks, tiny_run

from encoderlab.cli import main
from encoderlab.config import save_yaml
from encoderlab.data.batch import BatchLayout
from encoderlab.errors import UserError
from encoderlab.objectives import CLM, MLM
from encoderlab.train import Phase, Schedule, pretrain
from encoderlab.train.config import ModelSpec, ScaleConfig
from encoderlab.train.distributed import resume_blockers

pytestmark = pytest.mark.distributed

PHASES = (
    Phase(objective=CLM(), steps=3, schedule=Schedule(kind="constant", warmup=1)),
    Phase(
        objective=MLM(mask_ratio=0.3), steps=3, freeze="0", schedule=Schedule(kind="1-sqrt", end_fraction=0.1)
    ),
)
ONE = BatchLayout(seq_len=32, micro_batch_size=2, grad_accum=4, world_size=1)
TWO = BatchLayout(seq_len=32, micro_batch_size=2, grad_accum=2, world_size=2)
SPLIT_STEP = 4  # resume point in the middle of the second (frozen-layer MLM) phase


def run_cfg(out: Path, layout: BatchLayout, parallel: str = "ddp", **overrides):
    return tiny_run(
        out,
        phases=PHASES,
        layout=layout,
        scale=ScaleConfig(data_parallel=parallel),
        model=ModelSpec(size="nano"),
        **overrides,
    )


def _worker(rank: int, root: str, ports: list[int]) -> None:
    """One rank of every 2-process job; each `pretrain` call opens and closes its own process group."""
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1")
    torch.set_num_threads(1)
    root = Path(root)
    jobs = [  # the DDP run goes through the command line, as `torchrun ... encoderlab pretrain` would
        lambda: main(["pretrain", "--config", str(root / "ddp.yaml")]),
        lambda: pretrain(run_cfg(root / "fsdp", TWO, "fsdp")),
        lambda: pretrain(run_cfg(root / "one_to_two", TWO, "fsdp"), resume=True),
        lambda: pretrain(run_cfg(root / "two_to_one", TWO, "fsdp"), until_step=SPLIT_STEP),
        lambda: pretrain(run_cfg(root / "fsdp_bf16", TWO, "fsdp", precision="bf16")),
    ]
    for job, port in zip(jobs, ports):
        os.environ["MASTER_PORT"] = str(port)
        job()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("dist")
    save_yaml(run_cfg(root / "ddp", TWO, "ddp"), root / "ddp.yaml")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # on 2 shared cores, one thread per process is several times faster
    pretrain(run_cfg(root / "ref", ONE))
    pretrain(run_cfg(root / "one_to_two", ONE), until_step=SPLIT_STEP)
    start_ranks(_worker, (str(root), free_ports(5)))
    pretrain(run_cfg(root / "two_to_one", ONE), resume=True)
    torch.set_num_threads(threads)
    return root


def _series(run: Path, key: str) -> list[float]:
    return [r[key] for r in metrics(run)]


def _assert_close_runs(run: Path, ref: Path) -> None:
    assert [r["step"] for r in metrics(run)] == [r["step"] for r in metrics(ref)] == list(range(1, 7))
    assert _series(run, "loss") == pytest.approx(_series(ref, "loss"), rel=1e-6)
    assert _series(run, "targets") == _series(ref, "targets")  # the global batch's, as loss and tokens
    # AdamW is nearly blind to a uniform gradient scale, so averaging instead of summing over
    # ranks would barely move the weights; the gradient norm (before clipping) exposes it.
    assert _series(run, "grad_norm") == pytest.approx(_series(ref, "grad_norm"), rel=1e-6)
    ours, theirs = (
        load_file(str(run / "final" / "model.safetensors")),
        load_file(str(ref / "final" / "model.safetensors")),
    )
    assert ours.keys() == theirs.keys()
    for key in ours:
        torch.testing.assert_close(ours[key], theirs[key], rtol=0, atol=1e-6, msg=key)
    early = load_file(str(ref / "checkpoints/step_0000002/model/model.safetensors"))
    assert max((ours[k] - early[k]).abs().max() for k in ours) > 1e-3  # the models really trained


@pytest.mark.parametrize("parallel", ["ddp", "fsdp"])
def test_two_processes_match_one_process_with_accumulation(runs, parallel):
    _assert_close_runs(runs / parallel, runs / "ref")


def test_frozen_layer_stays_fixed_under_data_parallelism(runs):
    # Phase 2 freezes layer 0: DDP is rebuilt over the trainable set, FSDP2 skips its gradients.
    for run in ("ddp", "fsdp"):
        before = load_file(str(runs / run / "checkpoints/step_0000003/model/model.safetensors"))
        after = load_file(str(runs / run / "final/model.safetensors"))
        for key in before:
            if key.startswith("layers.0."):
                assert torch.equal(before[key], after[key]), (run, key)


def test_one_process_checkpoint_resumes_on_two_and_the_reverse(runs):
    _assert_close_runs(runs / "one_to_two", runs / "ref")
    _assert_close_runs(runs / "two_to_one", runs / "ref")


def test_fsdp_bf16_policy_keeps_fp32_weights_and_tracks_fp32(runs):
    # MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32): bf16 compute, fp32 master weights.
    weights = load_file(str(runs / "fsdp_bf16" / "final" / "model.safetensors"))
    assert {w.dtype for w in weights.values()} == {torch.float32}
    bf16, fp32 = _series(runs / "fsdp_bf16", "loss"), _series(runs / "ref", "loss")
    assert bf16 == pytest.approx(fp32, rel=2e-2) and bf16 != fp32


def test_only_rank_zero_writes_and_metrics_are_one_line_per_step(runs):
    assert len(metrics(runs / "ddp")) == 6  # a second writer would duplicate lines
    assert sorted(p.name for p in (runs / "fsdp").iterdir()) == [
        ".encoderlab.json",  # the ownership marker (outdir.py); the lock is gone after the run
        "checkpoints",
        "config.yaml",
        "env.json",
        "final",
        "metrics.jsonl",
        "validation.json",  # the held-out losses (train/validation.py)
    ]


def test_resume_accepts_a_resplit_of_the_same_global_batch_only():
    diff = ["layout.world_size: 1 -> 2", "layout.grad_accum: 4 -> 2", "scale.data_parallel: 'ddp' -> 'fsdp'"]
    assert resume_blockers(diff, dataclasses.asdict(ONE), dataclasses.asdict(TWO)) == []
    bigger = dataclasses.replace(TWO, grad_accum=4)
    assert resume_blockers(diff[:2], dataclasses.asdict(ONE), dataclasses.asdict(bigger)) == diff[:2]


def test_resume_accepts_changes_to_what_is_shown_and_logged_only():
    """A run resumed by a scheduler with `progress=false` was refused until --force (which lets any
    change by): the bar, the extra sinks and the MFU's peak do not change what is computed."""
    shown = ["peak_tflops: 0.0 -> 989.0", "progress: True -> False", "sinks: [] -> ['tensorboard']"]
    layout = dataclasses.asdict(ONE)
    assert resume_blockers(shown, layout, layout) == []
    assert resume_blockers([*shown, "seed: 0 -> 1"], layout, layout) == ["seed: 0 -> 1"]


def test_layout_world_size_must_match_the_running_processes(tmp_path):
    with pytest.raises(UserError, match="layout.world_size=1"):
        pretrain(run_cfg(tmp_path / "run", TWO))


@pytest.mark.parametrize(
    ("unset", "missing"), [(["RANK"], "RANK is not"), (["RANK", "MASTER_PORT"], "RANK, MASTER_PORT are not")]
)
def test_world_size_without_the_rest_of_torchruns_environment_is_one_line(
    tmp_path, monkeypatch, unset, missing
):
    """Was a ValueError traceback from the process group's start ("environment variable RANK expected")."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    for name in unset:
        monkeypatch.delenv(name)
    with pytest.raises(
        UserError, match=f"^WORLD_SIZE=2 is set but {missing}; launch with torchrun"
    ) as refused:
        pretrain(run_cfg(tmp_path / "run", TWO))
    assert "unset WORLD_SIZE to run one process" in str(refused.value)
    assert not (tmp_path / "run").exists()


def _torchrun_env(monkeypatch, name: str, value: str) -> None:
    for key, default in (
        ("WORLD_SIZE", "2"),
        ("RANK", "0"),
        ("MASTER_ADDR", "127.0.0.1"),
        ("MASTER_PORT", "29500"),
    ):
        monkeypatch.setenv(key, default)
    monkeypatch.setenv(name, value)


def _said(said: str) -> str:
    return f"with WORLD_SIZE=2, {said}; launch with torchrun (it sets them), or unset WORLD_SIZE to run one process"


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("MASTER_PORT", "abc", "MASTER_PORT='abc' (an integer from 1 to 65535)"),
        ("LOCAL_RANK", "x", "LOCAL_RANK='x' (an integer from 0 to 1)"),
    ],
)
def test_a_malformed_torchrun_variable_is_one_line(tmp_path, monkeypatch, name, value, said):
    """Was a ValueError traceback from the process group's start (MASTER_PORT=abc) or LOCAL_RANK's int()."""
    _torchrun_env(monkeypatch, name, value)
    with pytest.raises(UserError) as refused:
        pretrain(run_cfg(tmp_path / "run", TWO))
    assert str(refused.value) == _said(said)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("value", ["5", "2", "-1"])
def test_a_rank_outside_the_world_is_refused_before_the_join(monkeypatch, value):
    """RANK=5 of WORLD_SIZE=2 joined as a client of a group that never forms: it waited for the join's
    30-minute timeout (checked here without joining)."""
    from encoderlab.launchenv import check_launcher_env

    _torchrun_env(monkeypatch, "RANK", value)
    with pytest.raises(UserError) as refused:
        check_launcher_env()
    assert str(refused.value) == _said(f"RANK={value!r} (an integer from 0 to 1)")


def test_a_module_still_being_imported_holds_no_sharded_model(monkeypatch):
    """`is_sharded`/`full_tensor`/`shard_like` ask `sys.modules`, where a module another thread is still
    importing sits before it defines FSDPModule or DTensor: that was an AttributeError mid-training."""
    import sys
    import types

    from encoderlab.train.distributed import full_tensor, is_sharded, shard_like

    for name in ("torch.distributed.fsdp", "torch.distributed.tensor"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    t = torch.ones(2)
    assert not is_sharded(torch.nn.Linear(2, 2))
    assert full_tensor(t) is t and shard_like(t, t) is t
