"""Pretraining seeds resampled jointly across schedules (`predict.paired_sources`).

Runs of one seed share their initialisation and document order, so their noise is correlated across
schedules; a bootstrap that draws each schedule's seeds on its own treats the difference between
schedules as noisier than it is."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from encoderlab.advise.decide import advise
from encoderlab.advise.predict import Target, paired_sources
from encoderlab.advise.synthetic import synthetic_ladder


def _syn(**kw):
    return synthetic_ladder(np.random.default_rng(7), shared=kw.pop("shared", 0.5), **kw)


def test_every_schedule_takes_the_deviation_of_the_same_seed_in_each_replicate():
    ladder = _syn().ladder
    sources = paired_sources(ladder, np.random.default_rng(0), 50)
    assert sources is not None and set(sources) == set(ladder.schedules)
    keys = {}
    for schedule, picks in sources.items():
        runs = ladder.of(schedule)
        own = [(o.params, o.tokens, o.seed) for o in runs]
        taken = [[(runs[j].params, runs[j].tokens, runs[j].seed) for j in row] for row in picks]
        keys[schedule] = [dict(zip(own, row)) for row in taken]  # replicate -> {run's key: source key}
        # a source is a run of a rung with two seeds or more
        counts = {k[:2]: sum(1 for o in own if o[:2] == k[:2]) for k in own}
        assert all(counts[k[:2]] >= 2 for row in taken for k in row)
    first, second = keys.values()
    assert first == second


def test_schedules_that_ran_different_seeds_are_resampled_on_their_own():
    ladder = _syn(shared=None).ladder  # each schedule drew its own seed count per rung
    assert paired_sources(ladder, np.random.default_rng(0), 10) is None
    runs = [o for o in ladder.observations]
    dropped = replace(_syn().ladder, observations=tuple(runs[:-1]))
    assert paired_sources(dropped, np.random.default_rng(0), 10) is None


def test_noise_common_to_both_schedules_leaves_their_ranking_certain_when_paired():
    # all the seed noise shared: both schedules move together from seed to seed, so every replicate's
    # difference at a rung is the data's, however small the gap (the curves cross just past the
    # largest rung, 0.3 noise sd apart there)
    syn = _syn(shared=1.0, crossover=1.02)
    top = syn.largest_rung
    assert abs(np.subtract(*[curve(top) for curve in syn.truth.values()])) < 0.5 * syn.sigma
    target = Target(params=syn.target_params, tokens=syn.target_tokens)
    paired = advise(syn.ladder, target, n_boot=200, seed=1)
    alone = advise(syn.ladder, target, n_boot=200, seed=1, paired=False)
    assert paired.seeds_paired and not alone.seeds_paired
    assert sorted(p.rung_p_best for p in paired.predictions) == [0.0, 1.0]
    assert 0.0 < min(p.rung_p_best for p in alone.predictions) < 1.0


def test_a_given_seed_noise_is_drawn_independently_per_schedule():
    syn = _syn()
    target = Target(params=syn.target_params, tokens=syn.target_tokens)
    assert not advise(syn.ladder, target, n_boot=20, seed_noise=0.01).seeds_paired
