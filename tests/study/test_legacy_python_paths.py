"""A study folder that a study built in Python wrote before 2026-12-04, starting from an OWNER/NAME folder.

Before `hubids.pin_local_starts`, a study built in Python recorded a start model `someone/enc` that was a
folder of its working folder as written, relative: its record cannot tell it from a hub id. Resumed
from that working folder (`study run DIR`), it was refused as a hub id the folder shadows
(`check_shadowed_hub_ids`) even when every node reading it had finished, so nothing would load it: now
accepted then (`reads.unread_inputs`). With a node still to run reading it, it is refused, and the line
names this case and its fix: the script run again, which now names the folder by its absolute path
(new keys for the nodes reading it, which run again; the others are kept). The old writer is
`run_study` without `pin_local_starts`; the tokenizer is a mirror (`HF_HUB_OFFLINE=1`).
"""

from __future__ import annotations

import dataclasses
import json
import shutil

from tests.reliability.test_hostile_arguments import assert_refused
from tests.reliability.test_hostile_inputs import cli
from tests.reliability.treestate import assert_unchanged, world_state
from tests.study.study_fixtures import model_mirror_folders
from tests.study.test_python_built_paths import python_study

from encoderlab.study import real_backend, runner
from encoderlab.study.files import load_study_file
from encoderlab.study.runner import run_study


def test_a_python_built_folder_from_before_pinning_resumes_or_names_its_fix(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    sub, work, out = python_study(tmp_path, monkeypatch)
    spec = dataclasses.replace(load_study_file(sub / "s.yaml"), folder=None)  # then built as in Python
    model_mirror_folders(work, "someone/enc")  # the user's own model, in the working folder
    with monkeypatch.context() as old:
        old.setattr(runner, "pin_local_starts", lambda spec: spec)  # the writer before 2026-12-04
        run_study(spec, out, real_backend(), progress=False)
    assert json.loads((out / "study.json").read_text())["runs"][1]["init"] == "someone/enc"
    nodes = sorted(p.name for p in (out / "nodes").glob("*/*"))

    code, err = cli(["study", "run", out], capsys)  # was: refused, though no node reads it again
    assert code in (0, None), err
    assert sorted(p.name for p in (out / "nodes").glob("*/*")) == nodes

    (node,) = (out / "nodes" / "pretrain").glob("b-*")
    shutil.rmtree(node)  # run b to train again from the folder: which one the record cannot say
    before = world_state(tmp_path)
    code, err = cli(["study", "run", out], capsys)
    assert_refused(code, err, r"model 'someone/enc' is a hub id in .*; if a study built in Python before ")
    assert "run its script again instead" in err
    assert_unchanged(before)

    run_study(spec, out, real_backend(), progress=False)  # the fix: b keyed by the folder's absolute path
    assert json.loads((out / "study.json").read_text())["runs"][1]["init"] == str(work / "someone" / "enc")
    kept = [n for n in nodes if not n.startswith("b-")]
    assert set(kept) <= {p.name for p in (out / "nodes").glob("*/*")}
