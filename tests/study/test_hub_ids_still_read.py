"""Resuming a study offline asks for no hub id that only finished nodes read.

`checks.check_hub_ids` asked a mirror, the hub cache or the hub for every start model and tokenizer
hub id of the study, before anything ran: resuming a study whose nodes had all finished, on a machine
without the hub (`HF_HUB_OFFLINE=1`, no mirror of the model), was refused for an id no node would read
again. Now only the ids read by nodes still to run are checked (`hubids._still_read`): a finished
study resumes, and an unfinished pretraining node's start model is still refused first. The hub models
are mirrors (`ENCODERLAB_HUB_MODELS`, `HF_HUB_OFFLINE=1`): nothing downloads.
"""

from __future__ import annotations

import shutil

from tests.reliability.test_hostile_arguments import assert_refused
from tests.reliability.test_hostile_inputs import cli
from tests.reliability.treestate import assert_unchanged, tree_state, world_state
from tests.study.test_resumed_hub_ids import ran_hub_id_study


def test_a_resume_asks_only_for_the_hub_ids_of_nodes_still_to_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    sub, work, out = ran_hub_id_study(tmp_path, monkeypatch, capsys)

    shutil.rmtree(tmp_path / "mirror")  # offline now, and no mirror holds either id
    (tmp_path / "mirror").mkdir()
    for command in (["study", "run", out], ["study", "run", sub / "s.yaml", "--out", out]):
        before = tree_state(out)
        code, err = cli(command, capsys)
        assert code in (0, None), err  # every node finished: neither id is read again
        assert {k: v for k, v in tree_state(out).items() if k.startswith("nodes/")} == {
            k: v for k, v in before.items() if k.startswith("nodes/")
        }

    (node,) = (out / "nodes" / "pretrain").glob("b-*")
    shutil.rmtree(node)  # run b to train again: its start model is read, and is nowhere
    before = world_state(tmp_path)
    code, err = cli(["study", "run", out], capsys)
    assert_refused(code, err, r"^encoderlab: error: study mini, run b: .* of someone/enc, ")
    assert_unchanged(before)


def test_a_finished_node_downstream_of_one_to_run_again_still_has_its_hub_ids_asked_for(
    tmp_path, monkeypatch, capsys
):
    """Run b finished, but its prepare node runs again (its folder deleted), so b does too: its start
    model was taken for read by finished nodes only (a node without a marker was all that counted), and
    the study prepared its corpus again before b failed to load it (`runner.pending_nodes`)."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    sub, work, out = ran_hub_id_study(tmp_path, monkeypatch, capsys)
    shutil.rmtree(tmp_path / "mirror" / "someone" / "enc")  # the tokenizer is still mirrored
    (node,) = (out / "nodes" / "prepare").glob("main-*")
    shutil.rmtree(node)
    before = world_state(tmp_path)
    code, err = cli(["study", "run", out], capsys)
    assert_refused(code, err, r"^encoderlab: error: study mini, run b: .* of someone/enc, ")
    assert_unchanged(before)
