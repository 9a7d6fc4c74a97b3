"""What a checkpoint's state.json says a phase froze (`train.freeze.frozen_record`).

A preset's blocks depend on the model's depth (paper 2's 0-7 of 22, scaled by our mapping), so a
detour-freeze-low from a 6-layer MiniLM froze blocks 0-1 while state.json said only `paper2-low`.
"""

from __future__ import annotations

import pytest
from tests.train.helpers import tiny_run

from encoderlab.model.io import load_model_folder
from encoderlab.objectives import CLM, MLM
from encoderlab.train import Phase, pretrain
from encoderlab.train import checkpoint as ckpt
from encoderlab.train.config import PlannedPhase
from encoderlab.train.freeze import frozen_record, paper2_groups


def test_a_preset_freeze_is_recorded_with_the_blocks_it_froze(tmp_path):
    phases = (
        Phase(objective=CLM(), steps=2, freeze="paper2-low", name="clm"),
        Phase(objective=MLM(mask_ratio=0.3), steps=2, freeze="1", name="decay"),
    )
    cfg = tiny_run(tmp_path / "run", phases=phases)
    pretrain(cfg)
    low = list(paper2_groups(load_model_folder(f"{cfg.out}/final").config.n_layers)[0])
    blocks = f"{low[0]}" if len(low) == 1 else f"{low[0]}-{low[-1]}"
    state = ckpt.read_state(ckpt.checkpoint_dir(cfg.out, 2))
    assert state["phase"] == "clm" and state["frozen_layers"] == f"{blocks} (paper2-low)"
    later = ckpt.read_state(ckpt.checkpoint_dir(cfg.out, 4))
    assert later["frozen_layers"] == "1"  # a spec of blocks is itself


@pytest.mark.parametrize("spec", ["0,1", "0-1 ", "1, 2", "2,1"])
def test_a_spec_of_blocks_is_recorded_as_written(spec):
    """Only a preset gains its blocks (`frozen_record`'s docstring: "the spec itself otherwise"); a spec of
    blocks written another way than `format_layers` writes it was recorded as `0-1 (0,1)`, read as a preset's
    name in parentheses."""
    phase = PlannedPhase(0, "clm", Phase(objective=CLM(), steps=2, freeze=spec), 0, 2)
    assert frozen_record(phase, 6) == spec


def _notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if "freezes blocks" in line]


def test_a_phase_that_freezes_says_which_blocks_as_it_starts(tmp_path, capsys):
    # a preset's blocks depend on the depth, so the run names them, and the preset, as the phase starts;
    # a phase that freezes nothing says nothing (it printed nothing at all, state.json alone named them)
    phases = (
        Phase(objective=CLM(), steps=2, freeze="paper2-low", name="clm"),
        Phase(objective=MLM(mask_ratio=0.3), steps=2, name="mlm"),
        Phase(objective=MLM(mask_ratio=0.3), steps=2, freeze="1", name="decay"),
    )
    cfg = tiny_run(tmp_path / "run", phases=phases)
    pretrain(cfg)
    n = load_model_folder(f"{cfg.out}/final").config.n_layers
    low = list(paper2_groups(n)[0])
    blocks = f"{low[0]}" if len(low) == 1 else f"{low[0]}-{low[-1]}"
    assert _notes(capsys.readouterr().err) == [
        f"encoderlab: note: phase clm freezes blocks {blocks} of {n} (preset paper2-low)",
        f"encoderlab: note: phase decay freezes blocks 1 of {n}",  # a spec of blocks names no preset
    ]


def test_a_resume_inside_a_freezing_phase_says_it_again(tmp_path, capsys):
    phases = (Phase(objective=CLM(), steps=4, freeze="paper2-low", name="clm"),)
    cfg = tiny_run(tmp_path / "run", phases=phases)
    pretrain(cfg, until_step=2)
    assert len(_notes(capsys.readouterr().err)) == 1
    pretrain(cfg, resume=True)  # the resumed process enters the phase at step 2: its own note, once
    resumed = _notes(capsys.readouterr().err)
    assert len(resumed) == 1 and "phase clm freezes blocks" in resumed[0]
