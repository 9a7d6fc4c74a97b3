"""A built-in study's first run from a working folder whose path shadows one of its hub ids.

A built-in names start models and tokenizers by hub id (paper2-detour's `answerdotai/ModernBERT-base`),
never by a path. Run from a working folder that holds a folder of that name, its first `study run`
(and `study plan`) accepted the folder (`checks.check_hub_ids` reads a path in the working folder as
one) and its nodes' `load_pretrained` loaded it in the hub model's place, silently. Now it is refused in
one line before anything is written (`checks.check_shadowed_hub_ids`, the check that refuses such a
resume). The built-in is a mini study registered in the catalogue; the hub models are mirrors
(`ENCODERLAB_HUB_MODELS`, `HF_HUB_OFFLINE=1`): nothing downloads.
"""

from __future__ import annotations

import dataclasses
import re

from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_arguments import assert_refused
from tests.reliability.test_hostile_inputs import cli
from tests.reliability.treestate import assert_unchanged, world_state
from tests.study.study_fixtures import model_mirror_folders
from tests.study.test_resumed_hub_ids import hub_id_study

from encoderlab.data.hub import HUB_MODELS_ENV
from encoderlab.study.catalog import STUDIES
from encoderlab.study.files import load_study_file


def _shadowed(id_, work):
    return re.escape(
        f"'{id_}' is a hub id (a built-in study names no relative paths), but the working "
        f"folder holds {work / id_}, which the study's nodes would load in its place; run the study from "
        "another working folder (or move that one away)"
    )


def test_a_builtins_first_run_refuses_a_hub_id_the_working_folder_shadows(tmp_path, monkeypatch, capsys):
    sub, work, out = hub_id_study(tmp_path)
    # a built-in: its corpus an absolute path, its start model and tokenizer hub ids, read from no file
    builtin = dataclasses.replace(load_study_file(sub / "s.yaml"), folder=None)
    assert builtin.runs[1].init == "someone/enc" and builtin.data[0].tokenizer == "someone/tok"
    monkeypatch.setitem(STUDIES, "mini", lambda scale: builtin)
    model_mirror_folders(tmp_path / "mirror", "someone/enc", "someone/tok")
    monkeypatch.setenv(HUB_MODELS_ENV, str(tmp_path / "mirror"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(work)

    model_mirror_folders(work, "someone/enc")  # another model, where the working folder shadows the hub id
    for command in (["run", "mini", "--out", out], ["plan", "mini"]):
        before = world_state(tmp_path)
        code, err = cli(["study", *command], capsys)
        assert_refused(code, err, "study mini, run b: model " + _shadowed("someone/enc", work) + "$")
        assert_unchanged(before)
        assert_printed_as_documented("study-builtin-shadowed-hub-id", err, tmp_path)
    assert not out.exists()

    (work / "someone" / "enc").rename(work / "someone" / "tok")
    code, err = cli(["study", "run", "mini", "--out", out], capsys)
    assert_refused(code, err, "study mini, dataset main: tokenizer " + _shadowed("someone/tok", work) + "$")

    # the same study from its file reads its ids beside the file (`files._Paths`): a working folder
    # of its own refuses them as before, in the study file's words, not this check's
    code, err = cli(["study", "plan", sub / "s.yaml"], capsys)
    assert_refused(code, err, r"someone/tok is not beside the study file .* but in the working directory")

    monkeypatch.chdir(tmp_path)  # nothing shadows the ids here: the built-in runs, reading the mirrors
    code, err = cli(["study", "run", "mini", "--out", out], capsys)
    assert code in (0, None), err
    assert len(list((out / "nodes" / "pretrain").glob("b-*"))) == 1
