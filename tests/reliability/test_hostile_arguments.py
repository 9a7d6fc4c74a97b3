"""The hostile-input catalogue, argument cases (rows in docs/errors.md): numbers out of range, devices
that do not exist, task, probe and ladder files with one bad value or record, and model folders
whose config.json was edited. The study-file cases are in test_hostile_study_files.py.

Each goes through `encoderlab.cli.main([...])` as a user's command line would and must exit 2 with
one `encoderlab: error:` line, no traceback, and nothing created or changed (`assert_refused_untouched`,
which the study-file cases share). Each case failed on the code before its fix: a traceback (a
ZeroDivisionError, numpy's "expected non-negative integer", torch's device parser), or a value
accepted silently.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
import torch
import yaml
from tests.eval.conftest import make_tokenizer, tiny_model, vocabulary_texts
from tests.reliability.argument_cases import ARGUMENT_CASES
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import cli
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.model.io import save_model_folder


def model_folder(root: Path):
    """A tiny model folder `root/model` with its tokenizer; the tokenizer."""
    tok = make_tokenizer(vocabulary_texts())
    save_model_folder(tiny_model(len(tok)), root / "model", tok)
    return tok


def write_texts(root: Path) -> None:
    """`texts.txt`: 60 lines of text."""
    (root / "texts.txt").write_text("".join(f"text {i} about the red code\n" for i in range(60)))


@pytest.fixture(scope="module")
def aworld(tmp_path_factory):
    """A tiny model folder with its tokenizer, texts, and files with one bad value or record each."""
    root = tmp_path_factory.mktemp("hostile-arguments")
    tok = model_folder(root)
    write_texts(root)
    (root / "two_class.jsonl").write_text(
        "".join(
            json.dumps({"id": str(i), "text": f"the red code {i}", "meta": {"label": "ab"[i % 2]}}) + "\n"
            for i in range(40)
        )
    )
    _task_files(root)
    _edited_model_configs(root)
    _probe_files(root)
    (root / "notes.txt").write_text("someone's notes, no newline at the end")  # named as results by mistake
    (root / "curves_notes.yaml").write_text("sources:\n  - {results: notes.txt, model: m}\n")
    twice = "".join(
        f"  - {{results: notes.txt, model: M, step: {s}, mask_ratio: 0.4}}\n" for s in (5000, 10000)
    )
    (root / "curves_one_x_twice.yaml").write_text("sources:\n" + twice)
    _prepared_and_ladder(root, tok)
    return root


def _probe_files(root: Path) -> None:
    """Probing tasks with one bad record: the 4th without a label; the 4th with a tag fewer than tokens."""
    labelled = [
        {"id": str(i), "text": f"the red code {i}", "meta": {"label": "ab"[i % 2]}} for i in range(40)
    ]
    labelled[3]["meta"] = {}
    words = [["the", "red", f"code{i}"] for i in range(40)]
    tagged = [
        {"id": str(i), "text": " ".join(w), "meta": {"tokens": w, "tags": ["D", "A", "N"]}}
        for i, w in enumerate(words)
    ]
    tagged[3]["meta"]["tags"] = ["D", "A"]
    mixed_tags = [{**r, "meta": {**r["meta"], "tags": ["D", "A", "N"]}} for r in tagged]
    mixed_tags[4]["meta"]["tags"] = ["D", 1, "N"]  # a tag id among names: sorting them was a TypeError
    number_word = [{**r, "meta": {**r["meta"], "tags": ["D", "A", "N"]}} for r in tagged]
    number_word[4]["meta"]["tokens"] = ["the", 7, "code"]
    mixed_labels = [
        {**r, "meta": {"label": i % 2 if i < 20 else "ab"[i % 2]}} for i, r in enumerate(labelled)
    ]
    files = {
        "probe_no_label": labelled,
        "probe_tags_short": tagged,
        "probe_tags_mixed": mixed_tags,
        "probe_number_word": number_word,
        "probe_labels_mixed": mixed_labels,
    }
    for name, records in files.items():
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def _edited_model_configs(root: Path) -> None:
    """Copies of `model` whose config.json was edited: one layer more than the weights, a NaN RoPE base,
    an untied LM head declared tied."""
    import shutil

    edits = {
        "model_3_layers": {"n_layers": 3},
        "model_rope_nan": {"rope_theta": float("nan")},
        "model_tied": {"tie_embeddings": True},
    }
    for name, edit in edits.items():
        shutil.copytree(root / "model", root / name)
        meta = json.loads((root / name / "config.json").read_text())
        meta["model"].update(edit)
        (root / name / "config.json").write_text(json.dumps(meta))
    from safetensors.torch import load_file, save_file

    shutil.copytree(root / "model", root / "model_int8")
    weights = load_file(root / "model_int8" / "model.safetensors")
    weights["norm.weight"] = weights["norm.weight"].to(torch.int8)  # 1.0 -> 1: read back unchanged
    save_file(weights, root / "model_int8" / "model.safetensors")


def _task_files(root: Path) -> None:
    """A task file of docs/evaluation.md's worked example, on its CSVs, with one bad value each."""
    for split, first in (("train", 0), ("test", 100)):
        rows = [f"the red code {i},{'good' if i % 2 else 'bad'}" for i in range(first, first + 30)]
        (root / f"reviews-{split}.csv").write_text("review,stars\n" + "\n".join(rows) + "\n")
    mixed = [f"the red code {i},{('good' if i % 2 else 'bad') if i < 20 else i % 2}" for i in range(30)]
    (root / "reviews-mixed.csv").write_text("review,stars\n" + "\n".join(mixed) + "\n")
    twice = [f"the red code {i},{'good' if i % 2 else 'bad'},{'bad' if i % 2 else 'good'}" for i in range(30)]
    (root / "reviews-twice.csv").write_text("review,stars,stars\n" + "\n".join(twice) + "\n")
    quoted = [f"the red code {i}\t{'good' if i % 2 else 'bad'}" for i in range(30)]
    quoted[3] = '"' + quoted[3]
    quoted[9] = 'he said "so" at 9\tgood'  # the quote opened in row 4 closes here: rows 4-10 were one cell
    for split, rows in (("train", quoted), ("test", [r.replace("code", "test") for r in quoted[10:]])):
        (root / f"reviews-quoted-{split}.tsv").write_text("review\tstars\n" + "\n".join(rows) + "\n")
    task = {
        "name": "reviews",
        "family": "sc",
        "data": {"train": "reviews-train.csv", "test": "reviews-test.csv"},
        "columns": {"text": "review", "label": "stars"},
        "labels": ["bad", "good"],
    }
    edits = {
        "batch0": {"finetune": {"batch_size": 0}},
        "max_steps_negative": {"finetune": {"max_steps": -1}},
        "patience_without_best_epoch": {"finetune": {"patience": 3}},
        "seed_negative": {"data": {**task["data"], "seed": -1}},
        "max_length_negative": {"max_length": -5},
        "options_list": {"options": ["pooling"]},
        "labels_mixed": {"labels": None, "data": {**task["data"], "train": "reviews-mixed.csv"}},
        "column_twice": {"data": {**task["data"], "train": "reviews-twice.csv"}},
        "tsv_quote": {"data": {"train": "reviews-quoted-train.tsv", "test": "reviews-quoted-test.tsv"}},
    }
    for name, edit in edits.items():
        (root / f"task_{name}.yaml").write_text(yaml.safe_dump({**task, **edit}, sort_keys=False))
    qa = {
        "name": "reviews",
        "family": "qa",
        "data": task["data"],
        "options": {"head": "tagger"},
        "metric": "f1",
    }
    (root / "task_qa_tagger_f1.yaml").write_text(yaml.safe_dump(qa, sort_keys=False))


