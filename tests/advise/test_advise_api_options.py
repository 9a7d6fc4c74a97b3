"""`advise(...)` in Python holds its options to the ranges `encoderlab advise` holds its flags to.

The API took any value: `delta=1e300` (or inf, or 1e-300) was fitted as least squares under the Huber loss's
name, `seed=-1` was numpy's ValueError traceback, `seed_noise=inf` gave NaN intervals beside a recommendation,
`confidence=1.5` never recommended and `interval=0` or `n_boot=0` failed deep in numpy, while the command refused
each as one line. Both now go through `options.check_fit_options`: one message, naming the option as its caller
wrote it.
"""

from __future__ import annotations

import numpy as np
import pytest
from tests.advise.advise_fixtures import one_line_refusal, write_ladder_csv

from encoderlab.advise.decide import advise
from encoderlab.advise.holdout import score_held_out
from encoderlab.advise.predict import Target
from encoderlab.advise.synthetic import synthetic_ladder
from encoderlab.errors import UserError

CASES = [
    # (advise's keyword, its value, the command's flag, the value as typed)
    ("delta", 5.0, "--huber-delta", "5"),
    ("delta", 1e300, "--huber-delta", "1e300"),
    ("delta", 1e-300, "--huber-delta", "1e-300"),
    ("delta", float("inf"), "--huber-delta", "inf"),
    ("delta", float("nan"), "--huber-delta", "nan"),
    ("seed", -1, "--seed", "-1"),
    ("confidence", 1.5, "--confidence", "1.5"),
    ("interval", 0.0, "--interval", "0"),
    ("seed_noise", float("inf"), "--seed-noise", "inf"),
    ("seed_noise", 0.0, "--seed-noise", "0"),
    ("n_boot", 20_000, "--bootstrap", "20000"),
]


@pytest.fixture(scope="module")
def syn():
    return synthetic_ladder(np.random.default_rng(3), crossover=3.0)


@pytest.mark.parametrize("keyword,value,flag,typed", CASES, ids=[f"{c[0]}={c[3]}" for c in CASES])
def test_an_option_out_of_range_is_refused_alike_by_the_api_and_the_command(
    syn, tmp_path, capsys, keyword, value, flag, typed
):
    with pytest.raises(UserError) as api:
        advise(syn.ladder, Target(flops=syn.target_flops), **{"n_boot": 20, keyword: value})
    said = str(api.value)
    assert said.startswith(f"{keyword} ") and flag not in said  # names the keyword the caller passed
    out = tmp_path / "a"
    argv = [
        "advise",
        str(write_ladder_csv(syn, tmp_path / "ladder.csv")),
        "--target-flops",
        "1e19",
        "--out",
        str(out),
    ]
    err = one_line_refusal(capsys, [*argv, flag, typed])
    assert err.endswith(f"{flag} {said.removeprefix(f'{keyword} ')}") and not out.exists()  # the same words


def test_score_held_out_checks_the_options_too(syn):
    """`--hold-out-largest`'s Python entry passes its options to `advise` for each held-out rung."""
    with pytest.raises(UserError, match=r"^delta must be a threshold on log residuals from 1e-05 to 1 "):
        score_held_out(syn.ladder, n_boot=20, delta=1e300)


def test_the_api_keeps_taking_fewer_replicates_than_the_command_but_not_none(syn):
    """The command's floor of 50 replicates is its policy on interval quality; the API refuses only no replicate
    (`n_boot=0` failed in numpy)."""
    with pytest.raises(UserError, match=r"^n_boot 0 is no bootstrap replicate; use 1 or more"):
        advise(syn.ladder, Target(flops=syn.target_flops), n_boot=0)
    assert (
        advise(syn.ladder, Target(flops=syn.target_flops), n_boot=20, delta=1.0).n_boot == 20
    )  # an end: taken
