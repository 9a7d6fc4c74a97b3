"""Pretraining on a split too short for one row names the knob a run sets its rows with, `layout.seq_len`
(in the config file, or `--set layout.seq_len=N`): it said "lower seq_len", which is no field of a run's
config (`data inspect` names its `--seq-len`, a study what its file sets, `study/checks.py`)."""

from __future__ import annotations

import pytest
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.train.test_validation import prepared  # noqa: F401 (fixture: 2040 train and 680 val tokens)

RUN = """\
phases:
  - objective: {type: clm}
    steps: 1
layout: {seq_len: 4096, micro_batch_size: 1}
data: {path: DATA}
model: {size: tiny}
device: cpu
progress: false
peak_tflops: 1.0
"""


@pytest.mark.parametrize("how", ["config", "set"])
def test_rows_longer_than_the_train_split_name_layout_seq_len(prepared, tmp_path, capsys, how):  # noqa: F811
    config = tmp_path / "run.yaml"
    config.write_text(RUN.replace("DATA", str(prepared / "data")))
    extra = ["--set", "layout.seq_len=4096"] if how == "set" else []
    if how == "set":
        config.write_text(config.read_text().replace("seq_len: 4096", "seq_len: 16"))
    code, err = cli(["pretrain", "--config", config, "--out", tmp_path / "o", *extra], capsys)
    assert_one_line(
        code,
        err,
        r"the train split of \S+data has \d+ tokens, fewer than one row of layout.seq_len 4096; prepare more text "
        r"or lower layout.seq_len$",
    )
    assert_printed_as_documented("pretrain-rows-longer-than-data", err, prepared)
    assert not (tmp_path / "o").exists()


def test_the_no_validation_note_names_layout_seq_len(prepared, tmp_path, capsys):  # noqa: F811
    """Rows longer than the val split (680 tokens), not the train split: trained, with the note naming the knob."""
    config = tmp_path / "run.yaml"
    config.write_text(RUN.replace("DATA", str(prepared / "data")).replace("seq_len: 4096", "seq_len: 1024"))
    code, err = cli(["pretrain", "--config", config, "--out", tmp_path / "o"], capsys)
    assert code == 0, err
    assert (
        "fewer than one row of layout.seq_len 1024; prepare it again with a larger --val-fraction, or lower "
        "layout.seq_len" in err
    )
