"""Ladder files: CSV and JSONL rows become observations; every bad row is one line naming file:line."""

from __future__ import annotations

import json

import pytest

from encoderlab.advise.ladder import Schedule
from encoderlab.advise.readers import read_table
from encoderlab.errors import UserError

HEADER = "clm_share,mask_ratio,label,params,tokens,flops,seed,val/mlm15,extra\n"


def test_csv_and_jsonl_read_the_same_runs(tmp_path):
    csv = tmp_path / "ladder.csv"
    csv.write_text(
        HEADER + "0,0.4,,1e6,2e7,,0,3.5,x\n1,,,1e6,2e7,1.3e14,1,3.6,y\n0.25,0.4,split,2e6,4e7,,0,3.1,z\n"
    )
    jsonl = tmp_path / "ladder.jsonl"
    jsonl.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "clm_share": 0,
                    "mask_ratio": 0.4,
                    "params": 1e6,
                    "tokens": 2e7,
                    "seed": 0,
                    "val/mlm15": 3.5,
                },
                {
                    "clm_share": 1,
                    "mask_ratio": None,
                    "params": 1e6,
                    "tokens": 2e7,
                    "flops": 1.3e14,
                    "seed": 1,
                    "val/mlm15": 3.6,
                },
                {
                    "clm_share": 0.25,
                    "mask_ratio": 0.4,
                    "label": "split",
                    "params": 2e6,
                    "tokens": 4e7,
                    "seed": 0,
                    "val/mlm15": 3.1,
                },
            ]
        )
        + "\n\n"
    )
    a, b = read_table(csv, "val/mlm15"), read_table(jsonl, "val/mlm15")
    assert [(o.schedule, o.params, o.tokens, o.flops, o.seed, o.value) for o in a] == [
        (o.schedule, o.params, o.tokens, o.flops, o.seed, o.value) for o in b
    ]
    assert a[1].schedule == Schedule.biphasic(1.0, None) and a[1].flops == 1.3e14 and a[0].flops is None
    assert a[2].schedule.name == "split" and a[2].source == f"{csv}:4"


@pytest.mark.parametrize(
    "body,message",
    [
        ("clm_share,params\n0,1\n", r"ladder.csv:2: missing columns mask_ratio, tokens, seed, val/mlm15"),
        (HEADER + "0,0.4,,big,2e7,,0,3.5,\n", "ladder.csv:2: column params must be a number, got 'big'"),
        (HEADER + "0,0.4,,1e6,2e7,,0.5,3.5,\n", "column seed must be an integer"),
        (HEADER + "0,0.4,,1e6,2e7,,nan,3.5,\n", "ladder.csv:2: column seed must be an integer, got 'nan'"),
        (HEADER + "0,0.4,,1e6,2e7,,inf,3.5,\n", "ladder.csv:2: column seed must be an integer, got 'inf'"),
        (HEADER + "0,0.4,,1e6,2e7,,0,,\n", "column val/mlm15 is empty"),
        (  # a diverged run's loss was fitted as a measurement
            HEADER + "0,0.4,,1e6,2e7,,0,nan,\n",
            r"ladder.csv:2: column val/mlm15 must be a finite number, got 'nan'; leave out the row of a run that "
            r"diverged \(its loss is not finite\)",
        ),
        (
            HEADER + "0,0.4,,inf,2e7,,0,3.5,\n",
            "ladder.csv:2: column params must be a finite number, got 'inf'",
        ),
        (
            HEADER + "0.5,,,1e6,2e7,,0,3.5,\n",
            "ladder.csv:2: clm_share 0.5 leaves an MLM stage: give its mask_ratio",
        ),
        (
            HEADER + "0,0.4,,1e6,2e7,,0,3.5,\n1.5,0.4,,1e6,2e7,,0,3.5,\n",
            r"ladder.csv:3: clm_share must be in \[0, 1\]",
        ),
        (
            HEADER + "0,1.4,,1e6,2e7,,0,3.5,\n",
            r"ladder.csv:2: an MLM stage needs a mask ratio in \(0, 1\), got 1.4",
        ),
        (HEADER, "holds no runs"),
    ],
)
def test_bad_rows_are_one_line(tmp_path, body, message):
    path = tmp_path / "ladder.csv"
    path.write_text(body)
    with pytest.raises(UserError, match=message):
        read_table(path, "val/mlm15")


def test_bad_files_are_one_line(tmp_path):
    with pytest.raises(UserError, match="must be .csv or .jsonl"):
        read_table(tmp_path / "ladder.txt", "val/mlm15")
    with pytest.raises(UserError, match="does not exist"):
        read_table(tmp_path / "missing.csv", "val/mlm15")
    with pytest.raises(
        UserError, match="runs/studdy does not exist; give a study folder or a .csv/.jsonl ladder"
    ):
        read_table(
            tmp_path / "runs" / "studdy", "val/mlm15"
        )  # a study folder's name mistyped: was told ".csv"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n[1, 2]\n")
    with pytest.raises(UserError, match="bad.jsonl:2: expected a JSON object"):
        read_table(bad, "val/mlm15")
    row = {"clm_share": 0, "mask_ratio": 0.4, "params": 1e6, "tokens": 2e7, "seed": 0, "val/mlm15": 3.5}
    for column in ("params", "seed", "val/mlm15"):  # were read as 1.0: a run of N=1, seed 1, a loss of 1
        bad.write_text(json.dumps({**row, column: True}) + "\n")
        with pytest.raises(UserError, match=f"bad.jsonl:1: column {column} must be a number, got True$"):
            read_table(bad, "val/mlm15")
    bad.write_text("{not json\n")
    with pytest.raises(UserError, match="bad.jsonl:1: not valid JSON"):
        read_table(bad, "val/mlm15")


@pytest.mark.parametrize(
    ("mark", "encoding", "order"), [(b"", "utf-16-le", "utf-16le"), (b"\xff\xfe", "utf-16-le", "utf-16")]
)
def test_a_utf16_ladder_file_is_one_line_naming_it(tmp_path, mark, encoding, order):
    """A spreadsheet's "Unicode text" export: without its byte order mark it decoded as UTF-8, NULs and all
    (a CSV of no known column), with it "not UTF-8 text (byte 0)"; both now name UTF-16 and the iconv line."""
    path = tmp_path / "ladder.csv"
    path.write_bytes(
        mark + "clm_share,mask_ratio,params,tokens,seed,val/mlm15\n0,0.4,1e6,2e7,0,3.0\n".encode(encoding)
    )
    with pytest.raises(UserError) as err:
        read_table(path, "val/mlm15")
    assert str(err.value).endswith(
        f"ladder.csv is UTF-16 text{'' if mark else ' (utf-16le, no byte order mark)'}, not UTF-8; save it as "
        f"UTF-8, e.g. `iconv -f {order} -t utf-8 ladder.csv > utf8-ladder.csv`"
    )


def test_an_empty_metric_cell_says_every_run_needs_the_metric(tmp_path):
    """A task only some schedules were scored on (CLM's cell empty): the line said only "give a value"."""
    path = tmp_path / "ladder.csv"
    path.write_text(
        "clm_share,mask_ratio,params,tokens,seed,finetune:mnli\n0,0.4,1e6,2e7,0,70\n1,,1e6,2e7,0,\n"
    )
    with pytest.raises(UserError) as exc:
        read_table(path, "finetune:mnli")
    assert str(exc.value) == (
        f"{path}:3: column finetune:mnli is empty; give its value, or drop the row: schedules are compared on a "
        "metric every run has"
    )