def _prepared_and_ladder(root: Path, tok) -> None:
    """A prepared folder (`data`) and a ladder file of two schedules (`ladder.csv`)."""
    import numpy as np
    from tests.advise.advise_fixtures import write_ladder_csv

    from encoderlab.advise.synthetic import synthetic_ladder
    from encoderlab.data.prepare import PrepareConfig, prepare
    from encoderlab.data.sources import SourceConfig

    tok.save_pretrained(root / "tok")
    source = SourceConfig(location=str(root / "texts.txt"), txt_unit="line")
    cfg = PrepareConfig(sources=(source,), tokenizer=str(root / "tok"), decontaminate=())
    prepare(cfg, root / "data", workers=1, progress=False)
    write_ladder_csv(synthetic_ladder(np.random.default_rng(3), crossover=3.0), root / "ladder.csv")
    lines = (root / "ladder.csv").read_text().splitlines()
    lines[1] += ",7"  # a value too many: an unquoted "8,000,000" shifts a row the same way
    (root / "ladder_extra.csv").write_text("\n".join(lines) + "\n")
    lines = (root / "ladder.csv").read_text().splitlines()
    lines[3] = "1.5" + lines[3][lines[3].index(",") :]  # a CLM share past 1 (150 for 150%?)
    (root / "ladder_share.csv").write_text("\n".join(lines) + "\n")
    row = {"clm_share": 0, "mask_ratio": 0.4, "params": 8e6, "tokens": 1.6e8, "seed": True, "val/mlm15": 6.1}
    (root / "ladder_bool.jsonl").write_text(json.dumps(row) + "\n")  # JSON true read as seed 1
    lines = (root / "ladder.csv").read_text().splitlines()
    cells = lines[2].split(",")
    lines[2] = ",".join([*cells[:4], "nan", *cells[5:]])  # an empty seed cell a spreadsheet wrote as NaN
    (root / "ladder_seed_nan.csv").write_text("\n".join(lines) + "\n")
    lines = (root / "ladder.csv").read_text().splitlines()
    cells, at = lines[2].split(","), lines[0].split(",").index("val/mlm15")
    lines[2] = ",".join([*cells[:at], "nan", *cells[at + 1 :]])  # a diverged run's loss
    (root / "ladder_loss_nan.csv").write_text("\n".join(lines) + "\n")
    lines = (root / "ladder.csv").read_text().splitlines()
    cells = lines[2].split(",")
    lines[2] = ",".join([*cells[:4], "x" * 200_000, *cells[5:]])  # past csv's 128 KiB field limit
    (root / "ladder_huge.csv").write_text("\n".join(lines) + "\n")
    lines = (root / "ladder.csv").read_text().splitlines()
    lines[2] = ",".join([*cells[:4], "two", *cells[5:]])
    (root / "ladder_blank.csv").write_text("\n".join([*lines[:2], "", *lines[2:]]) + "\n")  # row on line 4
    lines = (root / "ladder.csv").read_text().splitlines()
    (root / "ladder_labels.csv").write_text(
        "\n".join(f"{line},{'label' if i == 0 else 'same'}" for i, line in enumerate(lines)) + "\n"
    )


