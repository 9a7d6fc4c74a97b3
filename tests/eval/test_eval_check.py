"""`encoderlab eval --check`: what a run would read is checked and what it would run is printed, the
model's weights unread, nothing trained, --out not created.

The figures the tests expect are counted here from the rows each writes (and the grid each passes),
never copied from an output; a bad task file gets the very line the run without --check gives.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from fixtures import boolq_records, model_folder, run_cli, write_asset, write_task_file
from tests.eval.conftest import ir_pairs, tc_examples

from encoderlab.model import hub

pytestmark = pytest.mark.usefixtures("isolated_tasks")

TAGS = ("O", "B-PER", "B-LOC", "I-LOC")
LRS, SEEDS = ("1e-4", "2e-4"), ("0", "1", "2")


def _jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path.name


def _ner_file(folder: Path, rows: list[dict], **extra) -> Path:
    """A tagging task file over `rows` cut 4 : 1 : 1 into train, validation and test."""
    cut = len(rows) * 4 // 6, len(rows) * 5 // 6
    parts = {"train": rows[: cut[0]], "validation": rows[cut[0] : cut[1]], "test": rows[cut[1] :]}
    data = {split: _jsonl(folder / f"{split}.jsonl", part) for split, part in parts.items()}
    spec = dict(name="ner", family="tc", data=data, columns={"tokens": "words", "tags": "ner"})
    return write_task_file(folder, allow_overlap=True, **{**spec, **extra})


@pytest.fixture
def no_weights(monkeypatch):
    """The model's weights are never read: every loader of them fails the test."""

    def read(*args, **kwargs):
        raise AssertionError("eval --check read the model's weights")

    for name in ("load_model_folder", "load_hf_folder", "read_hf_weights"):
        monkeypatch.setattr(hub, name, read)


def test_a_good_task_file_prints_its_splits_labels_grid_and_runs_and_writes_nothing(
    tmp_path, capsys, no_weights
):
    rows = [{"words": e["tokens"], "ner": [TAGS[t] for t in e["tags"]]} for e in tc_examples(60, 0)]
    finetune = {"epochs": 3, "max_steps": None, "batch_size": 4, "micro_batch_size": 4}
    path = _ner_file(tmp_path, rows, metric="entity_f1", max_length=64, finetune=finetune)
    model, out = model_folder(tmp_path / "m"), tmp_path / "e"
    argv = ["eval", str(model), "--task-file", str(path), "--lrs", *LRS, "--seeds", *SEEDS, "--out", str(out)]
    code, printed, err = run_cli([*argv, "--check"], capsys)
    assert code == 0, err
    train, val, test = (len(_lines(tmp_path / f"{s}.jsonl")) for s in ("train", "validation", "test"))
    lines = printed.splitlines()
    assert "task ner: token classification (tc), metric entity_f1, max_length 64" in lines, printed
    assert f"  examples: train {train}, validation {val}, test {test}" in lines, printed
    seen = {tag for r in rows for tag in r["ner"]}
    labels = next(line for line in lines if line.startswith("  labels: "))
    assert labels.startswith(f"  labels: {len(seen)} (") and all(t in labels for t in seen), labels
    runs, steps = len(LRS) * len(SEEDS), 3 * math.ceil(train / 4)  # 3 epochs of batches of 4, the last short
    assert f"  fine-tuning: {runs} runs, {steps} optimizer steps each (batch 4)" in lines, printed
    assert f"grid: LRs {', '.join(f'{float(x):g}' for x in LRS)} x seeds {', '.join(SEEDS)}" in lines, printed
    assert f"would run {runs} fine-tuning runs (1 task;" in printed
    assert not out.exists()  # --out is neither created nor touched


