"""A start model without a mask token (a decoder) gets one for MLM: added to its tokenizer at the first
free id, rows at the mean of the existing ones, recorded; and a start model's position limit refuses a
longer sequence with the fix. Tiny random models built from configs: a Llama whose tokenizer has no
mask token (as SmolLM2's), tied and untied, and a BERT with 64 positions (as MiniLM's 512)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
import torch
from helpers import tiny_run
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.train.helpers import DECODER_VOCAB, EOT, save_tiny_decoder

from encoderlab.data.batch import TokenSpec
from encoderlab.data.synthetic import SyntheticSource
from encoderlab.errors import UserError
from encoderlab.model.hub import load_pretrained
from encoderlab.objectives import CLM, MLM
from encoderlab.train import ModelSpec, Phase, pretrain
from encoderlab.train.recipes import make_recipe
from encoderlab.train.step import TrainStep
from encoderlab.train.vocab import ADDED_TOKENS

DECODER_SPEC = TokenSpec(vocab_size=DECODER_VOCAB, bos_id=0, eos_id=0, special_ids=(0,))
"""SmolLM2's shape of vocabulary: one special token (document start and end), no mask, no padding."""


def _run(tmp_path: Path, init: Path, mask_token: str = "<mask>", steps: int = 2, **overrides):
    cfg = tiny_run(
        tmp_path / "run",
        phases=(Phase(objective=MLM(mask_ratio=0.3), steps=steps),),
        model=ModelSpec(init=str(init), mask_token=mask_token),
        **overrides,
    )
    return cfg, SyntheticSource(cfg.layout, DECODER_SPEC, seed=0)


def _tokenizer_reads(monkeypatch) -> list[Path]:
    """The folders `load_tokenizer` reads from here on, in order (reads counted, not timed)."""
    import encoderlab.data.tokenizer as tokenizers

    read: list[Path] = []
    real = tokenizers.load_tokenizer

    def counted(name_or_path):
        read.append(Path(name_or_path).resolve())
        return real(name_or_path)

    monkeypatch.setattr(tokenizers, "load_tokenizer", counted)
    return read


@pytest.mark.parametrize("tied", [True, False], ids=["tied", "untied"])
def test_a_decoder_gets_a_mask_token_with_mean_rows_and_keeps_its_function(tmp_path, tied):
    start = load_pretrained(save_tiny_decoder(tmp_path / "decoder", tied)).model
    cfg, source = _run(tmp_path, tmp_path / "decoder")
    step = TrainStep(cfg, source=source)
    model = step.model

    assert (
        step.spec.mask_id == DECODER_VOCAB
        and step.spec.vocab_size == DECODER_VOCAB + 1
        and DECODER_VOCAB in step.spec.special_ids
    )
    assert step.tokenizer.mask_token == "<mask>" and step.tokenizer.mask_token_id == DECODER_VOCAB
    assert model.config.vocab_size == DECODER_VOCAB + 1
    emb, head = model.embed_tokens.weight.detach(), model.lm_head.weight.detach()
    torch.testing.assert_close(emb[DECODER_VOCAB], start.embed_tokens.weight[:DECODER_VOCAB].mean(0))
    torch.testing.assert_close(head[DECODER_VOCAB], start.lm_head.weight[:DECODER_VOCAB].mean(0))
    assert (head.data_ptr() == emb.data_ptr()) == tied
    # every existing row is untouched, so on the old vocabulary the model computes what it did
    ids = torch.randint(1, DECODER_VOCAB, (2, 16), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        new = model.lm_logits(model(ids).last_hidden_state)
        old = start.lm_logits(start(ids).last_hidden_state)
    torch.testing.assert_close(new[..., :DECODER_VOCAB], old)


def test_the_added_token_is_recorded_saved_and_resumes(tmp_path):
    save_tiny_decoder(tmp_path / "decoder", tied=True)
    cfg, source = _run(tmp_path, tmp_path / "decoder", steps=4)
    pretrain(cfg, source=source, until_step=2)
    pretrain(
        cfg, source=source, resume=True
    )  # the start model gets the same token again, then the checkpoint
    run = Path(cfg.out)
    record = json.loads((run / ADDED_TOKENS).read_text())
    assert [(r["token"], r["role"], r["id"], r["rows_before"], r["rows_after"]) for r in record] == [
        ("<mask>", "mask", DECODER_VOCAB, DECODER_VOCAB, DECODER_VOCAB + 1)
    ]
    final = load_pretrained(run / "final")
    assert final.spec.mask_id == DECODER_VOCAB and final.model.config.vocab_size == DECODER_VOCAB + 1
    assert final.tokenizer.convert_ids_to_tokens(DECODER_VOCAB) == "<mask>"


def _prepared_with(tokenizer_folder: Path, out: Path) -> Path:
    """Prepared data tokenized with the start model's tokenizer, as a CPT run trains on."""
    from encoderlab.cli import main

    texts = [" ".join(f"t{(i * 7 + j) % (DECODER_VOCAB - 1) + 1}" for j in range(60)) for i in range(20)]
    corpus = out.with_suffix(".jsonl")
    corpus.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)))
    main(["data", "prepare", "--source", str(corpus), "--tokenizer", str(tokenizer_folder), "--out", str(out),
          "--decontaminate", "none", "--workers", "1", "--val-fraction", "0"])  # fmt: skip
    return out


