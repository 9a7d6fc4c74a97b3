"""A study's evaluation cost, counted from its eval nodes (`study/evalcost.py`): it was a flat 10% of the
pretraining GPU-hours, whatever the fine-tuning grid, epochs and task sizes. Each optimizer step takes at
least 50 ms and each scoring batch of 64 at least a third of that, whatever its FLOPs: without the floor,
paper2-detour's 245 runs of 16 short sentences a step came to 1.0 GPU-hour, "at most". The floors are
set for 12 layers and scale with the model's: it was one value for every model size."""

from __future__ import annotations

import math

import pytest
from fake_study import backend, small_spec

from encoderlab.cli import main
from encoderlab.study.catalog import estimate_minutes, get_study
from encoderlab.study.graph import build_graph
from encoderlab.study.nodes import real_backend
from encoderlab.study.plan import plan_study
from encoderlab.study.scales import GPU_FLOPS, GPUS, START_MODEL_LAYERS, START_MODEL_PARAMS

H100_HOUR = GPU_FLOPS * 3600  # FLOPs of one GPU-hour at the pretraining estimate's 40% of peak
STEP_S, BATCH_S = 0.05, 0.05 / 3  # the floors at 12 layers: an optimizer step, a scoring batch of 64 texts


def _seconds(n, layers, steps, trained, batches, scored):
    """One run's GPU-seconds for a model of `n` parameters and `layers`: each part's FLOPs at 40% MFU, or
    its floor (x layers / 12)."""
    return max(6 * n * trained / GPU_FLOPS, steps * STEP_S * layers / 12) + max(
        2 * n * scored / GPU_FLOPS, batches * BATCH_S * layers / 12
    )


def _planned(spec):
    from encoderlab.study.evalcost import with_evaluation

    graph = build_graph(spec, real_backend())
    return with_evaluation(plan_study(spec, None, graph), graph), graph


def test_a_retrieval_grid_costs_its_steps_and_its_scoring():
    """paper2-detour-code at gpu-210m: 7 models (ModernBERT-base as is and 6 continued runs) x 5 seeds on
    code-retrieval, 100 steps of 32 (query, function) pairs at 256 tokens each (~4 s of FLOPs for 210m,
    9 s at 50 ms x 22 / 12 layers a step), then its 169 + 169 validation and 246 + 246 test texts encoded
    once (6 + 8 batches of 64; its split as loaded, `evalcost.POCKET_MEASURED`)."""
    spec = get_study("paper2-detour-code", "gpu-210m")
    plan, _ = _planned(spec)
    base = "answerdotai/ModernBERT-base"
    models = [
        (START_MODEL_PARAMS[base], START_MODEL_LAYERS[base]),
        *((r.params, r.layers) for r in plan.runs),
    ]
    assert {layers for _, layers in models} == {22}  # ModernBERT-base's, continued
    per_model = [_seconds(n, k, 100, 100 * 32 * (2 * 256), 6 + 8, (338 + 492) * 256) for n, k in models]
    assert len(models) == 7 and plan.evaluation.runs == 35 and plan.evaluation.steps == 35 * 100
    assert plan.evaluation.gpu_hours == pytest.approx(5 * sum(per_model) / 3600)
    assert plan.evaluation.at_max_length and not plan.evaluation.early_stop and not plan.evaluation.uncounted
    total = plan.gpu_hours + plan.evaluation.gpu_hours
    assert plan.total_gpu_hours == pytest.approx(total)
    assert estimate_minutes(spec) == round(total * 60 / GPUS, -1)  # was 1.1 x pretraining