def test_a_retrieval_task_counts_queries_and_documents(tmp_path, capsys, no_weights):
    """A retrieval split scores its distinct queries against its documents: both are counted."""
    pairs = ir_pairs(40, 0)
    parts = {"train": pairs[:24], "validation": pairs[24:32], "test": pairs[32:]}
    data = {split: _jsonl(tmp_path / f"{split}.jsonl", rows) for split, rows in parts.items()}
    path = write_task_file(tmp_path, name="search", family="ir", data=data, max_length=32, allow_overlap=True)
    model, out = model_folder(tmp_path / "m"), tmp_path / "e"
    code, printed, err = run_cli(
        ["eval", str(model), "--task-file", str(path), "--check", "--out", str(out)], capsys
    )
    assert code == 0, err

    def scored(rows):
        return f"{len({r['query'] for r in rows})} queries + {len({r['document'] for r in rows})} documents"

    # was a bare count for train beside the other splits' queries and documents
    expected = f"  examples: train {len(parts['train'])} query-document pairs, validation {scored(parts['validation'])}, test {scored(parts['test'])}"
    assert expected in printed.splitlines(), printed
    assert "labels" not in printed and not out.exists()


@pytest.mark.parametrize(
    "mistake",
    [
        {"columns": {"tokens": "words", "tags": "nre"}},  # a column the data does not have
        {"data": {"train": "train.jsonl", "test": "tset.jsonl"}},  # a data file that is not there
        {"max_length": 0},
    ],
    ids=["column", "data-file", "max-length"],
)
def test_a_bad_task_file_gets_the_runs_one_line_and_no_out(tmp_path, capsys, no_weights, mistake):
    rows = [{"words": e["tokens"], "ner": [TAGS[t] for t in e["tags"]]} for e in tc_examples(30, 0)]
    path = _ner_file(tmp_path, rows, **mistake)
    model, out = model_folder(tmp_path / "m"), tmp_path / "e"
    argv = ["eval", str(model), "--task-file", str(path), "--lrs", "1e-4", "--seeds", "0", "--out", str(out)]
    code, printed, err = run_cli([*argv, "--check"], capsys)
    assert code == 2 and printed == "" and len(err.strip().splitlines()) == 1, (printed, err)
    assert err.startswith(f"encoderlab: error: task file {path}"), err
    assert not out.exists()
    assert run_cli(argv, capsys)[2] == err  # the run without --check says the same line
    assert not out.exists()


def test_a_model_without_a_tokenizer_is_refused_as_a_run_refuses_it(tmp_path, capsys, no_weights):
    rows = [{"words": e["tokens"], "ner": [TAGS[t] for t in e["tags"]]} for e in tc_examples(30, 0)]
    path = _ner_file(tmp_path, rows)
    model = model_folder(tmp_path / "m", with_tokenizer=False)
    code, _, err = run_cli(
        ["eval", str(model), "--task-file", str(path), "--check", "--out", str(tmp_path / "e")], capsys
    )
    assert code == 2 and err.strip() == (
        f"encoderlab: error: {model} has no tokenizer files; save the tokenizer into {model} "
        "(fine-tuning needs it)"
    ), err
    assert not (tmp_path / "e").exists()