def test_a_cpt_run_reads_each_tokenizer_once_at_setup(tmp_path, monkeypatch):
    """A CPT run that adds a mask token read the data's tokenizer for the vocabulary the token is planned in,
    then again for the run (a resume), and a resume read its checkpoint's tokenizer with the model and again
    to compare it with the data's: 4 reads of 2 tokenizers. Each is now read once and handed on
    (`TrainStep.data_tokenizer`, `checkpoint_tokenizer`). Counted, not timed."""
    init = save_tiny_decoder(tmp_path / "decoder", tied=True)
    data = _prepared_with(init, tmp_path / "data")
    cfg, _ = _run(tmp_path, init, steps=2)
    cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, path=str(data)))
    read = _tokenizer_reads(monkeypatch)
    pretrain(cfg, until_step=1)
    assert sorted(read) == sorted([(data / "tokenizer").resolve(), init.resolve()])  # the start: each once
    read.clear()
    pretrain(cfg, resume=True)
    checkpoint = Path(cfg.out, "checkpoints", "step_0000001", "model").resolve()
    assert sorted(read) == sorted([(data / "tokenizer").resolve(), checkpoint])  # was each twice
    assert load_pretrained(Path(cfg.out) / "final").spec.mask_id == DECODER_VOCAB  # the token still added


def test_a_cpt_start_on_synthetic_data_reads_the_start_models_tokenizer_once(tmp_path, monkeypatch):
    """On synthetic data the mask token goes into the start model's own tokenizer, whose vocabulary was read
    for the plan (`vocab.start_vocab`: `model_files`) and then again with the model (`load_pretrained`). The
    plan's read is now handed to the load (`TrainStep.start_files`). Counted, not timed."""
    init = save_tiny_decoder(tmp_path / "decoder", tied=True)
    cfg, source = _run(tmp_path, init, steps=1)
    read = _tokenizer_reads(monkeypatch)
    pretrain(cfg, source=source)
    assert read == [init.resolve()]  # was twice
    final = load_pretrained(Path(cfg.out) / "final")
    assert (
        final.spec.mask_id == DECODER_VOCAB
        and final.tokenizer.convert_ids_to_tokens(DECODER_VOCAB) == "<mask>"
    )


def test_full_state_of_a_run_whose_vocabulary_grows_is_refused_before_writing(tmp_path):
    """`load=full` from a CLM run on a decoder's tokenizer, adding a mask token: the (tied) embedding
    grows by a row its AdamW moments lack. That state went into the optimizer unchecked and the first
    update failed with a shape RuntimeError after the run folder was written; now one line, no folder."""
    save_tiny_decoder(tmp_path / "decoder", tied=True)  # as SmolLM2's
    clm = tiny_run(
        tmp_path / "clm",
        phases=(Phase(objective=CLM(), steps=1),),
        model=ModelSpec(init=str(tmp_path / "decoder")),
    )
    pretrain(clm, source=SyntheticSource(clm.layout, DECODER_SPEC, seed=0))
    cfg, source = _run(tmp_path, Path(clm.out), steps=1)
    cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, load="full"))
    with pytest.raises(UserError) as refused:
        pretrain(cfg, source=source)
    message = str(refused.value).replace(clm.out, "BASE")
    assert f"embed_tokens.weight: moments of shape ({DECODER_VOCAB}, " in message
    assert_printed_as_documented("load-full-added-token", message, tmp_path)
    assert not Path(cfg.out).exists()
    pretrain(dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, load="weights")), source=source)


