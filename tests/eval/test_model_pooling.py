"""`pooling: model`: a task pools as the model's config.json says (EuroBERT's `clf_pooling`, EncodEval's
`retrieval_pooling: eos`), resolved per model before anything runs or is cached, so a EuroBERT-style
checkpoint declaring `bos` or `mean` is fine-tuned with that pooling, under its own cache key. The paper
suite pools this way; a model declaring nothing keeps the signature the suite had when it said `late`
(classification) and `mean` (retrieval)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from tests.eval.conftest import make_tokenizer, sc_examples, tiny_model, vocabulary_texts
from tests.eval.fixtures import write_jsonl, write_task_file
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli

from encoderlab.errors import UserError
from encoderlab.eval.families import family_ops
from encoderlab.eval.heads import mean_pool
from encoderlab.eval.pooling import ModelPooling, declared_pooling
from encoderlab.eval.protocol import RESULTS, ResultsStore, evaluate, load_eval_model
from encoderlab.eval.tasks import get_task
from encoderlab.model.export import export_hf

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def eurobert_folder(path: Path, **declared) -> Path:
    """A tiny EuroBERT checkpoint as `encoderlab export` writes it, its config.json declaring `declared`."""
    tok = make_tokenizer(vocabulary_texts())
    if not path.exists():
        export_hf(tiny_model(len(tok)), tok, path)
    config = json.loads((path / "config.json").read_text())
    config = {k: v for k, v in config.items() if k not in ("clf_pooling", "retrieval_pooling")}
    (path / "config.json").write_text(json.dumps({**config, **declared}))
    return path


def test_the_declared_poolings_are_read_as_encodeval_reads_them():
    assert declared_pooling({"clf_pooling": "bos"}, "c") == ModelPooling("first")
    assert declared_pooling({"clf_pooling": "mean", "retrieval_pooling": "eos"}, "c") == ModelPooling(
        "mean", "last"
    )
    native = {"model_type": "eurobert", "classifier_pooling": "late", "retrieval_pooling": "mean"}
    assert declared_pooling(native, "c") == ModelPooling("late")
    # ModernBERT's own setting (cls/mean) is its head's, not EuroBERT's: not read
    assert declared_pooling({"model_type": "modernbert", "classifier_pooling": "cls"}, "c") == ModelPooling()
    with pytest.raises(UserError, match=r"^c: clf_pooling 'cls' is not one of bos, mean, late"):
        declared_pooling({"clf_pooling": "cls"}, "c")


def test_our_checkpoints_declare_the_defaults(tmp_path):
    from tests.eval.fixtures import model_folder

    assert load_eval_model(str(model_folder(tmp_path / "own"))).pooling == ModelPooling()
    exported = load_eval_model(str(eurobert_folder(tmp_path / "hf")))  # export: transformers' `late`
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["classifier_pooling"] == "late"
    assert exported.pooling == ModelPooling("late")


def _direct(head, hidden: torch.Tensor, mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """EuroBertForSequenceClassification's forward, restated on the backbone's states."""
    if pooling == "late":
        return mean_pool(head.classifier(head.dense(hidden)), mask)
    pooled = hidden[:, 0] if pooling == "first" else mean_pool(hidden, mask)
    return head.classifier(head.dense(pooled))


@pytest.mark.parametrize("clf", ["bos", "mean", "late"])
def test_a_eurobert_checkpoint_is_fine_tuned_with_its_own_clf_pooling(tmp_path, clf):
    em = load_eval_model(str(eurobert_folder(tmp_path / "hf", clf_pooling=clf)))
    task = em.resolved(get_task("paper-sst2"))
    want = {"bos": "first", "mean": "mean", "late": "late"}[clf]
    assert task.options.pooling == want and task.pools_first == (clf == "bos")  # bos: BOS put first
    head = family_ops(task).build(task, em.model).eval()
    ids = torch.randint(5, len(em.tokenizer), (3, 9), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 5:] = False
    with torch.no_grad():
        hidden = head.hidden(ids, mask)
        got = head(ids, mask)
        assert (got - _direct(head, hidden, mask, want)).abs().max() <= 1e-6
        others = [p for p in ("first", "mean", "late") if p != want]
        assert all((got - _direct(head, hidden, mask, p)).abs().max() > 1e-4 for p in others)
    registered = get_task("paper-sst2")
    as_late = dataclasses.replace(registered, options=dataclasses.replace(registered.options, pooling="late"))
    # the key: each pooling its own; the default (late) the suite's signature from before `model`
    assert (task.signature() == as_late.signature()) == (clf == "late")


def test_retrieval_pools_the_last_token_when_the_config_says_eos(tmp_path):
    em = load_eval_model(str(eurobert_folder(tmp_path / "hf", retrieval_pooling="eos")))
    task = em.resolved(get_task("paper-msmarco"))
    assert task.options.pooling == "last"
    plain = load_eval_model(str(eurobert_folder(tmp_path / "hf"))).resolved(get_task("paper-msmarco"))
    assert plain.options.pooling == "mean" and plain.signature() != task.signature()
    encoder = family_ops(task).build(task, em.model).eval()
    ids = torch.randint(5, len(em.tokenizer), (2, 7), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[0, 4:] = False  # row 0's last real token is at 3
    with torch.no_grad():
        hidden = encoder.hidden(ids, mask)
        want = torch.nn.functional.normalize(torch.stack([hidden[0, 3], hidden[1, 6]]).float(), dim=-1)
        assert (encoder(ids, mask) - want).abs().max() <= 1e-6


def test_a_changed_clf_pooling_is_evaluated_again_under_its_own_key(tmp_path, capsys):
    rows = {s: sc_examples(n, k) for k, (s, n) in enumerate((("train", 24), ("test", 12)))}
    names = [{"text": r["text"], "label": ("bad", "good")[r["label"]]} for r in rows["train"]]
    spec = dict(name="senti", family="sc", labels=["bad", "good"], max_length=32)
    spec |= dict(options={"head": "eurobert", "pooling": "model"}, finetune={"batch_size": 8, "max_steps": 2})
    data = {
        "train": write_jsonl(tmp_path / "train.jsonl", names),
        "test": write_jsonl(
            tmp_path / "test.jsonl", [{**r, "label": ("bad", "good")[r["label"]]} for r in rows["test"]]
        ),
    }
    from encoderlab.eval.tasks.custom import load_task_files

    load_task_files([write_task_file(tmp_path, data=data, **spec)])
    folder, grid = tmp_path / "hf", dict(suite=None, tasks=["senti"], lrs=[1e-3], seeds=[0], progress=False)
    first = evaluate(str(eurobert_folder(folder, clf_pooling="late")), out=tmp_path / "e", **grid)
    second = evaluate(str(eurobert_folder(folder, clf_pooling="bos")), out=tmp_path / "e", **grid)
    records = list(ResultsStore(tmp_path / "e" / RESULTS).records.values())
    assert len({r.model for r in records}) == 1  # the same weights and tokenizer: one fingerprint
    assert sorted(r.pooling for r in records) == ["first", "late"]  # bos ran, not late's result reused
    assert len({r.task_signature for r in records}) == 2
    assert first.tasks["senti"].test.n == second.tasks["senti"].test.n == 1  # each summary: its own run
    curves = tmp_path / "curves_two_poolings.yaml"  # read without the model: two poolings, not one score
    curves.write_text(f"sources:\n  - {{results: {tmp_path / 'e'}, model: M}}\n")
    code, err = cli(["analyze", "curves", curves, "--out", tmp_path / "c"], capsys)
    assert_one_line(
        code, err, r"the results of task senti for model \S+/hf were made with 2 poolings \(first, late\)"
    )
    assert_printed_as_documented("curves-two-poolings", err, tmp_path)
    assert not (tmp_path / "c").exists()


def test_a_clf_pooling_encodeval_cannot_use_is_one_line(tmp_path, capsys):
    data = {  # test rows apart from train's, so the task itself is sound and only the pooling is refused
        "train": write_jsonl(tmp_path / "train.jsonl", sc_examples(12, 0)),
        "test": write_jsonl(tmp_path / "t.jsonl", sc_examples(12, 1)),
    }
    task = write_task_file(tmp_path, "task_model_pooling.yaml", name="senti", family="sc", data=data)
    eurobert_folder(tmp_path / "hf", clf_pooling="cls")
    argv = [
        "eval",
        tmp_path / "hf",
        "--task-file",
        task,
        "--lrs",
        "1e-4",
        "--seeds",
        "0",
        "--out",
        tmp_path / "e",
    ]
    code, err = cli(argv, capsys)
    assert_one_line(code, err, r"hf \(config.json\): clf_pooling 'cls' is not one of bos, mean, late")
    assert_printed_as_documented("eval-unknown-clf-pooling", err, tmp_path)
    assert not (tmp_path / "e").exists()