def test_an_epoch_task_validates_every_epoch_at_a_floor_per_step(capsys):
    """biomed-gad at gpu-210m (paper 2's protocol): 10 epochs of ceil(4,261 / 16) steps of 16 sentences
    of ~40 tokens (~8 s of FLOPs a run, 245 s at ModernBERT-base's 50 ms x 22 / 12 layers a step),
    validation (535, 9 batches) after each epoch, the test (534, 9 batches) once. It may stop early
    (patience 3): the plan says so, and prints no "at most" (the floor is no upper bound)."""
    from encoderlab.study.evalcost import Evaluated, eval_cost

    spec = get_study("paper2-detour", "gpu-210m")
    plan, graph = _planned(spec)
    gad = [n for n in graph if n.kind == "eval" and n.config["task"] == "biomed-gad"]
    models = {r.model: Evaluated(r.params, r.layers, r.positions) for r in plan.runs}
    steps = 10 * math.ceil(4261 / 16)
    start = (START_MODEL_PARAMS["answerdotai/ModernBERT-base"], 22)
    ns = [models[x.config["model"]][:2] if x.config["model"] in models else start for x in gad]
    seconds = sum(_seconds(n, k, steps, steps * 16 * 40, 10 * 9 + 9, (10 * 535 + 534) * 40) for n, k in ns)
    cost = eval_cost(gad, models)
    assert cost.runs == len(gad) == 35 and cost.steps == 35 * steps and cost.early_stop
    assert cost.gpu_hours == pytest.approx(seconds / 3600)
    main(["study", "plan", "paper2-detour", "--scale", "gpu-210m"])
    out = capsys.readouterr().out
    assert (
        f"evaluation: ~{plan.evaluation.gpu_hours:,.1f} GPU-hours (245 fine-tuning runs, "
        f"{plan.evaluation.steps:,} optimizer steps; each step max(FLOPs at 40% MFU, 50 ms per 12 layers), "
        "a scoring batch max(FLOPs, 17 ms per 12 layers), study/evalcost.py; early stopping can shorten "
        "the runs with patience)\n"
    ) in out
    assert "evaluation adds ~10%" not in out  # the flat allowance
    assert f"total: ~{plan.total_gpu_hours:,.1f} GPU-hours\n" in out
    assert 40 < plan.evaluation.gpu_hours < 70  # 2.0M steps at 92 ms: 51 h (1.0 h in FLOPs alone)


def test_the_floor_scales_with_the_models_layers():
    """paper1-pfs at demo scale: 24 runs of the 4-layer tiny model, 60 steps each, at 50 ms x 4 / 12 a
    step: 24 s and their scoring; at 50 ms a step it was 80 GPU-seconds. A 24-layer model's floor is twice
    a 12-layer one's."""
    from encoderlab.study.evalcost import NodeWork

    plan, graph = _planned(get_study("paper1-pfs", "demo"))
    evals = [n for n in graph if n.kind == "eval"]
    assert len(evals) == plan.evaluation.runs == 24 and plan.evaluation.steps == 24 * 60
    assert 20 < plan.evaluation.gpu_hours * 3600 < 40  # 1,440 steps x 17 ms + scoring; was 80 s
    assert {r.layers for r in plan.runs} == {4}
    work = NodeWork(trained=1.0, steps=100, scored=1.0, batches=30, early_stop=False, at_max_length=False)
    assert work.seconds(1e6, 12) == pytest.approx(100 * STEP_S + 30 * BATCH_S)
    assert work.seconds(1e6, 24) == pytest.approx(2 * work.seconds(1e6, 12))


def test_a_task_of_unknown_size_is_named_not_counted():
    """The fake backend's tasks are in no registry (but squad, the pocket suite's): their cost is
    unknown, and the plan says so rather than counting them as free."""
    from encoderlab.study.evalcost import with_evaluation

    spec = small_spec()
    graph = build_graph(spec, backend())
    cost = with_evaluation(plan_study(spec, None, graph), graph).evaluation
    assert cost.gpu_hours > 0 and cost.runs == len([n for n in graph if n.config.get("task") == "squad"])
    assert cost.uncounted == ("mnli", "ner", "sst")
    assert cost.text().endswith(
        "; evaluation of 3 tasks not counted (size or model parameters unknown): mnli, ner, sst"
    )


def test_a_plan_says_its_total_leaves_out_what_it_did_not_count(monkeypatch, capsys):
    """A task of unknown size beside counted ones: named, and the total says it leaves it out."""
    import encoderlab.study.evalcost as evalcost

    monkeypatch.delitem(evalcost.TASK_SIZES, "tweets")  # as a built-in task added without a size
    main(["study", "plan", "paper1-pfs", "--scale", "demo"])
    lines = capsys.readouterr().out.splitlines()
    assert any(
        line.startswith("evaluation: ~")
        and " (15 fine-tuning runs, 900 optimizer steps; " in line
        and line.endswith("; evaluation of 1 task not counted (size or model parameters unknown): tweets")
        for line in lines
    )
    assert any(
        line.startswith("total: ~") and line.endswith(" (without the tasks not counted)") for line in lines
    )


def test_a_plan_counting_nothing_names_what_it_left_out_and_no_total(monkeypatch, capsys):
    """Its only task of unknown size: the line read `~0.0 GPU-hours (0 fine-tuning runs, 0 optimizer
    steps; each step at least ...)`, then a total equal to the pretraining's."""
    import encoderlab.study.evalcost as evalcost

    monkeypatch.delitem(evalcost.TASK_SIZES, "code-retrieval")
    main(["study", "plan", "paper2-detour-code", "--scale", "gpu-210m"])
    lines = capsys.readouterr().out.splitlines()
    evaluation = [line for line in lines if line.startswith("evaluation: ") and "counted" in line]
    assert evaluation == ["evaluation: 1 task not counted (size or model parameters unknown): code-retrieval"]
    assert not any(line.startswith("total: ") for line in lines)
    assert evalcost.EvalCost(gpu_hours=0.0, runs=0).text() == "evaluation: none (no fine-tuning runs)"


