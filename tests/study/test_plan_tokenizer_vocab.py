"""A study whose dataset names a tokenizer of one's own is planned at that tokenizer's size.

The plan sized every model from scratch by the dataset's `vocab_size` field (8,192 by default), which only
a tokenizer the study trains reads: a study on a 1,024-id tokenizer folder was planned (parameters, FLOPs,
GPU-hours, the shape `--probe` times) as a model of 8,192 embedding rows, while its dataset line beside it
said "(1,024 ids)" and the runs trained 1,024 rows (`cputime.model_vocab`).
"""

from __future__ import annotations

import json
from dataclasses import replace

from fake_study import backend, small_spec, tiny_corpus
from tokenizers import Tokenizer

from encoderlab.data.sources import SourceConfig
from encoderlab.data.tokenizer import train_tokenizer
from encoderlab.model.config import ModelConfig
from encoderlab.study import plantext
from encoderlab.study.cputime import probe_configs
from encoderlab.study.graph import build_graph, pretraining
from encoderlab.study.marker import MARKER
from encoderlab.study.plan import plan_study
from encoderlab.study.runner import node_dir
from encoderlab.study.spec import DataSpec


def _spec(tmp_path, **data):
    corpus = tiny_corpus(tmp_path / "corpus.jsonl", 40)
    train_tokenizer((SourceConfig(location=str(corpus)),), 300, tmp_path / "tok", progress=False)
    ids = Tokenizer.from_file(str(tmp_path / "tok" / "tokenizer.json")).get_vocab_size()
    spec = small_spec()
    fields = dict(name="main", corpus=(str(corpus),), tokenizer=str(tmp_path / "tok")) | data
    return replace(spec, data=(DataSpec(**fields),), cka=()), ids


def test_a_tokenizer_folder_sizes_the_planned_models(tmp_path):
    spec, ids = _spec(tmp_path)
    assert ids != spec.data[0].vocab_size  # the field's default, which the plan read
    scratch = [r for r in plan_study(spec).runs if r.size_n is not None]
    assert scratch and {r.params for r in scratch} == {
        ModelConfig.from_size(spec.size, vocab_size=ids).num_params()
    }
    shapes = probe_configs(spec, pretraining(spec))
    vocabs = {cfg.data.synthetic_vocab for phases in shapes.values() if phases for _, cfg in phases}
    assert vocabs == {ids}  # the shape `--probe` times


def test_a_tokenizer_the_study_trains_is_planned_at_the_size_asked(tmp_path):
    spec, _ = _spec(tmp_path, tokenizer="train", vocab_size=512)
    scratch = [r for r in plan_study(spec).runs if r.size_n is not None]
    assert {r.params for r in scratch} == {ModelConfig.from_size(spec.size, vocab_size=512).num_params()}


def _trained(tmp_path):
    """A study that trains a 512-id tokenizer on a 40-document corpus (which holds fewer merges), its
    graph, and its prepare node."""
    corpus = tiny_corpus(tmp_path / "corpus.jsonl", 40)
    data = DataSpec(name="main", corpus=(str(corpus),), tokenizer="train", vocab_size=512)
    spec = replace(small_spec(), data=(data,), cka=())
    spec = replace(spec, eval=replace(spec.eval, suite="pocket"))  # plan_text reads a real suite's tasks
    graph = build_graph(spec, backend())
    return spec, graph, graph.nodes["prepare/main"]


def _dataset_line(plan) -> str:
    return next(x for x in plantext.plan_text(plan).splitlines() if x.startswith("dataset main"))


def _sized(spec, plan) -> set[int]:
    """The vocabularies the plan's parameters of models from scratch count."""
    scratch = {r.params for r in plan.runs if r.size_n is not None}
    return {
        v for v in range(1, 600) if ModelConfig.from_size(spec.size, vocab_size=v).num_params() in scratch
    }


def _probed(spec, plan) -> set[int]:
    """The vocabularies of the shapes `study plan --probe` times."""
    shapes = probe_configs(spec, pretraining(spec), plan.trained_vocabs)
    return {cfg.data.synthetic_vocab for phases in shapes.values() if phases for _, cfg in phases}


