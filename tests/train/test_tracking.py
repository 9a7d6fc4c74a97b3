"""The optional metric sinks with the real packages (issue 18, item 6).

TensorBoard: a tiny run with `sinks: [tensorboard]`, its event file read back with TensorBoard's own
`EventAccumulator`; every scalar equals the metrics.jsonl line of its step. tensorboard is in the
`dev` extra, so CI runs this. W&B: the same run in offline mode (`WANDB_MODE=offline`), its summary
read back; wandb is about 60 MB with its Go core and a minute to install, so it is only in the
`track` extra and this test is skipped where it is not installed.
"""

from __future__ import annotations

import json

import pytest
from tests.reliability.hostile_world import TINY_RUN

from encoderlab.train.metrics import check_sinks


def _train(tmp_path, sink: str):
    from encoderlab.cli import main

    (tmp_path / "run.yaml").write_text(TINY_RUN + f"sinks: [{sink}]\n")  # two CLM steps
    main(["pretrain", "--config", str(tmp_path / "run.yaml"), "--out", str(tmp_path / "run")])
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    return tmp_path / "run", [json.loads(line) for line in lines]


def _scalars(records: list[dict]) -> set[str]:
    """The numeric keys of the metrics lines (the step aside): what a sink must log."""
    return {k for r in records for k, v in r.items() if k != "step" and isinstance(v, (int, float))}


def test_tensorboard_sink_writes_every_scalar_of_every_step(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run, records = _train(tmp_path, "tensorboard")
    events = EventAccumulator(str(run / "tensorboard"))
    events.Reload()
    keys = _scalars(records)
    assert {"loss", "lr", "grad_norm", "tokens", "val/clm", "val/mlm15"} <= keys  # held-out losses too
    assert set(events.Tags()["scalars"]) >= keys
    for key in keys:
        logged = {e.step: e.value for e in events.Scalars(key)}
        want = {r["step"]: float(r[key]) for r in records if key in r}
        assert logged == pytest.approx(want, rel=1e-6), key


def test_tensorboard_sink_rewind_drops_the_steps_a_rollback_replays(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from encoderlab.train.metrics import TensorBoardSink

    sink = TensorBoardSink(tmp_path)
    for step in (1, 2, 3):
        sink.log({"step": step, "loss": float(step)})
    sink.rewind(1)  # a rollback to the checkpoint of step 1 replays steps 2 and 3
    for step in (2, 3):
        sink.log({"step": step, "loss": 10.0 * step})
    sink.close()
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("loss")] == [(1, 1.0), (2, 20.0), (3, 30.0)]


def _wandb_history(path) -> list[dict]:
    """History rows of an offline run file (`run-*.wandb`), read without wandb's sync service.

    The file is W&B's LevelDB-style log: a 7-byte header (`:W&B`, magic, version), then 32 KiB blocks
    of records `crc32 (4) | length (2, LE) | type (1: full, 2: first, 3: middle, 4: last) | data`, each
    a `wandb_internal_pb2.Record`. wandb 0.31 ships no public reader for it.
    """
    import struct

    from wandb.proto import wandb_internal_pb2 as pb

    data, rows, pos, chunks = path.read_bytes(), [], 7, b""
    while pos + 7 <= len(data):
        if (pos % 32768) + 7 > 32768:  # a block's tail too short for a header is padding
            pos += 32768 - pos % 32768
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunks += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(chunks)
            chunks = b""
            if record.WhichOneof("record_type") == "history":
                rows.append(
                    {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.history.item}
                )
    return rows


def test_wandb_sink_in_offline_mode(tmp_path, monkeypatch):
    pytest.importorskip(
        "wandb", reason="wandb is in the `track` extra only (about 60 MB); not installed here"
    )
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    run, records = _train(tmp_path, "wandb")
    (offline,) = (run / "wandb").glob("offline-run-*/run-*.wandb")
    history = _wandb_history(offline)
    assert [h["_step"] for h in history] == [r["step"] for r in records]
    for row, rec in zip(history, records):
        for key in _scalars([rec]):
            assert row[key] == pytest.approx(rec[key], rel=1e-6), key
    assert "val/mlm15" in history[-1]  # the held-out losses of the last step


def test_a_missing_sink_package_names_an_install_that_works_from_a_clone(monkeypatch):
    import importlib.util

    from encoderlab.errors import UserError

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a)
    )
    with pytest.raises(UserError, match=r"pip install wandb .*pip install -e '\.\[track\]'"):
        check_sinks(("wandb",))
