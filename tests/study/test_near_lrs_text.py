"""A study's own text writes its LRs by `words.lr_text`, as eval's tables: `eval.lrs: [1e-5, 1.0000001e-5]`
were two LRs (two eval nodes since the graph names them by `lr_text`) that the plan, the report and the
figures' caption each wrote `1e-05, 1e-05` (`:g`), one LR twice. Usual LRs read as before (the golden report)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from encoderlab.study import figures, measures, report
from encoderlab.study.catalog import get_study
from encoderlab.study.plan import plan_study
from encoderlab.study.plantext import evaluation_text, plan_text
from encoderlab.study.spec import ClaimSpec

NEAR = 1.0000001e-5
BOTH = f"1e-05, {NEAR!r}"


def _evals(step):
    return [SimpleNamespace(step=step, record=SimpleNamespace(task="t", lr=lr)) for lr in (1e-5, NEAR)]


def test_plan_and_configuration_row_write_both_lrs():
    spec = get_study("paper2-detour", "demo")
    spec = replace(spec, eval=replace(spec.eval, lrs=(1e-5, NEAR), checkpoint_lrs=(1e-5, NEAR)))
    text = plan_text(plan_study(spec))
    assert f"LRs {BOTH};" in text
    assert f"intermediate checkpoints: LRs {BOTH}," in text
    assert f"LRs {BOTH}, " in evaluation_text(spec, "t")


def test_figure_caption_writes_both_checkpoint_lrs():
    data = SimpleNamespace(evals=_evals(step=100))
    assert f"t at LR {BOTH}." in figures._checkpoint_protocol(data)


def test_stability_claim_writes_the_grid_and_range_apart():
    """A range holding only 1e-5 leaves the near LR out of it: the grid named both, alike."""
    data = SimpleNamespace(evals=_evals(step=None))
    claim = ClaimSpec(id="s", text="t", kind="more_stable", a="a", b="b", lr_range=(1e-5, 1e-5))
    sentence = measures._more_stable(data, claim).sentence
    assert f"grid ({BOTH})" in sentence
    assert "range 1e-05 to 1e-05 (1e-05)" in sentence


def test_degenerate_warning_writes_the_chosen_lr():
    d = SimpleNamespace(runs=1, of=1, why="one label")
    table = SimpleNamespace(models=["m"], per_task={"m": {"t": SimpleNamespace(degenerate=d, best_lr=NEAR)}})
    data = SimpleNamespace(label=lambda m: m)
    (_, _, flagged), _ = report._degenerate(data, table)
    assert flagged == [f"m on t: 1 of 1 fine-tuning seed at LR {NEAR!r}; one label"]
