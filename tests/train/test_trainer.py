"""The training loop: exact resume, atomic checkpoints, refusals, NaN policies, freezing."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from tests.train.helpers import metrics, save_tiny_bert, tiny_run

from encoderlab.data.batch import PackedBatch
from encoderlab.data.synthetic import SyntheticSource, synthetic_spec
from encoderlab.errors import UserError
from encoderlab.model.io import load_model_folder, save_model_folder
from encoderlab.objectives import CLM, MLM
from encoderlab.train import NonFiniteLoss, Phase, Schedule, pretrain
from encoderlab.train import checkpoint as ckpt
from encoderlab.train.config import ModelSpec, OptimConfig


def _weights(folder):
    return load_file(str(Path(folder) / "model.safetensors"))


def _assert_same_weights(a, b):
    wa, wb = _weights(a), _weights(b)
    assert wa.keys() == wb.keys()
    for k in wa:  # bit-identical (NaN rows of the poisoning tests compare equal to NaN)
        torch.testing.assert_close(wa[k], wb[k], rtol=0, atol=0, equal_nan=True, msg=k)


class CrashingSource(SyntheticSource):
    """Synthetic data that raises (like a killed process) when asked for `crash_step`."""

    crash_step: int = -1

    def batch(self, step, micro_step, rank):
        if step == self.crash_step:
            raise KeyboardInterrupt("simulated crash")
        return super().batch(step, micro_step, rank)


def _source(cfg, crash_step=-1):
    src = CrashingSource(cfg.layout, synthetic_spec(cfg.data.synthetic_vocab), seed=cfg.data.seed)
    src.crash_step = crash_step
    return src


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted 6-step CLM -> MLM run, shared by the tests that compare against it."""
    cfg = tiny_run(tmp_path_factory.mktemp("ref") / "run")
    pretrain(cfg)
    return cfg


def test_crash_and_resume_reproduces_losses_and_weights_bit_for_bit(tmp_path, reference):
    ref = reference
    cfg = tiny_run(tmp_path / "run")
    with pytest.raises(KeyboardInterrupt):
        pretrain(cfg, source=_source(cfg, crash_step=4))  # dies during step 5; last checkpoint: step 4
    assert ckpt.complete_checkpoints(cfg.out) == [2, 3, 4]  # every 2 + phase end at 3
    pretrain(cfg, resume=True)
    ref_losses = [(r["step"], r["loss"]) for r in metrics(ref.out)]
    assert [(r["step"], r["loss"]) for r in metrics(cfg.out)] == ref_losses
    assert len(ref_losses) == 6
    _assert_same_weights(ref.out + "/final", tmp_path / "run" / "final")


def test_partial_checkpoint_is_never_loaded(tmp_path, monkeypatch, reference):
    cfg = tiny_run(tmp_path / "run")
    real_save = ckpt.save_model_folder
    calls = {"n": 0}

    def dying_save(model, path, tokenizer=None):
        calls["n"] += 1
        if calls["n"] == 3:  # the third checkpoint (step 4) dies half-written
            raise KeyboardInterrupt("killed while writing")
        return real_save(model, path, tokenizer)

    monkeypatch.setattr(ckpt, "save_model_folder", dying_save)
    with pytest.raises(KeyboardInterrupt):
        pretrain(cfg)
    assert (tmp_path / "run" / "checkpoints" / "step_0000004.tmp").exists()
    assert ckpt.complete_checkpoints(cfg.out) == [2, 3]
    monkeypatch.setattr(ckpt, "save_model_folder", real_save)
    pretrain(cfg, resume=True)  # resumes from step 3, removes the partial folder
    assert not (tmp_path / "run" / "checkpoints" / "step_0000004.tmp").exists()
    _assert_same_weights(reference.out + "/final", tmp_path / "run" / "final")


