"""`bench data` end to end on a small corpus: every pipeline runs and tokenizes the same tokens."""

from __future__ import annotations

import pytest
from tests.data.corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)

from encoderlab.bench.data import FLOOR, KINDS, DataBench, bench_data
from encoderlab.errors import UserError


@pytest.mark.slow
def test_every_pipeline_runs_isolated_and_counts_the_same_tokens(tmp_path, tokenizer_dir):  # noqa: F811
    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(60))
    result = bench_data(
        DataBench(source=str(corpus), tokenizer=str(tokenizer_dir), workers=1, scale=2, work=tmp_path / "w")
    )
    runs = result["runs"]
    assert set(runs) == {f"{kind}_{label}" for kind in (*KINDS, FLOOR) for label in ("1x", "2x")}
    assert {runs[f"{kind}_2x"]["tokens"] for kind in (*KINDS, FLOOR)} == {2 * runs["encoderlab_1x"]["tokens"]}
    assert result["corpus_2x"]["docs"] == 2 * result["corpus_1x"]["docs"] == 120
    ratio = result["speedup_vs_datasets"]["datasets_2x_tokens_per_s"]
    direct = runs["encoderlab_2x"]["tokens_per_s"] / runs["datasets_2x"]["tokens_per_s"]
    assert ratio == pytest.approx(direct, abs=0.006)  # rounded to 2 decimals


def test_a_work_folder_holding_files_is_refused(tmp_path, tokenizer_dir):  # noqa: F811
    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(5))
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="non-empty folder that encoderlab did not create"):
        bench_data(DataBench(source=str(corpus), tokenizer=str(tokenizer_dir), work=tmp_path / "w"))
    assert [p.name for p in (tmp_path / "w").iterdir()] == ["keep.txt"]


def test_a_work_folder_of_an_earlier_bench_is_refused_untouched(tmp_path, tokenizer_dir):  # noqa: F811
    """Its prepared outputs would make the rerun's `prepare` a no-op that measures nothing."""
    from encoderlab.outdir import create_output

    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(5))
    create_output(tmp_path / "w", "bench data")
    (tmp_path / "w" / "corpus_1x.jsonl").write_text("{}")
    with pytest.raises(UserError, match="holds an earlier `bench data` run's files"):
        bench_data(DataBench(source=str(corpus), tokenizer=str(tokenizer_dir), work=tmp_path / "w"))
    assert (tmp_path / "w" / "corpus_1x.jsonl").read_text() == "{}"
