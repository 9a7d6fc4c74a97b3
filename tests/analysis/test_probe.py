"""Linear probes: the ridge solution is the textbook one, planted signals are found, noise is not."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from analysis_helpers import WORDS, make_model

from encoderlab.analysis import probe as probe_mod
from encoderlab.analysis.probe import RidgeProbe, load_task, probe_features, probe_model, split_rows
from encoderlab.errors import UserError


def _planted(n=600, d=20, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) * rng.uniform(0.5, 5, size=d) + rng.normal(size=d)
    y = np.argmax(x @ rng.normal(size=(d, classes)), axis=1)
    return x, y


def test_ridge_weights_equal_the_direct_normal_equation_solution():
    x, y = _planted()
    probe = RidgeProbe(x, y, 4)
    z = (x - x.mean(0)) / x.std(0)
    t = np.eye(4)[y]
    direct = np.linalg.solve(z.T @ z + 0.1 * len(x) * np.eye(x.shape[1]), z.T @ (t - t.mean(0)))
    np.testing.assert_allclose(probe.weights(0.1), direct, rtol=1e-8, atol=1e-10)


def test_probe_recovers_a_planted_linear_signal_and_not_noise():
    x, y = _planted()
    splits = split_rows(len(x), seed=0)
    assert (
        probe_features(x, y, 4, splits).accuracy > 75
    )  # chance is about 25; ridge is not exact on argmax labels
    shuffled = np.random.default_rng(1).permutation(y)
    assert probe_features(x, shuffled, 4, splits).accuracy < 45


def _sklearn_probe(x, y, splits):
    """The probe written out with scikit-learn: RidgeClassifier (its -1/+1 targets are an affine map of
    one-hot ones, so the same arg-max) at alpha = lambda * n_train on StandardScaler features, lambda chosen on
    validation accuracy with ties to the stronger penalty, as the probe's docstring says."""
    from sklearn.linear_model import RidgeClassifier
    from sklearn.preprocessing import StandardScaler

    train, val, test = splits
    scaler = StandardScaler().fit(x[train])
    z = scaler.transform(x)
    best = None
    for lam in probe_mod.LAMBDAS:
        clf = RidgeClassifier(alpha=lam * len(train)).fit(z[train], y[train])
        score = float(np.mean(clf.predict(z[val]) == y[val]))
        if best is None or score >= best[0]:  # LAMBDAS ascend: an equal score moves to the larger penalty
            best = (score, lam, clf)
    return best[1], 100 * float(np.mean(best[2].predict(z[test]) == y[test]))


@pytest.mark.parametrize("seed", range(4))
def test_the_penalty_and_score_are_scikit_learns_with_ties_to_the_stronger_penalty(seed):
    # keyed on -lambda, a tie of validation accuracies went to the weakest penalty (1e-5), against the comment
    # beside it; weak signals on few rows tie often
    x, y = _planted(n=80, d=12, classes=3, seed=seed)
    x = x + np.random.default_rng(seed).normal(size=x.shape) * 8 * x.std(0)
    splits = split_rows(len(x), seed=seed)
    row = probe_features(x, y, 3, splits)
    assert (row.lam, row.accuracy) == pytest.approx(_sklearn_probe(x, y, splits))


def _write_jsonl(path, records):
    path.write_text("\n".join(json.dumps(r) for r in records))
    return str(path)


def test_probe_model_finds_topic_and_word_class_signals(tmp_path, tokenizer, monkeypatch):
    rng = random.Random(0)
    topics = [WORDS[0:20], WORDS[20:40], WORDS[40:60]]
    seq = [
        {"id": str(i), "text": " ".join(rng.choices(topics[i % 3], k=6)), "meta": {"label": f"t{i % 3}"}}
        for i in range(150)
    ]
    tok = []
    for i in range(80):
        words = rng.choices(WORDS, k=6)
        tok.append(
            {
                "id": str(i),
                "text": " ".join(words),
                "meta": {"tokens": words, "tags": [f"c{int(w[1:]) % 3}" for w in words]},
            }
        )
    model = make_model(0)
    seq_task = load_task(_write_jsonl(tmp_path / "seq.jsonl", seq))
    tok_task = load_task(_write_jsonl(tmp_path / "tok.jsonl", tok))
    assert (
        seq_task.kind == "sequence"
        and tok_task.kind == "token"
        and tok_task.label_names == ["c0", "c1", "c2"]
    )
    seq_rows = probe_model(model, tokenizer, seq_task, cache_dir=tmp_path / "cache")
    tok_rows = probe_model(model, tokenizer, tok_task, cache_dir=tmp_path / "cache")
    assert [r.layer for r in seq_rows] == [0, 1, 2]
    assert max(r.accuracy for r in seq_rows) > 80  # chance 33
    assert max(r.accuracy for r in tok_rows) > 60  # chance 33; word identity is in the features

    # The second run reads the cache: encoding again would fail.
    monkeypatch.setattr(probe_mod, "pooled_features", lambda *a, **k: pytest.fail("features recomputed"))
    again = probe_model(model, tokenizer, seq_task, cache_dir=tmp_path / "cache")
    assert [r.accuracy for r in again] == [r.accuracy for r in seq_rows]
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 2


def test_pair_tasks_and_unlabelled_files_are_refused(tmp_path):
    pair = _write_jsonl(
        tmp_path / "p.jsonl", [{"id": "0", "text": "t", "meta": {"claim": "c", "label": "true"}}]
    )
    with pytest.raises(UserError, match="pair task"):
        load_task(pair)
    plain = tmp_path / "plain.txt"
    plain.write_text("just text\n")
    with pytest.raises(UserError, match="not a probing task"):
        load_task(str(plain))
    with pytest.raises(UserError, match="at least 10 examples"):
        split_rows(5, 0)


