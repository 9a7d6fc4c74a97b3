"""What the SIGKILL tests of `data prepare` share (test_prepare_kill.py, test_prepare_kill_shards.py): the
command they run, the kill-then-rerun loop (`kill_then_rerun`), and what they compare of a killed-then-rerun
folder with an uninterrupted one (`assert_same_as_uninterrupted`).

The loop runs `encoderlab.cli.main` in children forked by the kill harness's zygote
(tests/reliability/killharness.py), which imported `data prepare`'s modules once (`killharness.DATA_PREPARE`:
transformers, not torch, which the command does not import)."""

from __future__ import annotations

import json
import random
import signal

from tests.reliability.killharness import DATA_PREPARE, Zygote

from encoderlab.jsonlines import read_records


def prepare_command(corpus, tok, out, decontaminate="none") -> list[str]:
    return [
        "data", "prepare", "--source", str(corpus), "--tokenizer", str(tok),
        "--out", str(out), "--decontaminate", str(decontaminate), "--workers", "1", "--checkpoint-every", "1",
    ]  # fmt: skip


def token_file_bytes(root) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name.endswith((".bin", ".npy"))
    }


def metrics_lines(root) -> list[dict]:
    """`root`'s metrics.jsonl without `seconds` (the one field two runs of one recipe differ in): the
    file is not byte-compared with the token files, its lines are (a killed run's line after its
    checkpoint is cut and written again by the rerun, none doubled or lost)."""
    return [{k: v for k, v in r.items() if k != "seconds"} for r in read_records(root / "metrics.jsonl")]


def chunks_done(out) -> int:
    try:
        return json.loads((out.with_name(out.name + ".tmp") / "progress.json").read_text())["chunks"]
    except (OSError, ValueError):
        return 0


def kill_then_rerun(corpus, tok, tmp_path, seed: int, decontaminate="none"):
    """Prepare `corpus` once uninterrupted (`tmp_path/clean`), then into `tmp_path/out` four times, each
    SIGKILLed at a seeded moment up to 0.2 s after a new checkpoint (progress.json is rewritten, a new
    file, at each one: mid-chunk), then once more to the end; against the `--decontaminate` sets given.
    Returns (clean, out, the last run)."""
    argv = {"tok": tok, "decontaminate": decontaminate}
    clean, out = tmp_path / "clean", tmp_path / "out"
    rng, kills, seen = random.Random(seed), 0, []
    with Zygote(imports=DATA_PREPARE, recorders=False) as z:
        assert z.run(prepare_command(corpus, out=clean, **argv), tmp_path / "job_clean")["returncode"] == 0
        for i in range(4):
            progress = out.with_name(out.name + ".tmp") / "progress.json"
            kill = {"kind": "tmpdir", "glob": str(progress), "after": rng.uniform(0.0, 0.2)}
            result = z.run(prepare_command(corpus, out=out, **argv), tmp_path / f"job{i}", kill=kill)
            kills += result["signal"] == signal.SIGKILL
            seen.append(chunks_done(out))
        done = z.run(prepare_command(corpus, out=out, **argv), tmp_path / "job_done")
    assert kills >= 3 and seen == sorted(seen), seen  # every kill left a checkpoint at least as far
    return clean, out, done


def assert_same_as_uninterrupted(clean, out, done) -> None:
    """The rerun finished by resuming, and its token files and metrics lines are the uninterrupted run's."""
    assert done["returncode"] == 0, done["stderr"]
    assert json.loads((done["dir"] / "stdout").read_text())["resumed_after_docs"] > 0
    assert token_file_bytes(out) == token_file_bytes(clean)
    assert metrics_lines(out) == metrics_lines(clean) and metrics_lines(clean)