def test_a_study_trained_tokenizer_smaller_than_asked_sizes_the_plan_once_its_node_finished(tmp_path):
    # the plan said "482 ids of the 2,048 asked" beside parameters counted at 2,048 embedding rows
    spec, graph, node = _trained(tmp_path)
    ids = 434  # what the prepared data's meta.json records of the tokenizer it was tokenized with
    data = node_dir(tmp_path / "s", node) / "data"
    data.mkdir(parents=True)
    (data / "meta.json").write_text(
        json.dumps({"unique_tokens": {"train": 5_000}, "spec": {"vocab_size": ids}})
    )
    marker = {"name": node.name, "kind": node.kind, "key": node.key, "config": {}, "deps": [], "result": {}}
    (node_dir(tmp_path / "s", node) / MARKER).write_text(json.dumps(marker))
    plan = plan_study(spec, tmp_path / "s", graph)
    assert _sized(spec, plan) == {ids}
    assert _probed(spec, plan) == {ids}
    line = _dataset_line(plan)
    assert f"({ids:,} ids of the 512 asked: it held no more merges)" in line
    assert f"parameters counted at the {ids:,} ids it was trained to" in line


def test_a_tokenizer_trained_before_an_interruption_sizes_the_plan(tmp_path):
    spec, graph, node = _trained(tmp_path)
    folder = node_dir(tmp_path / "s", node) / "tokenizer"  # trained as the node does; no data yet
    train_tokenizer((SourceConfig(location=spec.data[0].corpus[0]),), 512, folder, progress=False)
    ids = Tokenizer.from_file(str(folder / "tokenizer.json")).get_vocab_size()
    assert ids < 512  # the corpus held fewer merges
    plan = plan_study(spec, tmp_path / "s", graph)
    assert _sized(spec, plan) == {ids}
    assert _probed(spec, plan) == {ids}
    assert f"parameters counted at the {ids:,} ids it was trained to" in _dataset_line(plan)


def test_a_tokenizer_not_trained_yet_is_planned_at_the_size_asked_and_the_plan_says_so(tmp_path):
    spec, graph, _ = _trained(tmp_path)
    plan = plan_study(spec, tmp_path / "s", graph)
    assert _sized(spec, plan) == _probed(spec, plan) == {512}
    assert "trained on the corpus (512 ids), parameters counted at the 512 ids asked (not trained yet)" in (
        _dataset_line(plan)
    )


def _held_tokenizer(folder, corpus, ids: int) -> None:
    """A tokenizer of `ids` ids in `folder`, recording `corpus` as it is now as what it was trained on (its
    `sources.json`, in the form `train_tokenizer` writes): made by hand, nothing trained."""
    import hashlib

    from tokenizers.models import WordLevel

    folder.mkdir(parents=True)
    Tokenizer(WordLevel({f"t{i}": i for i in range(ids)}, unk_token="t0")).save(
        str(folder / "tokenizer.json")
    )
    st = corpus.stat()
    read = {"path": str(corpus), "bytes": st.st_size, "complete": True, "mtime_ns": st.st_mtime_ns}
    read["sha256"] = hashlib.sha256(corpus.read_bytes()).hexdigest()
    record = {
        "recipe": {"sources": [{"location": str(corpus)}]},
        "sources": [{"files": [read], "exhausted": True}],
    }
    (folder / "sources.json").write_text(json.dumps({**record, "txt_reading": 2}))


def test_a_tokenizer_left_by_an_interruption_over_a_corpus_changed_since_is_counted_as_not_trained(tmp_path):
    """Was: counted at the ids of the interrupted node's tokenizer, trained on text the corpus no longer holds,
    which the rerun refuses (`checks.refuse_stale_data`) and another --out trains anew at the size asked."""
    from tests.study.stale_fixtures import edit_corpus

    spec, graph, node = _trained(tmp_path)
    folder, corpus = node_dir(tmp_path / "s", node), tmp_path / "corpus.jsonl"
    _held_tokenizer(folder / "tokenizer", corpus, 300)
    assert plan_study(spec, tmp_path / "s", graph).trained_vocabs == {"main": 300}  # the rerun reuses it
    edit_corpus(corpus)
    plan = plan_study(spec, tmp_path / "s", graph)
    assert plan.trained_vocabs == {} and _sized(spec, plan) == {512}
    assert "parameters counted at the 512 ids asked (not trained yet)" in _dataset_line(plan)
    # an earlier encoderlab's (no sources.json): what it read cannot be checked, and the rerun refuses it
    (folder / "tokenizer" / "sources.json").unlink()
    assert plan_study(spec, tmp_path / "s", graph).trained_vocabs == {}
    marker = {"name": node.name, "kind": node.kind, "key": node.key, "config": {}, "deps": [], "result": {}}
    (folder / MARKER).write_text(json.dumps({**marker, "key": "another"}))  # another key's: unfinished
    assert plan_study(spec, tmp_path / "s", graph).trained_vocabs == {}
    (folder / MARKER).write_text(json.dumps(marker))  # finished: the runs trained on it, whatever came after
    assert plan_study(spec, tmp_path / "s", graph).trained_vocabs == {"main": 300}
