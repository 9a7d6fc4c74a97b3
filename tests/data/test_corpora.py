"""The named hub corpora: each name reads its corpus's text through the hub path, on a fixture with
the real layout (tests/data/hub_corpus_fixtures.py), checked against the parquet files themselves."""

from __future__ import annotations

import dataclasses

import pyarrow.parquet as pq
import pytest
from hub_corpus_fixtures import (
    BIOMED_ENRICHED,
    FINEWEB_EDU,
    STARCODERDATA,
    make_biomed_enriched,
    make_fineweb_edu,
    make_starcoderdata,
)

from encoderlab.data.corpora import CORPORA, HubCorpus
from encoderlab.data.hub import HUB_DATA_ENV
from encoderlab.data.mixing import mix_documents
from encoderlab.data.sources import SourceStats, iter_documents, parse_source
from encoderlab.errors import UserError


@pytest.fixture(scope="module")
def corpora_hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub")
    make_fineweb_edu(root, files_10bt=2, rows_per_file=10)
    make_biomed_enriched(root)
    make_starcoderdata(root)
    return root


# name -> (repo, files the name must read, their text column)
EXPECTED = {
    "fineweb-edu-10bt": (FINEWEB_EDU, "sample/10BT/*.parquet", "text"),
    "fineweb-edu-100bt": (FINEWEB_EDU, "sample/100BT/*.parquet", "text"),
    "fineweb-edu-350bt": (FINEWEB_EDU, "sample/350BT/*.parquet", "text"),
    "biomed-enriched": (BIOMED_ENRICHED, "data/commercial-*.parquet", "text"),
    "starcoderdata-python": (STARCODERDATA, "python/*.parquet", "content"),
}


def test_the_table_is_typed_and_covers_general_biomedical_and_code():
    assert set(CORPORA) == set(EXPECTED)
    for name, corpus in CORPORA.items():
        assert isinstance(corpus, HubCorpus) and corpus.name == name and corpus.card and corpus.domain
        assert (corpus.declared_tokens is None) == (corpus.token_unit is None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        CORPORA["fineweb-edu-10bt"].config = "x"  # type: ignore[misc]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_name_reads_its_corpus_text_in_file_order(corpora_hub, monkeypatch, name):
    monkeypatch.setenv(HUB_DATA_ENV, str(corpora_hub))
    repo, pattern, column = EXPECTED[name]
    files = sorted((corpora_hub / repo).glob(pattern))
    expected = [t for f in files for t in pq.read_table(f, columns=[column]).column(0).to_pylist()]
    stats = SourceStats(name)
    assert [d.text for d in iter_documents(parse_source(name), stats)] == expected
    assert stats.identity["hub_id"] == repo and len(stats.identity["files"]) == len(files)


def test_a_name_keeps_its_weight_in_a_mixture_and_unknown_names_list_the_corpora(corpora_hub, monkeypatch):
    monkeypatch.setenv(HUB_DATA_ENV, str(corpora_hub))
    cfg = parse_source("biomed-enriched#weight=3")
    assert cfg.weight == 3 and CORPORA["biomed-enriched"].source(weight=3).weight == 3
    docs = list(mix_documents([cfg, parse_source("starcoderdata-python")], seed=1))
    assert {d.id.split("#")[0] for d in docs} == {BIOMED_ENRICHED, STARCODERDATA}
    with pytest.raises(UserError, match=r"or a hub corpus \(biomed-enriched, fineweb-edu-100bt"):
        list(iter_documents(parse_source("fineweb-edu-1bt")))


def test_a_name_keeps_its_hf_files_slice_and_refuses_an_option_its_row_sets(corpora_hub, monkeypatch):
    """`fineweb-edu-10bt#hf_files=0:1` (the form `study plan` tells a sharded prepare to use) read the whole
    sample: the name's expansion dropped the slice. An option the row sets, given otherwise, was ignored."""
    monkeypatch.setenv(HUB_DATA_ENV, str(corpora_hub))
    first = sorted((corpora_hub / FINEWEB_EDU).glob("sample/10BT/*.parquet"))[0]
    stats = SourceStats("fineweb-edu-10bt#hf_files=0:1")
    texts = [d.text for d in iter_documents(parse_source("fineweb-edu-10bt#hf_files=0:1"), stats)]
    assert texts == pq.read_table(first, columns=["text"]).column(0).to_pylist()
    assert stats.identity["file_span"] == [0, 1]
    assert len(list(iter_documents(parse_source("starcoderdata-python#text_field=content")))) > 0
    with pytest.raises(UserError, match=r"text_field=body differs from what the named corpus reads .*hf:"):
        list(iter_documents(parse_source("fineweb-edu-10bt#text_field=body")))


def test_fineweb_edu_samples_read_alike_with_and_without_a_date_column(tmp_path, monkeypatch):
    """Whether FineWeb-Edu's sample files carry `date` is unverified (its card declares the features, `date`
    among them, for the `default` config only: make_fineweb_edu's docstring). Both layouts give the
    same documents: nothing reads a column but `text`."""
    texts = {}
    for with_date in (True, False):
        root = tmp_path / str(with_date)
        make_fineweb_edu(root, files_10bt=2, rows_per_file=10, sample_date=with_date)
        files = sorted((root / FINEWEB_EDU).glob("sample/10BT/*.parquet"))
        assert ("date" in pq.read_schema(files[0]).names) is with_date
        monkeypatch.setenv(HUB_DATA_ENV, str(root))
        texts[with_date] = [d.text for d in iter_documents(parse_source("fineweb-edu-10bt"))]
    assert texts[True] == texts[False] and len(texts[True]) == 20
