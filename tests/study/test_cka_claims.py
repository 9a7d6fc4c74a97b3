"""The CKA claim and figure of a study read the comparison they name: its pair (a, b), its layers."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from encoderlab.study.data import CkaResult, cka_models
from encoderlab.study.measures import _cka_low_layers
from encoderlab.study.spec import ClaimSpec


def _spec(*pairs: tuple[str, str]) -> SimpleNamespace:
    """A study of runs trained at pretraining seed 0, whose CKAs compare `pairs` (no seed-noise pair)."""
    return SimpleNamespace(
        cka=[SimpleNamespace(a=a, b=b, noise=None) for a, b in pairs],
        run=lambda name: SimpleNamespace(recipe="r", seed=None),
        seeds_of=lambda run: (0,),
    )


def _summary(ratio: float) -> dict:
    return {
        "holds": True,
        "low_ci": (ratio - 1, ratio + 1),
        "difference_ci": (1.0, 2.0),
        "sentence": f"{ratio}x",
    }


def test_the_low_layer_claim_reads_the_cka_of_its_own_pair_not_the_first_with_its_a():
    results = [
        CkaResult(a="clm", b="other", divergence=[0.1] * 3, low_layers=_summary(9.0)),
        CkaResult(a="clm", b="mlm", divergence=[0.1] * 3, low_layers=_summary(5.0)),
    ]
    data = SimpleNamespace(cka=results, label=lambda m: m, spec=_spec(*((r.a, r.b) for r in results)))
    claim = ClaimSpec(id="c", text="t", kind="cka_low_layers", a="clm", b="mlm")
    assert _cka_low_layers(data, claim).sentence.startswith("5.0x; ")
    missing = ClaimSpec(id="d", text="t", kind="cka_low_layers", a="clm", b="none")
    assert _cka_low_layers(data, missing).status == "not tested"


def test_the_study_cka_figure_names_and_ticks_layers_as_blocks_as_the_analysis_figures_do(
    tmp_path, monkeypatch
):
    import encoderlab.study.figures as figures

    seen = {}
    monkeypatch.setattr(figures, "save_figure", lambda fig, *a, **k: seen.setdefault("ax", fig.axes[0]))
    figures._fig_cka(CkaResult(a="clm", b="mlm", divergence=[0.1, 0.2, 0.3]), tmp_path, "cka_clm")
    # layer l of a CKA result is block l's output (analysis.features): no embedding-output row exists
    assert "embedding" not in seen["ax"].get_xlabel() and "block" in seen["ax"].get_xlabel()
    # ticked at whole blocks, as the analysis figures are (were 0.25, 0.5, ...: a "layer 0.75" no block is)
    ticks = seen["ax"].get_xticks()
    assert len(ticks) and all(float(t).is_integer() for t in ticks), ticks


def test_two_ckas_of_one_run_get_a_figure_each(tmp_path):
    from encoderlab.study.figures import _fig_cka, cka_figure_name

    results = [CkaResult(a="clm", b=b, divergence=[0.1, 0.2, 0.3]) for b in ("mlm", "other")]
    names = {cka_figure_name(r, results) for r in results}
    for r in results:
        _fig_cka(r, tmp_path, cka_figure_name(r, results))
    assert len(names) == 2 and all((tmp_path / f"{n}.csv").is_file() for n in names)
    assert cka_figure_name(results[0], results[:1]) == "cka_clm"  # alone: the name reports already use


def test_a_low_layer_claim_without_the_cka_it_reads_is_not_tested_rather_than_pending():
    spec = SimpleNamespace(cka=[SimpleNamespace(a="clm", b="mlm")])
    data = SimpleNamespace(cka=[], label=lambda m: m, spec=spec)
    pending = _cka_low_layers(data, ClaimSpec(id="c", text="t", kind="cka_low_layers", a="clm", b="mlm"))
    assert pending.sentence.startswith("the study has no finished results")  # its node has not run yet
    never = _cka_low_layers(data, ClaimSpec(id="d", text="t", kind="cka_low_layers", a="clm", b="other"))
    assert never.status == "not tested" and "runs no CKA of clm against other" in never.sentence


def test_the_low_layer_claim_says_it_is_outside_holms_family():
    """It is decided by two unadjusted intervals, not a p-value, so Holm's correction over the other claims
    leaves it out; before, nothing in its sentence said so, beside claims that say "after Holm's correction"."""
    data = SimpleNamespace(cka=[CkaResult(a="clm", b="mlm", divergence=[0.1] * 3, low_layers=_summary(5.0))])
    data.label, data.spec = (lambda m: m), _spec(("clm", "mlm"))
    sentence = _cka_low_layers(
        data, ClaimSpec(id="c", text="t", kind="cka_low_layers", a="clm", b="mlm")
    ).sentence
    assert sentence == (
        "5.0x; CKA compares each run at its first pretraining seed only: clm at seed 0, mlm at seed 0; decided by two unadjusted 95% intervals, not a p-value, so this claim is outside the Holm family "
        "of the other claims and not corrected for multiplicity."
    )


def test_the_low_layer_claim_says_which_pretraining_seed_of_each_run_its_cka_compared():
    """The graph's CKA node compares each run's first pretraining seed only; the sentence did not say which,
    so a reader of a study over 3 pretraining seeds took the claim for one over all three."""
    from fake_study import small_spec

    from encoderlab.study.spec import RunSpec

    spec = small_spec(seeds=(3, 4, 5))
    note = cka_models(spec, spec.cka[0], lambda name: spec.run(name).display)
    assert (
        note
        == "; CKA compares each run at its first pretraining seed only: CLM at seed 3, MLM-40 at seed 3, seed twin "
        "MLM-40 seed 2 at seed 3 (training seed offset by 1, same data order)"
    )  # the twin's offset: "at seed 3" beside its pair's "at seed 3" hid the seed it differs in
    start = dataclasses.replace(spec, runs=(*spec.runs, RunSpec(name="start", init="some/model")))
    c = dataclasses.replace(spec.cka[0], a="start", noise=None)
    assert (
        cka_models(start, c)
        == "; CKA compares each run at its first pretraining seed only: start as is, mlm40 at seed 3"
    )
    data = SimpleNamespace(
        cka=[CkaResult(a="clm", b="mlm40", divergence=[0.1] * 3, low_layers=_summary(5.0))]
    )
    data.label, data.spec = (lambda m: spec.run(m).display), spec
    claim = ClaimSpec(id="c", text="t", kind="cka_low_layers", a="clm", b="mlm40")
    assert note in _cka_low_layers(data, claim).sentence


def test_the_low_layer_claim_says_when_the_other_layers_too_lie_above_seed_noise():
    """Paper 2's demo: the low layers at 3.76x seed noise, the others at 1.94x (95% CI [1.37, 2.51]); "Holds"
    said nothing of the others, so the claim read as paper 2's picture, whose mid and deep layers sat at 1x."""
    claim = ClaimSpec(id="c", text="t", kind="cka_low_layers", a="clm", b="mlm")
    said = {}
    for other_ci in ((1.37, 2.51), (0.8, 1.2), None):
        summary = {**_summary(3.76), "other_ci": other_ci}
        data = SimpleNamespace(
            cka=[CkaResult(a="clm", b="mlm", divergence=[0.1] * 3, low_layers=summary)],
            label=lambda m: m,
            spec=_spec(("clm", "mlm")),
        )
        said[other_ci] = _cka_low_layers(data, claim).sentence
    note = "the other layers too diverge beyond seed noise (their interval lies above 1)"
    assert (
        note in said[(1.37, 2.51)] and "paper 2's mid and deep layers were at about 1x" in said[(1.37, 2.51)]
    )
    assert note not in said[(0.8, 1.2)] and note not in said[None]
