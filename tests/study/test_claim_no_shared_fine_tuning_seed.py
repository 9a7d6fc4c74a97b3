"""A claim whose runs both have results but share too few fine-tuning seeds to compare says so.

A run at several pretraining seeds against one checkpoint is tested on the fine-tuning seeds they have in common
(`nested._against_reference`), and one checkpoint each on theirs. Where the one checkpoint shares no fine-tuning
seed with the other run's (or with only one of its checkpoints) there is no comparison, and until 2026-12-06 the
claim read "the study has no finished results for it yet", which finishing nothing would change.
"""

from __future__ import annotations

import pytest
from tests.study.study_fixtures import stand_in_study

from encoderlab.study import results
from encoderlab.study.spec import ClaimSpec

MANY = {0: {0: 71.0, 1: 72.0}, 1: {0: 73.0, 1: 70.5}, 2: {0: 72.5, 1: 71.5}}
"""Three pretraining seeds, each checkpoint fine-tuned at seeds 0 and 1."""


def _sentence(a: dict, b: dict) -> str:
    claim = ClaimSpec(id="c", text="", kind="beats", a="mlm", b="clm")
    with pytest.MonkeyPatch.context() as monkeypatch:
        (result,) = results.check_claims(
            stand_in_study(monkeypatch, [(claim, {"kind": "reference", "lower": False, "a": a, "b": b})])
        )
    assert result.status == "not tested"
    return result.sentence


def test_a_checkpoint_sharing_no_fine_tuning_seed_with_the_other_run_says_so():
    said = _sentence(MANY, {0: {2: 70.0}})
    assert "no finished results" not in said
    assert said == (
        "Not tested: CLM's one checkpoint (pretraining seed 0) is compared with MLM's checkpoints at the "
        "fine-tuning seeds both have, and of MLM's 3 checkpoints none shares one (CLM: fine-tuning seed 2; MLM: "
        "seeds 0, 1): a comparison against one checkpoint needs two; fine-tune MLM's checkpoints at CLM's seeds."
    )
    assert _sentence({0: {2: 70.0}}, MANY).startswith("Not tested: MLM's one checkpoint (pretraining seed 0)")


def test_a_checkpoint_sharing_a_seed_with_one_checkpoint_only_names_it():
    many = {0: {0: 71.0, 1: 72.0}, 1: {0: 73.0, 1: 70.5}, 2: {2: 72.5}}
    said = _sentence(many, {5: {2: 70.0, 3: 69.0}})
    assert "CLM's one checkpoint (pretraining seed 5)" in said
    assert "of MLM's 3 checkpoints only the one at pretraining seed 2 shares one" in said
    assert "(CLM: fine-tuning seeds 2, 3; MLM: seeds 0, 1, 2)" in said


def test_one_checkpoint_each_sharing_no_fine_tuning_seed_says_so():
    said = _sentence({0: {0: 71.0}}, {0: {1: 70.0}})
    assert said == (
        "Not tested: MLM's and CLM's one checkpoint each share no fine-tuning seed (MLM: fine-tuning seed 0; "
        "CLM: seed 1), so there is no pair to compare; fine-tune both at a common seed."
    )


def test_a_run_without_results_still_waits_for_them():
    assert _sentence(MANY, {}) == "Not tested: the study has no finished results for it yet."