def test_accumulated_loss_is_the_token_weighted_mean_of_the_global_batch(tmp_path):
    # Two accumulated micro-batches must give the cross-entropy of the concatenated batch computed
    # directly on full logits (not the mean of the two micro-batch means).
    cfg = tiny_run(tmp_path / "a", phases=(Phase(objective=CLM(), steps=1),))
    pretrain(cfg)
    layout = cfg.layout
    src = SyntheticSource(layout, synthetic_spec(128))
    torch.manual_seed(cfg.seed)
    from encoderlab.model import Encoder, ModelConfig
    from encoderlab.objectives import objective_generator

    model = Encoder(
        ModelConfig.from_size(
            "tiny", vocab_size=128, max_seq_len=2048, pad_id=0, bos_id=1, eos_id=2, mask_id=3
        )
    )
    xs = [CLM().prepare(src.batch(0, m, 0), src.spec, objective_generator(0, 0, m)) for m in range(2)]
    ids = torch.cat([x.input_ids for x in xs])
    tgt = torch.cat([x.targets for x in xs])
    hid = model(
        ids,
        attention_mode="causal",
        doc_ids=torch.cat([x.doc_ids for x in xs]),
        position_ids=torch.cat([x.position_ids for x in xs]),
    ).last_hidden_state
    ref = torch.nn.functional.cross_entropy(
        model.lm_logits(hid).flatten(0, 1), tgt.flatten(), ignore_index=-100
    )
    assert metrics(cfg.out)[0]["loss"] == pytest.approx(ref.item(), rel=1e-5)


def test_existing_run_needs_resume_and_changed_config_is_refused_with_diff(tmp_path):
    cfg = tiny_run(tmp_path / "run", phases=(Phase(objective=CLM(), steps=2),))
    pretrain(cfg)
    with pytest.raises(UserError, match="already holds a run; pass --resume"):
        pretrain(cfg)
    changed = dataclasses.replace(cfg, seed=5)
    with pytest.raises(UserError, match=r"changed config \(seed: 0 -> 5\)"):
        pretrain(changed, resume=True)
    pretrain(changed, resume=True, force=True)  # forced: accepted


def test_resume_with_another_phase_list_names_the_change_not_both_lists(reference):
    """A phase added (or removed) on resume: the refusal named both phase lists whole, a kilobyte of
    dict reprs on one line; it names the lengths and the differences of the phases both lists have."""
    n = len(reference.phases)
    added = dataclasses.replace(reference, phases=(*reference.phases, Phase(objective=CLM(), steps=2)))
    with pytest.raises(
        UserError, match=rf"changed config \(phases: {n} -> {n + 1} entries\); rerun"
    ) as refused:
        pretrain(added, resume=True)
    assert "{" not in str(refused.value)
    first = reference.phases[0]
    edited = dataclasses.replace(reference, phases=(dataclasses.replace(first, steps=first.steps + 1),))
    change = rf"\(phases: {n} -> 1 entries; phases.0.steps: {first.steps} -> {first.steps + 1}\)"
    with pytest.raises(UserError, match=change):
        pretrain(edited, resume=True)
    kept = dataclasses.replace(reference.checkpoint, keep_steps=(1,))
    with pytest.raises(UserError, match=r"\(checkpoint.keep_steps: \[\] -> \[1\]\)"):  # scalars: shown whole
        pretrain(dataclasses.replace(reference, checkpoint=kept), resume=True)


def test_checkpoint_of_another_architecture_is_refused_and_nothing_is_overwritten(reference, capsys):
    before = (Path(reference.out) / "config.yaml").read_text()
    other = dataclasses.replace(reference, model=ModelSpec(size="mini"))
    with pytest.raises(UserError, match=r"holds another model \(hidden_size: 128 vs 256"):
        pretrain(other, resume=True, force=True)
    assert (Path(reference.out) / "config.yaml").read_text() == before
    assert "is finished" not in capsys.readouterr().err  # the refusal alone, not a note that all went well


def test_init_with_smaller_vocabulary_is_refused(tmp_path):
    from encoderlab.model import Encoder, ModelConfig

    save_model_folder(Encoder(ModelConfig.from_size("tiny", vocab_size=64)), tmp_path / "m")
    cfg = tiny_run(tmp_path / "run", model=ModelSpec(init=str(tmp_path / "m")))
    with pytest.raises(
        UserError, match="the data's tokenizer has 128 ids but the model's embedding has 64 rows"
    ):
        pretrain(cfg)


