"""The inputs of a study that the nodes still to run read: those its start checks look at on a resume.

A resumed study runs its unfinished nodes and every node downstream of one (`runner.pending_nodes`).
An input only finished nodes read (a start model, a tokenizer or a corpus entry that the config of no
node still to run holds: a hub id or a local path alike) is not read again, so the start checks leave
it alone (`checks.check_inputs`): a finished study resumes (to render its report again) offline without
the hub ids it read, and with its local inputs since moved or deleted.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from encoderlab.study.graph import Node
from encoderlab.study.hubids import start_ids
from encoderlab.study.spec import StudySpec


def unread_inputs(spec: StudySpec, study_dir: Path | None, nodes: Iterable[Node]) -> frozenset[str]:
    """The start models, tokenizers (`hubids.start_ids`), corpus entries and CKA texts of `spec` that no node of its
    graph (`nodes`) still to run in `study_dir` reads: no config of one holds them (a prepare node's corpus
    and tokenizer, a pretraining node's start model, an as-is model's evaluation or CKA). Empty without
    a graph or a study folder (a first run reads them all)."""
    from encoderlab.study.runner import pending_nodes

    nodes = list(nodes)
    if not nodes or study_dir is None:
        return frozenset()
    read: set[str] = set()
    for node in pending_nodes(Path(study_dir), nodes):
        config_strings(node.config, read)
    # Exact strings suffice: `nodes` is `build_graph(spec)` of this very spec (pinned first:
    # `pin_local_starts`), and its configs hold these fields verbatim (a prepare node its `DataSpec`'s
    # corpus entries and tokenizer, `to_dict`; a pretraining node `model.init` = `run.init`,
    # `resolve._init_of`; an as-is evaluation or CKA `run.init`), none resolved, globbed or made absolute.
    # The same path spelt two ways in the spec (`./m`, `m`) is two inputs, each read by its own nodes.
    inputs = [location for location, _, _ in start_ids(spec)] + [c for d in spec.data for c in d.corpus]
    inputs += [c.texts for c in spec.cka]
    return frozenset(i for i in inputs if i not in read)


def config_strings(value, out: set[str]) -> None:
    """Add every string `value` (a node config: dicts, lists, scalars) holds to `out`."""
    if isinstance(value, str):
        out.add(value)
    elif isinstance(value, dict):
        for v in value.values():
            config_strings(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            config_strings(v, out)
