"""The optimizers against direct implementations of their published update rules.

The references below are written from the sources, parameter by parameter in float64, and share
nothing with `train/optim.py`:
  * Composer's DecoupledAdamW (mosaicml/composer composer/optim/decoupled_weight_decay.py): decay
    θ *= 1 - wd * lr_t / lr_0 before the moments, then the bias-corrected Adam step;
  * optimi's StableAdamW with decouple_lr (warner-benjamin/optimi optimi/stableadamw.py,
    utils.debias_beta): debiased betas, LR divided by max(1, RMS(g / sqrt(max(v, eps^2)))), decay
    θ *= 1 - wd * lr_eff / max_lr, then θ -= lr_eff * m / (sqrt(v) + eps).
The schedule varies every step and weight decay is large, so a rule that scales the decay by the
absolute LR (torch's AdamW) lands far from the decoupled reference: a test checks that too.
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from tests.train.helpers import metrics, tiny_run
from torch import nn

from encoderlab.config import save_yaml
from encoderlab.errors import UserError
from encoderlab.train import pretrain
from encoderlab.train.config import OptimConfig
from encoderlab.train.optim import build_optimizer, load_state_by_name, state_by_name

PEAK, WD, BETAS, EPS = 1e-2, 0.1, (0.9, 0.98), 1e-6
FACTORS = (1.0, 0.5, 0.25, 0.8, 0.1, 0.6)  # the schedule's multiplier at each step
SKIP = (2, "head.weight")  # at step 2 this parameter has no gradient
SPIKE = 3  # at this step gradients are 30x larger (StableAdamW's RMS clip engages)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.proj = nn.Linear(5, 7)  # weight decays, bias does not
        self.norm = nn.LayerNorm(7)  # neither decays
        self.head = nn.Linear(7, 3, bias=False)
        self.scale = nn.Parameter(torch.randn(7))  # ndim 1: no decay


def _grads(step: int, model: nn.Module) -> dict[str, torch.Tensor | None]:
    g = torch.Generator().manual_seed(100 + step)
    out = {}
    for name, p in model.named_parameters():
        grad = torch.randn(p.shape, generator=g) * (30.0 if step == SPIKE else 1.0)
        out[name] = None if (step, name) == SKIP else grad
    return out


def _decays(name: str, p: torch.Tensor) -> bool:
    return p.ndim >= 2 and not name.endswith(".bias")


def _reference(kind: str, steps: int) -> tuple[dict[str, torch.Tensor], list[float]]:
    """The rule applied by hand in float64; also the RMS values StableAdamW met."""
    model = Net()
    theta = {n: p.detach().double().clone() for n, p in model.named_parameters()}
    m = {n: torch.zeros_like(t) for n, t in theta.items()}
    v = {n: torch.zeros_like(t) for n, t in theta.items()}
    t_of = dict.fromkeys(theta, 0)
    b1, b2 = BETAS
    rms_seen = []
    for step in range(steps):
        lr = PEAK * FACTORS[step]
        for name, grad in _grads(step, model).items():
            if grad is None:
                continue  # Composer and optimi skip a parameter without a gradient entirely
            g = grad.double()
            wd = WD if _decays(name, theta[name]) else 0.0
            t_of[name] += 1
            t = t_of[name]
            if kind == "decoupled_adamw":
                theta[name] = theta[name] * (1 - wd * lr / PEAK)
                m[name] = b1 * m[name] + (1 - b1) * g
                v[name] = b2 * v[name] + (1 - b2) * g * g
                denom = v[name].sqrt() / math.sqrt(1 - b2**t) + EPS
                theta[name] = theta[name] - lr / (1 - b1**t) * m[name] / denom
            else:
                hat1 = b1 * (1 - b1 ** (t - 1)) / (1 - b1**t)
                hat2 = b2 * (1 - b2 ** (t - 1)) / (1 - b2**t)
                m[name] = m[name] + (1 - hat1) * (g - m[name])
                v[name] = hat2 * v[name] + (1 - hat2) * g * g
                rms = math.sqrt(float((g * g / v[name].clamp(min=EPS**2)).mean()))
                rms_seen.append(rms)
                lr_eff = lr / max(1.0, rms)
                theta[name] = theta[name] * (1 - wd * lr_eff / PEAK)
                theta[name] = theta[name] - lr_eff * m[name] / (v[name].sqrt() + EPS)
    return theta, rms_seen


def _run(
    kind: str, steps: int, *, split: int | None = None, device: str = "cpu", build=build_optimizer
) -> dict[str, torch.Tensor]:
    """Our optimizer (or `build`'s) on `Net`, stepping like the trainer (group LRs set from the schedule);
    with `split`, the state goes through `state_by_name` into a fresh optimizer after that many steps."""
    model = Net().to(device)
    cfg = OptimConfig(kind=kind, lr=PEAK, betas=BETAS, eps=EPS, weight_decay=WD, decay_norms_and_biases=False)
    opt = build(model, cfg, torch.device(device))
    for step in range(steps):
        if step == split:
            saved = state_by_name(opt, model)
            opt = build(model, cfg, torch.device(device))
            load_state_by_name(opt, model, saved)
        for group in opt.param_groups:
            group["lr"] = PEAK * FACTORS[step]
        grads = _grads(step, model)
        for name, p in model.named_parameters():
            p.grad = None if grads[name] is None else grads[name].to(device)
        opt.step()
        opt.zero_grad(set_to_none=True)
    return {n: p.detach().cpu().clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize(
    "fields,message",
    [
        ({"lr": 1.5}, r"optim.lr must be at most 1 \(AdamW moves each weight"),
        ({"eps": 1e39}, r"optim.eps must be at most 3.4e\+38"),
        (
            {"lr": 1e-2, "weight_decay": 101.0},
            r"optim.weight_decay x optim.lr must be at most 1 with optim.kind=adamw",
        ),
        (
            {"kind": "decoupled_adamw", "weight_decay": 1.5},
            r"optim.weight_decay must be at most 1 with optim.kind=dec",
        ),
        (
            {"kind": "stable_adamw", "weight_decay": 1e38},
            r"optim.weight_decay must be at most 1 with optim.kind=sta",
        ),
    ],
)
def test_optimizer_values_that_wreck_or_overflow_the_weights_are_refused(fields, message):
    """Finite values torch takes (or overflows on mid-run): the decay factor 1 - lr x wd (adamw) or 1 - wd
    (decoupled, at the peak) turns negative past 1, and an eps past float32's range is inf."""
    with pytest.raises(UserError, match=message):
        OptimConfig(**fields)
    OptimConfig(lr=1.0, eps=1.0, weight_decay=1.0)  # the bounds themselves are taken
    OptimConfig(kind="decoupled_adamw", lr=1e-5, weight_decay=1.0)


@pytest.mark.parametrize("kind", ["decoupled_adamw", "stable_adamw"])
def test_several_steps_match_the_published_update_rule(kind, device="cpu"):
    ours = _run(kind, len(FACTORS), device=device)
    ref, rms = _reference(kind, len(FACTORS))
    if kind == "stable_adamw":
        assert max(rms) > 1.5  # the RMS clip really engaged at the spike
    for name, tensor in ours.items():
        torch.testing.assert_close(tensor.double(), ref[name], rtol=2e-6, atol=2e-7, msg=name)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("kind", ["decoupled_adamw", "stable_adamw"])
def test_cuda_steps_match_the_published_update_rule(kind):
    test_several_steps_match_the_published_update_rule(kind, device="cuda")


def test_torch_adamw_semantics_miss_the_decoupled_rule():
    """The reference is discriminating: torch's AdamW (decay scaled by the absolute LR) with the same
    hyperparameters is far from Composer's rule, so the test above fails for it."""
    torch_adamw = _run("adamw", len(FACTORS))
    ref, _ = _reference("decoupled_adamw", len(FACTORS))
    gap = max(float((torch_adamw[n].double() - ref[n]).abs().max()) for n in ref)
    assert gap > 1e-2
    # ...and the gap is the decay: without weight decay the two rules coincide
    assert _decays("proj.weight", ref["proj.weight"]) and not _decays("proj.bias", ref["proj.bias"])
    torch.testing.assert_close(torch_adamw["proj.bias"].double(), ref["proj.bias"], rtol=2e-6, atol=2e-7)


def _torch_adamw(model: nn.Module, cfg: OptimConfig, device: torch.device) -> torch.optim.Optimizer:
    """torch's own AdamW over the groups `build_optimizer` makes."""
    groups = build_optimizer(model, cfg, device).param_groups
    decays = [{"params": g["params"], "weight_decay": g["weight_decay"]} for g in groups]
    fused = (cfg.fused and device.type == "cuda") or None  # as build_optimizer asks for it
    return torch.optim.AdamW(decays, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, fused=fused)


@pytest.mark.parametrize("split", [None, 3])
def test_adamw_steps_as_torch_adamw_bit_for_bit(split, device="cpu"):
    """`adamw` skips torch's dynamo guards (train/optim.py), nothing else: the same weights, bit for bit,
    through a skipped gradient, a spike and (split) a state_dict / load_state_dict round trip."""
    ours = _run("adamw", len(FACTORS), split=split, device=device)
    theirs = _run("adamw", len(FACTORS), split=split, device=device, build=_torch_adamw)
    assert not torch.equal(ours["proj.weight"], Net().proj.weight.detach())  # it trained
    for name in ours:
        assert torch.equal(ours[name], theirs[name]), name


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("split", [None, 3])
def test_cuda_fused_adamw_steps_as_torch_adamw_bit_for_bit(split):
    test_adamw_steps_as_torch_adamw_bit_for_bit(split, device="cuda")


UNUSED_IN_ONE_PROCESS = ("torch._dynamo", "torch.distributed.fsdp", "torch.distributed.tensor")
"""Modules a one-process CPU run never uses, each about a third of torch's own import or more."""


def test_a_training_run_imports_no_dynamo_nor_fsdp(tmp_path):
    """A fresh process trains, checkpoints and carries its optimizer into a second phase without
    importing `torch._dynamo` (torch's optimizers' guards: about 3 s of CPU before the first step, in
    every study worker and resumed run) or FSDP2 and DTensor (asked whether the model is sharded)."""
    save_yaml(tiny_run(tmp_path / "run"), tmp_path / "run.yaml")
    script = (
        "import sys; from encoderlab.cli import main; "
        f"main(['pretrain', '--config', {str(tmp_path / 'run.yaml')!r}]); "
        f"print([m for m in {UNUSED_IN_ONE_PROCESS!r} if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert (tmp_path / "run" / "final").is_dir()
    assert done.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize("kind", ["adamw", "decoupled_adamw", "stable_adamw"])
def test_state_by_name_round_trip_continues_bit_for_bit(kind):
    whole = _run(kind, len(FACTORS))
    split = _run(kind, len(FACTORS), split=3)
    for name in whole:
        assert torch.equal(whole[name], split[name]), name


def test_no_decay_groups_follow_modernbert_filter():
    """ndim <= 1 or a name ending in `.bias` is not decayed (ModernBERT's filter_bias_norm_wd)."""

    class WithMatrixBias(Net):
        def __init__(self):
            super().__init__()
            self.extra = nn.Module()
            self.extra.bias = nn.Parameter(torch.zeros(2, 3))  # 2-D, still a bias

    model = WithMatrixBias()
    cfg = OptimConfig(kind="decoupled_adamw", weight_decay=WD, decay_norms_and_biases=False)
    opt = build_optimizer(model, cfg, torch.device("cpu"))
    names = {id(p): n for n, p in model.named_parameters()}
    by_wd = {g["weight_decay"]: sorted(names[id(p)] for p in g["params"]) for g in opt.param_groups}
    assert by_wd[WD] == ["head.weight", "proj.weight"]
    assert by_wd[0.0] == ["extra.bias", "norm.bias", "norm.weight", "proj.bias", "scale"]


def test_unknown_kind_is_a_user_error():
    with pytest.raises(UserError, match="optim.kind must be adamw, decoupled_adamw or stable_adamw"):
        OptimConfig(kind="sgd")


RESUMED_OPTIM = OptimConfig(lr=3e-3, weight_decay=0.05, decay_norms_and_biases=False)
"""The optimizer settings of the resume test below, with each kind in turn."""


@pytest.fixture(scope="module")
def adamw_final(tmp_path_factory) -> dict[str, torch.Tensor]:
    """The final weights of a tiny run with torch's AdamW at `RESUMED_OPTIM`: what each kind of the resume
    test differs from (one run for both kinds, read only)."""
    other = tiny_run(
        tmp_path_factory.mktemp("adamw") / "run", optim=dataclasses.replace(RESUMED_OPTIM, kind="adamw")
    )
    pretrain(other)
    return load_file(str(Path(other.out) / "final" / "model.safetensors"))


@pytest.mark.parametrize("kind", ["decoupled_adamw", "stable_adamw"])
def test_training_resumes_bit_for_bit_with_each_kind(tmp_path, kind, adamw_final):
    optim = dataclasses.replace(RESUMED_OPTIM, kind=kind)
    whole = tiny_run(tmp_path / "whole", optim=optim)
    pretrain(whole)
    cut = tiny_run(tmp_path / "cut", optim=optim)
    pretrain(cut, until_step=4)
    pretrain(cut, resume=True)
    assert [m["loss"] for m in metrics(cut.out)] == [m["loss"] for m in metrics(whole.out)]
    a, b = (load_file(str(Path(r.out) / "final" / "model.safetensors")) for r in (whole, cut))
    assert all(torch.equal(a[k], b[k]) for k in a)
    # the run really used the kind: its config says so and it differs from torch's AdamW
    assert any(not torch.equal(a[k], adamw_final[k]) for k in a)
    assert f"kind: {kind}" in (Path(whole.out) / "config.yaml").read_text()


def test_adamw_step_hooks_run_as_torch_runs_them_after_a_torch_adamw():
    """torch's first AdamW puts its step hooks on torch's class; our AdamW, defined after it, took that
    hooked step as its own, so its hooks ran inside our `no_grad` (torch runs them outside its guard).
    In this process: a torch AdamW hooks torch's class (made here, or by a test before), then a copy of
    `eageroptim` run afresh defines our AdamW after it, as a process that made torch's first imports
    ours (a fresh interpreter, as this test started before, paid ~6 CPU-s for torch and dynamo)."""
    import importlib.util

    from encoderlab.model import eageroptim

    torch.optim.AdamW([nn.Parameter(torch.ones(3))])
    assert getattr(torch.optim.AdamW.step, "hooked", False)  # what a fresh process's first AdamW did
    spec = importlib.util.spec_from_file_location("eageroptim_after_torch", eageroptim.__file__)
    after = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(after)
    q = nn.Parameter(torch.ones(3))
    o = after.AdamW([q])
    seen = []
    o.register_step_post_hook(lambda *a: seen.append(torch.is_grad_enabled()))
    q.grad = torch.ones(3)
    o.step()
    assert seen == [True]
