"""`study plan DIR` and `study report DIR` of a study folder whose task files or `--prepared` folder
were moved or deleted since it ran, as `study run DIR` resumes it (`study/absent.py`).

`study plan` built the graph from the files themselves, so it refused ("task file ... does not exist",
"... holds no prepared data") a folder `study run` resumed; it now builds it as `study run` does
(`absent.resumed_graph`) and says which inputs it took from the record. The report counted the
`--prepared` folder's tokens for the unigram plateau, so `study report DIR` failed with the folder
gone; the prepare node now records that entropy, and a folder from before it, with the folder gone,
says in the caveat that the plateau could not be checked. The nodes are fake (`fake_study.py`) but the
prepare node of a `--prepared` folder, which is real.
"""

from __future__ import annotations

import json
import re
import shutil

from fake_study import tiny_corpus
from tests.reliability.treestate import assert_unchanged, world_state
from tests.study.absent_fixtures import (
    absent_backend,
    absent_inputs_registry,  # noqa: F401 (its autouse fixture applies here)
    absent_spec,
    plan_text,
    refusal_text,
    tiny_prepared_folder,
)
from tests.study.test_task_files_moved import REFUSED

from encoderlab.cli import main
from encoderlab.study.runner import run_study


def test_plan_of_a_study_folder_takes_its_gone_task_file_as_run_does(tmp_path, capsys, monkeypatch):
    """Was "task file .../polarity.yaml does not exist; give the path of a task YAML file ...", where
    `study run DIR` resumed; a node to run that reads it is refused in `study run`'s line."""
    monkeypatch.chdir(tmp_path)  # the working folder is one a refusal may not change
    tiny_corpus(tmp_path / "corpus.jsonl", 60)
    spec, study = absent_spec(tmp_path), tmp_path / "s"
    run_study(spec, study, absent_backend(), progress=False)
    shutil.move(tmp_path / "tasks", tmp_path / "moved")
    out = plan_text(capsys, study)
    assert "5 pretraining runs" in out
    assert (
        f"note: task file {tmp_path}/tasks/polarity.yaml is not there (moved or deleted): its tasks, families "
        f"and signatures are as {study}/graph.json recorded them, and no node to run reads it\n"
    ) in out
    own = [n for n in (study / "nodes" / "eval").iterdir() if "polarity" in n.name]
    shutil.rmtree(own[0])
    before = world_state(tmp_path)
    planned = refusal_text(capsys, ["study", "plan", str(study)])
    assert re.match(REFUSED, planned) and planned == refusal_text(capsys, ["study", "run", str(study)])
    assert_unchanged(before)


def test_plan_of_a_study_folder_takes_its_gone_prepared_folder_as_run_does(tmp_path, capsys):
    """Was "dataset main: .../prepared holds no prepared data (no meta.json); prepare it first ...": nothing
    is to run, so no run is checked, as `study run` checks none, and its unique tokens are those its prepare
    node counted (were estimated); a node that recorded none (edited by hand): estimated, as the note says."""
    data = tiny_prepared_folder(tmp_path)
    study = tmp_path / "s"
    run_study(absent_spec(tmp_path, str(data)), study, absent_backend(), progress=False)
    there = plan_text(capsys, study)
    assert "counted in the prepared folder" in there
    data.rename(tmp_path / "moved")
    out = plan_text(capsys, study)
    assert out == there + (
        f"note: dataset main: the prepared folder {data} is not there (moved or deleted): its content digest "
        f"is as {study}/graph.json recorded it; no node to run reads its tokens, so no start check reads it; "
        "its unique tokens are as its prepare node counted them\n"
    )
    (prepare,) = (study / "nodes" / "prepare").iterdir()
    marker = json.loads((prepare / "node.json").read_text())
    marker["result"].pop("meta")
    (prepare / "node.json").write_text(json.dumps(marker))
    out = plan_text(capsys, study)
    assert "its unique tokens are estimated (its prepare node recorded none): give its place now with " in out
    assert "--prepared main=DIR to count them" in out
    assert "counted in the prepared folder" not in out and "estimated from" in out


def _at_plateau(study, entropy: float) -> None:
    """mlm40's held-out losses at its data's unigram entropy, well below it for clm (in nats)."""
    for model, loss in (("mlm40", entropy), ("clm", entropy - 1)):
        (metrics,) = (study / "nodes" / "pretrain").glob(f"{model}-[0-9a-f]*[0-9a-f]/metrics.jsonl")
        metrics.with_name("validation.json").write_text(json.dumps({"step": 100, "val/clm": loss}))


def _sentence(study, claim="mlm-sc") -> str:
    results = json.loads((study / "report" / "results.json").read_text())
    return next(c["sentence"] for c in results["claims"] if c["id"] == claim)


def test_the_report_of_a_folder_whose_prepared_folder_is_gone_reads_the_recorded_entropy(tmp_path, capsys):
    """Was a failure counting the gone folder's tokens: the prepare node records the entropy, read back."""
    from encoderlab.data.packed import unigram_entropy

    data = tiny_prepared_folder(tmp_path)
    study = tmp_path / "s"
    run_study(absent_spec(tmp_path, str(data)), study, absent_backend(), progress=False)
    (prepare,) = (study / "nodes" / "prepare").iterdir()
    entropy = json.loads((prepare / "node.json").read_text())["result"]["unigram"]
    assert entropy == unigram_entropy(data)
    _at_plateau(study, entropy)
    main(["study", "report", str(study)])
    caveat = (
        f"Caveat: MLM-40 ({entropy:.2f} nats against {entropy:.2f}) has not got below the unigram plateau"
    )
    assert caveat in _sentence(study)
    data.rename(tmp_path / "moved")
    main(["study", "report", str(study)])
    assert caveat in _sentence(study)


def test_the_report_of_an_older_folder_says_the_plateau_could_not_be_checked(tmp_path, capsys):
    """A prepare node from before the entropy was recorded: counted from the folder while it is there;
    gone, the claim says the plateau is unchecked, naming the folder and the fix, and the report is written
    (was "... is not prepared data (no meta.json); run `encoderlab data prepare`", and no report)."""
    data = tiny_prepared_folder(tmp_path)
    study = tmp_path / "s"
    from encoderlab.data.packed import unigram_entropy

    run_study(absent_spec(tmp_path, str(data)), study, absent_backend(), progress=False)
    _at_plateau(study, unigram_entropy(data))
    (prepare,) = (study / "nodes" / "prepare").iterdir()
    marker = json.loads((prepare / "node.json").read_text())
    marker["result"].pop("unigram", None)
    (prepare / "node.json").write_text(json.dumps(marker))
    main(["study", "report", str(study)])
    assert "has not got below the unigram plateau" in _sentence(study)
    data.rename(tmp_path / "moved")
    main(["study", "report", str(study)])
    assert (
        f"Caveat: whether MLM-40 and CLM got below the unigram plateau is not checked: the prepared folder "
        f"{data} of dataset main is not there (moved or deleted), and {study} recorded no entropy of it; "
        f"give its place with `encoderlab study run {study} --prepared main=DIR`, which writes the report again."
    ) in _sentence(study)
    assert "Caveat" not in _sentence(study, "early")  # a checkpoint step: the final losses do not say
