"""`analyze transplant`'s flags: a flag the chosen mode would ignore is refused in one line, before any
model source or `--out` is looked at (the rest of the command is tested in test_commands.py)."""

from __future__ import annotations

import pytest

from encoderlab.cli import main


@pytest.mark.parametrize(
    "flags,message",
    [
        (
            ["--layers", "0", "--max-length", "128"],
            "--max-length 128 sets the probe of --probe-task, but --layers makes one transplant and runs no "
            "probe, so would ignore it; drop it",
        ),
        (
            ["--sweep", "parts", "--max-examples", "10", "--attention-mode", "causal"],
            "--max-examples 10, --attention-mode causal set the probe of --probe-task, but --sweep parts runs no "
            "probe without --probe-task and would ignore them; drop them, or add --probe-task TASK",
        ),
    ],
    ids=["one-transplant", "sweep"],
)
def test_the_probes_flags_without_a_probe_task_are_refused_before_any_path(tmp_path, capsys, flags, message):
    # were ignored without a word: the transplant was saved as if they had not been given
    out = tmp_path / "t"
    with pytest.raises(SystemExit) as exc:
        main(["analyze", "transplant", str(tmp_path / "a"), str(tmp_path / "b"), *flags, "--out", str(out)])
    assert exc.value.code == 2 and capsys.readouterr().err.strip() == f"encoderlab: error: {message}"
    assert not out.exists()


def test_the_probes_flags_are_taken_with_a_probe_task(tmp_path, capsys):
    """With --probe-task they are the probe's: the command goes on to the next check (model A's source)."""
    flags = [
        "--sweep",
        "parts",
        "--probe-task",
        "x.jsonl",
        "--max-length",
        "64",
        "--attention-mode",
        "causal",
    ]
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "analyze",
                "transplant",
                str(tmp_path / "a"),
                str(tmp_path / "b"),
                *flags,
                "--out",
                str(tmp_path / "t"),
            ]
        )
    assert exc.value.code == 2 and "does not exist" in capsys.readouterr().err
