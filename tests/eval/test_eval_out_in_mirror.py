"""`eval --out` inside the hub mirror folder a task file reads (`--hub-data DIR`, DIR/OWNER/NAME) is refused
before anything is written, as `study run --out` inside a corpus's mirror is (`sources.hub_mirror_folders`,
one test of where a mirror lies): `datasets` reads every file of a mirror folder as the task's data."""

from __future__ import annotations

from tests.eval.fixtures import model_folder, sentiment_rows, write_csv, write_task_file
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.reliability.treestate import assert_unchanged, world_state


def _mirrored_task(tmp_path) -> tuple:
    """A task file reading hub id me/reviews, mirrored in {tmp_path}/hub/me/reviews."""
    mirror = tmp_path / "hub" / "me" / "reviews"
    rows = sentiment_rows(40, 0)
    write_csv(mirror / "train.csv", rows[:30])
    write_csv(mirror / "test.csv", rows[30:])
    columns = {"text": "sentence", "label": "polarity"}
    path = write_task_file(
        tmp_path, "task_hub.yaml", name="reviews", family="sc", data={"hub": "me/reviews"}, columns=columns
    )
    return path, mirror


def test_an_out_inside_the_task_files_hub_mirror_is_refused_and_writes_nothing(tmp_path, capsys, monkeypatch):
    # was: the evaluation was written into the mirror, whose files `datasets` reads as the task's data
    monkeypatch.chdir(tmp_path)
    path, mirror = _mirrored_task(tmp_path)
    model = model_folder(tmp_path / "model")
    out = mirror / "e"
    before = world_state(tmp_path)
    argv = [
        "eval",
        model,
        "--task-file",
        path,
        "--hub-data",
        tmp_path / "hub",
        "--lrs",
        "1e-4",
        "--seeds",
        "0",
    ]
    for check in ([], ["--check"]):
        code, err = cli([*argv, "--out", out, *check], capsys)
        assert_one_line(
            code,
            err,
            rf"^encoderlab: error: --out {out} is, contains or lies inside the source {mirror}; writing there "
            r"would destroy what is being read: choose another --out$",
        )
        assert_printed_as_documented("eval-out-in-hub-mirror", err, tmp_path)
        assert_unchanged(before)
