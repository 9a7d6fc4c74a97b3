"""Studies: a declarative grid run as a cached, resumable graph, and the report it writes.

`get_study(name, scale)` gives a built-in `StudySpec`; `run_study(spec, out, backend)` runs it
(`real_backend()` does the real work; tests pass fake node kinds); `write_report(out)` rebuilds the
report of a study folder. See docs/studies.md.
"""

from encoderlab.study.graph import Backend, Node, NodeKind, build_graph
from encoderlab.study.report import write_report
from encoderlab.study.runner import run_study
from encoderlab.study.spec import SCALES, STUDIES, StudySpec, get_study, list_studies


def real_backend() -> Backend:
    """The node kinds that do the real work (imported lazily: they pull in torch)."""
    from encoderlab.study.nodes import real_backend as build

    return build()


__all__ = [
    "SCALES",
    "STUDIES",
    "Backend",
    "Node",
    "NodeKind",
    "StudySpec",
    "build_graph",
    "get_study",
    "list_studies",
    "real_backend",
    "run_study",
    "write_report",
]
