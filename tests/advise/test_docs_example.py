"""docs/advise.md's "How to read the output" block is the CLI's output on a named synthetic ladder.

The block is prose's evidence (the paragraph under it reads numbers off it), so it is regenerated here: a
change to the fit or the wording that moves a printed number fails this test instead of leaving the doc
quoting output no command gives (its intervals had drifted by 0.001 after the fit's tie-break)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from encoderlab.advise.decide import advise
from encoderlab.advise.predict import Target
from encoderlab.advise.report import format_advice
from encoderlab.advise.synthetic import synthetic_ladder

DOC = Path(__file__).parents[2] / "docs" / "advise.md"


def _documented_block() -> list[str]:
    text = DOC.read_text().split("## How to read the output", 1)[1]
    return text.split("```", 2)[1].strip("\n").splitlines()


def test_the_documented_output_is_what_advise_prints_on_its_ladder():
    syn = synthetic_ladder(np.random.default_rng(3), crossover=3.0)
    printed = format_advice(advise(syn.ladder, Target(params=3.125e8, tokens=6.25e9), seed=0)).splitlines()
    documented = _documented_block()
    assert len(documented) == len(printed)
    for doc, out in zip(documented, printed):
        # a line the doc cuts short ("why: the backtest passed: ...") is checked up to the cut
        assert out.startswith(doc[:-3]) if doc.endswith("...") else out == doc, (doc, out)