def test_without_a_mask_token_to_add_mlm_refuses_a_decoder_naming_the_setting_that_adds_one(tmp_path):
    """Before, the line said to pick another tokenizer or use CLM, neither of which continues this start
    model (a detour's MLM decay); `model.mask_token` adds one, so the line names it."""
    save_tiny_decoder(tmp_path / "decoder", tied=True)
    cfg, source = _run(tmp_path, tmp_path / "decoder", mask_token="")
    with pytest.raises(UserError) as refused:
        TrainStep(cfg, source=source)
    message = str(refused.value)
    assert "needs a mask token" in message and str(tmp_path / "decoder") in message, message
    assert "--set model.mask_token='<mask>'" in message, message
    assert not Path(cfg.out).exists()
    fixed = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, mask_token="<mask>"))
    assert TrainStep(fixed, source=source).spec.mask_id is not None  # the named fix is one the run takes


def test_a_mask_token_already_in_the_vocabulary_is_reused_with_its_rows_and_recorded(tmp_path, caplog):
    """`--set model.mask_token='[MASK]'` on a vocabulary that has `[MASK]` but does not name it the mask
    token: its id becomes the mask id, its trained rows are kept, the vocabulary does not grow, and a
    note says so. Before, it was refused ("pass another model.mask_token"), so the natural token needed
    an untrained one beside it. Here `t7` stands for it."""
    start = load_pretrained(save_tiny_decoder(tmp_path / "decoder", tied=False)).model
    cfg, source = _run(tmp_path, tmp_path / "decoder", mask_token="t7")
    with caplog.at_level("WARNING", logger="encoderlab.train.vocab"):
        step = TrainStep(cfg, source=source)
    assert step.spec.mask_id == 7 and step.spec.vocab_size == DECODER_VOCAB and 7 in step.spec.special_ids
    assert (
        step.tokenizer.mask_token == "t7"
        and step.tokenizer.mask_token_id == 7
        and len(step.tokenizer) == DECODER_VOCAB
    )
    assert step.model.config.vocab_size == DECODER_VOCAB
    torch.testing.assert_close(step.model.embed_tokens.weight[7], start.embed_tokens.weight[7])
    torch.testing.assert_close(step.model.lm_head.weight[7], start.lm_head.weight[7])
    (note,) = [r.getMessage() for r in caplog.records if "mask token" in r.getMessage()]
    assert "'t7', already in its vocabulary as id 7" in note and "\n" not in note, note
    pretrain(cfg, source=source, until_step=1)
    pretrain(cfg, source=source, resume=True)  # the same id planned again, the checkpoint's rows
    (record,) = json.loads((Path(cfg.out) / ADDED_TOKENS).read_text())
    assert (record["token"], record["id"], record["rows_before"], record["rows_after"]) == (
        "t7",
        7,
        DECODER_VOCAB,
        DECODER_VOCAB,
    )
    final = load_pretrained(Path(cfg.out) / "final")
    assert final.spec.mask_id == 7 and final.model.config.vocab_size == DECODER_VOCAB


def test_a_mask_token_that_is_another_special_token_is_refused_before_the_run(tmp_path):
    """The decoder's `<|endoftext|>` (its bos and eos) as the mask token would make every masked position
    read as a document's end: refused, naming its role and the fix, before the run folder is made."""
    save_tiny_decoder(tmp_path / "decoder", tied=True)
    cfg, source = _run(tmp_path, tmp_path / "decoder", mask_token=EOT)
    with pytest.raises(UserError) as refused:
        TrainStep(cfg, source=source)
    message = str(refused.value)
    assert f"mask token '{EOT}' is already the tokenizer's bos token (id 0)" in message, message
    assert "pass a model.mask_token the vocabulary lacks" in message
    assert_printed_as_documented("mask-token-is-a-special-token", message, tmp_path)
    assert not Path(cfg.out).exists()


