"""A study continuing a finished run folder keys its pretraining node by the files the trainer loads.

A run folder as `model.init` stands for its last checkpoint's `model/` (`train.start.start_source`: what the
trainer loads and records), while an evaluation of it as is loads its `final/`. The study keyed both by
`final/`: one save writes the two folders alike, but a hand edit of `final/` alone was refused, once the trainer
had loaded the checkpoint, with "changed since the study's graph was built" (nothing had changed, and every
rerun was refused the same), and an edit of the checkpoint alone kept the key of the model the run no longer
trained from. The continuing read is now the trainer's (`localmodels.read_model` with `start`,
`train.start.start_model_folder`); the one as is keeps `final/`. The study, its nodes and the models are real.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from fake_study import tiny_corpus
from tests.eval.fixtures import model_folder
from tests.study.study_fixtures import eval_records, local_model_study, polarity_task_file
from tests.train.helpers import save_tiny_encoder, tiny_run

from encoderlab.study import real_backend
from encoderlab.study.files import load_study_file
from encoderlab.study.graph import build_graph
from encoderlab.study.runner import run_study

RECIPE = ", recipe: cpt-mlm, steps: 2"


def test_the_continuing_read_of_a_run_folder_is_the_identity_its_trainer_records(tmp_path):
    from encoderlab.objectives import MLM
    from encoderlab.study.needs import model_identity
    from encoderlab.train import ModelSpec, Phase, pretrain
    from encoderlab.train.build import init_identity

    init = save_tiny_encoder(tmp_path / "init", seed=0)
    run = tmp_path / "run"  # 3 steps, checkpoints at step 2 and at the last
    pretrain(
        tiny_run(
            run, phases=(Phase(objective=MLM(mask_ratio=0.3), steps=3),), model=ModelSpec(init=str(init))
        )
    )
    spec, weights = ModelSpec(init=str(run)), (init / "model.safetensors").read_bytes()
    continued, as_is = model_identity(str(run), start=True), model_identity(str(run))
    assert continued == init_identity(spec) == as_is  # one save wrote both folders

    (run / "final" / "model.safetensors").write_bytes(weights)  # what an evaluation reads, not the trainer
    assert model_identity(str(run), start=True) == continued == init_identity(spec)
    assert model_identity(str(run)) != as_is
    (run / "checkpoints" / "step_0000003" / "model" / "model.safetensors").write_bytes(weights)
    assert model_identity(str(run), start=True) == init_identity(spec) != continued  # what the trainer reads


def _finished_run(root: Path) -> Path:
    """A run folder a study trained, continuing the model folder `root/model` on its corpus and tokenizer."""
    tiny_corpus(root / "corpus.jsonl", 40)
    polarity_task_file(root)
    model_folder(root / "model", seed=0)
    shutil.copytree(root / "model", root / "tok")
    run_study(
        load_study_file(local_model_study(root, "model", RECIPE)),
        root / "base",
        real_backend(),
        progress=False,
    )
    (run,) = (root / "base" / "nodes" / "pretrain").glob("*/run")
    return run


def _pretrain_key(study: Path) -> str:
    return build_graph(load_study_file(study), real_backend()).nodes["pretrain/start"].key


def test_a_study_continuing_a_run_folder_whose_final_model_was_edited_trains_from_its_checkpoint(tmp_path):
    """`final/` edited alone: the study ran up to the trainer's load and was refused as "changed", at every
    rerun; now its key is the checkpoint's, unmoved, and it trains. The checkpoint edited alone moves the key."""
    run = _finished_run(tmp_path)
    study = local_model_study(tmp_path, str(run), RECIPE)
    before = _pretrain_key(study)
    start = tmp_path / "model" / "model.safetensors"  # another model of the same shape: the run's start
    shutil.copy(start, run / "final" / "model.safetensors")
    assert _pretrain_key(study) == before  # was another key: of final/, which the run does not train from
    run_study(load_study_file(study), tmp_path / "out", real_backend(), progress=False)  # was refused
    assert len(eval_records(tmp_path / "out")) == 1

    checkpoint = sorted((run / "checkpoints").glob("step_*"))[-1]  # the last: the one the trainer loads
    shutil.copy(start, checkpoint / "model" / "model.safetensors")
    assert _pretrain_key(study) != before  # was the same key, though the run trains from other weights