def test_cpt_full_state_carries_optimizer_moments(tmp_path, reference):
    cfg = tiny_run(
        tmp_path / "b",
        phases=(Phase(objective=MLM(), steps=1),),
        model=ModelSpec(init=reference.out, load="full"),
    )
    from encoderlab.train.trainer import Trainer

    trainer = Trainer(cfg)
    saved, _, _ = ckpt.load_train_state(ckpt.checkpoint_dir(reference.out, 6))
    state = trainer.train_step.optimizer_state()
    assert saved.keys() == state.keys()
    assert float(state["embed_tokens.weight"]["step"]) == 6.0
    assert trainer.progress.step == 0  # a new run: steps restart


class PoisonedSource(SyntheticSource):
    """The last id's embedding row is NaN: it appears only in the batch of `bad_step`."""

    bad_step: int = -1

    def batch(self, step, micro_step, rank):
        b = super().batch(step, micro_step, rank)
        poison = self.spec.vocab_size - 1
        ids = b.input_ids.clamp(max=poison - 1)
        if step == self.bad_step:
            ids[0, 5] = poison
        return PackedBatch(input_ids=ids, doc_ids=b.doc_ids, position_ids=b.position_ids)


def _poisoned(tmp_path, policy, bad_step=3):
    from encoderlab.model import Encoder, ModelConfig

    torch.manual_seed(0)
    model = Encoder(ModelConfig.from_size("tiny", vocab_size=128))
    with torch.no_grad():
        model.embed_tokens.weight[127] = float("nan")
    save_model_folder(model, tmp_path / "init")
    cfg = tiny_run(tmp_path / "run", model=ModelSpec(init=str(tmp_path / "init")), nan_policy=policy)
    src = PoisonedSource(cfg.layout, synthetic_spec(128))
    src.bad_step = bad_step
    return cfg, src


def test_nan_stop_names_the_step_and_keeps_the_last_checkpoint(tmp_path):
    cfg, src = _poisoned(tmp_path, "stop")
    with pytest.raises(NonFiniteLoss, match=r"at step 4 \(phase 1-mlm30\).*last good checkpoint is step 3"):
        pretrain(cfg, source=src)
    assert ckpt.complete_checkpoints(cfg.out) == [2, 3]
    good = load_model_folder(ckpt.checkpoint_dir(cfg.out, 3) / "model")
    assert all(torch.isfinite(p).all() for n, p in good.named_parameters() if n != "embed_tokens.weight")
    assert [r["step"] for r in metrics(cfg.out)] == [1, 2, 3]


def test_nan_skip_and_rollback_drop_the_bad_batch_with_identical_results(tmp_path):
    finals = []
    for policy in ("skip", "rollback"):
        cfg, src = _poisoned(tmp_path / policy, policy)
        pretrain(cfg, source=src)
        rows = metrics(cfg.out)
        assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6]
        assert [bool(r.get("skipped")) for r in rows] == [False, False, False, True, False, False]
        final = load_model_folder(Path(cfg.out) / "final")
        assert all(torch.isfinite(p).all() for n, p in final.named_parameters() if n != "embed_tokens.weight")
        assert ckpt.read_state(ckpt.checkpoint_dir(cfg.out, 6))["progress"]["skipped"] == [3]
        finals.append(Path(cfg.out) / "final")
    _assert_same_weights(*finals)


def test_rollback_replaces_the_metrics_lines_of_the_steps_it_replays(tmp_path):
    # The bad update is step 6, two steps after the last checkpoint (4): the rollback replays step 5,
    # whose line must replace the one logged before the rollback, not follow it (one line per step).
    rows = {}
    for policy in ("skip", "rollback"):
        cfg, src = _poisoned(tmp_path / policy, policy, bad_step=5)
        pretrain(cfg, source=src)
        rows[policy] = metrics(cfg.out)
    assert [r["step"] for r in rows["rollback"]] == [1, 2, 3, 4, 5, 6]
    assert rows["rollback"][-1]["skipped"]

    def steady(r):
        return {k: v for k, v in r.items() if k not in ("tokens_per_s", "mfu")}  # wall-clock fields

    assert [steady(r) for r in rows["rollback"][:5]] == [steady(r) for r in rows["skip"][:5]]


