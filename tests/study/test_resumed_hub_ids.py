"""Resuming a study folder (`study run DIR`) whose start model or tokenizer hub id the working folder shadows.

`study run DIR` rebuilds the study from DIR/study.json, where a run's `init: someone/enc` (or a
dataset's `tokenizer: someone/tok`) is the string the study file gave: a hub id, as the first run read
it (a study file's relative paths are made absolute beside it). Resumed from a working folder that
holds a folder `someone/enc`, the unfinished pretraining node loaded that folder in the hub model's
place, silently (`load_pretrained` looks in the working folder first), and `checks.check_hub_ids`
accepted it as a local folder. Now `study run DIR` and `study plan DIR` refuse it in one line before
anything runs (`checks.check_shadowed_hub_ids`). The hub models are mirrors (`ENCODERLAB_HUB_MODELS`,
`HF_HUB_OFFLINE=1`): nothing downloads.
"""

from __future__ import annotations

import re
import shutil

import yaml
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_arguments import assert_refused, write_texts
from tests.reliability.test_hostile_inputs import cli
from tests.reliability.test_hostile_study_files import MINI_STUDY
from tests.reliability.treestate import assert_unchanged, world_state
from tests.study.study_fixtures import model_mirror_folders

from encoderlab.data.hub import HUB_MODELS_ENV


def hub_id_study(tmp_path):
    """`sub/s.yaml`: the mini study with run b started from the hub id `someone/enc` and its tokenizer
    `someone/tok`; `work`, an empty working folder; `s`, the study folder to be. Returns the three."""
    sub, work, out = tmp_path / "sub", tmp_path / "work", tmp_path / "s"
    sub.mkdir()
    work.mkdir()
    write_texts(sub)
    study = yaml.safe_load(yaml.safe_dump(MINI_STUDY))
    study["runs"][1]["init"] = "someone/enc"
    study["data"][0] = {"name": "main", "corpus": ["texts.txt"], "tokenizer": "someone/tok"}
    (sub / "s.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    return sub, work, out


def ran_hub_id_study(tmp_path, monkeypatch, capsys):
    """`hub_id_study` run to the end offline, its two hub ids read from a model mirror."""
    sub, work, out = hub_id_study(tmp_path)
    model_mirror_folders(tmp_path / "mirror", "someone/enc", "someone/tok")
    monkeypatch.setenv(HUB_MODELS_ENV, str(tmp_path / "mirror"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("ENCODERLAB_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(work)
    code, err = cli(["study", "run", sub / "s.yaml", "--out", out], capsys)
    assert code in (0, None), err
    return sub, work, out


def test_a_resumed_study_refuses_a_hub_id_the_working_folder_now_shadows(tmp_path, monkeypatch, capsys):
    sub, work, out = ran_hub_id_study(tmp_path, monkeypatch, capsys)
    (node,) = (out / "nodes" / "pretrain").glob("b-*")
    shutil.rmtree(node)  # run b unfinished: its resume loads its start model again

    model_mirror_folders(
        work, "someone/enc"
    )  # another model, where the working folder would shadow the hub id
    for command in ("run", "plan"):
        before = world_state(tmp_path)
        code, err = cli(["study", command, out], capsys)
        assert_refused(
            code,
            err,
            re.escape(
                f"study mini, run b: model 'someone/enc' is a hub id in {out}/study.json, but the working folder "
                f"holds {work}/someone/enc, which the study's nodes would load in its place; resume the study "
                "from another working folder (or move that one away); if a study built in Python before "
                f"2026-12-04 wrote {out}, 'someone/enc' was that folder: run its script again instead, which "
                "names the folder by its absolute path (the nodes reading it run again)"
            )
            + "$",
        )
        assert_unchanged(before)
        assert_printed_as_documented("study-resume-shadowed-hub-id", err, tmp_path)
    shutil.rmtree(work / "someone")
    model_mirror_folders(work, "someone/tok")
    code, err = cli(["study", "run", out], capsys)  # only the finished prepare node reads it: accepted
    assert code in (0, None), err
    (node,) = (out / "nodes" / "prepare").glob("main-*")
    shutil.rmtree(node)  # the prepare node to run again: it reads the tokenizer
    code, err = cli(["study", "run", out], capsys)
    assert_refused(
        code, err, r"study mini, dataset main: tokenizer 'someone/tok' is a hub id in .*/study\.json, "
    )

    monkeypatch.chdir(
        tmp_path
    )  # nothing shadows the ids here: the resume reads the mirrors, as the first run
    code, err = cli(["study", "run", out], capsys)
    assert code in (0, None), err
    assert len(list((out / "nodes" / "pretrain").glob("b-*"))) == 1
