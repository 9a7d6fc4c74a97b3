"""The built-in studies by name, and `get_study(name, scale)`.

A study is built at every scale, except the few of `ONLY_AT`, which exist at some scales only (a domain
whose corpus and tasks only the gpu scales have); `scales_of` and `built_in` say which, and every
listing (`study list`, docs/reproduce.md's tables, the golden node keys) goes through them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from encoderlab.errors import UserError
from encoderlab.study.paper1 import paper1_cpt, paper1_pfs
from encoderlab.study.paper2 import paper2_detour, paper2_detour_code
from encoderlab.study.scales import GPUS, SCALES, Scale
from encoderlab.study.spec import StudySpec

if TYPE_CHECKING:
    from encoderlab.study.graph import Pretraining

STUDIES: dict[str, Callable[[Scale], StudySpec]] = {
    "paper1-pfs": paper1_pfs,
    "paper1-cpt": paper1_cpt,
    "paper2-detour": paper2_detour,
    "paper2-detour-code": paper2_detour_code,
}

ONLY_AT: dict[str, tuple[tuple[str, ...], str]] = {
    "paper2-detour-code": (
        tuple(name for name, sc in SCALES.items() if sc.real_models),
        "it continues ModernBERT on starcoderdata from the hub; paper2-detour, on biomedical text, runs at every scale",
    ),
}
"""(scales, why) of the studies that exist at some scales only."""


def scales_of(name: str) -> tuple[str, ...]:
    """The scales study `name` is built at."""
    return ONLY_AT[name][0] if name in ONLY_AT else tuple(SCALES)


def built_in() -> list[tuple[str, str]]:
    """Every built-in (study, scale)."""
    return [(name, scale) for name in STUDIES for scale in scales_of(name)]


def get_study(name: str, scale: str = "demo", overrides: dict | None = None) -> StudySpec:
    """The built-in study `name` at `scale`; fields of the spec can be replaced by `overrides`."""
    if name not in STUDIES:
        raise UserError(f"unknown study '{name}'; valid: {', '.join(STUDIES)} (see: encoderlab study list)")
    if scale not in SCALES:
        raise UserError(f"unknown scale '{scale}' for study {name}; valid: {', '.join(scales_of(name))}")
    if scale not in scales_of(name):
        scales, why = ONLY_AT[name]
        raise UserError(
            f"study {name} runs at scales {', '.join(scales)} only ({why}); give --scale {scales[0]}"
        )
    spec = STUDIES[name](SCALES[scale])
    return replace(spec, **(overrides or {}), names_hub_ids=True)  # never a relative path


def estimate_minutes(spec: StudySpec, plan=None, trained: list[Pretraining] | None = None) -> float:
    """The spec's expected minutes, or from its plan on the scale's GPUs: 6 N D FLOPs per pretraining
    run (each step at least its floor, `evalcost.floored_seconds`), plus its eval nodes' fine-tuning and scoring (`evalcost`, counted from the study's graph unless
    `plan` has them already; `trained`: the study's `graph.pretraining(spec)` when the caller has it)."""
    if spec.expected_minutes:
        return spec.expected_minutes
    from encoderlab.study import real_backend
    from encoderlab.study.evalcost import with_evaluation
    from encoderlab.study.graph import build_graph
    from encoderlab.study.plan import plan_study

    plan = plan or plan_study(spec, trained=trained)
    if plan.evaluation is None:
        plan = with_evaluation(plan, build_graph(spec, real_backend(), trained, keyed=False))  # counted only
    return round(plan.total_gpu_hours * 60 / GPUS, -1)


def list_studies() -> list[tuple[str, str, float, str, str, str]]:
    """(study, scale, expected minutes, hardware, most passes over a corpus as text, setup) for every
    built-in study and scale; the passes are `?` when unknown and `>=N` when a lower bound; the setup says whether the scale is its paper's experiment or how it departs from it
    (`fidelity.setup_line`)."""
    from encoderlab.study.fidelity import setup_line
    from encoderlab.study.graph import pretraining
    from encoderlab.study.plan import plan_study

    rows = []
    for name, scale in built_in():
        spec = get_study(name, scale)
        trained = pretraining(spec)  # resolved once, for the plan and the graph its estimate counts
        plan = plan_study(spec, trained=trained)
        rows.append(
            (
                name,
                scale,
                estimate_minutes(spec, plan, trained),
                spec.hardware,
                plan.max_passes_text(),
                setup_line(spec),
            )
        )
    return rows
