"""A start from a finished run folder whose `final/` differs from its last checkpoint's `model/` says so.

`pretrain` continues a run folder from its last checkpoint's `model/` (`train.start.start_model_folder`), while an
evaluation of the folder reads its `final/`; one save writes both alike. A hand edit of `final/` was not what the
run trained from, and nothing said so: now a start prints one note naming both folders and which one it reads
(`build.final_differs_note`), and the run still starts from the checkpoint.
"""

from __future__ import annotations

from tests.train.helpers import save_tiny_encoder, tiny_run

from encoderlab.objectives import MLM
from encoderlab.train import ModelSpec, Phase, pretrain

NOTE = "differs from its last checkpoint's"


def _run(out, init):
    phases = (Phase(objective=MLM(mask_ratio=0.3), steps=3),)
    return pretrain(tiny_run(out, phases=phases, model=ModelSpec(init=str(init))))


def test_a_start_from_a_run_folder_whose_final_model_was_edited_names_both_and_the_one_it_reads(
    tmp_path, capsys
):
    init = save_tiny_encoder(tmp_path / "init", seed=0)
    run = tmp_path / "run"  # 3 steps: its last checkpoint at step 3, the final model saved alike
    _run(run, init)
    capsys.readouterr()
    _run(tmp_path / "alike", run)
    assert NOTE not in capsys.readouterr().err  # final/ as the save wrote it: nothing to say
    (run / "final" / "model.safetensors").write_bytes((init / "model.safetensors").read_bytes())
    _run(tmp_path / "edited", run)
    err = capsys.readouterr().err
    assert (
        f"encoderlab: note: model.init {run} is a run folder whose final model {run / 'final'} differs from its "
        f"last checkpoint's {run / 'checkpoints' / 'step_0000003' / 'model'} (edited by hand?); the run starts "
        "from the checkpoint's, as `pretrain` continues a run folder; to start from the final model, set "
        f"model.init={run / 'final'}"
    ) in err, err
