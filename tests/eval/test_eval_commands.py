"""`encoderlab eval` on one --out at a time: a second evaluation of the folder is refused while the first
writes it (both fine-tuned every cell before, and the summary hid the duplicates)."""

from __future__ import annotations

import json
from dataclasses import replace

from fixtures import boolq_records, model_folder, write_asset

from encoderlab.cli import main
from encoderlab.eval import commands
from encoderlab.eval.spec import FinetuneConfig
from encoderlab.eval.tasks import TASKS


def _eval(argv: list[str]) -> int:
    try:
        main(argv)
    except SystemExit as exc:
        return exc.code
    return 0


def test_a_second_eval_into_the_same_out_is_refused_while_the_first_runs(tmp_path, monkeypatch, capsys):
    """The second starts when the first holds the folder and is about to fine-tune: it is refused with
    one line naming the first, and each cell of the grid is fine-tuned and recorded once."""
    home = tmp_path / "home"
    monkeypatch.setenv("ENCODERLAB_HOME", str(home))
    write_asset(home, "boolq", boolq_records(120))
    quick = FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=10)
    monkeypatch.setitem(TASKS, "boolq", replace(TASKS["boolq"], finetune=quick))
    out = tmp_path / "e"
    argv = [
        "eval",
        str(model_folder(tmp_path / "m")),
        "--tasks",
        "boolq",
        "--lrs",
        "2e-3",
        "--seeds",
        "0",
        "1",
    ]
    argv += ["--out", str(out)]
    real, second = commands.evaluate, {}

    def racing(*args, **kwargs):
        if not second:
            second["code"] = None  # the second eval's own call, if it gets that far, goes straight through
            second["code"] = _eval(argv)
            second["err"] = capsys.readouterr().err
        return real(*args, **kwargs)

    monkeypatch.setattr(commands, "evaluate", racing)
    assert _eval(argv) == 0
    assert second["code"] == 2, second
    lines = second["err"].strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"encoderlab: error: {out} is in use by eval (pid "), lines
    assert lines[0].endswith(
        f"wait for it, use another --out, or delete {out / commands.LOCK} if that process is gone"
    )
    cells = [(r["lr"], r["seed"]) for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())]
    assert sorted(cells) == [(2e-3, 0), (2e-3, 1)]  # each cell once: the second fine-tuned nothing
    assert not (out / commands.LOCK).exists()