def _save_bert(folder: Path, vocab: int, positions: int = 512) -> Path:
    """A 1-layer BertForMaskedLM with the synthetic tokenizer (it has a mask token)."""
    from transformers import BertConfig, BertForMaskedLM

    from encoderlab.data.synthetic import synthetic_spec, synthetic_tokenizer

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=vocab,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=positions,
    )
    BertForMaskedLM(cfg).save_pretrained(str(folder))
    synthetic_tokenizer(synthetic_spec(vocab)).save_pretrained(str(folder))
    return folder


def test_a_model_with_a_mask_token_is_left_as_it_is(tmp_path):
    """MiniLM's case: cpt-mlm's default mask token is not added when the tokenizer has one."""
    cfg = tiny_run(
        tmp_path / "run",
        phases=(Phase(objective=MLM(mask_ratio=0.3), steps=2),),
        model=ModelSpec(init=str(_save_bert(tmp_path / "bert", 128)), mask_token="<mask>"),
    )
    pretrain(cfg)
    assert not (Path(cfg.out) / ADDED_TOKENS).exists()
    assert load_pretrained(Path(cfg.out) / "final").model.config.vocab_size == 128


def test_a_bert_adapter_grows_its_tied_embedding_and_head_bias_to_the_mean(tmp_path):
    model = load_pretrained(_save_bert(tmp_path / "bert", 50)).model
    with torch.no_grad():
        model.hf.cls.predictions.bias.normal_()  # a trained bias, so its mean is not 0
    emb, bias = model.hf.get_input_embeddings().weight.clone(), model.hf.cls.predictions.bias.clone()
    model.add_token_rows([52], mean_of=48)
    assert model.config.vocab_size == 53 and model.hf.config.vocab_size == 53
    out = model.hf.get_output_embeddings()
    assert out.weight.data_ptr() == model.hf.get_input_embeddings().weight.data_ptr()
    for row in (50, 51, 52):
        torch.testing.assert_close(out.weight[row], emb[:48].mean(0))
        torch.testing.assert_close(model.hf.cls.predictions.bias[row], bias[:48].mean())
    torch.testing.assert_close(out.weight[:50], emb)


def test_a_start_model_shorter_than_the_sequence_is_refused_with_the_fix(tmp_path):
    """MiniLM has 512 positions and a paper-scale run packs 2048: one line naming the limit and the fix."""
    args = {
        "init": str(_save_bert(tmp_path / "bert", 512, positions=64)),
        "data": "synthetic",
        "steps": 4,
        "warmup": 1,
        "decay": 1,
        "global_batch": 2,
        "micro_batch_size": 2,
    }
    with pytest.raises(UserError, match=r"accepts 64 tokens but layout.seq_len is 128.*seq_len=64"):
        TrainStep(make_recipe("cpt-mlm", {**args, "seq_len": 128}))
    assert TrainStep(make_recipe("cpt-mlm", {**args, "seq_len": 64})).model.config.max_seq_len == 64


CPT_ARGS = ["data=synthetic", "steps=4", "warmup=1", "decay=1", "global_batch=2", "micro_batch_size=2"]


def _cpt_argv(init, seq_len: int, out: Path) -> list:
    params = [x for a in (f"init={init}", f"seq_len={seq_len}", *CPT_ARGS) for x in ("--param", a)]
    return ["pretrain", "--recipe", "cpt-mlm", *params, "--set", "progress=false", "--out", out]


