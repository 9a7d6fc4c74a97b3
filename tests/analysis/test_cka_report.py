"""A CKA report's rows and paper 2's low-layer claim read from them (`analysis/cka_report.py`): the
intervals over sampling seeds, their widening for shared texts, and the sentence the claim is said in."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from analysis_helpers import t_interval

from encoderlab.analysis.cka_report import CkaLayer, CkaReport, low_layer_summary, too_few_layers
from encoderlab.analysis.commands import _print_cka
from encoderlab.analysis.inputs import Encoding
from encoderlab.analysis.plots import write_json
from encoderlab.errors import UserError

UNDEFINED = "undefined"  # what the table says for a NaN


def _report(ratios_by_layer, distinct_draws=3):
    """A 22-layer report whose per-seed ratios are given (layer -> three values)."""
    layers = [
        CkaLayer(layer=i, cka=0.5, divergence=0.5, cka_std=0.0, chance_floor=0.1, ratio_per_seed=list(r))
        for i, r in enumerate(ratios_by_layer)
    ]
    return CkaReport(
        layers=layers,
        n_texts=500,
        sampling_seeds=[42, 43, 44],
        encoding=Encoding(),
        distinct_draws=distinct_draws,
    )


def test_low_layer_summary_needs_the_interval_above_one_and_above_the_rest():
    rng = np.random.default_rng(0)
    paper_like = [5 + rng.random(3) if i < 8 else 1 + 0.1 * rng.standard_normal(3) for i in range(22)]
    summary = low_layer_summary(_report(paper_like))
    assert summary.low_layers == tuple(range(8)) and summary.other_layers == tuple(range(8, 22))
    low = np.mean(paper_like[:8], axis=0)  # per seed, the mean over the low layers
    rest = np.mean(paper_like[8:], axis=0)
    assert summary.low_ratio == pytest.approx(low.mean()) and summary.low_ci == pytest.approx(t_interval(low))
    assert summary.difference_ci == pytest.approx(t_interval(low - rest))
    assert summary.above_noise and summary.above_others and summary.holds
    assert "layers 0-7 diverge" in summary.sentence() and "above seed noise" in summary.sentence()

    # larger than the rest but with an interval reaching below 1: the claim does not hold
    noisy = [np.array([0.6, 1.0, 2.3]) if i < 8 else np.array([0.5, 0.5, 0.5]) for i in range(22)]
    weak = low_layer_summary(_report(noisy))
    assert weak.low_ratio > 1 and weak.low_ci[0] < 1
    assert weak.above_noise is False and weak.holds is False

    # above 1 but no more than the other layers: does not hold either
    flat = [np.array([3.0, 3.2, 3.1]) for _ in range(22)]
    assert low_layer_summary(_report(flat)).above_others is False

    # every seed drew the same texts: no interval, undecided
    same_texts = low_layer_summary(_report(paper_like, distinct_draws=1))
    assert same_texts.low_ci is None and same_texts.holds is None
    assert "every seed drew the same texts" in same_texts.sentence()

    # one sampling seed from a large pool: no interval, and the pool is not to blame
    one = _report([r[:1] for r in paper_like], distinct_draws=1)
    one.sampling_seeds = [42]
    sentence = low_layer_summary(one).sentence()
    assert "one sampling seed" in sentence and "the pool holds only n" not in sentence


def test_low_layer_summary_needs_a_seed_twin():
    report = _report([[1.0, 1.0, 1.0]] * 22)
    report.layers[3].ratio_per_seed = None
    with pytest.raises(UserError, match="needs the seed twin"):
        low_layer_summary(report)
    assert report.to_dict()["low_layers"] is None


def test_analyze_cka_says_why_a_two_layer_twin_comparison_has_no_low_layer_summary(capsys):
    # printed nothing, while `study report` said "Not tested: the models have 2 layers ..."
    _print_cka(_report([[2.0, 2.0, 2.0]] * 2))
    out = capsys.readouterr().out
    assert f"No low-layer summary: {too_few_layers(2)}" in out and "the models have 2 layers" in out
    without_twin = _report([[2.0, 2.0, 2.0]] * 2)
    for row in without_twin.layers:
        row.ratio_per_seed = None
    _print_cka(without_twin)  # no twin: no low-layer claim to explain
    assert "low-layer" not in capsys.readouterr().out


def test_the_cka_table_says_undefined_for_a_collapsed_layer_and_the_json_null(capsys, tmp_path):
    # the table printed `nan` in the CKA, 1-CKA and ratio columns of a layer constant across the texts
    report = _report([[2.0, 2.0, 2.0]] * 3)
    rows = report.layers
    for row in rows:
        row.baseline_divergence, row.ratio = 0.25, 2.0
    rows[1].cka = rows[1].divergence = rows[1].ratio = math.nan
    rows[1].ratio_per_seed = [math.nan] * 3
    _print_cka(report)
    lines = capsys.readouterr().out.splitlines()
    table = lines[: 1 + len(rows)]
    assert "nan" not in "\n".join(lines).lower().replace(UNDEFINED, "")
    assert table[2].split() == ["1", UNDEFINED, UNDEFINED, "0.2500", UNDEFINED, "-", "0.100"]
    assert table[1].split()[1:3] == ["0.5000", "0.5000"]
    assert len({len(line) for line in table}) == 1  # the columns line up
    assert lines[1 + len(rows)].startswith(f"{UNDEFINED}: a model's features in that layer are constant")
    path = tmp_path / "cka_report.json"
    write_json(report.to_dict(), path)
    saved = json.loads(path.read_text())["layers"][1]
    assert saved["cka"] is None and saved["ratio"] is None and saved["ratio_per_seed"] == [None] * 3


def test_a_cka_table_with_every_layer_defined_has_no_undefined_line(capsys):
    _print_cka(_report([[2.0, 2.0, 2.0]] * 3))
    assert UNDEFINED not in capsys.readouterr().out


def test_the_low_layer_sentence_reads_in_the_singular_on_a_tiny_model():
    # was "layers 0 diverge ..., 1 sampling seeds"
    from encoderlab.analysis.cka_report import LowLayerSummary

    def summary(low, other, seeds):
        return LowLayerSummary(
            low_layers=low, other_layers=other, low_ratio=2.0, low_ci=None, other_ratio=1.5, other_ci=None,
            difference=0.5, difference_ci=None, n_seeds=seeds, distinct_draws=seeds, above_noise=None,
            above_others=None,
        )  # fmt: skip

    one = summary((0,), (1,), 1)
    assert one.sentence().startswith(
        "layer 0 diverges 2.00x seed noise vs 1.50x in layer 1; difference +0.50, "
    )
    assert "1 sampling seed;" in one.sentence()
    many = summary((0, 1), (2, 3), 3)
    assert many.sentence().startswith("layers 0-1 diverge 2.00x") and "3 sampling seeds;" in many.sentence()


def test_intervals_over_overlapping_text_samples_are_widened_for_the_overlap():
    """Each sampling seed draws n of the pool's texts, so two draws share about n / pool of them and their
    ratios are correlated: the spread across k draws then estimates (1 - rho) of one draw's variance, while
    their mean has (1 + (k - 1) rho) / k of it. Before, the plain t-interval was used (about 2x too narrow
    for 500 texts drawn from PubMedQA's 1,000), and the claim could hold on it."""
    ratios = [np.array([1.7, 2.0, 2.3]) if i < 8 else np.array([0.9, 1.0, 1.1]) for i in range(22)]
    disjoint, shared = _report(ratios), _report(ratios)
    shared.overlap = 0.5
    low = np.mean(ratios[:8], axis=0)
    assert low_layer_summary(disjoint).low_ci == pytest.approx(t_interval(low))
    wide = low_layer_summary(shared)
    assert wide.low_ci == pytest.approx(t_interval(low, 0.5))
    assert (wide.low_ci[1] - wide.low_ci[0]) / (
        low_layer_summary(disjoint).low_ci[1] - low_layer_summary(disjoint).low_ci[0]
    ) == pytest.approx(2.0)
    # the plain interval lies above 1, the widened one does not: the claim is no longer decided by it
    assert low_layer_summary(disjoint).above_noise and wide.above_noise is False
    assert wide.overlap == 0.5 and shared.to_dict()["overlap"] == 0.5
    # the sentence says what the intervals cover
    holds = _report([np.array([5.0, 5.5, 6.0]) if i < 8 else np.array([1.0, 1.05, 1.1]) for i in range(22)])
    holds.overlap = 0.5
    sentence = low_layer_summary(holds).sentence()
    assert (
        "95% CI over text samples" in sentence
        and "widened for the 50% of texts two samples share" in sentence
    )
    assert "not pretraining-seed variation (the seed noise is one twin pair)" in sentence


def test_an_infinite_ratio_reads_as_twins_that_agree_exactly():
    # was "layer 0 diverges infx seed noise ...; difference +inf"
    from encoderlab.analysis.cka_report import LowLayerSummary

    summary = LowLayerSummary(
        low_layers=(0,), other_layers=(1,), low_ratio=math.inf, low_ci=None, other_ratio=1.5, other_ci=None,
        difference=math.inf, difference_ci=None, n_seeds=3, distinct_draws=3, above_noise=None,
        above_others=None,
    )  # fmt: skip
    sentence = summary.sentence()
    assert sentence.startswith(
        "layer 0 diverges where the twins agree exactly (seed noise 0) vs 1.50x in layer 1; difference undefined, "
    )
    assert "inf" not in sentence
