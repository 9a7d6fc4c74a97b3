"""Studies: a declarative grid run as a cached, resumable graph, and the report it writes.

`get_study(name, scale)` gives a built-in `StudySpec`; `run_study(spec, out, backend)` runs it
(`real_backend()` does the real work; tests pass fake node kinds); `write_report(out)` rebuilds the
report of a study folder. See docs/studies.md.

`write_report` and `real_backend` are imported on first use: they pull in torch (through
evaluation), which the graph machinery and `encoderlab study list` do not need.
"""

from encoderlab.study.catalog import STUDIES, get_study, list_studies
from encoderlab.study.graph import Backend, Node, NodeKind, build_graph
from encoderlab.study.runner import run_study
from encoderlab.study.scales import SCALES
from encoderlab.study.spec import StudySpec


def __getattr__(name: str):
    if name == "write_report":
        from encoderlab.study.report import write_report

        return write_report
    if name == "real_backend":
        from encoderlab.study.nodes import real_backend

        return real_backend
    raise AttributeError(f"module 'encoderlab.study' has no attribute '{name}'")


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
