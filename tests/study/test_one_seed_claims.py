"""A claim whose runs share one pretraining seed compares two checkpoints, not two objectives: it gives a
direction only, is never "significant", and stays out of the Holm family of the study's real claims.

Until 2026-12-04 such a claim read "Holds at this scale, for one pretraining seed (significant)" and its
checkpoint-level p entered the family, diluting the adjusted p of the claims tested over pretraining seeds.
"""

from __future__ import annotations

import json
from dataclasses import replace

from fake_study import backend, small_spec

from encoderlab.eval.stats import p_text
from encoderlab.study.runner import run_study
from encoderlab.study.spec import ClaimSpec

ONE_SEED = ClaimSpec(
    id="one", text="MLM-20 beats CLM->MLM on SC", kind="beats", a="mlm20", b="clm25-mlm40", family="sc"
)
"""Both runs at the one pretraining seed of `small_spec`."""


def _holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values written out: the i-th smallest of m becomes the running max of
    (m - rank) * p, capped at 1."""
    m, out, running = len(ps), [0.0] * len(ps), 0.0
    for rank, i in enumerate(sorted(range(m), key=ps.__getitem__)):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out


def test_a_one_seed_claim_gives_a_direction_and_stays_out_of_the_holm_family(tmp_path):
    base = small_spec()
    runs = tuple(replace(r, seeds=(0, 1, 2)) if r.name in ("mlm40", "clm") else r for r in base.runs)
    spec = replace(base, runs=runs, claims=(*base.claims, ONE_SEED))
    run_study(spec, tmp_path, backend(), progress=False)
    claims = {c["id"]: c for c in json.loads((tmp_path / "report" / "results.json").read_text())["claims"]}

    one = claims["one"]
    assert one["numbers"]["level"] == "fine-tuning", one["sentence"]
    assert one["significant"] is None and one["numbers"]["p_holm"] is None
    assert one["status"] in ("holds in direction", "opposite in direction")
    assert one["sentence"].startswith(("Points the claim's way", "Points opposite to the claim")) and one[
        "sentence"
    ].split(":")[0].endswith(
        "at this scale, for one pretraining seed (two checkpoints; cannot speak to the objectives)"
    )
    assert "(significant)" not in one["sentence"] and "Holm-adjusted" not in one["sentence"]
    checkpoint_p = one["numbers"]["checkpoint_p"]  # kept as information
    assert (
        checkpoint_p == one["numbers"]["diff"]["p_value"]
        and f"paired {p_text(checkpoint_p)}" in one["sentence"]
    )

    family = ["mlm-sc", "mlm-qa", "early", "stable"]  # over pretraining seeds
    assert all(claims[c]["numbers"]["level"] == "pretraining" for c in family)
    raw = [claims[c]["numbers"]["diff"]["p_value"] for c in family]
    adjusted = [claims[c]["numbers"]["p_holm"] for c in family]
    assert adjusted == _holm(raw)  # a family of four, not five
    assert adjusted != _holm([*raw, checkpoint_p])[:4]  # the one-seed p would have changed them
    assert all(claims[c]["significant"] == (claims[c]["numbers"]["p_holm"] < 0.05) for c in family)
    assert f"Holm-adjusted over the {len(family)} tested claims" in claims["mlm-sc"]["sentence"]
    md = (tmp_path / "report" / "report.md").read_text()
    assert f"{len(family)} claims of the study enter Holm's correction as one family" in md
    assert (
        "; 1 claim at one pretraining seed gives a direction only, its checkpoint-level p outside the family"
        in md
    )
