"""What a resume checks of its inputs: the tokenizer and the prepared data its checkpoint was trained on.

A `--resume` takes the config, the weights and the step counter from the run folder, but the tokens
from `data.path` as it is now. That folder can have been prepared again since: with another tokenizer
of the same size (training went on, on ids that now mean other words), or from other text with the
same tokenizer (the run went on, on other rows, no longer bit-exact), both without a word. Design and
trade-offs:
- **The tokenizer is compared by its content hash** (`tokenizer_hash`) with the one saved in the
  checkpoint's model folder, on every load of a checkpoint of the run (a NaN rollback's too), and
  another one is refused, `--force` or not. A checkpoint without a saved tokenizer is not checked.
- **The data is compared by its identity** (`build.data_identity`, recorded in each checkpoint's
  state as `data`), and other data is refused unless `--force`, which trains on the new rows with a
  note. A synthetic source, then or now, is not compared: the config check refuses a changed
  `data.path` already. A checkpoint from before the record gets a note, not a refusal, as it cannot
  be checked.
Both are pure functions of the checkpoint folder and what the run reads now, so the `Trainer` keeps
the printing (rank 0 only) and this module no state.
"""

from __future__ import annotations

from pathlib import Path

import encoderlab.train.checkpoint as ckpt
from encoderlab.errors import UserError


def check_tokenizer(path: Path, ours, data_path: str | Path | None, saved=None) -> None:
    """Refuse to resume from checkpoint `path` on data whose tokenizer `ours` (None: no tokenizer, not
    checked) is not the one the checkpoint was trained with; `data_path` is where the data is read. `saved`:
    the checkpoint's tokenizer where the caller read it already (None: read here)."""
    from encoderlab.data.tokenizer import load_tokenizer, tokenizer_hash

    if ours is None or not (path / "model" / "tokenizer.json").is_file():
        return
    saved = saved if saved is not None else load_tokenizer(path / "model")
    theirs, now = tokenizer_hash(saved), tokenizer_hash(ours)
    if theirs != now:
        size = f", with {len(ours)} ids instead of {len(saved)}" if len(ours) != len(saved) else ""
        raise UserError(
            f"{path} was trained with tokenizer {theirs[:12]}, but data.path {data_path} now "
            f"gives tokenizer {now[:12]} (prepared again?{size}); resume on the data the run started "
            "with, or start a new run folder"
        )


def data_note(path: Path, ours: str | None, where: str | Path | None, *, force: bool) -> str | None:
    """Refuse to resume from checkpoint `path` on prepared data (identity `ours`, None: synthetic, read at
    `where`) other than the checkpoint's; with `force`, the note saying so. Checkpoints from before the
    record: a note. None when there is nothing to say."""
    state = ckpt.read_state(path)
    theirs = state.get("data")
    if "data" not in state and ours is not None:
        return (f"{path} records no data fingerprint (written by an older encoderlab), so this resume "
                f"cannot check that data.path {where} holds the rows the run trained on")  # fmt: skip
    if theirs is None or ours is None or theirs == ours:
        return (
            None  # synthetic then or now: a changed data.path, which the config check refuses without --force
        )
    if not force:
        raise UserError(
            f"{path} was trained on prepared data {str(theirs)[:12]}, but data.path {where} now holds data "
            f"{ours[:12]} (prepared again?); resume on the data the run started with, start a new run "
            "folder, or pass --force to train on the new data (not bit-exact)"
        )
    return (f"--resume --force: data.path {where} holds other data ({ours[:12]}) than {path} was "
            f"trained on ({str(theirs)[:12]}); training goes on, on its rows (not bit-exact)")  # fmt: skip
