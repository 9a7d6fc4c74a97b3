"""The report node's key hangs on the study as parsed, never on how its file is written.

`graph.report_config` digests the parsed spec (`to_dict`, keys sorted), so a study file rewritten with
its keys in another order, in flow style or as JSON, with comments, blank lines, CRLF line ends, trailing
spaces or numbers spelled otherwise (`1e-4` for `0.0001`) keeps every node's key, the report's included,
and `study run` reuses the report; a change the report reads (a claim's text, the description, the
baseline) gives the report a new key and leaves every other node's as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from encoderlab.study.catalog import get_study
from encoderlab.study.files import dump_study, load_study_file
from encoderlab.study.graph import build_graph
from encoderlab.study.nodes import real_backend


def _keys(text: str, folder: Path) -> dict[str, str]:
    folder.mkdir(parents=True)
    (folder / "study.yaml").write_text(text, encoding="utf-8")
    return {n.name: n.key for n in build_graph(load_study_file(folder / "study.yaml"), real_backend())}


def _reversed(value):
    """Every mapping's keys in the reverse order (lists keep theirs: a list's order is the study's)."""
    if isinstance(value, dict):
        return {k: _reversed(value[k]) for k in reversed(list(value))}
    return [_reversed(v) for v in value] if isinstance(value, list) else value


def _written_otherwise(text: str) -> dict[str, str]:
    data = yaml.safe_load(text)
    flow = yaml.safe_dump(_reversed(data), sort_keys=False, default_flow_style=True, width=50)
    return {
        "keys reversed, flow style, comments": f"# my study\n\n{flow}\n# the end\n",
        "json": json.dumps(data, indent=2),
        "crlf and trailing spaces": text.replace("\n", "  \r\n"),
        "numbers spelled otherwise": text.replace("- 0.0001\n", "- 1.0e-4\n").replace(
            "ratio: 0.2\n", "ratio: 2e-1\n"
        ),
    }


def test_a_study_file_written_otherwise_keeps_every_node_key_the_report_s_too(tmp_path):
    text = dump_study(get_study("paper1-pfs", "cpu"), "paper1-pfs")
    assert "- 0.0001\n" in text and "ratio: 0.2\n" in text  # the spellings changed below
    keys = _keys(text, tmp_path / "as-dumped")
    assert "report" in keys
    for i, (how, other) in enumerate(_written_otherwise(text).items()):
        assert _keys(other, tmp_path / str(i)) == keys, how


def test_a_change_the_report_reads_gives_it_a_new_key_and_no_other_node(tmp_path):
    text = dump_study(get_study("paper1-pfs", "cpu"), "paper1-pfs")
    keys = _keys(text, tmp_path / "as-dumped")
    data = yaml.safe_load(text)
    claimed = {**data, "claims": [{**data["claims"][0], "text": "MLM wins"}, *data["claims"][1:]]}
    for i, changed in enumerate((claimed, {**data, "description": "Another paragraph."})):
        other = _keys(yaml.safe_dump(changed, sort_keys=False), tmp_path / f"changed-{i}")
        assert {name for name in keys if other[name] != keys[name]} == {"report"}
