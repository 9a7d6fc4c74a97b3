"""The numbers docs/models.md and docs/evaluation.md tabulate are the code's.

Sizes, LR grids, seeds, the pocket suite's split sizes and schedules, and the families the loader
accepts are copied into the docs by hand; a change to the code left the docs quietly wrong. Each
test reads the doc's own table (the row found by its first cell) and compares it with the code's
constant, so a drifted number fails here, naming the row.
"""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path
from typing import get_args, get_type_hints

import pytest

from encoderlab.eval.protocol import DEFAULT_LRS, DEFAULT_SEEDS
from encoderlab.eval.spec import FinetuneConfig, IROptions, QAOptions, SCOptions, TCOptions
from encoderlab.eval.suites import SUITE_GRIDS, SUITES
from encoderlab.eval.tasks.custom import FILE_FINETUNE
from encoderlab.eval.tasks.registry import POCKET_SIZES, TASKS
from encoderlab.model import ModelConfig
from encoderlab.model.config import SIZES as NAMED_SIZES
from encoderlab.model.hf_llama import LLAMA_FAMILIES
from encoderlab.model.hf_registry import ADAPTER_FAMILIES
from encoderlab.model.sources import POSITIONS_AFTER_PAD

DOCS = Path(__file__).resolve().parents[1] / "docs"


def table_rows(text: str, header_start: str) -> dict[str, list[str]]:
    """{first cell: the row's cells} of the markdown table whose header row starts `| header_start`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header_start}"))
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0]] = cells
    return rows


def millions(cell: str) -> float:
    """`1.8M (2.9M with head)` -> 1.8."""
    return float(re.match(r"([\d.]+)M", cell).group(1))


def numbers(cell: str) -> list[float]:
    """Every number written in a cell, thousands separators and all: `3200 pairs` -> [3200.0]."""
    return [float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?(?:e-\d+)?", cell)]


MODELS = (DOCS / "models.md").read_text()
EVALUATION = (DOCS / "evaluation.md").read_text()
SIZES = table_rows(MODELS, "size | layers")
COUNTING_VOCAB = numbers(" ".join(MODELS.split("Counts below use ", 1)[1].split()[:8]))
"""The doc's counting rule above the table: "8,192 ids for the CPU sizes and 128,256 (Llama-3) for the paper sizes"."""


def test_the_models_doc_size_table_lists_every_named_size():
    assert list(SIZES) == list(NAMED_SIZES)


@pytest.mark.parametrize("size", list(SIZES))
def test_the_models_doc_size_table_is_from_size(size):
    _, layers, hidden, swiglu, heads, head_dim, non_emb, one_emb, _ = SIZES[size]
    vocab = int(
        COUNTING_VOCAB[1] if size[0].isdigit() else COUNTING_VOCAB[0]
    )  # paper sizes are named by a number
    cfg = ModelConfig.from_size(size, vocab_size=vocab)
    body = cfg.num_params(include_embedding=False)
    assert (int(layers), int(hidden), int(swiglu), int(head_dim)) == (
        cfg.n_layers,
        cfg.hidden_size,
        cfg.intermediate_size,
        cfg.head_dim,
    ), size
    assert [int(n) for n in heads.split("/")] == [cfg.n_heads, cfg.n_kv_heads], size
    assert millions(non_emb) == round(body / 1e6, 1), size
    assert millions(one_emb) == round((body + vocab * cfg.hidden_size) / 1e6, 1), size


def test_the_models_doc_lists_every_loaded_family_and_no_other():
    rows = table_rows(MODELS, "family (`model_type`)")
    listed = {name for cell in rows for name in re.findall(r"`([a-z0-9-]+)`", cell.split("(")[0])}
    assert listed == set(LLAMA_FAMILIES) | set(ADAPTER_FAMILIES)


def test_the_models_doc_names_the_families_with_positions_after_the_pad_id():
    line = next(line for line in MODELS.splitlines() if "**RoBERTa-style positions**" in line)
    named = {"RoBERTa": "roberta", "XLM-R": "xlm-roberta", "CamemBERT": "camembert"}
    named |= {"RoBERTa-PreLayerNorm": "roberta-prelayernorm", "MPNet": "mpnet"}
    listed = line.split(":", 1)[1].split(" number ")[0]
    assert {named[n.strip()] for n in re.split(r",| and ", listed)} == POSITIONS_AFTER_PAD


