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


def _validation(fake, model: str, text: str) -> None:
    """`text` as the validation.json of `model`'s pretraining run."""
    (metrics,) = (fake / "nodes" / "pretrain").glob(f"{model}-[0-9a-f]*[0-9a-f]/metrics.jsonl")
    metrics.with_name("validation.json").write_text(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"step": 40, "tokens": 100, "val/clm": null, "val/mlm15": null, "val/rows": 6}',  # written now
        '{"step": 40, "tokens": 100, "val/clm": NaN, "val/mlm15": NaN, "val/rows": 6}',  # before 2026-12-04
    ],
)
def test_a_run_whose_held_out_loss_is_not_finite_is_named_as_diverged(fake, tmp_path, text):
    """A diverged run's NaN held-out loss compared with the entropy is false, so the plateau caveat was
    silently dropped (and a null was refused as damaged): the claim now names the run as diverged."""
    import shutil

    copy = tmp_path / "study"
    shutil.copytree(fake, copy)
    _validation(copy, "mlm40", text)
    _validation(copy, "clm", '{"step": 40, "tokens": 100, "val/clm": 6.8, "val/mlm15": 6.9, "val/rows": 6}')
    data = load_study(copy)
    data.unigram = {"main": 6.78}
    sc = _claims(data)["mlm-sc"]
    assert (
        "Caveat: MLM-40 diverged: its held-out loss is not finite (val/clm and val/mlm15 at step 40), so this "
        "compares a model that failed to train, not its objective; the loss figures leave out its points that "
        "are not finite. Caveat: CLM (6.80 nats against 6.78) has not got below the unigram plateau"
    ) in sc.sentence
    assert sc.numbers["diverged"] == {"MLM-40": [{"seed": 0, "step": 40, "losses": ["val/clm", "val/mlm15"]}]}
    assert set(sc.numbers["plateau"]) == {"CLM"}  # the diverged run is not checked against the plateau


def test_the_unigram_line_of_a_figure_with_one_x_is_one_row_per_panel():
    """With validation at the last step only (one x), the flat line's two ends were one point twice: the
    report's table and validation_loss.csv listed every unigram row twice."""
    from types import SimpleNamespace

    from encoderlab.study.lossfigures import VALIDATION_KEYS, _unigram_rows

    data = SimpleNamespace(unigram={"main": 5.28})
    one_x = _unigram_rows(data, [{"tokens": 5120}, {"tokens": 5120}], "tokens")
    assert sorted((r["metric"], r["tokens"]) for r in one_x) == sorted((k, 5120) for k in VALIDATION_KEYS)
    span = _unigram_rows(data, [{"tokens": 5120}, {"tokens": 10240}], "tokens")
    assert sorted((r["metric"], r["tokens"]) for r in span) == sorted(
        (k, x) for k in VALIDATION_KEYS for x in (5120, 10240)
    )


def test_a_faster_early_claim_says_a_run_was_still_on_the_plateau_at_its_checkpoint(fake):
    """The demo's "CLM learns faster early" compared MLM-40 at step 100, still at the unigram entropy, with no
    word of it (the caveat read final models only). The run's held-out loss logged at the claim's step says
    so; a step the run logged none at is not guessed from another."""
    data = load_study(fake)
    data.unigram = {"main": 6.78}
    data.held_out_steps = {
        "mlm40": {20: {"step": 20, "val/clm": 6.83, "val/mlm15": 6.85}},
        "clm": {20: {"step": 20, "val/clm": 5.9, "val/mlm15": 7.6}},
    }
    early = _claims(data)["early"]
    assert early.numbers["step"] == 20
    assert (
        "Caveat: MLM-40 (6.83 nats against 6.78) has not got below the unigram plateau by step 20 (held-out "
        "loss logged at that step against the entropy of the data's token frequencies)"
    ) in early.sentence
    assert early.numbers["plateau"] == {"MLM-40": {"held_out": 6.83, "unigram": 6.78, "step": 20}}
    assert "plateau" not in _claims(data)["mlm-sc"].numbers  # final models: their own losses, none here
    data.held_out_steps = {"mlm40": {30: {"step": 30, "val/clm": 6.83}}}  # logged at another step only
    sentence = _claims(data)["early"].sentence
    assert "has not got below" not in sentence  # not guessed from another step, and said to be unchecked:
    assert (  # saying nothing read as checked
        "Caveat: whether MLM-40 got below the unigram plateau by step 20 is not checked: no held-out loss was "
        "logged at that step"
    ) in sentence
    assert "plateau" not in _claims(data)["early"].numbers
    data.held_out_steps = {}  # a study that logged no held-out loss at all says nothing of it
    assert "Caveat" not in _claims(data)["early"].sentence


def test_the_held_out_losses_a_run_logged_are_read_by_step(fake, tmp_path):
    import json
    import shutil

    copy = tmp_path / "study"
    shutil.copytree(fake, copy)
    (metrics,) = (copy / "nodes" / "pretrain").glob("mlm40-[0-9a-f]*[0-9a-f]/metrics.jsonl")
    logged = {"step": 20, "tokens": 100, "val/clm": 6.83, "val/mlm15": 6.85, "val/rows": 6}
    metrics.write_text(metrics.read_text() + json.dumps(logged) + "\n")
    data = load_study(copy)
    assert data.held_out_steps["mlm40"] == {20: logged}
    data.unigram = {"main": 6.78}
    assert "not got below the unigram plateau by step 20" in _claims(data)["early"].sentence
