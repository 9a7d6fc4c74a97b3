"""An objective (a field of tagged types) written without its `type` mapping is told the form to write.

`phases: [{objective: clm, ...}]` was refused as "expected a mapping of MLM fields, got 'clm'": the first
member of `MLM | CLM`, for a phase meant as CLM, naming neither type nor the `type` key that picks one; and
`objective: {mask_ratio: 0.3}` as "'type' must be one of clm, mlm, got None", a value nobody wrote. The
fix each line names is followed here and must give the objective meant.
"""

from __future__ import annotations

import re

import pytest

from encoderlab.config import apply_overrides
from encoderlab.errors import UserError
from encoderlab.objectives import CLM, MLM
from encoderlab.train.recipes import build_recipe


@pytest.mark.parametrize("written, kind", [("clm", CLM), ("MLM", MLM)])
def test_a_bare_objective_name_is_told_its_mapping_and_following_it_works(written, kind):
    cfg = build_recipe("smoke-clm-mlm", [])
    with pytest.raises(UserError) as refused:
        apply_overrides(cfg, [f"phases.0.objective={written}"])
    line = str(refused.value)
    assert line.startswith(
        f"phases[0].objective: expected a mapping with a `type` (clm, mlm), got '{written}'"
    )
    assert "MLM fields" not in line
    fix = re.search(r"write it as (\{type: \w+\})", line)
    assert fix, line
    assert isinstance(apply_overrides(cfg, [f"phases.0.objective={fix.group(1)}"]).phases[0].objective, kind)


def test_an_objective_mapping_without_type_names_the_key_to_add():
    cfg = build_recipe("smoke-clm-mlm", [])
    with pytest.raises(UserError) as refused:
        apply_overrides(cfg, ["phases.1.objective={mask_ratio: 0.3}"])
    line = str(refused.value)
    assert "None" not in line, line
    assert line == "phases[1].objective: no `type` given; add `type: clm` or `type: mlm` to it"
    fixed = apply_overrides(cfg, ["phases.1.objective={type: mlm, mask_ratio: 0.3}"]).phases[1].objective
    assert isinstance(fixed, MLM) and fixed.mask_ratio == 0.3
