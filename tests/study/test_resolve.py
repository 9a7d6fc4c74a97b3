"""A study's runs become typed RunConfigs once, at graph build, with no `key=value` text in between."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from fake_study import backend, small_spec

import encoderlab.config
import encoderlab.train.recipes
from encoderlab.errors import UserError
from encoderlab.objectives import CLM, MLM
from encoderlab.study.data import load_study
from encoderlab.study.graph import build_graph
from encoderlab.study.nodes import run_config
from encoderlab.study.runner import run_study
from encoderlab.study.spec import DataSpec, RunSpec, StudySpec
from encoderlab.train.recipes import PAPER1_MASKING


def _no_text(*args, **kwargs):
    raise AssertionError("a study setting went through a key=value string")


def test_a_mask_ratio_goes_from_the_spec_to_the_nodes_phases_without_a_string(tmp_path, monkeypatch):
    for module, name in [
        (encoderlab.config, "parse_scalar"),
        (encoderlab.config, "apply_overrides"),
        (encoderlab.train.recipes, "build_recipe"),
    ]:
        monkeypatch.setattr(module, name, _no_text)
    spec = small_spec()
    runs = tuple(replace(r, params={"ratio": 0.3}) if r.name == "mlm20" else r for r in spec.runs)
    spec = replace(spec, runs=runs, run_overrides={"optim.lr": 1e-3})
    graph = build_graph(spec, backend())
    run = run_config(graph.nodes["pretrain/mlm20"])
    assert [p.objective for p in run.phases] == [MLM(mask_ratio=0.3, **PAPER1_MASKING)]
    assert run.optim.lr == 1e-3 and run.steps == 100 and run.layout.seq_len == 64
    biphasic = run_config(graph.nodes["pretrain/clm25-mlm40"])
    assert [p.objective for p in biphasic.phases] == [CLM(), MLM(mask_ratio=0.4, **PAPER1_MASKING)]
    # the report's mask-ratio axis is read from those phases; nothing declares it a second time
    run_study(spec, tmp_path, backend(), progress=False)
    # not the twin (group noise), nor the one CLM 25% -> MLM run (a design needs two ratios to draw a line)
    assert load_study(tmp_path).mask_ratios() == {"mlm40": ("MLM", 0.4), "mlm20": ("MLM", 0.3)}


def test_the_scale_shrinks_a_recipe_by_its_own_rule():
    spec = small_spec()
    graph = build_graph(replace(spec, steps=1000), backend())
    pfs = run_config(graph.nodes["pretrain/mlm40"]).phases[0].schedule
    assert (pfs.warmup, pfs.decay) == (48, 48)  # paper 1's 2k of 42k steps, as a share of 1,000
    cpt = RunSpec(name="cpt", recipe="cpt-mlm", init="clm", group="cpt", steps=600)
    graph = build_graph(replace(spec, runs=(*spec.runs, cpt)), backend())
    cfg = run_config(graph.nodes["pretrain/cpt"])
    assert (cfg.phases[0].schedule.warmup, cfg.phases[0].schedule.decay) == (10, 100)  # 200 and 2k of 12k
    assert cfg.checkpoint.every == 120 and cfg.steps == 600


@pytest.mark.parametrize("recipe,per_step", [("smoke-mlm", None), ("smoke-detour", 8 * 64)])
def test_a_smoke_recipe_runs_the_steps_a_study_gives_it(recipe, per_step):
    """A smoke recipe takes no batch shape, and runs its own: a study giving it steps was a KeyError
    ('global_batch'). A study shape given to one is refused (`test_untestable_settings`)."""
    from encoderlab.study.resolve import recipe_arguments

    data = (DataSpec(name="main", corpus=("texts.txt",)),)
    run = RunSpec(name="a", recipe=recipe)
    spec = StudySpec(name="s", data=data, runs=(run,), baseline="a", steps=20)
    assert recipe_arguments(spec, run) == ({"steps": 20} if per_step is None else {"tokens": 20 * per_step})


@pytest.mark.parametrize(
    "run,message",
    [
        (
            dict(recipe="pfs-mlm", params={"ratoi": 0.3}),
            "run x: recipe pfs-mlm has no parameter 'ratoi' (ratio?); valid: ",
        ),
        (
            dict(recipe="pfs-mlm", params={"ratio": "high"}),
            "run x: pfs-mlm.ratio: expected float, got 'high'",
        ),
        (
            dict(recipe="pfs-mlm", overrides={"optim.lrr": 1}),
            "run x: override 'optim.lrr': no field 'lrr'; valid: ",
        ),
        (
            dict(recipe="pfs-mlm", overrides={"precision": "fp8"}),
            "run x: override 'precision': must be one of",
        ),
        (dict(recipe="pfs-mlmm"), "run x: unknown recipe 'pfs-mlmm' (pfs-mlm?); valid: cpt-mlm, "),
        (dict(params={"ratio": 0.3}, init="minilm"), "run x has no recipe"),
    ],
)
def test_a_bad_run_is_one_line_naming_it(run, message):
    with pytest.raises(UserError, match="^" + re.escape(message)):
        RunSpec(name="x", **run)


def test_a_bad_study_is_a_user_error():
    spec = small_spec()
    with pytest.raises(UserError, match="run names must be unique, repeated: clm"):
        replace(spec, runs=(*spec.runs, RunSpec(name="clm", recipe="pfs-clm")))
    with pytest.raises(
        UserError, match="baseline names run 'nope', which the study does not have; runs: mlm40, "
    ):
        replace(spec, baseline="nope")
    with pytest.raises(UserError, match="override 'optim.nope'"):
        replace(spec, run_overrides={"optim.nope": 1})
    assert isinstance(spec, StudySpec)


def test_a_seed_too_large_for_torch_names_its_run():
    """A study seed past torch's generators was refused as "seed must be below 2**64 ...", naming no run:
    the seed is set after the recipe's own checks, outside the line that names the run."""
    from encoderlab.study.resolve import resolve_run

    spec = small_spec(seeds=(2**70,))
    with pytest.raises(UserError, match=rf"^run {spec.runs[0].name}: seed must be below 2\*\*64"):
        resolve_run(spec, spec.runs[0], spec.seeds[0])
