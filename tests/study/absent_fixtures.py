"""What the tests of a study folder whose task files or prepared folder are gone share (test_absent_plan_report.py,
test_prepared_gone_resume.py): a fake backend whose prepare node is real, the study, the plan and a refusal.

Import `absent_inputs_registry` into a test module to make its autouse fixture apply there."""

from __future__ import annotations

import dataclasses

import pytest
from fake_study import backend as fake_backend
from fake_study import prepare as fake_prepare
from fake_study import small_spec, tiny_corpus
from tests.study.study_fixtures import polarity_task_file

from encoderlab.cli import main
from encoderlab.eval.tasks import TASKS
from encoderlab.study.graph import NodeKind
from encoderlab.study.needs import file_tasks
from encoderlab.study.nodes import run_prepare
from encoderlab.study.spec import DataSpec


@pytest.fixture(autouse=True)
def absent_inputs_registry(monkeypatch):
    """The task file's task is registered while a test runs, then forgotten; the CLI's nodes are `absent_backend`'s."""
    before = dict(TASKS)
    monkeypatch.setattr("encoderlab.study.cli.default_backend", absent_backend)
    yield
    TASKS.clear()
    TASKS.update(before)


def absent_prepare(ctx) -> dict:
    """The real prepare node (it reads a `--prepared` folder), then the fake one's data for the fake runs."""
    return {**run_prepare(ctx), **fake_prepare(ctx)}


def absent_backend():
    backend = fake_backend()
    backend.file_tasks = file_tasks  # the real loader: a missing file is refused as a real study's
    backend.kinds = {**backend.kinds, "prepare": NodeKind(run=absent_prepare)}
    return backend


def absent_spec(tmp_path, prepared=None):
    """`small_spec` with the task of a real task file only, on a real corpus (or a folder prepared from
    it, with its tokenizer), one LR and seed, no CKA (the plan refuses the fake's few texts)."""
    (tmp_path / "tasks").mkdir(exist_ok=True)
    polarity_task_file(tmp_path / "tasks")
    corpus = tmp_path / "corpus.jsonl"
    ev = dataclasses.replace(
        small_spec().eval,
        suite=None,
        checkpoint_lrs=(),
        lrs=(1e-4,),
        seeds=(0,),
        task_files=(str(tmp_path / "tasks" / "polarity.yaml"),),
    )
    tok = str(tmp_path / "tok") if prepared else "train"
    main_data = DataSpec(
        name="main", corpus=(str(corpus),), tokenizer=tok, prepared=prepared, decontaminate=False
    )
    spec = small_spec(eval=ev, data=(main_data,), cka=())
    kept = (c for c in spec.claims if c.kind != "cka_low_layers" and c.family in (None, "sc"))  # polarity: sc
    return dataclasses.replace(spec, claims=tuple(kept))


def tiny_prepared_folder(tmp_path):
    """A folder prepared from the tiny corpus with a tokenizer trained on it."""
    from encoderlab.data.prepare import PrepareConfig, prepare
    from encoderlab.data.sources import SourceConfig, parse_source
    from encoderlab.data.tokenizer import train_tokenizer

    corpus = tiny_corpus(tmp_path / "corpus.jsonl", 60)
    train_tokenizer(SourceConfig(location=str(corpus)), 300, tmp_path / "tok", progress=False)
    cfg = PrepareConfig(
        sources=(parse_source(str(corpus)),), tokenizer=str(tmp_path / "tok"), decontaminate=()
    )
    return prepare(cfg, tmp_path / "prepared", workers=1, progress=False)


def plan_text(capsys, study) -> str:
    main(["study", "plan", str(study)])
    return capsys.readouterr().out


def refusal_text(capsys, argv) -> str:
    with pytest.raises(SystemExit):
        main(argv)
    return capsys.readouterr().err.strip().removeprefix("encoderlab: error: ")
