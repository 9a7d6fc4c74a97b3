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
import yaml
from tests.eval.conftest import make_tokenizer, tiny_model, vocabulary_texts
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import cli, snapshot

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
    for name, records in (("probe_no_label", labelled), ("probe_tags_short", tagged)):
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def _edited_model_configs(root: Path) -> None:
    """Copies of `model` whose config.json was edited: one layer more than the weights, a NaN RoPE base."""
    import shutil

    for name, edit in (("model_3_layers", {"n_layers": 3}), ("model_rope_nan", {"rope_theta": float("nan")})):
        shutil.copytree(root / "model", root / name)
        meta = json.loads((root / name / "config.json").read_text())
        meta["model"].update(edit)
        (root / name / "config.json").write_text(json.dumps(meta))


def _task_files(root: Path) -> None:
    """A task file of docs/evaluation.md's worked example, on its CSVs, with one bad value each."""
    for split, first in (("train", 0), ("test", 100)):
        rows = [f"the red code {i},{'good' if i % 2 else 'bad'}" for i in range(first, first + 30)]
        (root / f"reviews-{split}.csv").write_text("review,stars\n" + "\n".join(rows) + "\n")
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
        "seed_negative": {"data": {**task["data"], "seed": -1}},
        "max_length_negative": {"max_length": -5},
        "options_list": {"options": ["pooling"]},
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
    from tests.advise.test_advise_commands import _write_csv

    from encoderlab.advise.synthetic import synthetic_ladder
    from encoderlab.data.prepare import PrepareConfig, prepare
    from encoderlab.data.sources import SourceConfig

    tok.save_pretrained(root / "tok")
    source = SourceConfig(location=str(root / "texts.txt"), txt_unit="line")
    cfg = PrepareConfig(sources=(source,), tokenizer=str(root / "tok"), decontaminate=())
    prepare(cfg, root / "data", workers=1, progress=False)
    _write_csv(synthetic_ladder(np.random.default_rng(3), crossover=3.0), root / "ladder.csv")
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
    cells = lines[2].split(",")
    lines[2] = ",".join([*cells[:4], "x" * 200_000, *cells[5:]])  # past csv's 128 KiB field limit
    (root / "ladder_huge.csv").write_text("\n".join(lines) + "\n")
    lines = (root / "ladder.csv").read_text().splitlines()
    lines[2] = ",".join([*cells[:4], "two", *cells[5:]])
    (root / "ladder_blank.csv").write_text("\n".join([*lines[:2], "", *lines[2:]]) + "\n")  # row on line 4