def test_the_evaluation_doc_grids_are_the_suites_defaults():
    protocol = table_rows(EVALUATION, "setting | value")
    assert tuple(numbers(protocol["LR grid"][1])) == DEFAULT_LRS
    low, high = numbers(protocol["seeds"][1])[:2]
    assert tuple(range(int(low), int(high) + 1)) == DEFAULT_SEEDS
    lrs, seeds = SUITE_GRIDS["biomed"]
    grid = next(line for line in EVALUATION.splitlines() if line.startswith("| grid | one LR"))
    assert numbers(grid)[:3] == [lrs[0], seeds[0], seeds[-1]], grid
    assert seeds == tuple(range(seeds[0], seeds[-1] + 1))


def test_the_evaluation_doc_optimiser_rows_are_the_pocket_tasks_configs():
    protocol = table_rows(EVALUATION, "setting | value")
    for task in SUITES["pocket"]:
        cfg = TASKS[task].finetune
        said = f"AdamW, betas {tuple(cfg.betas)}, eps {cfg.eps:.0e}, weight decay {cfg.weight_decay:g} on matrices"
        assert protocol["optimiser"][1].startswith(said.replace("e-05", "e-5")), task
        assert protocol["schedule"][1].startswith(
            f"linear warmup over ceil({cfg.warmup_ratio:.0%} of steps)"
        ), task
        assert numbers(protocol["gradient clipping"][1]) == [cfg.grad_clip], task
        assert f"`finetune.weights: {cfg.weights}`" in protocol["precision"][1], task


POCKET = table_rows(EVALUATION, "task | family | metric | train")
METRIC = {"accuracy": "accuracy", "entity F1": "entity_f1", "word accuracy": "accuracy", "F1": "f1"}
METRIC["nDCG@10"] = "ndcg@10"
CAPPED_BY_DATA = {("pubmedqa-retrieval", "train")}
"""A size the data does not fill: PubMedQA's train abstracts give 560 (question, abstract) pairs, under
the cap of 600."""


def test_the_pocket_table_lists_the_pocket_suite():
    assert tuple(POCKET) == SUITES["pocket"]


@pytest.mark.parametrize("task", SUITES["pocket"])
def test_the_pocket_table_sizes_and_metrics_are_the_tasks(task):
    """Where the code fixes a split's size (a subsample, an IR split's queries) the table says it; the
    rest (WNUT-16's fractions, IR corpora) follow the data, which `eval --check` prints."""
    _, _, metric, train, validation, test, _ = POCKET[task]
    assert METRIC[metric] == TASKS[task].metric
    for split, cell in (("train", train), ("val", validation), ("test", test)):
        fixed = POCKET_SIZES[task][split]
        if fixed is not None and (task, split) in CAPPED_BY_DATA:
            assert numbers(cell)[0] < fixed, (task, split)  # under its cap, or no longer capped by the data
        elif fixed is not None:
            assert numbers(cell)[0] == fixed, (task, split)


def test_the_pocket_schedules_line_is_the_tasks():
    line = " ".join(EVALUATION.split("Schedules: ", 1)[1].split("\n\n")[0].split())
    by_family = {"SC": "tweets", "QA": "squad", "IR": "squad-retrieval"}
    for family, task in by_family.items():
        steps, batch = numbers(line.split(f"{family} ", 1)[1])[:2]
        cfg = TASKS[task].finetune
        assert (steps, batch) == (cfg.max_steps, cfg.batch_size), family
    tc = TASKS["wnut16"].finetune
    assert "TC one epoch × 16," in line and (tc.max_steps, tc.epochs, tc.batch_size) == (None, 1.0, 16)
    assert f"stride {TASKS['squad'].options.stride}" in line
    assert f"truncated to {TASKS['tweets'].max_length} tokens" in line
    assert f"QA windows {TASKS['squad'].max_length}" in line
    assert f"PubMedQA retrieval {TASKS['pubmedqa-retrieval'].max_length}" in line


def test_the_pocket_time_budget_total_is_its_rows_and_the_text_says_it():
    rows = table_rows(EVALUATION, "task | CPU s")
    total = rows.pop("**total**")
    seconds = sum(numbers(cells[1])[0] for cells in rows.values())
    assert tuple(name.split()[0] for name in rows) == SUITES["pocket"]
    assert numbers(total[1])[:2] == [seconds, round(seconds / 60, 1)]
    assert f"about {round(seconds / 60):g} CPU-minutes" in EVALUATION


