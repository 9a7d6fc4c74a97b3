"""A tiny real ladder end to end: 2 schedules x 3 sizes x 2 seeds trained by the study runner, read
back from the study folder, and advised on (about 25 CPU-seconds, most of it preparing the data and
saving the `small` runs; 6 steps of 4 x 32 tokens each)."""

from __future__ import annotations

import json

import pytest
from tests.study.fake_study import tiny_corpus

from encoderlab.advise.ladder import Schedule
from encoderlab.advise.study import LadderDesign, ladder_study
from encoderlab.advise.studyread import read_study
from encoderlab.cli import main
from encoderlab.errors import UserError
from encoderlab.study.files import dump_study, load_study_file
from encoderlab.study.graph import build_graph
from encoderlab.study.nodes import real_backend
from encoderlab.study.runner import run_study

MLM, CLM = Schedule.biphasic(0.0, 0.4), Schedule.biphasic(1.0, None)


def _design(corpus) -> LadderDesign:
    return LadderDesign(
        sizes=("tiny", "mini", "small"),
        schedules=(MLM, CLM),
        budgets=(2e-5,),  # far below min_steps: every run takes 6 steps of 4 x 32 tokens
        seeds=(0, 1),
        corpus=(str(corpus),),
        vocab_size=300,
        seq_len=32,
        micro_batch=4,
        min_steps=6,
        run_overrides={"precision": "fp32", "checkpoint.every": 6},  # one checkpoint per run: the last
        decontaminate=False,
    )


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("ladder")
    corpus = tiny_corpus(root / "corpus.jsonl", 80)
    backend = real_backend()
    backend.required_assets = lambda spec: []  # a local corpus; nothing is fine-tuned
    spec = ladder_study(_design(corpus))
    run_study(spec, root / "study", backend, progress=False)
    return spec, root / "study"


def test_the_ladder_spec_is_sizes_x_budgets_x_schedules_x_seeds(tmp_path):
    design = _design(tmp_path / "corpus.jsonl")
    spec = ladder_study(design)
    assert len(spec.runs) == 6 and {r.group for r in spec.runs} == {
        "tiny-x2e-05",
        "mini-x2e-05",
        "small-x2e-05",
    }
    assert {r.steps for r in spec.runs} == {6} and not any(r.evaluate for r in spec.runs)
    assert design.flops() == pytest.approx(2 * 2 * sum(6 * design.params(s) * 6 * 128 for s in design.sizes))
    with pytest.raises(UserError, match="two pretraining seeds"):
        LadderDesign(sizes=("tiny",), schedules=(MLM, CLM), seeds=(0,))


def test_a_ladder_round_trips_through_a_study_file(tmp_path):
    spec = ladder_study(_design(tmp_path / "corpus.jsonl"))
    path = tmp_path / "ladder.yaml"
    path.write_text(dump_study(spec, "encoderlab.advise.study"))
    assert load_study_file(path) == spec  # so `encoderlab study run ladder.yaml` runs this very ladder


@pytest.mark.slow
def test_a_tiny_real_ladder_trains_and_reads_back(study):
    spec, folder = study
    graph = build_graph(spec, real_backend())
    assert sum(n.kind == "pretrain" for n in graph) == 12
    runs, notes = read_study(folder, "tokens")  # a key every run logs: its last value is D
    assert notes == [] and len(runs) == 12
    assert {o.schedule for o in runs} == {MLM, CLM} and {o.seed for o in runs} == {0, 1}
    design = _design(folder)
    assert sorted({o.params for o in runs}) == sorted(design.params(s) for s in design.sizes)
    assert all(o.value == o.tokens == 6 * 128 and o.flops > 0 for o in runs)


@pytest.mark.slow
def test_advise_reads_the_tiny_ladder(study, tmp_path, capsys):
    _, folder = study
    runs, _ = read_study(folder, "tokens")
    records = (p for p in folder.glob("nodes/pretrain/*/run/metrics.jsonl"))
    if not any("val/mlm15" in p.read_text() for p in records):
        pytest.skip("training does not log val/mlm15 yet (the train-core helper adds it)")
    main(
        [
            "advise",
            str(folder),
            "--target-size",
            "1e8",
            "--target-tokens",
            "2e9",
            "--out",
            str(tmp_path / "a"),
        ]
    )
    advice = json.loads((tmp_path / "a" / "advice.json").read_text())
    assert {p["schedule"] for p in advice["predictions"]} == {"MLM-40", "CLM"}
    assert all(p["curve"] == "E + A*C^-a" for p in advice["predictions"]) and len(advice["runs"]) == len(runs)
    assert (
        tmp_path / "a" / "advise.png"
    ).exists() and "recommendation at the target" in capsys.readouterr().out