# (id, argv with {w} for the shared folder, pattern of the error)
ARGUMENT_CASES = [
    (
        "recipe-micro-batch-zero",
        "pretrain --recipe pfs-mlm --param micro_batch_size=0 --out {w}/o",
        r"recipe parameter micro_batch_size must be >= 1, got 0; pass --param micro_batch_size=N",
    ),
    (
        "eval-device-unknown",
        "eval {w}/model --tasks boolq --device tpu --out {w}/e",
        r"--device 'tpu' is not a device encoderlab runs on; use cpu, cuda or cuda:N",
    ),
    (
        "eval-device-not-visible",
        "eval {w}/model --tasks boolq --device cuda:64 --out {w}/e",
        r"--device cuda:64, but \d+ CUDA device\(s\) are visible; use --device cpu",
    ),
    (
        "cka-device-unknown",
        "analyze cka {w}/model {w}/model --texts {w}/texts.txt --n 50 --device tpu --out {w}/c",
        r"--device 'tpu' is not a device encoderlab runs on",
    ),
    (
        "probe-device-not-visible",
        "analyze probe {w}/model --tasks {w}/two_class.jsonl --device cuda:64 --out {w}/p",
        r"--device cuda:64, but \d+ CUDA device\(s\) are visible",
    ),
    (
        "task-file-batch-zero",
        "eval {w}/model --task-file {w}/task_batch0.yaml --lrs 1e-4 --seeds 0 --out {w}/e",
        r"task_batch0.yaml: finetune: batch_size and micro_batch_size must be >= 1, got FinetuneConfig\(",
    ),
    (
        "task-file-options-not-a-mapping",
        "eval {w}/model --task-file {w}/task_options_list.yaml --lrs 1e-4 --seeds 0 --out {w}/e",
        r"task file .*/task_options_list.yaml: options: expected a mapping, got \['pooling'\]$",
    ),
    (
        "task-file-max-steps-negative",
        "eval {w}/model --task-file {w}/task_max_steps_negative.yaml --lrs 1e-4 --seeds 0 --out {w}/e",
        r"task_max_steps_negative.yaml: finetune: max_steps must be >= 1, or null for `epochs`",
    ),
    (
        "task-file-seed-negative",
        "eval {w}/model --task-file {w}/task_seed_negative.yaml --lrs 1e-4 --seeds 0 --out {w}/e",
        r"task_seed_negative.yaml: data.seed must be >= 0, got -1",
    ),
    (
        "task-file-max-length-negative",
        "eval {w}/model --task-file {w}/task_max_length_negative.yaml --lrs 1e-4 --seeds 0 --out {w}/e",
        r"task_max_length_negative.yaml: max_length must be >= 1 tokens, or null for the model's, got -5",
    ),
    (
        "task-file-qa-head-metric",
        "eval {w}/model --task-file {w}/task_qa_tagger_f1.yaml --lrs 1e-4 --seeds 0 --out {w}/e",
        r"task_qa_tagger_f1.yaml: metric 'f1' is not reported by the QA head 'tagger'; use one of position_f1, "
        r"exact_positions",
    ),
    (
        "cka-batch-size-zero",
        "analyze cka {w}/model {w}/model --texts {w}/texts.txt --n 50 --batch-size 0 --out {w}/c",
        r"--batch-size must be >= 1, got 0",
    ),
    (
        "cka-seed-negative",
        "analyze cka {w}/model {w}/model --texts {w}/texts.txt --n 50 --seeds -1 --out {w}/c",
        r"--seeds must be >= 0 \(numpy's generators take no negative seed\), got \[-1\]",
    ),
    (
        "probe-seed-negative",
        "analyze probe {w}/model --tasks {w}/two_class.jsonl --seed -1 --out {w}/p",
        r"--seed must be >= 0 \(numpy's generators take no negative seed\), got \[-1\]",
    ),
    (
        "probe-max-examples-negative",
        "analyze probe {w}/model --tasks {w}/two_class.jsonl --max-examples -5 --out {w}/p",
        r"--max-examples must be >= 1, got -5",
    ),
    (
        "transplant-sweep-with-part",
        "analyze transplant {w}/model {w}/model --sweep layers --part mlp --embeddings --out {w}/t",
        r"--sweep layers builds its own transplants and would ignore --part mlp, --embeddings; drop them",
    ),
    (
        "transplant-groups-without-groups-sweep",
        "analyze transplant {w}/model {w}/model --layers 0 --groups 2 --out {w}/t",
        r"--groups 2 splits the layers of --sweep groups or all, but --layers would ignore it",
    ),
    (
        "cka-twin-is-b",
        "analyze cka {w}/model {w}/model --baseline {w}/model --texts {w}/texts.txt --n 50 --out {w}/c",
        r"--baseline \S+/model has the very weights of model B \(\S+/model\), so the seed noise would be 0",
    ),
    (
        "cka-seeds-repeated",
        "analyze cka {w}/model {w}/model --texts {w}/texts.txt --n 50 --seeds 42 42 43 --out {w}/c",
        r"sampling seeds \[42, 42, 43\] repeat 42: .*give distinct seeds",
    ),
    (
        "probe-too-few-examples",
        "analyze probe {w}/model --tasks {w}/two_class.jsonl --max-examples 6 --out {w}/p",
        r"two_class.jsonl: probing needs at least 10 examples to split 60/20/20, got 6",
    ),
    (
        "transplant-sweep-probe-too-few-examples",
        "analyze transplant {w}/model {w}/model --sweep parts --probe-task {w}/two_class.jsonl "
        "--max-examples 6 --out {w}/t",
        r"two_class.jsonl: probing needs at least 10 examples to split 60/20/20, got 6",
    ),
    ("inspect-seed-negative", "data inspect {w}/data --seed -1", r"--seed must be >= 0, got -1"),
    (
        "advise-seed-negative",
        "advise {w}/ladder.csv --seed -1 --target-flops 1e19 --out {w}/a",
        r"--seed must be >= 0, got -1",
    ),
    (
        "advise-ceiling-nan",
        "advise {w}/ladder.csv --ceiling nan --target-flops 1e19 --out {w}/a",
        r"--ceiling must be a finite number \(the best possible val/mlm15\), got nan",
    ),
    (
        "advise-seed-noise-inf",
        "advise {w}/ladder.csv --seed-noise inf --target-flops 1e19 --out {w}/a",
        r"--seed-noise must be a finite positive standard deviation, got inf$",
    ),
    (
        "advise-row-seed-nan",
        "advise {w}/ladder_seed_nan.csv --target-flops 1e19 --out {w}/a",
        r"ladder_seed_nan.csv:3: column seed must be an integer, got 'nan'$",
    ),
    (
        "advise-row-extra-value",
        "advise {w}/ladder_extra.csv --target-flops 1e19 --out {w}/a",
        r"ladder_extra.csv:2 has 7 values but the header names 6 columns; quote a value that holds a comma",
    ),
    (  # was csv's "_csv.Error: field larger than field limit (131072)", a traceback
        "advise-row-over-field-limit",
        "advise {w}/ladder_huge.csv --target-flops 1e19 --out {w}/a",
        r"ladder_huge.csv:3 is not valid CSV \(field larger than field limit \(131072\)\); fix the row$",
    ),
    (  # said line 3: rows were counted, not lines, so a blank line shifted every later number
        "advise-row-after-a-blank-line",
        "advise {w}/ladder_blank.csv --target-flops 1e19 --out {w}/a",
        r"ladder_blank.csv:4: column seed must be a number, got 'two'$",
    ),
    (
        "advise-ladder-twice",
        "advise {w}/ladder.csv {w}/ladder.csv --target-flops 1e19 --out {w}/a",
        r"ladder .*/ladder.csv given twice; give each once$",
    ),
    (
        "advise-row-boolean",
        "advise {w}/ladder_bool.jsonl --target-flops 1e19 --out {w}/a",
        r"ladder_bool.jsonl:1: column seed must be a number, got True$",
    ),
    (
        "advise-row-bad-schedule",
        "advise {w}/ladder_share.csv --target-flops 1e19 --out {w}/a",
        r"ladder_share.csv:4: clm_share must be in \[0, 1\], got 1.5$",
    ),
    (
        "bench-data-repeats-zero",
        "bench data --source {w}/texts.txt --repeats 0",
        r"--repeats must be >= 1, got 0",
    ),
    (
        "txt-source-text-field",
        "data tokenizer --source {w}/texts.txt#text_field=body --out {w}/t",
        r"source .*texts.txt: text_field=body names a JSONL or parquet field, but its files are .txt, which have none",
    ),
    (
        "named-corpus-option-clash",
        "data tokenizer --source fineweb-edu-10bt#text_field=body --out {w}/t",
        r"source fineweb-edu-10bt: text_field=body differs from what the named corpus reads \(hub id "
        r"HuggingFaceFW/fineweb-edu, config sample-10BT, split train, text field text\); drop it",
    ),
    (
        "tokenizer-wordpiece-vocab-too-small",
        "data tokenizer --source {w}/texts.txt --kind wordpiece --vocab-size 3 --out {w}/t",
        r"vocabulary size 3 is below the \d+ ids this corpus needs for a wordpiece tokenizer \(its alphabet "
        r"and special tokens\); use --vocab-size \d+ or more$",
    ),
    (
        "prepare-workers-negative",
        "data prepare --source {w}/texts.txt --tokenizer {w}/model --out {w}/p --workers -1",
        r"--workers must be >= 0 \(0: all cores\), got -1",
    ),
    (
        "prepare-checkpoint-every-zero",
        "data prepare --source {w}/texts.txt --tokenizer {w}/model --out {w}/p --checkpoint-every 0",
        r"--checkpoint-every must be >= 1 \(chunks between resume points\), got 0",
    ),
    (
        "bench-data-vocab-too-small",
        "bench data --source {w}/texts.txt --vocab-size 5",
        r"--vocab-size must be >= 261 for the byte-level BPE trained, got 5",
    ),
    (
        "cka-seeds-empty",
        "analyze cka {w}/model {w}/model --texts {w}/texts.txt --n 50 --seeds --out {w}/c",
        r"--seeds needs at least one seed, got none; e.g. --seeds 42 43 44",
    ),
    (
        "probe-tasks-empty",
        "analyze probe {w}/model --tasks --out {w}/p",
        r"--tasks needs at least one task, got none; e.g. --tasks brown-pos tweets",
    ),
    (
        "tokenizer-seed-negative",
        "data tokenizer --source {w}/texts.txt {w}/two_class.jsonl --seed -1 --vocab-size 300 --out {w}/t",
        r"--seed must be >= 0 \(the seed of the source mixture\), got -1",
    ),
    (
        "prepare-seed-negative",
        "data prepare --source {w}/texts.txt {w}/two_class.jsonl --tokenizer {w}/model --seed -1 --out {w}/p",
        r"--seed must be >= 0 \(the seed of the source mixture\), got -1",
    ),
    (
        "source-weight-inf",
        "data tokenizer --source {w}/texts.txt#weight=inf {w}/two_class.jsonl --vocab-size 300 --out {w}/t",
        r"source .*texts.txt: weight must be a finite number > 0, got inf",
    ),
    (
        "bench-peak-tflops-nan",
        "bench train --size tiny --seq-len 16 --batch 1 --steps 1 --warmup 0 --no-vs-hf --peak-tflops nan",
        r"--peak-tflops must be a finite number >= 0 \(0: a known GPU's datasheet value, else a measured matmul\), "
        r"got nan",
    ),
    (
        "config-more-layers-than-weights",
        "export {w}/model_3_layers --out {w}/x",
        r"the weights of .*model_3_layers do not match its config.json \(missing \['layers.2.*\], unexpected \[\]\); "
        r"restore the original config.json",
    ),
    (
        "config-rope-theta-nan",
        "export {w}/model_rope_nan --out {w}/x",
        r"model_rope_nan/config.json: rope_theta must be a finite number > 0, got nan",
    ),
    (
        "probe-record-without-label",
        "analyze probe {w}/model --tasks {w}/probe_no_label.jsonl --out {w}/p",
        r"probe_no_label.jsonl: record 4 has no meta.label, which the first record has; fix or drop it",
    ),
    (
        "probe-tags-shorter-than-tokens",
        "analyze probe {w}/model --tasks {w}/probe_tags_short.jsonl --out {w}/p",
        r"probe_tags_short.jsonl: record 4 does not hold meta.tokens and meta.tags lists of one length",
    ),
    (
        "eval-seed-too-big",
        "eval {w}/model --tasks boolq --lrs 1e-4 --seeds 99999999999999999999999 --out {w}/e",
        r"seeds must be below 2\*\*64 \(torch's generators take no larger one\), got \[99999999999999999999999\]",
    ),
    (
        "pretrain-seed-too-big",
        "pretrain --recipe smoke-clm --set seed=99999999999999999999999 --out {w}/o",
        r"seed must be below 2\*\*64 \(torch's generators take no larger one\), got 99999999999999999999999",
    ),
    (
        "curves-results-not-a-results-file",
        "analyze curves {w}/curves_notes.yaml --out {w}/c",
        r"notes.txt holds no runs; evaluate the model first",
    ),
    (
        "curves-one-x-twice",
        "analyze curves {w}/curves_one_x_twice.yaml --out {w}/c",
        r"sources 1 and 2 are both 'M' at mask_ratio 0.4, two points at one x of its mask-ratio curve",
    ),
    (
        "bench-out-over-model-config",
        "bench train --out {w}/model/config.json",
        r"--out .*model/config.json exists and is not a `bench train` result; nothing was changed",
    ),
    (
        "bench-data-out-over-model-config",
        "bench data --source {w}/texts.txt --out {w}/model/config.json",
        r"--out .*model/config.json exists and is not a `bench data` result; nothing was changed",
    ),
    (
        "bench-cannot-fit-in-memory",
        "bench train --size 1b --batch 512 --seq-len 8192 --no-vs-hf",
        r"this run needs at least .* GiB is available; lower --batch, lower --seq-len, or pick a smaller --size$",
    ),
    (
        "probe-model-twice",
        "analyze probe {w}/model {w}/model --tasks {w}/two_class.jsonl --out {w}/p",
        r"model .*model given twice; give each once",
    ),
    (
        "probe-task-twice",
        "analyze probe {w}/model --tasks {w}/two_class.jsonl {w}/two_class.jsonl --out {w}/p",
        r"task .*two_class.jsonl given twice; give each once",
    ),
    (
        "cka-missing-model-before-texts",
        "analyze cka {w}/model {w}/nope --texts {w}/texts.txt --out {w}/c",
        r"model source '.*nope' is not a folder, an asset \(.*\) or a hub id \(org/name\); pass one of these",
    ),
    (
        "flag-without-a-value",
        "eval {w}/model --task-file --lrs 1e-4 --seeds 0 --out {w}/e",
        r"--task-file is given without a value; put at least one after it \(--task-file A B\)$",
    ),
    (
        "path-through-a-file",
        "study plan {w}/notes.txt/mine.yaml",
        r"notes.txt is a file, so \S*/notes.txt/mine.yaml cannot exist; fix the path$",
    ),
    (
        "report-a-file",
        "study report {w}/notes.txt",
        r"notes.txt is a file, not a study folder; give the folder `study run --out` wrote",
    ),
    (
        "plan-out-a-file",
        "study plan paper1-pfs --out {w}/notes.txt",
        r"--out \S*/notes.txt is a file, not a study folder; .*, or drop --out for estimated counts$",
    ),
]


