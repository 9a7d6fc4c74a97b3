"""The built-in studies by name, and `get_study(name, scale)`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from encoderlab.errors import UserError
from encoderlab.study.paper1 import paper1_cpt, paper1_pfs
from encoderlab.study.paper2 import paper2_detour
from encoderlab.study.scales import GPUS, SCALES, Scale
from encoderlab.study.spec import StudySpec

STUDIES: dict[str, Callable[[Scale], StudySpec]] = {
    "paper1-pfs": paper1_pfs,
    "paper1-cpt": paper1_cpt,
    "paper2-detour": paper2_detour,
}


def get_study(name: str, scale: str = "demo", overrides: dict | None = None) -> StudySpec:
    """The built-in study `name` at `scale`; fields of the spec can be replaced by `overrides`."""
    if name not in STUDIES:
        raise UserError(f"unknown study '{name}'; valid: {', '.join(STUDIES)} (see: encoderlab study list)")
    if scale not in SCALES:
        raise UserError(f"unknown scale '{scale}' for study {name}; valid: {', '.join(SCALES)}")
    spec = STUDIES[name](SCALES[scale])
    return replace(spec, **(overrides or {}))


def estimate_minutes(spec: StudySpec, plan=None) -> float:
    """The spec's expected minutes, or from its plan: 6 N D FLOPs per run on the scale's GPUs, +10% for
    evaluation."""
    if spec.expected_minutes:
        return spec.expected_minutes
    from encoderlab.study.plan import plan_study

    plan = plan or plan_study(spec)
    return round(1.1 * plan.gpu_hours * 60 / GPUS, -1)


def list_studies() -> list[tuple[str, str, float, str, str, str]]:
    """(study, scale, expected minutes, hardware, most passes over a corpus as text, setup) for every
    built-in study and scale; the passes are `?` when unknown and `>=N` when a lower bound; the setup says whether the scale is its paper's experiment or how it departs from it
    (`fidelity.setup_line`)."""
    from encoderlab.study.fidelity import setup_line
    from encoderlab.study.plan import plan_study

    rows = []
    for name, build in STUDIES.items():
        for scale, sc in SCALES.items():
            spec = build(sc)
            plan = plan_study(spec)
            rows.append(
                (
                    name,
                    scale,
                    estimate_minutes(spec, plan),
                    spec.hardware,
                    plan.max_passes_text(),
                    setup_line(spec),
                )
            )
    return rows
