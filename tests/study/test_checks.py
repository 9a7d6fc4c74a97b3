"""A study checks every pretraining node's rows before it writes anything (`study/checks.py`), with the
node's own checks: on the prepared data's count where it is known, else on an upper bound read from
the corpus. Before, the pretraining node refused them after the prepare node had run."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from fake_study import backend, small_spec, tiny_corpus

from encoderlab.errors import UserError
from encoderlab.study.graph import build_graph
from encoderlab.study.runchecks import PER_DOCUMENT, check_runs, tokens_at_most
from encoderlab.study.runner import node_dir, run_study
from encoderlab.study.spec import DataSpec, RunSpec


def _rows(spec, seq_len: int):
    """`spec` with every run's rows `seq_len` tokens long (a run override: the prepare node's key stays)."""
    return replace(spec, runs=tuple(replace(r, overrides={"layout.seq_len": seq_len}) for r in spec.runs))


def test_rows_longer_than_a_finished_prepare_nodes_data_are_refused_on_its_count(tmp_path):
    """A study resumed with longer rows: its prepare node is finished, so the rows are checked against
    the tokens it counted, in the reader's words, before anything runs."""
    folder = tmp_path / "s"
    spec = small_spec()
    run_study(spec, folder, backend(), progress=False)
    prepare = next(n for n in build_graph(spec, backend()) if n.kind == "prepare")
    (node_dir(folder, prepare) / "data").mkdir()
    meta = {"splits": {"train": {"tokens": 100}}, "spec": {"vocab_size": 300}}
    (node_dir(folder, prepare) / "data" / "meta.json").write_text(json.dumps(meta))
    longer = _rows(spec, 128)
    with pytest.raises(UserError) as refused:
        check_runs(longer, folder, build_graph(longer, backend()))
    assert str(refused.value) == (
        "study fake-pfs, run mlm40: the train split of dataset main's prepared data has 100 tokens, fewer "
        "than one row of layout.seq_len 128; prepare more text or lower layout.seq_len"
    )  # the override sets them (it said "lower seq_len", and the study's seq_len changes nothing under it)
    check_runs(_rows(spec, 100), folder, build_graph(_rows(spec, 100), backend()))  # one row fits
    # a recipe param (the study's `seq_len` would as well, but it is the prepare node's key): named as set
    longer = replace(spec, runs=tuple(replace(r, params={**r.params, "seq_len": 128}) for r in spec.runs))
    with pytest.raises(
        UserError, match=r"fewer than one row of seq_len 128; prepare more text or lower seq_len$"
    ):
        check_runs(longer, folder, build_graph(longer, backend()))


def test_the_bound_before_preparing_is_never_below_the_prepared_count(tmp_path):
    """The bound read before preparing (a token per byte, plus PER_DOCUMENT per document) holds the
    tokens that preparing the corpus gives; rows one token longer than it are refused, rows of it are not
    (the node decides, on the count); and a corpus with a row's worth stops the scan (None)."""
    from encoderlab.data.prepare import PrepareConfig, prepare, read_meta
    from encoderlab.data.sources import SourceConfig
    from encoderlab.data.tokenizer import train_tokenizer

    corpus = tiny_corpus(tmp_path / "corpus.jsonl", 40)
    data = DataSpec(name="main", corpus=(str(corpus),), vocab_size=300)
    bound, docs = tokens_at_most(data, 10**9)
    texts = [json.loads(line)["text"] for line in corpus.read_text().splitlines()]
    assert docs == 40 and bound == sum(len(t.encode()) + PER_DOCUMENT for t in texts)
    assert tokens_at_most(data, bound) is None  # enough for a row: no bound, the scan stopped
    sources = (SourceConfig(location=str(corpus)),)
    train_tokenizer(sources, 300, tmp_path / "tok", progress=False)
    out = prepare(
        PrepareConfig(sources=sources, tokenizer=str(tmp_path / "tok")), tmp_path / "data", progress=False
    )
    meta = read_meta(out)
    assert sum(s["tokens"] for s in meta["splits"].values()) <= bound
    spec = replace(small_spec(), data=(data,))
    with pytest.raises(
        UserError, match=rf"dataset main \(40 documents, before preparing\) has at most {bound} "
    ):
        check_runs(_rows(spec, bound + 1))
    check_runs(_rows(spec, bound))


def test_a_run_continuing_a_study_run_with_longer_rows_than_its_positions_is_refused_first():
    """A run continuing another run of the study on other data, with rows longer than the positions its
    base was built with (2,048 for rows of 64): the pretraining node refused it after the base had
    trained; now the study refuses it before anything runs, as it does for a start model on disk."""
    spec = small_spec()
    long = RunSpec(
        name="long",
        recipe="cpt-mlm",
        init="mlm40",
        data="other",
        group="cpt",
        params={"seq_len": 4096, "global_batch": 4, "steps": 10, "warmup": 1, "decay": 1},
    )
    spec = replace(
        spec, data=(*spec.data, DataSpec(name="other", corpus=("fake2",))), runs=(*spec.runs, long)
    )
    with pytest.raises(UserError) as refused:
        check_runs(spec)
    assert str(refused.value).startswith(
        "study fake-pfs: run long starts from run mlm40's final model, which accepts 2048 tokens, but its rows "
        "are 4096 tokens; give run long `params: {seq_len: 2048}`"
    )
    check_runs(replace(spec, runs=(*spec.runs[:-1], replace(long, params={**long.params, "seq_len": 2048}))))
