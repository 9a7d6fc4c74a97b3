"""The report's `hub inputs` row does not depend on the working folder it is written from.

Which OWNER/NAME tokenizer or start model of a study built in Python is a folder, and which a hub id, is
decided when the study runs: `run_study` records the working folder's OWNER/NAME folders as absolute paths
(`hubids.pin_local_starts`), so its record's relative OWNER/NAME are hub ids. The report read the record
but asked the working folder again (`hubids.reads_hub`): written from a folder that held a path named as
the hub tokenizer, it left the hub tokenizer out of the row. A local folder named OWNER/NAME was never
called a hub input from another folder: its record names it by its absolute path.
"""

from __future__ import annotations

import json
from dataclasses import replace

from fake_study import backend, small_spec

from encoderlab.study.report import write_report
from encoderlab.study.runner import run_study


def _study(tmp_path, tokenizer: str, ran_in, monkeypatch):
    spec = small_spec(cka=())
    spec = replace(spec, data=tuple(replace(d, tokenizer=tokenizer) for d in spec.data))
    monkeypatch.chdir(ran_in)
    out = tmp_path / tokenizer.replace("/", "_")
    run_study(spec, out, backend(), progress=False, fetch=False)
    return out


def _hub_row(study, written_from, monkeypatch) -> str:
    monkeypatch.chdir(written_from)
    md = (write_report(study, figures=False).parent / "report.md").read_text()
    return next((line for line in md.splitlines() if line.startswith("| hub inputs |")), "")


def test_a_hub_tokenizer_is_a_hub_input_from_a_folder_holding_a_path_of_its_name(tmp_path, monkeypatch):
    ran_in, elsewhere = tmp_path / "ran", tmp_path / "elsewhere"
    ran_in.mkdir()
    (elsewhere / "someone" / "tok").mkdir(parents=True)  # no such folder where the study ran: a hub id
    study = _study(tmp_path, "someone/tok", ran_in, monkeypatch)
    row = "| hub inputs | tokenizer someone/tok (data main): unpinned, the commit read not recorded |"
    assert _hub_row(study, ran_in, monkeypatch) == row
    assert _hub_row(study, elsewhere, monkeypatch) == row  # was "": the working folder's path read as it


def test_a_local_owner_name_tokenizer_is_no_hub_input_from_another_folder(tmp_path, monkeypatch):
    ran_in, elsewhere = tmp_path / "ran", tmp_path / "elsewhere"
    (ran_in / "someone" / "tok").mkdir(parents=True)
    elsewhere.mkdir()
    study = _study(tmp_path, "someone/tok", ran_in, monkeypatch)
    recorded = json.loads((study / "study.json").read_text())["data"][0]["tokenizer"]
    assert recorded == str((ran_in / "someone" / "tok").resolve())  # decided when it ran, and recorded
    assert _hub_row(study, ran_in, monkeypatch) == _hub_row(study, elsewhere, monkeypatch) == ""
