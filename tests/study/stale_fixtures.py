"""The stale-corpus tests' study (test_stale_corpus.py, test_stale_tokenizer.py, test_hub_pinned_study.py,
test_report_hub_inputs.py): the fake study on a real corpus with a real prepare node, and an edit of that
corpus that keeps its size.

`stale_world` hands a test that study run to its end over `corpus.jsonl` (60 documents) in `s`, as the
tests built it each for itself: run once per test module and copied back into one fixed folder before
each test. The folder is fixed, not the test's own, because a node's key holds its corpus's path; the
copy keeps every file's bytes and mtime, so the study reads its corpus as it left it."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from fake_study import backend as fake_backend
from fake_study import pair_spec, tiny_corpus

from encoderlab.study.checks import check_start
from encoderlab.study.nodes import run_prepare
from encoderlab.study.runner import run_study
from encoderlab.study.spec import DataSpec


def stale_prepare(ctx) -> dict:
    """The real prepare node, plus the documents file the fake pretraining reads."""
    result = run_prepare(ctx)
    (ctx.out_dir / "data.json").write_text(json.dumps(["doc"] * 20))
    return result


def stale_backend(checked: bool = True):
    """The fake backend with the real prepare node, and the real study's checks where `checked`."""
    backend = fake_backend()
    backend.kinds["prepare"] = dataclasses.replace(backend.kinds["prepare"], run=stale_prepare)
    if checked:  # the real study's checks (a fake backend checks nothing before it runs)
        backend.check_start = lambda spec, study_dir, graph: check_start(spec, study_dir, graph)
    return backend


def cut_spec(data: DataSpec):
    """The fake study on dataset `data`, cut to the two runs its claims compare (`pair_spec`), one fine-tuning
    seed and no CKA: 28 nodes, not `small_spec`'s 151. What the tests of a real prepare node read is that node
    and that the nodes after it run (again); each node more was one more folder every test copied, hashed and
    (rerun) ran."""
    spec = pair_spec()
    return dataclasses.replace(
        spec,
        name="mini",
        data=(data,),
        eval=dataclasses.replace(spec.eval, seeds=(0,)),
        claims=tuple(c for c in spec.claims if c.kind != "cka_low_layers"),
    )


def stale_spec(corpus):
    """The fake study (`cut_spec`) on `corpus` (a real file)."""
    return cut_spec(DataSpec(name="main", corpus=(str(corpus),), vocab_size=300, decontaminate=False))


def edit_corpus(corpus) -> None:
    """Other documents in the file, at its old size and a later mtime."""
    lines = corpus.read_text().splitlines(keepends=True)
    corpus.write_text("".join(lines[::-1]))


@pytest.fixture(scope="module")
def stale_template(tmp_path_factory) -> tuple[Path, Path]:
    """(the fixed folder, its pristine copy): the study of `stale_spec` run to its end once per module."""
    world = tmp_path_factory.mktemp("stale") / "w"
    world.mkdir()
    corpus = tiny_corpus(world / "corpus.jsonl", 60)
    run_study(stale_spec(corpus), world / "s", stale_backend(), progress=False)
    template = world.with_name("template")
    shutil.copytree(world, template, symlinks=True)  # copy2: the corpus keeps its mtime
    return world, template


@pytest.fixture
def stale_world(stale_template) -> Path:
    """The fixed folder holding `corpus.jsonl` and the finished study `s`, as the run left them (whatever
    the test before changed in it is gone)."""
    world, template = stale_template
    shutil.rmtree(world)
    shutil.copytree(template, world, symlinks=True)
    return world
