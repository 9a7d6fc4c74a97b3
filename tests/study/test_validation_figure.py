"""The held-out loss figure when each run is validated once (paper 2's demo validates at one step): the
figure is one marker per run and a unigram point, and its caption says so instead of promising curves and
a flat unigram line."""

from __future__ import annotations

from types import SimpleNamespace


def _draw(monkeypatch, tmp_path, records):
    from encoderlab.study import lossfigures

    monkeypatch.setattr(lossfigures, "_metrics", lambda data, study_dir: records)
    data = SimpleNamespace(unigram={"pubmed": 7.5})
    return lossfigures.validation_figure(data, tmp_path, tmp_path)


def test_one_validation_point_per_run_is_said_and_drawn_as_points(monkeypatch, tmp_path):
    records = [
        ("CLM", {"step": 40, "tokens": 1000, "val/mlm15": 8.1, "val/clm": 7.9}),
        ("MLM-40", {"step": 40, "tokens": 1000, "val/mlm15": 7.7, "val/clm": 8.4}),
    ]
    drawn = _draw(monkeypatch, tmp_path, records)
    assert "Every run was validated once (at tokens 1000), so each such run is one point" in drawn.caption
    assert "flat 'unigram entropy' line" not in drawn.caption
    assert "the 'unigram entropy' point (one x: no line to draw)" in drawn.caption.lower()
    # the numbers drawn: one point per run and loss, and one unigram point per loss at the same x
    unigram = [r for r in drawn.rows if r["model"].startswith("unigram")]
    assert [(r["metric"], r["tokens"]) for r in unigram] == [("val/mlm15", 1000), ("val/clm", 1000)]
    assert len(drawn.rows) == 2 * 2 + 2


def test_curves_keep_the_flat_line_and_name_a_run_validated_once(monkeypatch, tmp_path):
    records = [("CLM", {"step": s, "tokens": 25 * s, "val/mlm15": 9.0 - s / 100}) for s in (20, 40)]
    records.append(("MLM-40", {"step": 40, "tokens": 1000, "val/mlm15": 7.7}))
    drawn = _draw(monkeypatch, tmp_path, records)
    assert "MLM-40: each validated once (at tokens 1000)" in drawn.caption
    assert "CLM:" not in drawn.caption
    assert "The flat 'unigram entropy' line is the entropy" in drawn.caption


def test_lines_only_keep_the_caption_as_it_was(monkeypatch, tmp_path):
    records = [("CLM", {"step": s, "tokens": 25 * s, "val/mlm15": 9.0 - s / 100}) for s in (20, 40)]
    caption = _draw(monkeypatch, tmp_path, records).caption
    assert "validated once" not in caption
    assert caption.endswith(
        "The flat 'unigram entropy' line is the entropy of a dataset's training-token frequencies: a run "
        "at that line predicts token frequencies only (the unigram plateau), whatever its objective."
    )