def test_the_paper_and_biomed_suites_are_as_the_doc_counts_and_schedules_them():
    assert f"Paper 1's {len(SUITES['paper'])} datasets" in EVALUATION
    assert f"the unweighted mean over its {len(SUITES['biomed'])} tasks" in EVALUATION
    paper = table_rows(EVALUATION, "| setting")  # the paper suite's, the first of its kind
    steps, batch, micro = numbers(paper["SC, QA, IR, OntoNotes"][1])[:3]
    one_epoch = paper["CoNLL-2003, UNER"][1]
    for task in SUITES["paper"]:
        cfg = TASKS[task].finetune
        assert (cfg.batch_size, cfg.micro_batch_size) == (batch, micro), task
        optim = f"{cfg.warmup_ratio:.0%} warmup, AdamW {tuple(cfg.betas)}, eps {cfg.eps:.0e}, wd {cfg.weight_decay:g}"
        assert optim.replace("e-05", "e-5") in paper["SC, QA, IR, OntoNotes"][1], task
        if task in ("paper-conll2003", "paper-uner"):
            assert one_epoch.startswith(f"one epoch × {cfg.batch_size:g}") and cfg.max_steps is None
            assert cfg.epochs == 1
        else:
            assert cfg.max_steps == steps, task


def test_the_paper_grid_and_the_biomed_protocol_rows_are_the_code():
    paper = table_rows(EVALUATION, "| setting")
    grid = numbers(paper["grid"][1])
    assert tuple(grid[:-2]) == DEFAULT_LRS and tuple(range(int(grid[-2]), int(grid[-1]) + 1)) == DEFAULT_SEEDS
    biomed = EVALUATION.split("### biomed", 1)[1]
    rows = table_rows(biomed, "| setting")
    cls, ner = TASKS["biomed-gad"].finetune, TASKS["biomed-anatem"].finetune
    schedule = rows["schedule"][1]
    assert schedule.startswith(
        f"batch {cls.batch_size}, {cls.epochs:g} epochs (NER {ner.epochs:g}) of ceil(n / {cls.batch_size})"
    )
    said = f"betas ({cls.betas[0]:g}, {cls.betas[1]:g}), eps {cls.eps:g}, wd {cls.weight_decay:g} on matrices"
    assert said.replace("e-08", "e-8") in schedule and cls.warmup_ratio == 0 and "no warmup" in schedule
    stopping = rows["early stopping"][1]
    assert ner.patience == cls.patience and f"`FinetuneConfig.patience={cls.patience}`" in stopping
    assert f"after {cls.patience} epochs in a row" in stopping


def test_the_task_file_finetune_row_names_every_field_and_the_file_defaults():
    row = table_rows(EVALUATION, "field | meaning")["`finetune`"][1]
    named = [
        name for name in re.findall(r"`([a-z_]+)`", row) if name in {f.name for f in fields(FinetuneConfig)}
    ]
    assert sorted(set(named)) == sorted(f.name for f in fields(FinetuneConfig))
    for name in ("batch_size", "micro_batch_size", "max_steps"):
        assert f"`{name}` ({getattr(FILE_FINETUNE, name)}" in row, name


OPTIONS = {"sc/pair-sc": SCOptions, "tc": TCOptions, "qa": QAOptions, "ir": IROptions}


def test_the_task_file_options_row_names_each_familys_options_and_poolings():
    row = table_rows(EVALUATION, "field | meaning")["`options`"][1].split("; `pooling: model`")[0]
    parts = dict(part.split(" ", 1) for part in re.split(r"; (?=(?:tc|qa|ir) `)", row))
    assert set(parts) == set(OPTIONS)
    for family, options in OPTIONS.items():
        named = set(re.findall(r"`([a-z_0-9]+)`", re.sub(r"\([^()]*\)", "", parts[family])))
        assert named == {f.name for f in fields(options)} - {"labels"}, family
        if "pooling" in named:
            values = re.search(r"`pooling` \(([^)]*)\)", parts[family]).group(1)
            pooling = get_args(get_type_hints(options)["pooling"])
            assert set(re.findall(r"`([a-z]+)`", values)) == set(pooling), family