@pytest.mark.parametrize("kind", ["adamw", "decoupled_adamw", "stable_adamw"])
def test_frozen_layers_stay_bit_identical_with_carried_optimizer_state(tmp_path, kind):
    # Phase 1 trains everything (AdamW moments for layer 0 exist), phase 2 freezes layer 0 and
    # carries the optimizer: zeroed gradients would still move it (moments + weight decay), with
    # every optimizer kind (the decoupled ones decay by wd * lr_t / lr, far more than torch's).
    phases = (
        Phase(objective=MLM(), steps=2, name="warm"),
        Phase(objective=CLM(), steps=3, freeze="0", name="frozen"),
        Phase(objective=MLM(), steps=1, name="thaw"),
    )
    cfg = tiny_run(
        tmp_path / "run",
        phases=phases,
        checkpoint=dataclasses.replace(tiny_run(tmp_path).checkpoint, every=1),
        optim=OptimConfig(kind=kind, lr=3e-3),
    )
    with pytest.raises(KeyboardInterrupt):  # also crosses a resume inside the frozen phase
        pretrain(cfg, source=_source(cfg, crash_step=4))
    pretrain(cfg, resume=True)
    at = {s: _weights(ckpt.checkpoint_dir(cfg.out, s) / "model") for s in (2, 5, 6)}
    layer0 = [k for k in at[2] if k.startswith("layers.0.")]
    assert layer0 and all(torch.equal(at[2][k], at[5][k]) for k in layer0)
    assert any(not torch.equal(at[2][k], at[5][k]) for k in at[2] if k.startswith("layers.1."))
    assert any(not torch.equal(at[5][k], at[6][k]) for k in layer0)  # thawed: trains again
    state = ckpt.read_state(ckpt.checkpoint_dir(cfg.out, 5))
    assert state["frozen_layers"] == "0" and "excluded from the optimizer" in state["freeze_mechanism"]
    # layer 0's moments from phase 1 were kept aside and came back for phase 3
    opt, _, _ = ckpt.load_train_state(ckpt.checkpoint_dir(cfg.out, 5))
    assert float(opt["layers.0.mlp.up_proj.weight"]["step"]) == 2.0


def test_metrics_and_run_folder_contents(reference):
    run = Path(reference.out)
    rows = metrics(run)
    assert {r["objective"] for r in rows} == {"clm", "mlm30"}
    for key in ("loss", "lr", "grad_norm", "tokens", "tokens_per_s", "flops", "mfu", "phase"):
        assert key in rows[-1]
    assert all(r["flops"] > 0 for r in rows)  # counted per step (train/flops.py); studies sum them
    assert rows[-1]["tokens"] == 6 * 2 * 2 * 32
    # LR follows each phase's own schedule: warmup 1 then constant; then 1-sqrt from the peak
    assert [r["lr"] for r in rows[:3]] == pytest.approx([3e-3] * 3)
    assert rows[3]["lr"] == pytest.approx(3e-3)
    assert rows[5]["lr"] == pytest.approx(3e-4 + 2.7e-3 * (1 - (2 / 3) ** 0.5))
    for name in ("config.yaml", "env.json", "final/config.json", "final/model.safetensors"):
        assert (run / name).is_file()


def test_keep_last_and_keep_steps(tmp_path):
    from encoderlab.train import CheckpointConfig

    cfg = tiny_run(
        tmp_path / "run",
        phases=(Phase(objective=CLM(), steps=4),),
        checkpoint=CheckpointConfig(every=1, keep_last=2, keep_steps=(1,)),
    )
    pretrain(cfg)
    assert ckpt.complete_checkpoints(cfg.out) == [1, 3, 4]


