"""Continued pretraining reads text its base never saw: the stream continues after the base's last step."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from fake_study import backend, tiny_corpus

from encoderlab.errors import UserError
from encoderlab.objectives import objective_generator
from encoderlab.study.graph import build_graph
from encoderlab.study.nodes import run_config
from encoderlab.study.spec import DataSpec, EvalSpec, RunSpec, StudySpec
from encoderlab.train.build import build_source


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """A prepared corpus of ~6k tokens: more than the bases and their continuations read in all."""
    from encoderlab.data.prepare import PrepareConfig, prepare
    from encoderlab.data.sources import SourceConfig
    from encoderlab.data.tokenizer import train_tokenizer

    tmp = tmp_path_factory.mktemp("cpt")
    corpus = tiny_corpus(tmp / "corpus.jsonl", 400)
    sources = (SourceConfig(location=str(corpus)),)
    train_tokenizer(sources, 300, tmp / "tok", seed=0, progress=False)
    return prepare(
        PrepareConfig(sources=sources, tokenizer=str(tmp / "tok"), seed=0), tmp / "data", progress=False
    )


def _spec(**changes) -> StudySpec:
    fields = dict(
        name="cpt",
        scale="test",
        description="bases and their continuations",
        size="tiny",
        seq_len=32,
        micro_batch=2,
        grad_accum=2,
        steps=6,
        data=(DataSpec(name="main", corpus=("unused",)),),
        runs=(
            RunSpec(name="mlm-base", recipe="pfs-mlm", group="bases"),
            RunSpec(name="clm-base", recipe="pfs-clm", group="bases"),
            RunSpec(name="mlm+mlm", recipe="cpt-mlm", init="mlm-base", steps=5),
            RunSpec(name="clm+mlm", recipe="cpt-mlm", init="clm-base", steps=5),
        ),
        eval=EvalSpec(suite="fake", tasks=("sst",), lrs=(1e-4,), seeds=(0,)),
        baseline="mlm+mlm",
    )
    return StudySpec(**{**fields, **changes})


def _batches(node, data) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Every micro-batch the node trains on, as training prepares it: (model inputs, targets)."""
    cfg = run_config(node)
    cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, path=str(data)))
    source, out = build_source(cfg.data, cfg.layout), []
    for p in cfg.plan():
        for step in range(p.start, p.end):
            for m in range(cfg.layout.grad_accum):
                gen = objective_generator(cfg.seed, step, cfg.layout.slot(m, 0))
                x = p.phase.objective.prepare(source.batch(step, m, 0), source.spec, gen)
                out.append((x.input_ids, x.targets))
    return out


def test_no_continued_batch_is_a_batch_of_its_base(prepared):
    graph = build_graph(_spec(), backend())
    for base, cpt in (("mlm-base", "mlm+mlm"), ("clm-base", "clm+mlm")):
        seen = _batches(graph.nodes[f"pretrain/{base}"], prepared)
        new = _batches(graph.nodes[f"pretrain/{cpt}"], prepared)
        assert len(seen) == 12 and len(new) == 10
        for ids, targets in new:
            assert not any(torch.equal(ids, i) and torch.equal(targets, t) for i, t in seen)
            assert not any(torch.equal(ids, i) for i, _ in seen)  # not even the same tokens
    # the continuation is the stream's next rows: its first batch is what the base would read at step 6
    cfg = run_config(graph.nodes["pretrain/mlm+mlm"])
    base = run_config(graph.nodes["pretrain/mlm-base"])
    path = {"path": str(prepared)}
    after = build_source(dataclasses.replace(base.data, **path), base.layout).batch(6, 0, 0)
    first = build_source(dataclasses.replace(cfg.data, **path), cfg.layout).batch(0, 0, 0)
    assert cfg.data.step_offset == 6 and torch.equal(first.input_ids, after.input_ids)


def test_a_continuation_with_another_batch_skips_whole_steps_and_another_row_length_is_refused():
    spec = _spec()
    runs = tuple(
        dataclasses.replace(r, overrides={"layout.grad_accum": 3}, group="own") if r.name == "mlm+mlm" else r
        for r in spec.runs
    )
    graph = build_graph(dataclasses.replace(spec, runs=runs), backend())
    assert run_config(graph.nodes["pretrain/mlm+mlm"]).data.step_offset == 4  # 24 base rows / 6 per step
    runs = tuple(
        dataclasses.replace(r, overrides={"layout.seq_len": 16}, group="own") if r.name == "mlm+mlm" else r
        for r in spec.runs
    )
    with pytest.raises(
        UserError, match="continues mlm-base on the same data with sequence length 16, not 32"
    ):
        build_graph(dataclasses.replace(spec, runs=runs), backend())


def test_a_continuation_of_a_continuation_counts_its_base_offset_in_rows():
    """mlm+mlm reads 6 rows a step from step 4 (rows 24-53); its continuation, at 4 rows a step, starts
    at step 14 (row 56). Old code added mlm+mlm's 4 steps of 6 rows as if they were 4 steps of 4
    rows: step 12, replaying rows 48-53."""
    spec = _spec()
    runs = tuple(
        dataclasses.replace(r, overrides={"layout.grad_accum": 3}, group="own") if r.name == "mlm+mlm" else r
        for r in spec.runs
    ) + (RunSpec(name="mlm+mlm+mlm", recipe="cpt-mlm", init="mlm+mlm", steps=3, group="third"),)
    graph = build_graph(dataclasses.replace(spec, runs=runs), backend())
    first, second = (run_config(graph.nodes[f"pretrain/{n}"]) for n in ("mlm+mlm", "mlm+mlm+mlm"))
    assert first.data.step_offset == 4 and first.layout.global_batch_size == 6
    assert second.layout.global_batch_size == 4 and second.data.step_offset == 14


def test_the_synthetic_stream_is_offset_the_same_way():
    from encoderlab.data.batch import BatchLayout
    from encoderlab.train.config import DataConfig

    layout = BatchLayout(seq_len=16, micro_batch_size=2, grad_accum=2)
    later = build_source(DataConfig(step_offset=3), layout).batch(0, 1, 0)
    assert torch.equal(later.input_ids, build_source(DataConfig(), layout).batch(3, 1, 0).input_ids)