def assert_refused(code: int, err: str, pattern: str) -> None:
    """Exit 2, one error line (a study file's problems indented below it), no traceback."""
    lines = err.strip().splitlines()
    assert code == 2 and "Traceback" not in err, err
    assert lines and lines[0].startswith("encoderlab: error: "), err
    assert all(line.startswith("  ") for line in lines[1:]), err
    assert re.search(pattern, err), err


def assert_refused_untouched(world: Path, capsys, monkeypatch, case: str, argv: str, pattern: str) -> None:
    """`argv` (`{w}`: `world`) is refused as `assert_refused` and docs/errors.md's row `case` say, and
    changes, writes or makes nothing in `world`, its default output and temporary folders included."""
    monkeypatch.setenv("ENCODERLAB_HOME", str(world / "home"))  # no case may need a fetched asset
    monkeypatch.chdir(world)  # a default output folder would land here, and be seen
    (world / "tmp").mkdir(exist_ok=True)
    monkeypatch.setattr(tempfile, "tempdir", str(world / "tmp"))  # and a temporary one here
    before, paths = snapshot(world), sorted(world.rglob("*"))
    code, err = cli(argv.format(w=world).split(), capsys)
    assert_refused(code, err, pattern)
    assert_printed_as_documented(case, err, world)
    assert snapshot(world) == before, "a refused command changed or wrote files"
    assert sorted(world.rglob("*")) == paths, "a refused command made a folder"


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
def test_an_argument_that_is_not_utf8_is_one_line_and_writes_nothing(aworld, capsys, command):
    """A name from a latin-1 file system (`$'r\\xff'`) reaches Python as a lone surrogate: `pretrain
    --out` made the folder, then a UnicodeEncodeError traceback when the tokenizer was saved in it."""
    before = sorted(p.name for p in aworld.iterdir())
    code, err = cli(command.format(w=aworld).split(), capsys)
    assert_refused(
        code, err, r"argument '.*(r\\xff|caf\\xe9\.txt)' is not valid UTF-8; rename the file or folder"
    )
    if command.startswith("pretrain"):  # the row's command
        assert_printed_as_documented("argument-not-utf8", err, aworld)
    assert sorted(p.name for p in aworld.iterdir()) == before