def assert_refused(code: int, err: str, pattern: str) -> None:
    """Exit 2, one error line (a study file's problems indented below it), no traceback."""
    lines = err.strip().splitlines()
    assert code == 2 and "Traceback" not in err, err
    assert lines and lines[0].startswith("encoderlab: error: "), err
    assert all(line.startswith("  ") for line in lines[1:]), err
    assert re.search(pattern, err), err


def assert_refused_untouched(world: Path, capsys, monkeypatch, case: str, argv: str, pattern: str) -> None:
    """`argv` (`{w}`: `world`) is refused as `assert_refused` and docs/errors.md's row `case` say, and
    changes (bytes or mtime), writes or makes nothing in `world`, its default output and temporary folders
    included, nor in the Hugging Face caches (`treestate.world_state`)."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(world / "home"))  # no case may need a fetched asset
    monkeypatch.chdir(world)  # a default output folder would land here, and be seen
    (world / "tmp").mkdir(exist_ok=True)
    monkeypatch.setattr(tempfile, "tempdir", str(world / "tmp"))  # and a temporary one here
    before = world_state(world)  # and the working folder, ENCODERLAB_HOME and the Hugging Face caches
    code, err = cli(argv.format(w=world).split(), capsys)
    assert_refused(code, err, pattern)
    assert_printed_as_documented(case, err, world)
    assert_unchanged(before)


@pytest.mark.parametrize("case,argv,pattern", ARGUMENT_CASES, ids=[c[0] for c in ARGUMENT_CASES])
def test_bad_argument_is_refused_before_anything_is_written(aworld, capsys, monkeypatch, case, argv, pattern):
    assert_refused_untouched(aworld, capsys, monkeypatch, case, argv, pattern)


@pytest.mark.parametrize(
    "command",
    [
        "export {w}/model --out .",
        "data tokenizer --source {w}/texts.txt --vocab-size 300 --out .",
        "analyze transplant {w}/model {w}/model --layers 0 --out .",
    ],
)
def test_an_out_without_a_name_of_its_own_is_one_line(aworld, tmp_path, capsys, monkeypatch, command):
    """`--out .` in an empty folder: a ValueError traceback from building `NAME.tmp` beside it."""
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")
    code, err = cli(command.format(w=aworld).split(), capsys)
    assert_refused(
        code, err, r"--out \. names no folder of its own \(the current folder, a parent or the root\)"
    )
    assert_printed_as_documented("out-is-the-current-folder", err, aworld)
    assert list((tmp_path / "empty").iterdir()) == []


@pytest.mark.parametrize(
    "command",
    [
        "pretrain --recipe smoke-mlm --out {w}/r\udcff",
        "data tokenizer --source {w}/caf\udce9.txt --out {w}/t",
    ],
)
def test_an_argument_that_is_not_utf8_is_one_line_and_writes_nothing(aworld, capsys, command, monkeypatch):
    """A name from a latin-1 file system (`$'r\\xff'`) reaches Python as a lone surrogate: `pretrain
    --out` made the folder, then a UnicodeEncodeError traceback when the tokenizer was saved in it."""
    monkeypatch.chdir(aworld)  # the working folder is one a refusal may not change
    before = world_state(aworld)
    code, err = cli(command.format(w=aworld).split(), capsys)
    assert_refused(
        code, err, r"argument '.*(r\\xff|caf\\xe9\.txt)' is not valid UTF-8; rename the file or folder"
    )
    if command.startswith("pretrain"):  # the row's command
        assert_printed_as_documented("argument-not-utf8", err, aworld)
    assert_unchanged(before)