def test_a_suites_tasks_are_checked_too(tmp_path, capsys, monkeypatch, no_weights):
    """`--tasks` of a suite, with its fetched asset: checked and listed as a task file's are."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    write_asset(tmp_path / "home", "boolq", boolq_records(120))
    model, out = model_folder(tmp_path / "m"), tmp_path / "e"
    argv = ["eval", str(model), "--tasks", "boolq", "--seeds", "0", "--out", str(out), "--check"]
    code, printed, err = run_cli(argv, capsys)
    assert code == 0, err
    # boolq is a pair task (`PairSCOptions`): named as a task file names its family, not sc's
    boolq = "task boolq: sequence classification of text pairs (pair-sc)"
    assert any(line.startswith(boolq) for line in printed.splitlines()), printed
    assert "  labels: 2 (" in printed and not out.exists()
    monkeypatch.delenv("ENCODERLAB_HOME")
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "empty"))
    code, _, err = run_cli(argv, capsys)  # the asset not fetched: the run's line, before the model is read
    assert code == 2 and "encoderlab assets fetch boolq" in err and not out.exists(), err


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


@pytest.mark.parametrize(
    ("options", "max_length"),
    [({}, 6), ({}, 100), ({"head": "tagger"}, 6)],
    ids=["span-question-fills", "span-room-under-stride", "tagger-question-fills"],
)
def test_qa_windows_the_question_fills_are_refused_by_the_check_as_by_the_run(
    tmp_path, capsys, options, max_length
):
    # was: --check printed "checked" and exit 0, then the run refused the windows (the room after the
    # longest question is measured when the examples are tokenised, which the check leaves to the run)
    from tests.eval.conftest import qa_examples

    data = {"train": _jsonl(tmp_path / "train.jsonl", qa_examples(40, 0))}
    data["test"] = _jsonl(tmp_path / "test.jsonl", qa_examples(10, 1))
    spec = dict(name="codes", family="qa", data=data, max_length=max_length, options=options)
    path = write_task_file(tmp_path, finetune={"max_steps": 2}, **spec)
    model, out = model_folder(tmp_path / "m"), tmp_path / "e"
    argv = ["eval", str(model), "--task-file", str(path), "--lrs", "1e-4", "--seeds", "0", "--out", str(out)]
    code, printed, err = run_cli([*argv, "--check"], capsys)
    assert code == 2 and printed == "" and len(err.strip().splitlines()) == 1, (printed, err)
    # both heads name the task as the tagger always did (the span head's line lacked "task codes: ")
    assert "error: task codes: QA windows of" in err and "after the longest question" in err, err
    assert not out.exists()
    ran = run_cli([*argv, "--device", "cpu"], capsys)[2].strip().splitlines()  # after its progress bar
    assert ran[-1] == err.strip()  # the run says the same line
    assert not out.exists()


def test_a_model_folder_without_its_weights_is_refused_by_check_in_the_runs_line(tmp_path, capsys):
    """`--check` reads no weights, but a folder on this machine that lacks its weight file is one the run
    refuses: `--check` now gives that line (it said "checked" and the run failed), and writes nothing."""
    rows = [{"words": e["tokens"], "ner": [TAGS[t] for t in e["tags"]]} for e in tc_examples(20, 0)]
    task = _ner_file(tmp_path, rows, max_length=64)
    own = model_folder(tmp_path / "m")
    code, _, err = run_cli(["export", str(own), "--out", str(tmp_path / "hf")], capsys)
    assert code == 0, err
    for folder in (own, tmp_path / "hf"):
        (folder / "model.safetensors").unlink()
        argv = [
            "eval",
            str(folder),
            "--task-file",
            str(task),
            "--lrs",
            "1e-4",
            "--seeds",
            "0",
            "--out",
            str(tmp_path / "e"),
        ]
        code, printed, err = run_cli([*argv, "--check"], capsys)
        assert code == 2 and printed == "", printed
        assert len(err.strip().splitlines()) == 1 and "model.safetensors" in err, err
        assert not (tmp_path / "e").exists()
        assert run_cli(argv, capsys)[2] == err  # the run's own refusal, word for word


def _shard(folder: Path) -> None:
    """`folder`'s model.safetensors split into two shards and their index, as large hub models ship."""
    from safetensors.torch import load_file, save_file

    state = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    names = sorted(state)
    half = {f"model-0000{i + 1}-of-00002.safetensors": names[i::2] for i in range(2)}
    for shard, keys in half.items():
        save_file({k: state[k] for k in keys}, str(folder / shard))
    weight_map = {k: shard for shard, keys in half.items() for k in keys}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))


