"""`encoderlab data prepare` killed with SIGKILL at seeded moments after its first checkpoints, then
rerun: the prepared folder is byte-identical to an uninterrupted prepare (the in-process resume
tests are in test_prepare.py; this one adds real kills, with unflushed writes and torn appends)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
from corpus_fixtures import corpus_records, tokenizer_dir, write_jsonl  # noqa: F401 (fixture)


def _command(corpus, tok, out) -> list[str]:
    return [
        sys.executable, "-m", "encoderlab.cli", "data", "prepare", "--source", str(corpus), "--tokenizer", str(tok),
        "--out", str(out), "--decontaminate", "none", "--workers", "1", "--checkpoint-every", "1",
    ]  # fmt: skip


def _bytes(root) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name.endswith((".bin", ".npy"))
    }


def _chunks_done(out) -> int:
    try:
        return json.loads((out.with_name(out.name + ".tmp") / "progress.json").read_text())["chunks"]
    except (OSError, ValueError):
        return 0


@pytest.mark.slow
def test_sigkill_after_checkpoints_then_rerun_gives_the_same_bytes(tmp_path, tokenizer_dir):  # noqa: F811
    corpus = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(12_000))  # 47 chunks of 256
    clean = tmp_path / "clean"
    subprocess.run(_command(corpus, tokenizer_dir, clean), check=True, capture_output=True)
    rng = random.Random(7)
    out, kills, seen = tmp_path / "out", 0, []
    for _ in range(4):
        proc = subprocess.Popen(
            _command(corpus, tokenizer_dir, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        start = _chunks_done(out)
        while proc.poll() is None and _chunks_done(out) <= start:  # wait for one new checkpoint
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.2))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.communicate()
        seen.append(_chunks_done(out))
    assert kills >= 3 and seen == sorted(seen), seen  # every kill left a checkpoint at least as far
    done = subprocess.run(_command(corpus, tokenizer_dir, out), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["resumed_after_docs"] > 0
    assert _bytes(out) == _bytes(clean)
