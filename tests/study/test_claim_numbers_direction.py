"""results.json's numbers of a claim point the way its sentence does: in the claim's favour.

A spread claim ("a is more stable than b", lower is better) quotes b - a for its test over pretraining seeds
(`numbers.diff`) and for the seed-0 checkpoints alone; `numbers.checkpoint` held a - b, the opposite sign of
the number the sentence printed beside it. Expected numbers here are numpy's, from the scores as given.
"""

from __future__ import annotations

import numpy as np
import pytest
from tests.study.study_fixtures import stand_in_study

from encoderlab.study import results
from encoderlab.study.spec import ClaimSpec
from encoderlab.words import number_text

A = {s: {f: 10.0 + s + 0.3 * f + 0.2 * (f == 1) for f in range(3)} for s in range(3)}
"""The stable run's spread per pretraining seed and fine-tuning seed (lower is better)."""
B = {s: {f: 20.0 + 2 * s + 0.5 * f for f in range(3)} for s in range(3)}


@pytest.mark.parametrize("lower", [True, False])
def test_the_checkpoint_difference_is_in_the_claims_favour_as_the_sentence_quotes_it(monkeypatch, lower):
    claim = ClaimSpec(id="c", text="A is more stable", kind="beats", a="a", b="b")
    data = stand_in_study(monkeypatch, [(claim, {"kind": "paired", "lower": lower, "a": A, "b": B})])
    (result,) = results.check_claims(data)
    sign = -1 if lower else 1  # in the claim's favour: b - a when lower is better
    seed0 = sign * float(np.mean([A[0][f] - B[0][f] for f in range(3)]))
    overall = sign * float(np.mean([np.mean(list(A[s].values())) - np.mean(list(B[s].values())) for s in A]))
    assert result.numbers["diff"].mean == pytest.approx(overall)
    checkpoint = result.numbers["checkpoint"]
    assert checkpoint.mean == pytest.approx(seed0)
    assert checkpoint.ci_low < checkpoint.mean < checkpoint.ci_high
    said = result.sentence.split("checkpoints alone, over 3 fine-tuning seeds: ")[1]
    # the sign and first digits of the number the sentence printed
    assert said.startswith(number_text(seed0, 2, sign=True)[:3])
