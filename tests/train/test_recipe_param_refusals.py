"""A refusal of a part a recipe builds names the `--param` values it is about, found from the typed
parameters (`train/recipe_refusals.py`), not guessed from the line's words: a regex over the line took
`ratio` for unnamed in `mask_ratio` and named every `--param` given (`data=...`, a required `init=...`),
and took `load` for named in `load: must be one of ...`, which then said no `--param` at all. A misspelled
parameter is named with the one it is close to."""

from __future__ import annotations

import pytest

from encoderlab.errors import UserError
from encoderlab.train.recipes import build_recipe

MASK = "mlm mask_ratio must be between 0 and 1 (exclusive), got 0.0"


def _refusal(recipe: str, *params: str) -> str:
    with pytest.raises(UserError) as exc:
        build_recipe(recipe, list(params))
    return str(exc.value)


@pytest.mark.parametrize(
    ("recipe", "params", "line"),
    [
        # a wrapped recipe's parameter that reaches a nested part (pfs-mlm -> pfs_clm_mlm -> MLM)
        ("pfs-mlm", ("ratio=0",), f"recipe pfs-mlm with --param ratio=0: {MASK}"),
        # a value beside it that the refusal is not about is not named
        (
            "pfs-mlm",
            ("data=runs/data", "ratio=0", "steps=5000"),
            f"recipe pfs-mlm with --param ratio=0: {MASK}",
        ),
        # nor a required parameter given right (cpt-mlm needs init)
        ("cpt-mlm", ("init=runs/base", "ratio=0"), f"recipe cpt-mlm with --param ratio=0: {MASK}"),
        # a part's check whose line starts with the field's name (`load:`) still gets its --param
        (
            "cpt-mlm",
            ("init=runs/base", "load=everything", "ratio=0.3"),
            "recipe cpt-mlm with --param load=everything: load: must be one of 'weights', 'full', got 'everything'",
        ),
        (
            "pfs-clm-mlm",
            ("data=d", "size=huge"),
            "recipe pfs-clm-mlm with --param size=huge: unknown model size 'huge'; valid: 1b, 210m, 610m, micro, "
            "mini, nano, small, tiny",
        ),
    ],
)
def test_a_parts_refusal_names_exactly_the_params_it_is_about(recipe, params, line):
    assert _refusal(recipe, *params) == line


def test_the_recipes_own_checks_and_a_missing_required_param_keep_their_line():
    """Those name their parameter (and its fix) themselves: nothing is put in front."""
    assert _refusal("pfs-mlm", "ratio=1.5", "steps=5").startswith("steps must be at least warmup + decay = ")
    assert _refusal("cpt-mlm", "data=d", "ratio=0.3") == (
        "cpt-mlm needs a starting checkpoint: --param init=PATH_OR_HUB_ID"
    )


def test_a_misspelled_param_is_named_with_the_one_it_is_close_to():
    line = _refusal("pfs-mlm", "raito=0.3", "stesp=10", "colour=red")
    assert line.startswith(
        "recipe pfs-mlm has no parameter 'colour', 'raito' (ratio?), 'stesp' (steps?); valid: checkpoint_every, "
    )


def test_two_refused_values_name_the_one_the_line_is_about():
    """Neither alone builds: the one whose absence changes the refusal is the one the line is about."""
    assert (
        _refusal("pfs-mlm", "size=huge", "ratio=0", "data=d")
        == f"recipe pfs-mlm with --param ratio=0: {MASK}"
    )


def test_a_study_names_the_runs_params_a_parts_refusal_is_about(tmp_path):
    """It said `run b: mlm mask_ratio must be ...`; the study's own batch arguments are never named."""
    from encoderlab.study.resolve import resolve_run
    from encoderlab.study.spec import DataSpec, RunSpec, StudySpec

    run = RunSpec(name="b", recipe="pfs-mlm", params={"ratio": 4.0, "micro_batch_size": 2})
    spec = StudySpec(
        name="s",
        scale="t",
        data=(DataSpec(name="main", corpus=("c.jsonl",)),),
        runs=(run,),
        baseline="b",
        micro_batch=3,
    )
    with pytest.raises(UserError) as exc:
        resolve_run(spec, run, 0)
    assert (
        str(exc.value)
        == "run b: ratio: 4.0 in its params: mlm mask_ratio must be between 0 and 1 (exclusive), got 4.0; it is a "
        "share of the tokens, e.g. 0.3 for 30%"
    )


@pytest.mark.parametrize(
    "recipe, param, value, share",
    [
        ("pfs-mlm", "ratio", 30, "; it is a share of the tokens, e.g. 0.3 for 30%"),
        ("pfs-clm-mlm", "clm_fraction", 25, "; it is a share of the steps, e.g. 0.25 for 25%"),
        ("pfs-clm-mlm", "clm_fraction", -0.5, ""),  # no percentage: the range alone
    ],
)
def test_a_percentage_given_for_a_share_is_told_so(recipe, param, value, share):
    """`ratio: 30` (30% written as a percentage) was refused with the range and no fix."""
    with pytest.raises(UserError) as exc:
        build_recipe(recipe, [f"{param}={value}"])
    assert str(exc.value).endswith(f"got {float(value)}{share}"), str(exc.value)
