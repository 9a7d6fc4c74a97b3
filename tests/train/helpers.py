"""Tiny run configs for training tests (a few steps of the `tiny` model on synthetic data), and the tiny
checkpoints, decoders and planted files several training test modules start from."""

from __future__ import annotations

import json
import os
import pickle
import random
import socket
import time
from pathlib import Path

import torch

from encoderlab.data.batch import BatchLayout
from encoderlab.objectives import CLM, MLM
from encoderlab.train import CheckpointConfig, DataConfig, OptimConfig, Phase, RunConfig, Schedule
from encoderlab.train.config import ValidationConfig
from encoderlab.train.runfolder import LOCK


def tiny_run(out: Path, phases=None, **overrides) -> RunConfig:
    phases = phases or (
        Phase(objective=CLM(), steps=3, schedule=Schedule(kind="constant", warmup=1)),
        Phase(objective=MLM(mask_ratio=0.3), steps=3, schedule=Schedule(kind="1-sqrt", end_fraction=0.1)),
    )
    base = dict(
        data=DataConfig(synthetic_vocab=128),
        layout=BatchLayout(seq_len=32, micro_batch_size=2, grad_accum=2),
        optim=OptimConfig(lr=3e-3),
        phases=tuple(phases),
        checkpoint=CheckpointConfig(every=2, keep_last=10),
        # 4 held-out rows, not the default 64: at the default, scoring the final model took two
        # thirds of a tiny run's time (3 losses x 32 micro-batches against 6 steps of 4); tests of
        # validation itself set their own rows
        validation=ValidationConfig(rows=4),
        out=str(out),
        device="cpu",
        progress=False,
        peak_tflops=1.0,
    )
    return RunConfig(**{**base, **overrides})


def metrics(run: Path) -> list[dict]:
    return [json.loads(line) for line in (Path(run) / "metrics.jsonl").read_text().splitlines()]


