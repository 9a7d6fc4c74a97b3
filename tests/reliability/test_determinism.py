"""Same seed, same CPU results, bit for bit, across processes (issue 8, item 4; docs/determinism.md).

Two fresh interpreters (different PYTHONHASHSEED, so set/dict-order accidents would show) run the
same `encoderlab pretrain` command; weights and every logged number except wall-clock ones must be
identical. A third run with another seed must differ, so the comparison can fail.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file
from tests.reliability.killharness import read_jsonl

TIMING = {"tokens_per_s", "mfu"}
ARGV = [
    "pretrain",
    "--recipe",
    "smoke-clm-mlm",
    "--param",
    "steps=16",
    "--set",
    "layout.seq_len=32",
    "checkpoint.every=8",
    "validation.rows=4",  # one micro-batch per held-out loss; the default 64 rows took a quarter of a run
    "data.synthetic_vocab=128",
    "device=cpu",
    "progress=false",
]


def _pretrain(out, hash_seed: int, *extra: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": str(hash_seed), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "encoderlab.cli", *ARGV, *extra, "--out", str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _record(run) -> tuple[list[dict], dict[str, torch.Tensor]]:
    rows = [{k: v for k, v in r.items() if k not in TIMING} for r in read_jsonl(run / "metrics.jsonl")]
    return rows, load_file(str(run / "final" / "model.safetensors"))


@pytest.mark.slow
def test_same_seed_is_bit_identical_across_processes_and_another_seed_is_not(tmp_path):
    _pretrain(tmp_path / "a", 1)
    _pretrain(tmp_path / "b", 2)
    _pretrain(tmp_path / "c", 1, "seed=1")
    (rows_a, w_a), (rows_b, w_b), (rows_c, w_c) = (_record(tmp_path / x) for x in "abc")
    assert len(rows_a) == 16 and rows_a == rows_b
    assert w_a.keys() == w_b.keys() and all(torch.equal(w_a[k], w_b[k]) for k in w_a)
    assert rows_c != rows_a and not torch.equal(w_a["embed_tokens.weight"], w_c["embed_tokens.weight"])