def test_a_task_files_jsonl_given_as_a_probing_task_says_where_the_label_goes(tmp_path):
    """Records of an eval task file (`label` beside `text`) given to `--probe-task` were refused as "not a
    probing task" with no fix; the line now shows the record layout a probing task takes."""
    rows = [{"text": f"the red code {i}", "label": "ab"[i % 2]} for i in range(20)]
    path = tmp_path / "task.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(UserError) as refused:
        load_task(str(path))
    assert '{"text": "...", "meta": {"label": "..."}}' in str(refused.value), refused.value


def test_subsampling_is_seeded(tmp_path):
    records = [{"id": str(i), "text": f"w{i % 60}", "meta": {"label": str(i % 2)}} for i in range(100)]
    path = _write_jsonl(tmp_path / "s.jsonl", records)
    a, b = load_task(path, max_examples=30, seed=1), load_task(path, max_examples=30, seed=1)
    assert a.inputs == b.inputs and len(a.inputs) == 30
    assert load_task(path, max_examples=30, seed=2).inputs != a.inputs


def test_too_few_examples_are_refused_when_the_task_is_loaded(tmp_path):
    """`split_rows` refused them only once every model had been run (and the feature cache and a sweep's
    transplants written); `load_task` runs before any model loads."""
    records = [{"id": str(i), "text": f"w{i}", "meta": {"label": str(i % 2)}} for i in range(30)]
    path = _write_jsonl(tmp_path / "s.jsonl", records)
    with pytest.raises(
        UserError, match="s.jsonl: probing needs at least 10 examples to split 60/20/20, got 9"
    ):
        load_task(path, max_examples=9)
    assert len(load_task(path, max_examples=10).inputs) == 10


def test_a_whole_float_label_is_the_class_of_its_integer(tmp_path):
    # 1 and 1.0 are one class, as in task files (`1.0` -> `1`); str() made them two (and the check of
    # one label form refused them as "all numbers" though they were)
    records = [
        {"id": str(i), "text": f"w{i}", "meta": {"label": i % 2 if i < 10 else float(i % 2)}}
        for i in range(20)
    ]
    task = load_task(_write_jsonl(tmp_path / "n.jsonl", records))
    assert task.label_names == ["0", "1"] and task.labels == [i % 2 for i in range(20)]


def test_a_cached_feature_file_holding_nan_is_refused_as_computed_ones_are(tmp_path, tokenizer):
    """A cache an older version wrote before features were checked was read and fitted, NaN rows and all."""
    records = [
        {"id": str(i), "text": f"{WORDS[i]} {WORDS[i + 1]}", "meta": {"label": f"t{i % 2}"}}
        for i in range(40)
    ]
    task = load_task(_write_jsonl(tmp_path / "seq.jsonl", records))
    model = make_model(0)
    probe_model(model, tokenizer, task, cache_dir=tmp_path / "cache")
    (cached,) = (tmp_path / "cache").glob("*.npz")
    with np.load(cached) as data:
        arrays = dict(data)
    arrays["layer_1"][3, 0] = np.nan
    np.savez(cached, **arrays)
    with pytest.raises(UserError, match="not finite \\(NaN or inf\\) in layer 1:"):
        probe_model(model, tokenizer, task, cache_dir=tmp_path / "cache")


@pytest.mark.parametrize(
    "tokens",
    [[], ["", " "]],
    ids=["no-words", "blank-words"],
)
def test_a_token_task_without_a_word_is_refused_when_loaded(tmp_path, tokens):
    """Sentences without words read "has only one class (none)"; words that are all blank (no sub-token)
    passed, and the probe failed with a ValueError traceback once the models had run."""
    records = [
        {
            "id": str(i),
            "text": " ".join(tokens),
            "meta": {"tokens": tokens, "tags": ["a", "b"][: len(tokens)]},
        }
        for i in range(20)
    ]
    with pytest.raises(UserError, match=r"b.jsonl has no word in the 20 examples used \(every entry of meta"):
        load_task(_write_jsonl(tmp_path / "b.jsonl", records))


def test_a_null_label_is_named_as_null_not_as_missing(tmp_path):
    """The first record's null label read "record 1 has no meta.label, which the first record has"."""
    records = [
        {"id": str(i), "text": f"w{i}", "meta": {"label": None if i == 0 else str(i % 2)}} for i in range(20)
    ]
    with pytest.raises(UserError, match=r"record 1 has null in meta.label, where a name or a number belongs"):
        load_task(_write_jsonl(tmp_path / "n.jsonl", records))


def test_a_split_whose_words_are_all_blank_is_refused_in_one_line(tmp_path, tokenizer):
    """Blank words have no sub-token and are dropped: a split left with no word was a ValueError traceback
    (`need equally long, non-empty label lists`) once the model had run."""
    records = [
        {
            "id": str(i),
            "text": "",
            "meta": {"tokens": ["w1", "w2"] if i < 3 else ["", " "], "tags": ["a", "b"]},
        }
        for i in range(20)
    ]
    task = load_task(_write_jsonl(tmp_path / "few.jsonl", records))
    with pytest.raises(UserError, match=r"few: the \w+ split \(seed 0\) has no word that model m reads"):
        probe_model(make_model(0), tokenizer, task, label="model m")
