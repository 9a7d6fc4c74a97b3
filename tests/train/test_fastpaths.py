"""GPU fast paths, each checked on CPU against the plain path (and on CUDA by `pytest -m gpu`).

Every test compares one training step (loss and every parameter's gradient) of the `TrainStep` with a
flag on and off, on the same weights and batch. Tolerances: activation checkpointing recomputes the
same ops in the same order, so it must be exact; flex vs sdpa (forward only on CPU: flex has no
CPU backward) and compiled vs eager reorder float reductions, checked at 1e-5; bf16 rounds
activations to 8 mantissa bits, so its loss is checked at 2e-2 relative and gradients by cosine.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest
import torch
from tests.train.helpers import tiny_run

from encoderlab.data.batch import BatchLayout
from encoderlab.errors import UserError
from encoderlab.model import Encoder, ModelConfig
from encoderlab.model.attention import flex_available
from encoderlab.objectives import CLM, MLM, lm_loss
from encoderlab.train import OptimConfig, Phase
from encoderlab.train.config import ScaleConfig
from encoderlab.train.distributed import World, gathered_model
from encoderlab.train.optim import build_optimizer
from encoderlab.train.parallelize import resolve_attn_impl, resolve_compile
from encoderlab.train.step import TrainStep

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
PACKED = BatchLayout(seq_len=128, micro_batch_size=2)  # rows long enough for several documents


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # several times faster than 2 threads on 2 shared cores
    yield
    torch.set_num_threads(threads)


def one_step(
    tmp_path, name: str, objective=None, **overrides
) -> tuple[TrainStep, float, dict[str, torch.Tensor]]:
    """The step, loss and gradients of the first step of a one-phase tiny run."""
    phases = (Phase(objective=objective or MLM(mask_ratio=0.3), steps=1),)
    cfg = tiny_run(tmp_path / name, phases=phases, **overrides)
    trainer = TrainStep(cfg)
    trainer.enter_phase(trainer.plan[0], 0)
    loss, _ = trainer.forward_backward(trainer.micro_batches(0))
    grads = {n: p.grad.detach().float().cpu().clone() for n, p in trainer.model.named_parameters()}
    return trainer, loss, grads


def assert_same_step(a, b, tol: float) -> None:
    (_, loss_a, grads_a), (_, loss_b, grads_b) = a, b
    assert loss_a == pytest.approx(loss_b, rel=tol, abs=0)
    assert grads_a.keys() == grads_b.keys()
    for name in grads_a:
        torch.testing.assert_close(grads_a[name], grads_b[name], rtol=tol, atol=tol * 1e-2, msg=name)


def cosine(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    flat = lambda g: torch.cat([g[k].flatten() for k in sorted(g)])  # noqa: E731
    return float(torch.nn.functional.cosine_similarity(flat(a), flat(b), dim=0))


def test_activation_checkpointing_gives_identical_loss_and_gradients(tmp_path):
    plain = one_step(tmp_path, "plain")
    ac = one_step(tmp_path, "ac", scale=ScaleConfig(activation_checkpointing=True))
    assert_same_step(ac, plain, tol=0.0)
    for trainer, runs_per_micro_batch in ((plain[0], 1), (ac[0], 2)):  # AC recomputes in backward
        calls = []
        handle = trainer.model.layers[0].mlp.register_forward_pre_hook(lambda *_, c=calls: c.append(1))
        trainer.forward_backward(trainer.micro_batches(0))
        handle.remove()
        assert len(calls) == runs_per_micro_batch * trainer.cfg.layout.grad_accum
    # Checkpointing replaces each block's forward in place: parameter names (checkpoints) unchanged.
    assert [n for n, _ in ac[0].model.named_parameters()] == [n for n, _ in plain[0].model.named_parameters()]


def _loss(trainer: TrainStep, xs) -> float:
    with torch.no_grad():
        total = sum(
            lm_loss(
                trainer.model,
                trainer.model(
                    x.input_ids,
                    attention_mode=x.attention_mode,
                    position_ids=x.position_ids,
                    doc_ids=x.doc_ids,
                ).last_hidden_state,
                x.targets,
            )[0]
            for x in xs
        )
    return float(total) / sum(x.n_targets for x in xs)


@pytest.mark.skipif(not flex_available(), reason="this torch has no flex_attention")
@pytest.mark.parametrize("objective", [MLM(mask_ratio=0.3), CLM()], ids=["mlm", "clm"])
def test_flex_attention_for_packed_documents_matches_sdpa(tmp_path, objective):
    # flex_attention has no backward on CPU: forward parity here, the training step on CUDA below.
    trainer, loss, _ = one_step(tmp_path, "sdpa", objective, layout=PACKED)
    xs = trainer.micro_batches(0)
    assert _loss(trainer, xs) == pytest.approx(loss, rel=1e-6)
    trainer.model.config = dataclasses.replace(trainer.model.config, attn_impl="flex")
    assert _loss(trainer, xs) == pytest.approx(loss, rel=1e-5)


def test_flex_training_on_cpu_is_refused_with_the_fallback_named(tmp_path):
    cfg = tiny_run(tmp_path / "run", scale=ScaleConfig(attn_impl="flex"))
    with pytest.raises(UserError, match="scale.attn_impl=auto or sdpa"):
        TrainStep(cfg)


def test_saved_models_record_the_portable_kernel_and_share_weights():
    model = Encoder(ModelConfig.from_size("tiny", vocab_size=64, attn_impl="flex"))
    saved = gathered_model(model, World())
    assert saved.config.attn_impl == "sdpa" and model.config.attn_impl == "flex"
    assert all(a is b for a, b in zip(saved.parameters(), model.parameters()))


def test_attention_kernel_auto_is_flex_on_cuda_and_sdpa_elsewhere():
    assert resolve_attn_impl("auto", "cuda") == "flex"
    assert resolve_attn_impl("auto", "cpu") == "sdpa"
    assert resolve_attn_impl("sdpa", "cuda") == "sdpa"


def test_compile_auto_is_on_for_cuda_with_triton_only(monkeypatch):
    import torch.utils._triton as triton

    assert ScaleConfig().compile == "auto"
    monkeypatch.setattr(triton, "has_triton", lambda: True)
    assert resolve_compile("auto", torch.device("cuda")) is True
    assert resolve_compile("auto", torch.device("cpu")) is False
    assert resolve_compile(True, torch.device("cpu")) is True
    assert resolve_compile(False, torch.device("cuda")) is False
    monkeypatch.setattr(triton, "has_triton", lambda: False)
    assert resolve_compile("auto", torch.device("cuda")) is False


def test_default_scale_leaves_blocks_eager_on_cpu(tmp_path):
    trainer, _, _ = one_step(tmp_path, "default")
    assert all(inspect.ismethod(block.forward) for block in trainer.model.layers)


def test_bf16_autocast_step_tracks_fp32(tmp_path):
    fp32 = one_step(tmp_path, "fp32")
    bf16 = one_step(tmp_path, "bf16", precision="bf16")
    assert bf16[1] == pytest.approx(fp32[1], rel=2e-2)
    assert bf16[1] != fp32[1]  # autocast really ran in bf16
    assert cosine(bf16[2], fp32[2]) > 0.99
    assert all(p.dtype == torch.float32 for p in bf16[0].model.parameters())  # fp32 master weights


def test_fused_adamw_is_cuda_only_and_falls_back_on_cpu():
    model = torch.nn.Linear(4, 4)
    assert not build_optimizer(model, OptimConfig(fused=True), torch.device("cpu")).defaults["fused"]
    assert not build_optimizer(model, OptimConfig(fused=False), torch.device("cuda")).defaults["fused"]
    assert build_optimizer(model, OptimConfig(fused=True), torch.device("cuda")).defaults["fused"]


def test_sparse_head_and_packed_rows_without_padding(tmp_path):
    trainer, _, _ = one_step(tmp_path, "run", layout=PACKED)
    rows = []
    handle = trainer.model.lm_head.register_forward_hook(lambda m, inp, out: rows.append(inp[0].shape[0]))
    xs = trainer.micro_batches(0)
    trainer.forward_backward(xs)
    handle.remove()
    # The LM head sees only the masked positions (30%), not all B x T positions.
    assert rows == [x.n_targets for x in xs] and sum(rows) < 0.35 * sum(x.input_ids.numel() for x in xs)
    # Packed rows: every position is a real token (no padding) and rows hold several documents.
    spec = trainer.spec
    for x in xs:
        assert not (x.input_ids == spec.pad_id).any()
        assert (x.doc_ids[:, -1] > 0).all()


@pytest.mark.parametrize("objective", [MLM(mask_ratio=0.3), CLM()], ids=["mlm", "clm"])
def test_packed_document_attends_as_if_alone(tmp_path, objective):
    trainer, _, _ = one_step(tmp_path, "run", objective, layout=PACKED)
    x = trainer.micro_batches(0)[0]
    row, doc = 0, 1
    keep = x.doc_ids[row] == doc
    assert keep.any() and not keep[0]  # a document in the middle of a packed row
    with torch.no_grad():
        packed = trainer.model(
            x.input_ids, attention_mode=x.attention_mode, position_ids=x.position_ids, doc_ids=x.doc_ids
        ).last_hidden_state[row, keep]
        alone = trainer.model(
            x.input_ids[row, keep][None], attention_mode=x.attention_mode
        ).last_hidden_state[0]
    torch.testing.assert_close(packed, alone, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_compiled_blocks_match_eager(tmp_path):
    eager = one_step(tmp_path, "eager")
    compiled = one_step(tmp_path, "compiled", scale=ScaleConfig(compile=True))
    assert_same_step(compiled, eager, tol=1e-5)
    assert [n for n, _ in compiled[0].model.named_parameters()] == [
        n for n, _ in eager[0].model.named_parameters()
    ]


# ---- CUDA (pytest -m gpu; run by scripts/gpu_check.sh, never in CI) ---------------------------


def _gpu_layout() -> BatchLayout:
    return BatchLayout(seq_len=512, micro_batch_size=4, grad_accum=2)


@pytest.mark.gpu
@cuda
@pytest.mark.parametrize("objective", [MLM(mask_ratio=0.3), CLM()], ids=["mlm", "clm"])
def test_cuda_bf16_flex_compiled_step_tracks_fp32_eager(tmp_path, objective):
    common = dict(device="cuda", layout=_gpu_layout(), optim=OptimConfig(fused=True))
    # compile=False: `auto` compiles on CUDA, and the reference is meant to be eager
    ref = one_step(tmp_path, "ref", objective, scale=ScaleConfig(attn_impl="sdpa", compile=False), **common)
    fast = one_step(
        tmp_path,
        "fast",
        objective,
        precision="bf16",
        scale=ScaleConfig(attn_impl="flex", compile=True),
        **common,
    )
    assert fast[0].model.config.attn_impl == "flex"
    assert fast[1] == pytest.approx(ref[1], rel=2e-2)
    assert cosine(fast[2], ref[2]) > 0.99


@pytest.mark.gpu
@cuda
def test_cuda_fused_adamw_matches_foreach(tmp_path):
    torch.manual_seed(0)
    models = [torch.nn.Linear(64, 64).cuda() for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    opts = [
        build_optimizer(m, OptimConfig(fused=f), torch.device("cuda")) for m, f in zip(models, (True, False))
    ]
    assert opts[0].defaults["fused"] and not opts[1].defaults["fused"]
    x = torch.randn(32, 64, device="cuda")
    for _ in range(5):
        for model, opt in zip(models, opts):
            model(x).square().mean().backward()
            opt.step()
            opt.zero_grad()
    torch.testing.assert_close(models[0].weight, models[1].weight, rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
@cuda
def test_cuda_activation_checkpointing_matches_plain(tmp_path):
    common = dict(device="cuda", layout=_gpu_layout())
    plain = one_step(tmp_path, "plain", **common)
    ac = one_step(
        tmp_path, "ac", scale=ScaleConfig(activation_checkpointing=True, attn_impl="auto"), **common
    )
    # Not bit for bit on CUDA: GPU backward kernels (flex's included) may accumulate with atomics.
    assert_same_step(ac, plain, tol=1e-4)


def test_a_block_shared_across_depth_is_checkpointed_once():
    """ALBERT runs one block at every depth (`model.layers` holds it three times): wrapping each entry
    nested three checkpoints around it, so backward recomputed it three times over. Each distinct block
    is wrapped once; the loss and gradients are the unwrapped model's."""
    from tests.analysis.analysis_helpers import make_adapter

    from encoderlab.train.parallelize import parallelize

    plain, model = make_adapter("albert", 0), make_adapter("albert", 0)
    assert len(model.layers) == 3 and len(set(map(id, model.layers))) == 1
    scale = ScaleConfig(activation_checkpointing=True, compile=False)
    parallelize(model, World(), scale, torch.device("cpu"))

    def depth(forward) -> int:  # the wrappers around a forward (transformers' own decorators included)
        return 0 if not hasattr(forward, "__wrapped__") else 1 + depth(forward.__wrapped__)

    assert depth(model.layers[0].forward) == depth(plain.layers[0].forward) + 1
    ids = torch.randint(5, 20, (2, 12), generator=torch.Generator().manual_seed(0))
    losses = [m(ids).last_hidden_state.square().mean() for m in (plain, model)]
    for loss in losses:
        loss.backward()
    assert torch.allclose(losses[0], losses[1])
    for (name, p), q in zip(plain.named_parameters(), model.parameters(), strict=True):
        assert p.grad is None or torch.allclose(p.grad, q.grad, atol=1e-6), name
