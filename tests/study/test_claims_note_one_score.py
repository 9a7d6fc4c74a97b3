"""The claims note says a one-checkpoint reference was scored at one fine-tuning seed only where one was.

Until 2026-12-07 the note read "against a run trained at one, by Welch's test against that checkpoint (scored
at one fine-tuning seed, with the other run's pooled fine-tuning variance as its noise)" in every report, as if
every reference checkpoint had one fine-tuning score: a reference scored at three fine-tuning seeds is tested
against those three scores, and borrows nothing (`nested._against_reference`).
"""

from __future__ import annotations

import pytest
from tests.study.study_fixtures import stand_in_study

from encoderlab.study import results
from encoderlab.study.report import _claims_note
from encoderlab.study.spec import ClaimSpec

MANY = {k: {f: 70.0 + k + 0.7 * f * (k + 1) for f in range(3)} for k in range(3)}
"""A run at three pretraining seeds, each checkpoint at three fine-tuning seeds."""
ONE_SEED_MANY = {k: {0: 70.0 + 0.5 * k} for k in range(3)}
"""A run at three pretraining seeds, each checkpoint at fine-tuning seed 0 only: no variance to borrow."""


def _note(monkeypatch, designs: dict[str, tuple[dict, dict]]) -> str:
    claims = [
        (
            ClaimSpec(id=cid, text="", kind="beats", a=f"{cid}a", b=f"{cid}b"),
            {"kind": "reference", "lower": False, "a": a, "b": b},
        )
        for cid, (a, b) in designs.items()
    ]
    got = results.check_claims(stand_in_study(monkeypatch, claims))
    assert all(r.numbers["level"] == "reference" for r in got)
    return _claims_note(got)


def test_a_reference_scored_at_several_fine_tuning_seeds_borrows_nothing(monkeypatch):
    note = _note(monkeypatch, {"c": (MANY, {0: {0: 69.0, 1: 70.5, 2: 68.9}})})
    assert "by Welch's test against that checkpoint's fine-tuning scores;" in note
    assert "one fine-tuning seed" not in note and "pooled" not in note


@pytest.mark.parametrize(
    ("designs", "said"),
    [
        (
            {"c": (MANY, {0: {0: 69.0}})},
            "1 claim whose checkpoint was scored at one fine-tuning seed borrowed the other run's pooled",
        ),
        (
            {"c": (MANY, {0: {0: 69.0}}), "d": (MANY, {0: {0: 69.5}}), "e": (MANY, {0: {0: 69.0, 1: 70.0}})},
            "2 claims whose checkpoint was scored at one fine-tuning seed borrowed",
        ),
        (
            {"c": (ONE_SEED_MANY, {0: {0: 69.0}})},
            "1 claim whose checkpoint was scored at one fine-tuning seed had no such variance to borrow, and no test",
        ),
    ],
)
def test_a_reference_scored_at_one_fine_tuning_seed_is_said_so(monkeypatch, designs, said):
    note = _note(monkeypatch, designs)
    assert f"by Welch's test against that checkpoint's fine-tuning scores ({said}" in note