def test_pretrain_refuses_rows_longer_than_the_start_model_before_writing(tmp_path, capsys, monkeypatch):
    """Through `encoderlab pretrain --recipe cpt-mlm --param init=...`, for a folder and for a hub id
    (its ENCODERLAB_HUB_MODELS mirror): one line with the fix, no run folder. The limit is read from the
    config before any weight is, so a start model is refused without loading (here: no weights at all)."""
    from tests.reliability.test_hostile_inputs import assert_one_line, cli

    from encoderlab.data.hub import HUB_MODELS_ENV

    bert = _save_bert(tmp_path / "models" / "org" / "bert64", 512, positions=64)
    monkeypatch.setenv(HUB_MODELS_ENV, str(tmp_path / "models"))
    for init in (bert, "org/bert64"):
        code, err = cli(_cpt_argv(init, 128, tmp_path / "run"), capsys)
        assert_one_line(
            code, err, rf"model {init} accepts 64 tokens but layout.seq_len is 128; .*--param seq_len=64"
        )
        assert not (tmp_path / "run").exists()
    (bert / "model.safetensors").unlink()
    code, err = cli(_cpt_argv(bert, 128, tmp_path / "run"), capsys)
    assert_one_line(code, err, "accepts 64 tokens but layout.seq_len is 128")
    assert not (tmp_path / "run").exists()


def test_max_positions_reads_every_kind_of_start_model(tmp_path):
    """The limit each kind of folder declares: a Hugging Face config's max_position_embeddings, an
    encoderlab encoder's max_seq_len, an adapter saved by encoderlab (its transformers config); and
    None for what is not on this machine."""
    from encoderlab.model.io import save_model_folder
    from encoderlab.model.sources import max_positions

    bert = _save_bert(tmp_path / "bert", 128, positions=96)
    assert max_positions(bert) == 96
    save_model_folder(load_pretrained(bert).model, tmp_path / "adapter")
    assert max_positions(tmp_path / "adapter") == 96
    assert max_positions(save_tiny_decoder(tmp_path / "decoder", tied=True)) == 128
    cfg = tiny_run(tmp_path / "run", phases=(Phase(objective=MLM(mask_ratio=0.3), steps=1),))
    pretrain(cfg)
    assert max_positions(tmp_path / "run") == load_pretrained(tmp_path / "run").model.config.max_seq_len
    assert max_positions("org/not-here") is None and max_positions(tmp_path / "absent") is None


def test_a_resume_on_synthetic_data_plans_its_mask_token_without_the_start_model(tmp_path):
    """On synthetic data the mask token is planned in the start model's own tokenizer, which a resume read
    from `model.init` again: with the start model moved or deleted since, the resume failed ("model source
    ... does not exist"), though it reads nothing else of it. It plans in its checkpoint's tokenizer now, the
    run's token dropped again, and goes on as the uninterrupted run does."""
    from safetensors.torch import load_file

    def run(name: str):
        return _run(tmp_path / name, save_tiny_decoder(tmp_path / name / "decoder", tied=True), steps=4)

    (whole, whole_source), (cut, cut_source) = run("whole"), run("cut")
    pretrain(whole, source=whole_source)
    pretrain(cut, source=cut_source, until_step=2)
    shutil.rmtree(cut.model.init)
    pretrain(cut, source=SyntheticSource(cut.layout, DECODER_SPEC, seed=0), resume=True)
    ours, theirs = (load_file(Path(c.out) / "final" / "model.safetensors") for c in (cut, whole))
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in ours)
    assert load_pretrained(Path(cut.out) / "final").spec.mask_id == DECODER_VOCAB


def test_a_synthetic_cpt_resume_reads_its_checkpoints_tokenizer_once(tmp_path, monkeypatch):
    """A resumed run on synthetic data that added a mask token plans the token in its checkpoint's tokenizer,
    which the model load then read again (`step._checkpoint_tokenizer`, a copy of `_start_tokenizer`); the
    plan's read is handed to the load now. Counted, not timed."""
    init = save_tiny_decoder(tmp_path / "decoder", tied=True)
    cfg, source = _run(tmp_path, init, steps=2)
    pretrain(cfg, source=source, until_step=1)
    read = _tokenizer_reads(monkeypatch)
    pretrain(cfg, source=source, resume=True)
    checkpoint = Path(cfg.out, "checkpoints", "step_0000001", "model").resolve()
    assert read.count(checkpoint) == 1 and init.resolve() not in read  # was twice
    assert load_pretrained(Path(cfg.out) / "final").spec.mask_id == DECODER_VOCAB
