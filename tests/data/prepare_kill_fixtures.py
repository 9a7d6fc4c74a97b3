"""What the SIGKILL tests of `data prepare` share (test_prepare_kill.py, test_prepare_kill_shards.py): the
command they run, and what they compare of a killed-then-rerun folder with an uninterrupted one."""

from __future__ import annotations

import json

from encoderlab.jsonlines import read_records


def prepare_command(corpus, tok, out) -> list[str]:
    return [
        "data", "prepare", "--source", str(corpus), "--tokenizer", str(tok),
        "--out", str(out), "--decontaminate", "none", "--workers", "1", "--checkpoint-every", "1",
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
