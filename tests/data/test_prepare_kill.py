"""`encoderlab data prepare` killed with SIGKILL at seeded moments after its first checkpoints, then
rerun: the prepared folder is byte-identical to an uninterrupted prepare (the in-process resume
tests are in test_prepare.py; this one adds real kills, with unflushed writes and torn appends).

Every run is `encoderlab.cli.main` in a child forked by the kill harness's zygote
(tests/reliability/killharness.py), which imported torch and encoderlab once: a fresh interpreter
per run spent most of this test importing them six times."""

from __future__ import annotations

import json
import random
import signal

import pytest
from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)
from prepare_kill_fixtures import chunks_done, metrics_lines, prepare_command, token_file_bytes
from tests.reliability.killharness import Zygote


@pytest.mark.slow
def test_sigkill_after_checkpoints_then_rerun_gives_the_same_bytes(tmp_path, tokenizer_dir):  # noqa: F811
    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(12_000))  # 47 chunks of 256
    clean, out = tmp_path / "clean", tmp_path / "out"
    rng, kills, seen = random.Random(7), 0, []
    with Zygote() as z:
        assert z.run(prepare_command(corpus, tokenizer_dir, clean), tmp_path / "job_clean")["returncode"] == 0
        for i in range(4):
            # progress.json is rewritten (a new file) at each checkpoint: one new checkpoint, then
            # a seeded moment up to 0.2 s later (mid-chunk), SIGKILL if the run is still going
            progress = out.with_name(out.name + ".tmp") / "progress.json"
            kill = {"kind": "tmpdir", "glob": str(progress), "after": rng.uniform(0.0, 0.2)}
            result = z.run(prepare_command(corpus, tokenizer_dir, out), tmp_path / f"job{i}", kill=kill)
            kills += result["signal"] == signal.SIGKILL
            seen.append(chunks_done(out))
        done = z.run(prepare_command(corpus, tokenizer_dir, out), tmp_path / "job_done")
    assert kills >= 3 and seen == sorted(seen), seen  # every kill left a checkpoint at least as far
    assert done["returncode"] == 0, done["stderr"]
    assert json.loads((done["dir"] / "stdout").read_text())["resumed_after_docs"] > 0
    assert token_file_bytes(out) == token_file_bytes(clean)
    assert metrics_lines(out) == metrics_lines(clean) and metrics_lines(clean)
