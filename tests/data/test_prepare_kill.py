"""`encoderlab data prepare` killed with SIGKILL at seeded moments after its first checkpoints, then
rerun: the prepared folder is byte-identical to an uninterrupted prepare (the in-process resume
tests are in test_prepare.py; this one adds real kills, with unflushed writes and torn appends).

Every run is `encoderlab.cli.main` in a child forked by the kill harness's zygote
(tests/reliability/killharness.py), which imported transformers and `data prepare`'s modules once
(`killharness.DATA_PREPARE`; torch, which the command does not need, not at all): a fresh interpreter
per run spent most of this test importing them six times."""

from __future__ import annotations

import pytest
from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from prepare_kill_fixtures import assert_same_as_uninterrupted, kill_then_rerun


@pytest.mark.slow
def test_sigkill_after_checkpoints_then_rerun_gives_the_same_bytes(tmp_path, tokenizer_dir):  # noqa: F811
    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(12_000))  # 47 chunks of 256
    assert_same_as_uninterrupted(*kill_then_rerun(corpus, tokenizer_dir, tmp_path, seed=7))
