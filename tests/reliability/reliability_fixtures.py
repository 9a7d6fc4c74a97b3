"""Tiny fixtures for the reliability tests: an evaluation setup (a fake `boolq` asset in its real
schema, a tiny model folder with its tokenizer) and the prelude that shortens boolq fine-tuning
inside killharness children. Builders come from tests/eval so both suites test the same data."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.eval.conftest import make_tokenizer, tiny_model, vocabulary_texts
from tests.eval.fixtures import write_asset

from encoderlab.model.io import save_model_folder

QUICK_STEPS = 12


def write_boolq(home: Path, n: int = 64) -> None:
    """A fetched-looking `boolq` asset: label true iff the passage holds "good"."""
    records = []
    for i in range(n):
        split = "dev" if i % 4 == 0 else "train"
        word = "good" if i % 2 else "bad"
        meta = {"question": "is it good ?", "label": bool(i % 2), "split": split}
        records.append({"id": f"{split}-{i}", "text": f"the {word} red code {i % 7}", "meta": meta})
    write_asset(home, "boolq", records)


def eval_fixture(tmp_path: Path) -> tuple[str, dict[str, str]]:
    """(model folder, environment) for `encoderlab eval ... --tasks boolq`."""
    home = tmp_path / "home"
    write_boolq(home)
    tok = make_tokenizer(vocabulary_texts())
    model = save_model_folder(tiny_model(len(tok)), tmp_path / "model", tok)
    return str(model), {"ENCODERLAB_HOME": str(home)}


def quick_boolq() -> None:
    """Prelude for killharness children: boolq fine-tunes QUICK_STEPS steps (its signature changes)."""
    from encoderlab.eval.spec import FinetuneConfig
    from encoderlab.eval.tasks import TASKS

    quick = FinetuneConfig(batch_size=8, micro_batch_size=8, max_steps=QUICK_STEPS)
    TASKS["boolq"] = dataclasses.replace(TASKS["boolq"], finetune=quick)
