"""A study whose dataset names a tokenizer of one's own is planned at that tokenizer's size.

The plan sized every model from scratch by the dataset's `vocab_size` field (8,192 by default), which only
a tokenizer the study trains reads: a study on a 1,024-id tokenizer folder was planned (parameters, FLOPs,
GPU-hours, the shape `--probe` times) as a model of 8,192 embedding rows, while its dataset line beside it
said "(1,024 ids)" and the runs trained 1,024 rows (`cputime.model_vocab`).
"""

from __future__ import annotations

from dataclasses import replace

from fake_study import small_spec, tiny_corpus
from tokenizers import Tokenizer

from encoderlab.data.sources import SourceConfig
from encoderlab.data.tokenizer import train_tokenizer
from encoderlab.model.config import ModelConfig
from encoderlab.study.cputime import probe_configs
from encoderlab.study.graph import pretraining
from encoderlab.study.plan import plan_study
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