def test_every_built_in_task_has_a_size():
    """A built-in task without one would be named as not counted in every plan (and left out of
    `study list`'s times)."""
    from encoderlab.eval.tasks.registry import BUILTIN
    from encoderlab.study.evalcost import TASK_SIZES, task_size

    assert set(TASK_SIZES) == set(BUILTIN)
    assert all(task_size(name) is not None for name in BUILTIN)


def test_a_task_file_is_counted_from_its_rows(tmp_path):
    """A task of one's own: its loaded rows at characters / 4 (+2 special tokens) per example."""
    from encoderlab.eval.tasks import TASKS
    from encoderlab.eval.tasks.custom import load_task_files
    from encoderlab.study.evalcost import task_size

    for split, n in (("train", 50), ("validation", 10), ("test", 20)):  # texts of 40 characters
        lines = [f"{split[:2]}{i:04d}{'x' * 34},{'a' if i % 2 else 'b'}" for i in range(n)]
        (tmp_path / f"{split}.csv").write_text("text,label\n" + "\n".join(lines) + "\n")
    (tmp_path / "mine.yaml").write_text(
        "name: mine\nfamily: sc\ndata: {train: train.csv, validation: validation.csv, test: test.csv}\n"
        "labels: [a, b]\nmax_length: 64\n"
    )
    before = dict(TASKS)
    try:
        load_task_files([tmp_path / "mine.yaml"])
        task, size = task_size("mine")
    finally:
        TASKS.clear()
        TASKS.update(before)
    assert (size.train, size.val, size.test) == (50, 10, 20)
    assert size.tokens == size.eval_tokens == 40 / 4 + 2


def _ir_file_work(folder, negatives: bool, max_length: int):
    """The `node_work` of a 10-step eval node on an IR task file of 50 training rows whose query, document
    and (with `negatives`) hard negative are 40 characters each: 10 tokens + 2 special tokens a text."""
    import json
    from types import SimpleNamespace

    from encoderlab.eval.tasks import TASKS
    from encoderlab.eval.tasks.custom import load_task_files
    from encoderlab.study.evalcost import node_work, task_size

    columns = ("query", "document", "negative") if negatives else ("query", "document")
    rows = [{c: f"{i:04d}{c[0] * 36}" for c in columns} for i in range(50)]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    tests = [{"query": f"test query {i}", "document": f"test document {i}"} for i in range(10)]
    (folder / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in tests))
    (folder / "ir.yaml").write_text(
        f"name: ir\nfamily: ir\ndata: {{train: train.jsonl, test: test.jsonl}}\nmax_length: {max_length}\n"
    )
    before = dict(TASKS)
    try:
        load_task_files([folder / "ir.yaml"])
        task, size = task_size("ir")
    finally:
        TASKS.clear()
        TASKS.update(before)
    return node_work(SimpleNamespace(max_steps=10, trained_by=None), task, size), task.finetune.batch_size


@pytest.mark.parametrize("max_length", [64, 8])
def test_an_ir_task_file_of_triplets_counts_three_texts_a_training_row(tmp_path, max_length):
    """A task file's `negative` column (hard negatives: `custom_rows.ir_negatives`) is a third text each
    training row encodes on its own, each at most `max_length` (counted as two: the triplets' 120 characters
    were capped at 2 x 8 tokens a row, and at 64 counted 2 special tokens a row for three texts)."""
    per_text = min(40 / 4 + 2, max_length)
    for negatives, texts in ((True, 3), (False, 2)):
        folder = tmp_path / str(texts)
        folder.mkdir()
        work, batch = _ir_file_work(folder, negatives, max_length)
        assert work.steps == 10 and work.trained == 10 * batch * texts * per_text


def test_a_cpu_scale_plan_shows_seconds_or_minutes_not_tenths_of_hours(capsys):
    """At demo and cpu scales every line read `0.0 GPU-hours`; then the cpu scale's evaluation `~0.3
    GPU-hours` and its runs' GPU-h `5e-05`."""
    from encoderlab.study.evalcost import hours_text

    times = (0, 0.031 / 3600, 2.7 / 3600, 31 / 3600, 0.05, 0.3, 0.999, 1.0, 1319.94)
    assert [hours_text(h) for h in times] == [
        "0.0 GPU-hours",
        "0.031 GPU-seconds",
        "2.7 GPU-seconds",
        "31 GPU-seconds",
        "3 GPU-minutes",
        "18 GPU-minutes",
        "60 GPU-minutes",
        "1.0 GPU-hours",
        "1,319.9 GPU-hours",
    ]
    main(["study", "plan", "paper1-pfs", "--scale", "cpu"])
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("evaluation: ~") and line.split()[2] == "GPU-minutes" for line in lines)
    runs = [line.split() for line in lines if line.startswith(("mlm40/s0 ", "clm-12k "))]
    assert [run[6] for run in runs] == ["<0.01", "<0.01"]  # its GPU-h (after params and N)