def free_ports(n: int) -> list[int]:
    """`n` distinct ports for process groups (MASTER_PORT), free now and below the kernel's ephemeral range.

    A port that bind(0) handed out and that was closed again lies in the ephemeral range, where the next
    outgoing connection (gloo's between the ranks of another test file that pytest-xdist runs alongside)
    can take it before the group listens on it: EADDRINUSE, seen in the full suite. The kernel never
    hands out a port below that range for outgoing connections; each one is checked free by binding."""
    low = _ephemeral_low()
    draw = random.SystemRandom()  # not the tests' seeded `random`: two processes must not draw alike
    ports: list[int] = []
    while len(ports) < n:
        port = draw.randrange(10_000, low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        if port not in ports:
            ports.append(port)
    return ports


def _ephemeral_low() -> int:
    """The first port of the ephemeral range (Linux's default when it cannot be read)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return max(low, 11_000)


RANKS_TIMEOUT_S = 900
"""How long two ranks may take (all of a test file's jobs run well under 2 minutes on 2 loaded cores); past
it the ranks are killed and the test fails, rather than CI waiting out its limit."""


def spawn_ranks(worker, args: tuple, nprocs: int = 2) -> None:
    """`torch.multiprocessing.spawn(worker, args, nprocs)`, failed after `RANKS_TIMEOUT_S` seconds: freshly
    started interpreters, for the tests whose bug a fork of `start_ranks` hits less often (their docstrings
    say by how much); every other test starts its ranks with `start_ranks`, a 3-4 CPU-second import cheaper
    per rank."""
    import pytest
    import torch.multiprocessing as mp

    context = mp.start_processes(worker, args=args, nprocs=nprocs, join=False, start_method="spawn")
    deadline = time.monotonic() + RANKS_TIMEOUT_S
    while not context.join(timeout=5):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail(
                f"{nprocs} spawned ranks still running after {RANKS_TIMEOUT_S} s: a hang (py-spy dump shows where)"
            )


def start_ranks(worker, args: tuple, nprocs: int = 2) -> None:
    """`worker(rank, *args)` in `nprocs` ranks at once, forked from a process that has imported torch
    (tests/train/ranks.py: each a whole interpreter, finalized at its end, as `torch.multiprocessing.spawn`'s
    are), the test failed when one fails (the others killed, as spawn's join does) or after `RANKS_TIMEOUT_S`
    seconds: a rank that hangs (a collective or teardown waiting for good) fails its test file instead of
    hanging it."""
    import pytest
    from tests.train.ranks import run_ranks

    codes = run_ranks(worker, args, nprocs, RANKS_TIMEOUT_S, stop_on_failure=True)
    if codes is None:
        pytest.fail(
            f"{nprocs} ranks still running after {RANKS_TIMEOUT_S} s: a hang (py-spy dump shows where)"
        )
    if any(codes):
        pytest.fail(f"ranks of {worker.__qualname__} exited {codes} (a traceback is in the captured stderr)")


def save_tiny_bert(folder, dtype: torch.dtype = torch.float32) -> None:
    """A 2-layer BertForMaskedLM checkpoint: a model that goes through the transformers adapter
    (its weights and config.json's dtype in `dtype`, as a float16 upload on the hub has them)."""
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    bert = BertConfig(
        vocab_size=128,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertForMaskedLM(bert).to(dtype).save_pretrained(str(folder))


class PlantedPayload:
    """An object whose unpickling writes `marker`: a load that unpickles it ran code."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "code ran"))


def plant_malicious_checkpoint(ckpt_dir: Path, marker: Path) -> None:
    """A malicious `.metadata` where DCP's reader looks for it (and a `.distcp` beside it)."""
    folder = ckpt_dir / "train_state"
    folder.mkdir(exist_ok=True)
    (folder / ".metadata").write_bytes(pickle.dumps(PlantedPayload(marker)))
    (folder / "__0_0.distcp").write_bytes(pickle.dumps(PlantedPayload(marker)))


DECODER_VOCAB = 96
EOT = "<|endoftext|>"


def decoder_tokenizer():
    """A word-level fast tokenizer with `<|endoftext|>` at 0 and `t<id>` elsewhere: no mask token."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {EOT: 0, **{f"t{i}": i for i in range(1, DECODER_VOCAB)}}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token=EOT))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=EOT, eos_token=EOT)


def save_tiny_decoder(folder: Path, tied: bool) -> Path:
    """A 2-layer LlamaForCausalLM with random weights and the tokenizer above."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=DECODER_VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=tied,
        bos_token_id=0,
        eos_token_id=0,
    )
    LlamaForCausalLM(cfg).save_pretrained(str(folder))
    decoder_tokenizer().save_pretrained(str(folder))
    return folder


def save_tiny_encoder(folder: Path, seed: int, **shape) -> Path:
    """A tiny encoderlab Encoder (vocabulary 128) with `seed`'s random weights; `shape` overrides its config."""
    import dataclasses

    from encoderlab.model import Encoder, ModelConfig
    from encoderlab.model.io import save_model_folder

    torch.manual_seed(seed)
    config = dataclasses.replace(ModelConfig.from_size("tiny", vocab_size=128), **shape)
    save_model_folder(Encoder(config), folder)
    return folder


def plant_lock(run: Path, host: str, pid: int, age_s: float, **recorded) -> Path:
    """A run lock of `pid` on `host` with a 300 s lease, last refreshed `age_s` seconds ago (its mtime); `recorded`:
    more fields of the holder (`host_id`)."""
    lock = run / LOCK
    holder = {"pid": pid, "host": host, "since": "2026-12-06T20:00:00Z", "what": "pretrain", "lease_s": 300.0}
    holder.update(recorded)
    lock.write_text(json.dumps(holder))
    stamped = time.time() - age_s
    os.utime(lock, (stamped, stamped))
    return lock
