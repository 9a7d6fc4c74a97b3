"""The unigram-plateau caveat on claims (`study.results`): a run whose final held-out loss has not got
below its data's token-frequency entropy has learned little, and a claim comparing it says so."""

from __future__ import annotations

import pytest
from fake_study import backend, small_spec

from encoderlab.study.caveats import PLATEAU_MARGIN
from encoderlab.study.data import load_study
from encoderlab.study.results import check_claims
from encoderlab.study.runner import run_study


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    out = tmp_path_factory.mktemp("plateau")
    run_study(small_spec(), out, backend(), progress=False)
    return out


def _claims(data) -> dict:
    return {c.claim.id: c for c in check_claims(data)}


def test_a_claim_on_a_run_at_the_unigram_entropy_carries_the_caveat(fake):
    data = load_study(fake)
    data.unigram = {"main": 6.78}
    data.held_out = {
        "mlm40": {"val/clm": 6.82, "val/mlm15": 6.84},  # at the plateau under both yardsticks
        "clm": {"val/clm": 5.56, "val/mlm15": 7.54},  # well below it as CLM
    }
    sc = _claims(data)["mlm-sc"]
    assert "Caveat: MLM-40 (6.82 nats against 6.78) has not got below the unigram plateau" in sc.sentence
    assert sc.numbers["plateau"] == {"MLM-40": {"held_out": 6.82, "unigram": 6.78}}
    assert "Caveat" not in _claims(data)["early"].sentence  # a checkpoint step: the final losses do not say


def test_no_caveat_below_the_margin_or_without_the_numbers(fake):
    data = load_study(fake)
    data.unigram = {"main": 6.78}
    data.held_out = {"mlm40": {"val/clm": 6.78 - PLATEAU_MARGIN - 0.01, "val/mlm15": 7.0}}
    assert not any("Caveat" in c.sentence or "plateau" in c.numbers for c in check_claims(data))
    data.unigram = {}  # no prepared dataset to measure: nothing is claimed either way
    data.held_out = {"mlm40": {"val/clm": 9.0}}
    assert not any("Caveat" in c.sentence for c in check_claims(data))