def _as_pickle(folder: Path) -> None:
    """`folder`'s weights as pytorch_model.bin only, as older hub models ship."""
    import torch
    from safetensors.torch import load_file

    torch.save(load_file(str(folder / "model.safetensors")), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()


@pytest.mark.parametrize("layout", [_shard, _as_pickle])
def test_check_gives_a_hugging_face_folders_weight_layout_the_runs_verdict(layout, tmp_path, capsys):
    """A sharded folder (model.safetensors.index.json) is one the run loads, so `--check` passes it; a
    pytorch_model.bin-only folder is one no command reads (pickles), so `--check` refuses it in the run's
    line. Before, `--check` passed the pickle folder and only the run refused it."""
    rows = [{"words": e["tokens"], "ner": [TAGS[t] for t in e["tags"]]} for e in tc_examples(20, 0)]
    finetune = {"max_steps": 2, "batch_size": 4, "micro_batch_size": 4}  # the load, not learning
    task = _ner_file(tmp_path, rows, max_length=64, finetune=finetune)
    code, _, err = run_cli(
        ["export", str(model_folder(tmp_path / "m")), "--out", str(tmp_path / "hf")], capsys
    )
    assert code == 0, err
    layout(tmp_path / "hf")
    argv = ["eval", str(tmp_path / "hf"), "--task-file", str(task), "--lrs", "1e-4", "--seeds", "0"]
    argv += ["--out", str(tmp_path / "e"), "--device", "cpu"]
    checked = run_cli([*argv, "--check"], capsys)
    ran = run_cli(argv, capsys)
    if layout is _shard:
        assert checked[0] == 0 and ran[0] == 0, (checked, ran[2])
    else:
        assert checked[0] == 2 and checked[1] == "" and len(checked[2].strip().splitlines()) == 1, checked
        assert "pytorch_model.bin" in checked[2]
        assert ran[0] == 2 and ran[2] == checked[2]  # the run's own refusal, word for word


def test_a_folder_without_tokenizer_or_weights_gets_the_runs_first_line_from_check(tmp_path, capsys):
    """The run's load reads the weights before it asks for the tokenizer, so a folder lacking both is
    refused for its weights; `--check` said "no tokenizer files" instead (it asked in the other order)."""
    rows = [{"words": e["tokens"], "ner": [TAGS[t] for t in e["tags"]]} for e in tc_examples(20, 0)]
    task = _ner_file(tmp_path, rows, max_length=64)
    folder = model_folder(tmp_path / "m", with_tokenizer=False)
    (folder / "model.safetensors").unlink()
    argv = ["eval", str(folder), "--task-file", str(task), "--lrs", "1e-4", "--seeds", "0"]
    argv += ["--out", str(tmp_path / "e"), "--device", "cpu"]
    checked, ran = run_cli([*argv, "--check"], capsys), run_cli(argv, capsys)
    assert checked[0] == ran[0] == 2 and checked[1] == "", checked
    assert checked[2] == ran[2] and "model.safetensors" in ran[2], (checked[2], ran[2])


@pytest.mark.parametrize(
    "edit",
    [{"auto_map": {"AutoModel": "modeling.Custom"}}, {"num_attention_heads": 7}],
    ids=["auto_map", "heads"],
)
def test_a_hugging_face_config_the_load_refuses_is_refused_by_check_in_the_runs_line(edit, tmp_path, capsys):
    """The load refuses a config.json before any weight (its own modelling code, sizes no model is built
    from); `--check` passed the first and said "cannot load tokenizer" for the second."""
    rows = [{"words": e["tokens"], "ner": [TAGS[t] for t in e["tags"]]} for e in tc_examples(20, 0)]
    task = _ner_file(tmp_path, rows, max_length=64)
    code, _, err = run_cli(
        ["export", str(model_folder(tmp_path / "m")), "--out", str(tmp_path / "hf")], capsys
    )
    assert code == 0, err
    config = tmp_path / "hf" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), **edit}))
    argv = ["eval", str(tmp_path / "hf"), "--task-file", str(task), "--lrs", "1e-4", "--seeds", "0"]
    argv += ["--out", str(tmp_path / "e"), "--device", "cpu"]
    checked, ran = run_cli([*argv, "--check"], capsys), run_cli(argv, capsys)
    assert checked[0] == ran[0] == 2 and checked[1] == "", checked
    assert checked[2] == ran[2] and "config.json" in ran[2], (checked[2], ran[2])
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize("exported", [False, True], ids=["encoderlab-folder", "hugging-face-folder"])
def test_check_refuses_a_tokenizer_with_more_ids_than_the_embedding_in_the_runs_line(
    exported, tmp_path, capsys, request
):
    """A tokenizer saved beside a model after `add_tokens` (more ids than the embedding has rows) is
    refused by the run's load; `--check` printed "checked" for it, its weights unread. The rows are in
    the config (`vocab_size`), so the check refuses it in the run's line, still reading no weights."""
    from transformers import PreTrainedTokenizerFast

    rows = [{"words": e["tokens"], "ner": [TAGS[t] for t in e["tags"]]} for e in tc_examples(20, 0)]
    task = _ner_file(tmp_path, rows, max_length=64)
    folder = model_folder(tmp_path / "m")
    if exported:
        code, _, err = run_cli(["export", str(folder), "--out", str(tmp_path / "hf")], capsys)
        assert code == 0, err
        folder = tmp_path / "hf"
    tok = PreTrainedTokenizerFast.from_pretrained(str(folder))
    before = len(tok)
    tok.add_tokens(["domainword1", "domainword2", "domainword3"])
    tok.save_pretrained(str(folder))
    request.getfixturevalue("no_weights")  # from here on, as export read them
    argv = ["eval", str(folder), "--task-file", str(task), "--lrs", "1e-4", "--seeds", "0"]
    argv += ["--out", str(tmp_path / "e"), "--device", "cpu"]
    code, printed, err = run_cli([*argv, "--check"], capsys)
    assert code == 2 and printed == "", (printed, err)
    assert len(err.strip().splitlines()) == 1, err
    assert f"has {before + 3} ids but the model's embedding has {before} rows" in err, err
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize("layout", ["encoderlab-folder", "hugging-face-folder", "sharded", "bert-continued"])
def test_check_refuses_a_config_whose_vocab_size_the_weights_embedding_disagrees_with(
    layout, tmp_path, capsys
):
    """A config.json whose `vocab_size` is not the weights' embedding rows (edited by hand, copied from
    another size) is refused by the run's load; `--check`, reading no weights, passed it. The embedding's
    shape is in the safetensors header (a sharded folder's index names the shard that holds it), so the
    check reads it there and refuses in the run's line."""
    rows = [{"words": e["tokens"], "ner": [TAGS[t] for t in e["tags"]]} for e in tc_examples(20, 0)]
    task = _ner_file(tmp_path, rows, max_length=64)
    folder = model_folder(tmp_path / "m") if layout != "bert-continued" else _bert_run_folder(tmp_path / "m")
    if layout not in ("encoderlab-folder", "bert-continued"):
        code, _, err = run_cli(["export", str(folder), "--out", str(tmp_path / "hf")], capsys)
        assert code == 0, err
        folder = tmp_path / "hf"
    if layout == "sharded":
        _shard(folder)
    meta = json.loads((folder / "config.json").read_text())
    # a run continued from a BERT stores transformers' config and names (`bert.embeddings.word_embeddings`):
    # the check looked for encoderlab's `embed_tokens.weight` there and compared nothing
    config = {"encoderlab-folder": meta.get("model"), "bert-continued": meta.get("hf_config")}.get(
        layout, meta
    )
    config["vocab_size"] += 8  # more rows than stored: the tokenizer still fits, the weights do not
    (folder / "config.json").write_text(json.dumps(meta))
    argv = ["eval", str(folder), "--task-file", str(task), "--lrs", "1e-4", "--seeds", "0"]
    argv += ["--out", str(tmp_path / "e"), "--device", "cpu"]
    ran = run_cli(argv, capsys)
    assert ran[0] == 2 and "embed" in ran[2] and len(ran[2].strip().splitlines()) == 1, ran
    request_weights_unread = pytest.MonkeyPatch()
    try:
        for name in ("load_model_folder", "load_hf_folder", "read_hf_weights"):
            request_weights_unread.setattr(hub, name, _unread)
        checked = run_cli([*argv, "--check"], capsys)
    finally:
        request_weights_unread.undo()
    assert checked[0] == 2 and checked[1] == "", checked
    assert checked[2] == ran[2], (checked[2], ran[2])  # the run's own refusal, word for word
    assert not (tmp_path / "e").exists()


def _unread(*args, **kwargs):
    raise AssertionError("eval --check read the model's weights")


def _bert_run_folder(path: Path) -> Path:
    """An encoderlab model folder of a run continued from a BERT (what its `final/` holds: the adapter's
    transformers config and weights), with the eval fixtures' tokenizer."""
    import torch
    from fixtures import make_tokenizer, vocabulary_texts
    from transformers import BertConfig, BertForMaskedLM

    from encoderlab.model.hf_registry import adapter_from_hf_state
    from encoderlab.model.io import save_model_folder

    tok = make_tokenizer(vocabulary_texts())
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=128,
    )  # fmt: skip
    model, _ = adapter_from_hf_state(config, BertForMaskedLM(config).state_dict(), str(path))
    return save_model_folder(model, path, tok)