def test_bad_phase_lengths_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="exactly one positive length"):
        Phase(objective=CLM(), steps=0)
    with pytest.raises(UserError, match=">= 0"):
        Phase(objective=CLM(), steps=-3)
    with pytest.raises(
        UserError, match=r"add up to 3 \(0-clm\) \+ 3 \(1-mlm30\) = 6 steps, not total_steps=10"
    ):
        tiny_run(tmp_path, total_steps=10)
    with pytest.raises(UserError, match="exceed the phase"):
        tiny_run(
            tmp_path,
            phases=(Phase(objective=CLM(), steps=2, schedule=Schedule(kind="wsd", warmup=2, decay=2)),),
        )


def test_until_step_stops_with_a_checkpoint_and_resume_finishes_identically(tmp_path, reference):
    cfg = tiny_run(tmp_path / "run", checkpoint=dataclasses.replace(reference.checkpoint, every=0))
    pretrain(cfg, until_step=2)
    assert ckpt.complete_checkpoints(cfg.out) == [2] and not (tmp_path / "run" / "final").exists()
    pretrain(cfg, resume=True)
    assert [r["loss"] for r in metrics(cfg.out)] == [r["loss"] for r in metrics(reference.out)]


@pytest.mark.parametrize("sink", ["tensorboard", "wandb"])
def test_missing_optional_sink_is_refused_before_anything_is_written(tmp_path, monkeypatch, sink):
    """Whether or not the package is installed here (CI has tensorboard, not wandb): hidden from the run."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == sink else real(name, *a)
    )
    cfg = tiny_run(tmp_path / sink, sinks=(sink,))
    with pytest.raises(UserError, match=rf"pip install {sink} .*pip install -e '\.\[track\]'"):
        pretrain(cfg)
    assert not (tmp_path / sink).exists()


def test_resume_drops_a_torn_metrics_line(tmp_path, reference):
    cfg = tiny_run(tmp_path / "run", checkpoint=dataclasses.replace(reference.checkpoint, every=0))
    pretrain(cfg, until_step=3)
    with open(Path(cfg.out) / "metrics.jsonl", "a") as f:
        f.write('{"step": 4, "loss": 1.2')  # killed mid-write
    pretrain(cfg, resume=True)
    assert [r["loss"] for r in metrics(cfg.out)] == [r["loss"] for r in metrics(reference.out)]


def test_continued_pretraining_from_a_bert_folder_resumes_exactly(tmp_path):
    """An adapter model's checkpoints resume (its saved config has no ModelConfig to read back)."""
    save_tiny_bert(tmp_path / "bert")
    phases = (Phase(objective=MLM(mask_ratio=0.3), steps=3),)
    init = ModelSpec(init=str(tmp_path / "bert"))
    whole = tiny_run(tmp_path / "whole", phases=phases, model=init)
    pretrain(whole)
    cut = tiny_run(tmp_path / "cut", phases=phases, model=init)
    pretrain(cut, until_step=2)
    pretrain(cut, resume=True)
    assert [m["loss"] for m in metrics(cut.out)] == [m["loss"] for m in metrics(whole.out)]
    _assert_same_weights(Path(whole.out) / "final", Path(cut.out) / "final")


