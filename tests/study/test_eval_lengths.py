"""A study whose task's `max_length` is more than an evaluated model's positions is refused by `study plan`
and `study run` before anything is written, in `eval`'s line prefixed with the study and the model
(`study.positions.check_eval_lengths`). Before, the plan passed and the eval node failed mid-fine-tuning
with a traceback ("sequence length N exceeds max_seq_len M"), after the runs had trained.

The model evaluated is the eval tests' own of 256 positions (`fixtures.model_folder`), a run without a
recipe (its start model evaluated as is); the study's trained runs are built from scratch with 2,048
positions, which the task's 512 fits.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_study import tiny_corpus
from tests.eval.fixtures import model_folder
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import cli
from tests.study.study_fixtures import MINE, polarity_task_file


def _study(tmp_path: Path, max_length: int) -> Path:
    tiny_corpus(tmp_path / "corpus.jsonl", 300)
    polarity_task_file(tmp_path)
    task = tmp_path / "polarity.yaml"
    task.write_text(task.read_text().replace("max_length: 32", f"max_length: {max_length}"))
    start = model_folder(tmp_path / "start")  # 256 positions
    study = MINE.replace("  - {name: clm, recipe: pfs-clm}\n", f"  - {{name: start, init: {start}}}\n")
    (tmp_path / "my-study.yaml").write_text(study.replace("b: clm", "b: start"))
    return tmp_path / "my-study.yaml"


@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_study_task_longer_than_a_models_positions_is_refused_before_anything_is_written(
    tmp_path, capsys, command
):
    study = _study(tmp_path, 512)
    out = ["--out", tmp_path / "out", "--no-fetch"] if command == "run" else []
    code, err = cli(["study", command, study, *out], capsys)
    assert code == 2 and err.strip() == (
        "encoderlab: error: study my-study, evaluating start: task polarity: max_length 512 is more than the "
        "model's 256 positions; set `max_length:` to at most 256 in its task file, or null for 0.99 x the model's"
    ), err
    assert_printed_as_documented("study-eval-max-length-over-positions", err, tmp_path)
    assert not (tmp_path / "out").exists()


def test_a_study_task_within_the_positions_is_planned(tmp_path, capsys):
    code, err = cli(["study", "plan", _study(tmp_path, 256)], capsys)
    assert code == 0, err