def test_a_task_of_no_max_length_counts_its_texts_at_the_models_context():
    """Paper 1's tasks take the evaluated model's context (`max_length` None: 0.99 x its positions,
    `Task.for_model`): MLDR's ~3.3k-token documents were counted whole, though paper1-pfs's models (from
    scratch at 2,048 positions) read 2,028 tokens of each, and MiniLM (512 positions) 507."""
    import dataclasses

    from encoderlab.eval.tasks import TASKS
    from encoderlab.study.evalcost import MLDR_DOC_TOKENS, Evaluated, eval_cost, node_work, task_size
    from encoderlab.study.nodeconfig import EvalNode

    plan, graph = _planned(get_study("paper1-pfs", "gpu-210m"))
    assert {r.positions for r in plan.runs} == {2048}
    mldr = [n for n in graph if n.kind == "eval" and n.config["task"] == "paper-mldr"]
    task, size = task_size("paper-mldr")
    assert TASKS["paper-mldr"].max_length is None and task.finetune.select == "last"
    assert MLDR_DOC_TOKENS > 2028
    texts = size.val + size.test  # validated once, tested once
    cfg = EvalNode.of(mldr[0])
    assert node_work(cfg, task, size, positions=2048).scored == texts * 2028
    assert node_work(cfg, task, size).scored == texts * MLDR_DOC_TOKENS  # positions unknown: uncapped
    assert node_work(cfg, task, size, positions=512).scored == texts * 507
    models = {r.model: Evaluated(r.params, r.layers, r.positions) for r in plan.runs}
    whole = {m: e._replace(positions=None) for m, e in models.items()}
    assert eval_cost(mldr, models).gpu_hours < 0.7 * eval_cost(mldr, whole).gpu_hours
    as_is = dataclasses.replace(mldr[0], config={**mldr[0].config, "source": "minilm"})
    minilm = eval_cost([as_is], {})  # a start model evaluated as is: its positions from `scales`
    work = node_work(EvalNode.of(as_is), task, size, positions=512)
    assert minilm.gpu_hours == pytest.approx(work.seconds(22.7e6, 6) / 3600)


def test_a_qa_task_on_an_epochs_schedule_is_counted_as_a_lower_bound(monkeypatch):
    """A QA run on an epochs schedule (a task file's, no `max_steps`) steps through the windows of its
    contexts, a long one several: its examples' steps were counted as the run's, as `eval --check` once
    printed them. Now "at least", as `eval --check` says (one test, `Task.steps_at_least`); a study's
    step cap (`max_steps`) or a task's own keeps the count exact."""
    import dataclasses

    import encoderlab.study.evalcost as evalcost
    from encoderlab.eval.spec import FinetuneConfig
    from encoderlab.study.nodeconfig import EvalNode

    plan, graph = _planned(get_study("paper1-pfs", "gpu-210m"))
    squad = [n for n in graph if n.kind == "eval" and n.config["task"] == "paper-squad"]
    task, size = evalcost.task_size("paper-squad")
    epochs = dataclasses.replace(task, finetune=FinetuneConfig(max_steps=None, epochs=1.0, batch_size=32))
    cfg = EvalNode.of(squad[0])
    assert cfg.max_steps is None and not evalcost.node_work(cfg, task, size).steps_at_least  # 1000 steps
    work = evalcost.node_work(cfg, epochs, size)
    assert work.steps == math.ceil(size.train / 32) and work.steps_at_least
    capped = dataclasses.replace(cfg, max_steps=50)  # the study's cap: the run's steps exactly
    assert not evalcost.node_work(capped, epochs, size).steps_at_least
    monkeypatch.setattr(evalcost, "task_size", lambda name: (epochs, size) if name == "paper-squad" else None)
    models = {r.model: evalcost.Evaluated(r.params, r.layers, r.positions) for r in plan.runs}
    cost = evalcost.eval_cost(squad, models)
    assert cost.steps_at_least and cost.steps == len(squad) * work.steps
    steps = f"{cost.steps:,}"
    assert f", at least {steps} optimizer steps; each step " in cost.text()
    assert (
        "; QA runs on an epochs schedule counted at least (a long context makes several windows)"
        in cost.text()
    )