@pytest.mark.parametrize("version", ["v1", "v3"])
def test_continued_pretraining_from_a_deberta_folder_runs_clm_then_mlm_and_resumes_exactly(tmp_path, version):
    """DeBERTa v1 and v3 (eager attention, relative positions, their own head) through both objectives,
    packed."""
    import transformers

    torch.manual_seed(0)
    v3 = {"position_buckets": 8, "norm_rel_ebd": "layer_norm"}  # v1 has no buckets and no table norm
    prefix, buckets = ("Deberta", {}) if version == "v1" else ("DebertaV2", v3)
    config = getattr(transformers, f"{prefix}Config")(
        vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=64, relative_attention=True, pos_att_type=["p2c", "c2p"],
        position_biased_input=False, type_vocab_size=0, legacy=False, **buckets,
    )  # fmt: skip
    getattr(transformers, f"{prefix}ForMaskedLM")(config).save_pretrained(str(tmp_path / "deberta"))
    phases = (Phase(objective=CLM(), steps=2), Phase(objective=MLM(mask_ratio=0.3), steps=2))
    init = ModelSpec(init=str(tmp_path / "deberta"))
    whole = tiny_run(tmp_path / "whole", phases=phases, model=init)
    pretrain(whole)
    cut = tiny_run(tmp_path / "cut", phases=phases, model=init)
    pretrain(cut, until_step=3)
    pretrain(cut, resume=True)
    losses = [m["loss"] for m in metrics(whole.out)]
    assert len(losses) == 4 and all(math.isfinite(x) for x in losses)
    assert [m["loss"] for m in metrics(cut.out)] == losses
    _assert_same_weights(Path(whole.out) / "final", Path(cut.out) / "final")


def test_a_clm_phase_on_a_deberta_checkpoint_with_a_convolution_is_refused_before_writing(tmp_path):
    """deberta-v2-xlarge's convolution after block 0 sees the next token: a CLM phase is refused when the
    model is built, before the run folder exists (it was refused at the first step, the folder written)."""
    from transformers import DebertaV2Config, DebertaV2ForMaskedLM

    config = DebertaV2Config(
        vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=64, relative_attention=True, position_buckets=8, conv_kernel_size=3,
        pos_att_type=["p2c", "c2p"], legacy=False,
    )  # fmt: skip
    DebertaV2ForMaskedLM(config).save_pretrained(str(tmp_path / "deberta"))
    phases = (Phase(objective=MLM(), steps=1), Phase(objective=CLM(), steps=1))
    cfg = tiny_run(tmp_path / "run", phases=phases, model=ModelSpec(init=str(tmp_path / "deberta")))
    with pytest.raises(
        UserError, match=r"convolution after block 0 \(conv_kernel_size 3\) that sees the next token"
    ):
        pretrain(cfg)
    assert not (tmp_path / "run").exists()


def test_freezing_an_adapted_checkpoint_freezes_its_own_blocks(tmp_path):
    """A BERT-family checkpoint names its blocks `hf.bert.encoder.layer.N`: freezing block 0 keeps
    exactly those weights while block 1 trains (a name pattern once froze nothing here)."""
    save_tiny_bert(tmp_path / "bert")
    start = _weights(tmp_path / "bert")
    phases = (Phase(objective=CLM(), steps=3, freeze="0"),)
    cfg = tiny_run(tmp_path / "run", phases=phases, model=ModelSpec(init=str(tmp_path / "bert")))
    pretrain(cfg)
    end = _weights(Path(cfg.out) / "final")
    block = {i: [k for k in start if f"encoder.layer.{i}." in k] for i in (0, 1)}
    assert block[0] and all(torch.equal(start[k], end[k]) for k in block[0])
    assert any(not torch.equal(start[k], end[k]) for k in block[1])


def test_deterministic_flag_is_applied_for_the_run_and_restored(tmp_path, monkeypatch):
    from encoderlab.train.trainer import Trainer

    seen = []
    original = Trainer.run

    def run(self, until_step=None):
        seen.append(torch.are_deterministic_algorithms_enabled())
        return original(self, until_step)

    monkeypatch.setattr(Trainer, "run", run)
    phases = (Phase(objective=MLM(), steps=1),)
    pretrain(tiny_run(tmp_path / "on", phases=phases, deterministic=True))
    pretrain(tiny_run(tmp_path / "off", phases=phases))
    assert seen == [True, False] and not torch.are_deterministic_algorithms_enabled()


