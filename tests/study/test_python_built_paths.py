"""A study built in Python that names a folder of the working folder shaped like a hub id (OWNER/NAME).

`checks.check_shadowed_hub_ids` refuses a built-in study (and a study folder's record) whose hub id
the working folder shadows: the nodes would load that folder in the hub model's place, silently. It
took every study not read from a file (`StudySpec.folder` is None) for a built-in, so a study built in
Python whose run starts from `models/base`, a folder in the working folder, was refused on its first
run as "a hub id". A study built in Python reads its relative paths from the working folder, as every
other encoderlab call (and `from_pretrained`) does: `run_study` now makes such a folder absolute before
the study is keyed or recorded (`hubids.pin_local_starts`), so its record says the path and a resume
(`study run DIR`) reads it as the path. A built-in's hub id shadowed by a folder is still refused
(tests/study/test_builtin_hub_ids.py). The hub tokenizer is a mirror (`HF_HUB_OFFLINE=1`).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from tests.reliability.test_hostile_inputs import cli
from tests.study.study_fixtures import model_mirror_folders
from tests.study.test_resumed_hub_ids import hub_id_study

from encoderlab.data.hub import HUB_MODELS_ENV
from encoderlab.study import real_backend
from encoderlab.study.files import load_study_file
from encoderlab.study.runner import run_study


def python_study(tmp_path: Path, monkeypatch) -> tuple[Path, Path, Path]:
    """`hub_id_study`'s folders (returned), its tokenizer `someone/tok` a mirror (`HF_HUB_OFFLINE=1`), an
    ENCODERLAB_HOME of the test's own, and the working folder the current folder, as for a script that
    builds the study in Python."""
    sub, work, out = hub_id_study(tmp_path)
    model_mirror_folders(tmp_path / "mirror", "someone/tok")
    monkeypatch.setenv(HUB_MODELS_ENV, str(tmp_path / "mirror"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(work)
    return sub, work, out


def test_a_python_built_study_reads_an_owner_name_folder_of_the_working_folder(tmp_path, monkeypatch, capsys):
    sub, work, out = python_study(tmp_path, monkeypatch)
    model_mirror_folders(work, "models/base")  # the user's own model, beside the script that builds the study
    read = load_study_file(sub / "s.yaml")  # its corpus an absolute path; then built as in Python
    runs = tuple(dataclasses.replace(r, init="models/base") if r.init else r for r in read.runs)
    spec = dataclasses.replace(read, runs=runs, folder=None)
    assert spec.runs[1].init == "models/base" and spec.data[0].tokenizer == "someone/tok"

    run_study(spec, out, real_backend(), progress=False)
    record = json.loads((out / "study.json").read_text())
    assert record["runs"][1]["init"] == str(work / "models" / "base")  # the folder it read, as a path
    assert record["data"][0]["tokenizer"] == "someone/tok"  # a hub id stays one

    code, err = cli(["study", "run", out], capsys)  # its record resumed: the same path, not a hub id
    assert code in (0, None), err
    run_study(spec, out, real_backend(), progress=False)  # and the script run again: the same nodes
    assert len(list((out / "nodes" / "pretrain").glob("b-*"))) == 1


def test_only_a_python_built_study_has_its_folders_pinned(tmp_path, monkeypatch):
    """A built-in or a record (`names_hub_ids`) and a study file keep their names: the built-in's hub id
    shadowed by a folder is refused (`check_shadowed_hub_ids`), not read as that folder."""
    from encoderlab.study.hubids import pin_local_starts

    sub, work, _ = hub_id_study(tmp_path)
    monkeypatch.chdir(work)
    from_file = load_study_file(sub / "s.yaml")
    model_mirror_folders(work, "someone/enc")
    built = dataclasses.replace(from_file, folder=None)
    assert pin_local_starts(built).runs[1].init == str(work / "someone" / "enc")
    assert pin_local_starts(built).data[0].tokenizer == "someone/tok"  # no such folder: a hub id
    builtin = dataclasses.replace(built, names_hub_ids=True)
    assert pin_local_starts(builtin) is builtin and pin_local_starts(from_file) is from_file
