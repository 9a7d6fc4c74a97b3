"""Held-out losses during pretraining (`train/validation.py`), checked against a direct computation.

The reference below scores the final model itself: full-vocabulary logits at every position and
`F.cross_entropy`, with CLM targets written out here (next token, same document) and the MLM masks
drawn by the objective with the validation seed, on rows read straight from the held-out source.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from tests.train.helpers import metrics, tiny_run

from encoderlab.data.batch import BatchLayout
from encoderlab.model.io import load_model_folder
from encoderlab.objectives import CLM, IGNORE, MLM, objective_generator
from encoderlab.train import Phase, pretrain
from encoderlab.train.config import ValidationConfig
from encoderlab.train.validation import SEED, YARDSTICK, held_out_source, scored_objectives


def _run(out: Path, every: int = 2, **overrides):
    cfg = tiny_run(out, validation=ValidationConfig(every=every, rows=6), **overrides)
    pretrain(cfg)
    return cfg


def _clm_reference(model, batches) -> float:
    total, count = 0.0, 0
    for b in batches:
        with torch.no_grad():
            logits = model.lm_logits(model(b.input_ids, doc_ids=b.doc_ids, position_ids=b.position_ids,
                                           attention_mode="causal").last_hidden_state)  # fmt: skip
        same = b.doc_ids[:, 1:] == b.doc_ids[:, :-1]
        losses = F.cross_entropy(
            logits[:, :-1].flatten(0, 1).float(), b.input_ids[:, 1:].flatten(), reduction="none"
        )
        total += float(losses[same.flatten()].sum())
        count += int(same.sum())
    return total / count


def _mlm_reference(model, batches, objective, spec) -> float:
    total, count = 0.0, 0
    for i, b in enumerate(batches):
        x = objective.prepare(b, spec, objective_generator(SEED, i, 0))
        with torch.no_grad():
            logits = model.lm_logits(
                model(x.input_ids, doc_ids=x.doc_ids, position_ids=x.position_ids).last_hidden_state
            )
        keep = x.targets != IGNORE
        total += float(F.cross_entropy(logits[keep].float(), x.targets[keep], reduction="sum"))
        count += int(keep.sum())
    return total / count


def test_final_scores_match_a_direct_computation_on_held_out_rows(tmp_path):
    cfg = _run(tmp_path / "run")
    saved = json.loads((Path(cfg.out) / "validation.json").read_text())
    assert saved["step"] == 6 and saved["val/rows"] == 6
    assert metrics(cfg.out)[-1]["val/clm"] == saved["val/clm"]  # the last metrics line holds them too
    model = load_model_folder(Path(cfg.out) / "final").eval()
    source = held_out_source(cfg)
    spec = source.spec
    batches = [source.batch(i, 0, 0) for i in range(6 // cfg.layout.micro_batch_size)]
    assert saved["val/clm"] == pytest.approx(_clm_reference(model, batches), rel=1e-5)
    assert saved["val/mlm15"] == pytest.approx(_mlm_reference(model, batches, YARDSTICK, spec), rel=1e-5)
    run_mlm = cfg.phases[-1].objective  # MLM at 0.3: the run's own ratio
    assert saved["val/mlm"] == pytest.approx(_mlm_reference(model, batches, run_mlm, spec), rel=1e-5)
    assert saved["val/mlm"] != saved["val/mlm15"]


def test_scores_every_n_steps_and_at_the_end_for_both_objectives_of_a_clm_run(tmp_path):
    phases = (Phase(objective=CLM(), steps=5),)
    cfg = _run(tmp_path / "run", every=2, phases=phases)
    rows = metrics(cfg.out)
    assert [r["step"] for r in rows if "val/clm" in r] == [2, 4, 5]
    assert all("val/mlm15" in r and "val/mlm" not in r for r in rows if "val/clm" in r)
    assert [k.key for k in scored_objectives(cfg, held_out_source(cfg).spec)] == ["val/clm", "val/mlm15"]


def test_validation_changes_no_training_result(tmp_path):
    on = _run(tmp_path / "on", every=1)
    off = _run(tmp_path / "off", every=0)
    assert [r["loss"] for r in metrics(on.out)] == [r["loss"] for r in metrics(off.out)]
    assert (
        not any("val/clm" in r for r in metrics(off.out)) and not (Path(off.out) / "validation.json").exists()
    )
    a, b = load_file(f"{on.out}/final/model.safetensors"), load_file(f"{off.out}/final/model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_resumed_run_logs_the_same_scores(tmp_path):
    whole = _run(tmp_path / "whole")
    cut = tiny_run(tmp_path / "cut", validation=ValidationConfig(every=2, rows=6))
    pretrain(cut, until_step=3)
    pretrain(cut, resume=True)
    timing = ("tokens_per_s", "mfu")  # wall-clock figures; everything else is bit-identical
    strip = lambda rows: [{k: v for k, v in r.items() if k not in timing} for r in rows]  # noqa: E731
    assert strip(metrics(cut.out)) == strip(metrics(whole.out))


def test_the_synthetic_held_out_stream_is_not_the_training_stream(tmp_path):
    cfg = tiny_run(tmp_path / "run")
    from encoderlab.train.build import build_source

    train = build_source(cfg.data, BatchLayout(seq_len=cfg.layout.seq_len, micro_batch_size=2))
    held = held_out_source(cfg)
    train_rows = {tuple(r.tolist()) for s in range(200) for r in train.batch(s, 0, 0).input_ids}
    held_rows = {tuple(r.tolist()) for i in range(20) for r in held.batch(i, 0, 0).input_ids}
    assert not train_rows & held_rows


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    from tests.eval.conftest import make_tokenizer, vocabulary_texts

    from encoderlab.cli import main

    root = tmp_path_factory.mktemp("val")
    make_tokenizer(vocabulary_texts()).save_pretrained(root / "tok")
    texts = [
        " ".join(vocabulary_texts()[0].split()[i:] + vocabulary_texts()[0].split()[:i]) for i in range(40)
    ]
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts))
    )
    common = ["data", "prepare", "--source", str(root / "corpus.jsonl"), "--tokenizer", str(root / "tok"),
              "--decontaminate", "none", "--workers", "1"]  # fmt: skip
    main([*common, "--out", str(root / "data"), "--val-fraction", "0.25"])
    main([*common, "--out", str(root / "no_val"), "--val-fraction", "0"])
    return root


def test_prepared_data_is_scored_on_its_val_split(prepared, tmp_path):
    data = dataclasses.replace(tiny_run(tmp_path).data, path=str(prepared / "data"))
    cfg = _run(tmp_path / "run", data=data)
    saved = json.loads((Path(cfg.out) / "validation.json").read_text())
    from encoderlab.data.reader import PackedReader

    val = PackedReader(prepared / "data", BatchLayout(seq_len=32, micro_batch_size=2), seed=SEED, split="val")
    model = load_model_folder(Path(cfg.out) / "final").eval()
    batches = [val.batch(i, 0, 0) for i in range(3)]
    assert saved["val/clm"] == pytest.approx(_clm_reference(model, batches), rel=1e-5)


def test_data_without_a_val_split_trains_and_says_so(prepared, tmp_path, capfd):
    data = dataclasses.replace(tiny_run(tmp_path).data, path=str(prepared / "no_val"))
    cfg = _run(tmp_path / "run", data=data)
    err = capfd.readouterr().err
    assert "encoderlab: note: no validation loss: the val split" in err
    # the fix is the held-out share (it said "prepare more text", which holds out no more; then "or lower
    # seq_len", which no length helps for a split of 0 tokens)
    assert (
        "has 0 tokens, fewer than one row of layout.seq_len 32; prepare it again with a larger --val-fraction\n"
        in err
    )
    assert not any("val/clm" in r for r in metrics(cfg.out)) and len(metrics(cfg.out)) == 6


def test_the_no_validation_note_is_said_by_rank_zero_only(prepared, tmp_path, capfd, monkeypatch):
    """Every torchrun rank builds the held-out source, and each printed the note."""
    data = dataclasses.replace(tiny_run(tmp_path).data, path=str(prepared / "no_val"))
    monkeypatch.setenv("WORLD_SIZE", "2")  # as torchrun sets it: without it RANK names no rank (env_rank)
    for rank, said in (("1", False), ("0", True)):
        monkeypatch.setenv("RANK", rank)
        assert held_out_source(tiny_run(tmp_path / "run", data=data)) is None
        assert ("encoderlab: note: no validation loss" in capfd.readouterr().err) == said


def test_the_yardstick_is_mlm_at_15_percent():
    assert MLM(mask_ratio=0.15) == YARDSTICK


def test_fewer_held_out_rows_than_a_micro_batch_score_each_row_once(tmp_path):
    """validation.rows below the micro-batch size read a whole micro-batch: rows past the first were
    scored too (a val split that short wraps, so a row counted twice), and val/rows said 2."""
    cfg = tiny_run(tmp_path / "run", validation=ValidationConfig(every=6, rows=1))
    pretrain(cfg)
    saved = json.loads((Path(cfg.out) / "validation.json").read_text())
    assert saved["val/rows"] == 1
    model = load_model_folder(Path(cfg.out) / "final").eval()
    first = held_out_source(cfg).batch(0, 0, 0)
    one = type(first)(**{k: v[:1] for k, v in first.__dict__.items()})
    assert saved["val/clm"] == pytest.approx(_clm_reference(model, [one]), rel=1e-5)


def test_a_loss_that_is_not_finite_is_written_as_null_in_strict_json(tmp_path, monkeypatch):
    """A diverged model's held-out loss: json.dumps wrote the bare token NaN into validation.json, which is
    no JSON (jq, JavaScript and other strict readers refuse the file); now null, as metrics.jsonl holds it."""
    from encoderlab.train.validation import Validator

    real = Validator.evaluate

    def diverged(self, model, device):
        return {**real(self, model, device), "val/clm": float("nan")}

    monkeypatch.setattr(Validator, "evaluate", diverged)
    cfg = _run(tmp_path / "run")

    def refuse(token):
        raise ValueError(f"not JSON: {token}")

    saved = json.loads((Path(cfg.out) / "validation.json").read_text(), parse_constant=refuse)
    assert saved["val/clm"] is None and isinstance(saved["val/mlm15"], float) and saved["step"] == 6
    assert metrics(cfg.out)[-1]["val/clm"] is None


def test_a_run_on_prepared_data_reads_its_meta_json_once(prepared, tmp_path, monkeypatch):
    """Building a run on prepared data from a start model read the folder's meta.json five times: the part
    check and the training reader (`build._stream`), the tokenizer check (`check_data_tokenizer`), the data's
    identity and the held-out reader. It is read once (`TrainStep.data_meta`) and handed to each. Counted,
    not timed."""
    from tests.eval.conftest import make_tokenizer, tiny_model, vocabulary_texts

    from encoderlab.model.io import save_model_folder
    from encoderlab.train import ModelSpec

    tok = make_tokenizer(vocabulary_texts())
    init = save_model_folder(tiny_model(len(tok)), tmp_path / "init", tok)
    meta = (prepared / "data" / "meta.json").resolve()
    reads: list[Path] = []
    real = Path.read_text

    def counted(path: Path, *args, **kwargs) -> str:
        reads.append(path.resolve())
        return real(path, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    data = dataclasses.replace(tiny_run(tmp_path).data, path=str(prepared / "data"))
    cfg = _run(tmp_path / "run", data=data, model=ModelSpec(init=str(init)))
    assert reads.count(meta) == 1  # was 5
    assert "val/clm" in json.loads(
        (Path(cfg.out) / "validation.json").read_text()
    )  # the val split still read