def test_deterministic_cuda_run_without_cublas_workspace_is_refused_before_writing(tmp_path, monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # the check runs before any CUDA call
    cfg = tiny_run(
        tmp_path / "run", phases=(Phase(objective=MLM(), steps=1),), deterministic=True, device="cuda"
    )
    with pytest.raises(UserError, match="export CUBLAS_WORKSPACE_CONFIG=:4096:8"):
        pretrain(cfg)
    assert not (tmp_path / "run").exists()


def test_prefetched_batches_are_the_steps_own_across_a_phase_switch(tmp_path):
    """The batch prepared in the background for the next step is the one its own phase's objective makes."""
    from encoderlab.train.step import TrainStep

    step = TrainStep(tiny_run(tmp_path))  # CLM for steps 0-2, MLM for 3-5
    step.batches_for(2)  # queues step 3, the first MLM step
    assert step.queued_step == 3
    prefetched = step.batches_for(3)
    fresh = step.micro_batches(3)
    assert [x.attention_mode for x in prefetched] == ["bidirectional"] * 2
    for a, b in zip(prefetched, fresh):
        for name in ("input_ids", "targets", "doc_ids", "position_ids"):
            assert torch.equal(getattr(a, name), getattr(b, name)), name
    step.batches_for(5)  # the last step queues nothing
    assert step.queued_step is None


def test_synthetic_document_length_reaches_the_source(tmp_path):
    from encoderlab.train.step import TrainStep

    def first_docs(folder, doc_len):
        cfg = tiny_run(tmp_path / folder)
        cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, synthetic_doc_len=doc_len))
        return TrainStep(cfg).source.batch(0, 0, 0).doc_ids

    assert (first_docs("whole", 4096) == 0).all()
    assert first_docs("short", 8).max() > 0


def test_a_synthetic_run_saves_a_tokenizer_over_its_ids(tmp_path):
    from encoderlab.data.tokenizer import load_tokenizer

    cfg = tiny_run(tmp_path / "run")
    pretrain(cfg)
    tok = load_tokenizer(tmp_path / "run" / "final")
    assert len(tok) == cfg.data.synthetic_vocab and tok.mask_token_id == 3
    assert tok("t9 t10").input_ids == [1, 9, 10, 2]


def test_a_step_folder_without_state_json_is_removed_with_a_note(tmp_path, capsys, reference):
    # a checkpoint whose state.json was deleted by hand was removed at the resume without a word
    cfg = tiny_run(tmp_path / "run")
    with pytest.raises(KeyboardInterrupt):
        pretrain(cfg, source=_source(cfg, crash_step=4))
    emptied = tmp_path / "run" / "checkpoints" / "step_0000004"
    (emptied / "state.json").unlink()
    resumed = _newest_complete(tmp_path / "run" / "checkpoints")
    capsys.readouterr()
    pretrain(cfg, resume=True)
    err = capsys.readouterr().err
    assert (
        f"encoderlab: note: removed {emptied}: no state.json, so not a complete checkpoint; the run resumes from {resumed}\n"
        in err
    )
    assert err.count("encoderlab: note: removed") == 1  # the .tmp leftovers of a kill are encoderlab's own
    _assert_same_weights(reference.out + "/final", tmp_path / "run" / "final")


def test_the_note_of_an_emptied_older_step_folder_names_the_checkpoint_resumed(tmp_path, capsys):
    """The note said "the run resumes from the one before it" whatever was left: with an older step folder
    emptied, the run resumes from the newest complete checkpoint, after it."""
    cfg = tiny_run(tmp_path / "run")
    with pytest.raises(KeyboardInterrupt):
        pretrain(cfg, source=_source(cfg, crash_step=4))
    checkpoints = tmp_path / "run" / "checkpoints"
    (checkpoints / "step_0000002" / "state.json").unlink()
    assert _newest_complete(checkpoints) == checkpoints / "step_0000004"  # after the emptied one
    capsys.readouterr()
    pretrain(cfg, resume=True)
    err = capsys.readouterr().err
    assert (
        f"removed {checkpoints / 'step_0000002'}: no state.json, so not a complete checkpoint; the run resumes from {checkpoints / 'step_0000004'}\n"
        in err
    )


def _newest_complete(checkpoints: Path) -> Path:
    """The step folder a resume loads: the newest with its state.json."""
    return max(d for d in checkpoints.iterdir() if (d / "state.json").is_file())
