"""`encoderlab study run | list | report`: thin wrappers over the study API."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import tyro

from encoderlab.study.catalog import get_study, list_studies
from encoderlab.study.runner import run_study


def default_backend():
    """The real node kinds (imported lazily: they pull in torch and transformers)."""
    from encoderlab.study import real_backend

    return real_backend()


def run_command(
    name: Annotated[str, tyro.conf.Positional],
    /,
    scale: str = "demo",
    out: Path | None = None,
    fetch: bool = True,
    jobs: int = 1,
) -> Path:
    """Run a built-in study end to end (resuming a previous attempt) and print the report path.

    Args:
        name: Study name (see `encoderlab study list`).
        scale: demo | cpu | gpu-210m | gpu-610m | gpu-1b.
        out: Study folder (default runs/NAME-SCALE); rerunning into it resumes and reuses finished nodes.
        fetch: Fetch missing assets automatically (--no-fetch: fail and name the fetch command instead).
        jobs: Nodes run at once, each in a worker process with its share of the CPU threads and, on a
            GPU machine, a GPU of its own (1: one after the other in this process).
    """
    spec = get_study(name, scale)
    folder = out if out is not None else Path("runs") / f"{name}-{scale}"
    report = run_study(spec, folder, default_backend(), fetch=fetch, jobs=jobs)
    print(f"report: {report}")
    print(f"markdown: {report.with_suffix('.md')}")
    return report


def list_command() -> None:
    """List the built-in studies and scales with their expected run times."""
    print(f"{'study':<16} {'scale':<10} {'expected time':>14}  hardware")
    for study, scale, minutes, hardware in list_studies():
        when = f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.0f} h"
        print(f"{study:<16} {scale:<10} {when:>14}  {hardware}")
    print("run one with: encoderlab study run STUDY --scale SCALE --out DIR")


def report_command(folder: Annotated[Path, tyro.conf.Positional], /) -> Path:
    """Regenerate the report of a study folder (also of a partly finished study) and print its path."""
    from encoderlab.study.report import write_report

    report = write_report(folder)
    print(f"report: {report}")
    return report
