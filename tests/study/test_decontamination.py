"""A study's datasets are decontaminated against the evaluation sets the study itself fine-tunes on
(`needs.decontamination_sets`), recorded in the prepare node's key; never against whatever else
happens to be fetched on the machine (before, `auto`: the same key held other data elsewhere)."""

from __future__ import annotations

import json
import random

import pytest
from fake_study import small_spec, tiny_corpus
from tests.eval.fixtures import write_asset

from encoderlab.study.graph import build_graph
from encoderlab.study.needs import decontamination_sets
from encoderlab.study.nodes import real_backend, run_prepare
from encoderlab.study.runner import NodeContext
from encoderlab.study.spec import DataSpec, EvalSpec, RunSpec, StudySpec

WORDS = [f"w{i}" for i in range(40)]  # words the tiny corpus does not hold


def _spec(corpus, tasks=("boolq",), decontaminate=True) -> StudySpec:
    return small_spec(
        seq_len=32,
        steps=2,
        data=(DataSpec(name="main", corpus=(str(corpus),), vocab_size=300, decontaminate=decontaminate),),
        runs=(RunSpec(name="mlm40", recipe="pfs-mlm", params={"ratio": 0.4}),),
        eval=EvalSpec(suite="pocket", tasks=tasks, lrs=(1e-4,), seeds=(0,)),
        cka=(),
        claims=(),
    )


def test_the_sets_are_the_long_text_ones_among_the_studys_own_tasks(tmp_path):
    corpus = tmp_path / "c.jsonl"
    assert decontamination_sets(_spec(corpus, ("boolq", "tweets"))) == ("boolq",)
    squad = ("squad-shifts-amazon", "squad-shifts-new-wiki", "squad-shifts-nyt", "squad-shifts-reddit")
    assert decontamination_sets(_spec(corpus, ("squad", "brown-pos"))) == (*squad, "squad-v1-dev")
    assert decontamination_sets(_spec(corpus, ("tweets", "brown-pos"))) == ()


def test_an_own_corpus_is_cleaned_of_pubmedqas_abstracts_when_the_study_tests_on_them(tmp_path):
    """pubmedqa-retrieval and pubmedqa test on PubMedQA's abstracts (paper 2's demo and cpu scales): the `biomed`
    asset leaves them out, but an own biomedical corpus in their place was cleaned against nothing, and the plan
    said the tasks read no long-text set."""
    corpus = tmp_path / "c.jsonl"
    assert decontamination_sets(_spec(corpus, ("pubmedqa-retrieval",))) == ("pubmedqa",)
    assert decontamination_sets(_spec(corpus, ("pubmedqa", "tweets"))) == ("pubmedqa",)


def test_the_sets_are_in_the_prepare_key_only_when_there_are_some(tmp_path):
    corpus = tmp_path / "c.jsonl"
    keyed = build_graph(_spec(corpus), real_backend()).nodes["prepare/main"]
    off = build_graph(_spec(corpus, decontaminate=False), real_backend()).nodes["prepare/main"]
    none = build_graph(_spec(corpus, ("tweets",)), real_backend()).nodes["prepare/main"]
    assert keyed.config["against"] == ["boolq"] and "against" not in off.config | none.config
    assert keyed.key != off.key


@pytest.mark.slow
def test_another_fetched_evaluation_set_does_not_change_what_a_study_prepares(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    rng = random.Random(0)
    boolq, bbc = (" ".join(rng.choice(WORDS) for _ in range(30)) for _ in range(2))
    meta = {"question": "is it ?", "label": True, "split": "dev"}
    write_asset(tmp_path / "home", "boolq", [{"id": "dev-0", "text": boolq, "meta": meta}])
    # fetched, but not one of the study's tasks: its text stays in the corpus
    write_asset(tmp_path / "home", "bbc-news", [{"id": "b-0", "text": bbc, "meta": {"label": "tech"}}])
    docs = [json.loads(line) for line in tiny_corpus(tmp_path / "base.jsonl", 120).read_text().splitlines()]
    docs += [{"id": "has-boolq", "text": f"said {boolq} then"}, {"id": "has-bbc", "text": f"said {bbc} then"}]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs))
    spec = _spec(corpus)
    node = build_graph(spec, real_backend()).nodes["prepare/main"]
    out = tmp_path / "node"
    out.mkdir()
    run_prepare(NodeContext(node=node, out_dir=out, inputs={}, study_dir=tmp_path, spec=spec))
    info = json.loads((out / "data" / "meta.json").read_text())["decontamination"]
    assert info["against"] == ["boolq"] and info["removed_by_ngram"] == 1
