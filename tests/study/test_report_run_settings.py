"""The report's Runs table gives a run's parameters and overrides as a study file writes them.

A study run with `overrides: {phases: [{objective: {type: clm}, steps: 10}]}` (MLM, then a CLM phase) was
shown as `phases=(Phase(objective=CLM(), steps=10, tokens=0, schedule=Schedule(kind='constant', ...)),)`:
Python's repr of the checked value, whose class names the file never holds and which no study file
takes back. Each value now reads back (as YAML, checked as the study checks a run's overrides) to the
very value the run trained with.
"""

from __future__ import annotations

import pytest

from encoderlab.config import check_values
from encoderlab.study.report import _settings
from encoderlab.study.spec import RunSpec
from encoderlab.train.config import RunConfig
from encoderlab.train.recipes import recipe_args
from encoderlab.yamltext import read_yaml

OVERRIDES = {
    "phases": [
        {"objective": {"type": "mlm", "mask_ratio": 0.3}, "steps": 10},
        {"objective": {"type": "clm"}, "steps": 10},
    ],
    "optim.betas": [0.9, 0.98],
    "model.mask_token": "yes",
}


def _shown(run: RunSpec) -> dict[str, str]:
    """The Runs table's settings cell, split into name -> value as written (values hold spaces)."""
    cell, shown, name = _settings(run), {}, None
    for word in cell.split(" "):
        key, sep, rest = word.partition("=")
        if sep and (name is None or key in {**run.params, **run.overrides}):
            name, shown[key] = key, rest
        else:
            shown[name] += " " + word
    return shown


@pytest.mark.parametrize("key", sorted(OVERRIDES))
def test_an_override_reads_back_as_the_value_the_run_trained_with(key):
    run = RunSpec(name="mc", recipe="pfs-mlm", overrides={key: OVERRIDES[key]})
    written = _shown(run)[key]
    assert "Phase(" not in written and "CLM(" not in written, written
    assert check_values(RunConfig, {key: read_yaml(written)}, "back") == run.overrides


def test_recipe_params_read_back_as_written():
    run = RunSpec(name="m", recipe="pfs-mlm", params={"ratio": 0.3, "steps": 40})
    shown = _shown(run)
    assert recipe_args("pfs-mlm", {k: read_yaml(v) for k, v in shown.items()}) == recipe_args(
        "pfs-mlm", run.params
    )
