"""The report node's key hangs on the study as parsed, never on how its file is written.

`graph.report_config` digests the parsed spec (`to_dict`, keys sorted), so a study file rewritten with
its keys in another order, in flow style or as JSON, with comments, blank lines, CRLF line ends, trailing
spaces or numbers spelled otherwise (`1e-4` for `0.0001`) keeps every node's key, the report's included,
and `study run` reuses the report; a change the report reads (a claim's text, the description, the
baseline) gives the report a new key and leaves every other node's as it was. A field written out at the
value its omission gives (`label: NAME`, a run's `seeds` as the study's, a recipe parameter at its resolved
value) is the same study: the spec is digested as resolved (`graph._as_resolved`), so the report keeps its key.
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


def _loaded(data: dict, folder: Path):
    folder.mkdir(parents=True)
    (folder / "study.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return load_study_file(folder / "study.yaml")


def _defaults_written_out(data: dict) -> dict:
    """`data` with fields written out at the value their omission gives: a run's label as its name, its seeds,
    seed offset and steps as the study's, a recipe parameter at the value the run resolves it to, an override
    of the study's run_overrides, its tasks as the study's and the checkpoint LRs as the whole grid."""
    first, *rest = data["runs"]
    written = {
        **first,
        "label": first["name"],
        "seeds": data["seeds"],
        "seed": 0,
        "steps": data["steps"],
        "params": {**first["params"], "world_size": 1},
        "overrides": dict(data["run_overrides"]),
        "tasks": data["eval"]["tasks"],
    }
    return {**data, "runs": [written, *rest], "eval": {**data["eval"], "checkpoint_lrs": data["eval"]["lrs"]}}


def test_a_field_written_out_at_its_default_keeps_the_report_key(tmp_path):
    """The same study with its defaults written out resolves every run alike (so every other node keeps its
    key) and gave the report another key: its digest held the file's params, overrides and labels as written."""
    from encoderlab.study.graph import pretraining, report_config

    data = yaml.safe_load(dump_study(get_study("paper1-pfs", "cpu"), "paper1-pfs"))
    del data["runs"][0]["label"]
    data["eval"]["checkpoint_lrs"] = []  # the whole grid, as `_defaults_written_out` writes it out
    spec = _loaded(data, tmp_path / "omitted")
    written = _loaded(_defaults_written_out(data), tmp_path / "written")
    assert written != spec  # the file does write them out
    assert [p.config for p in pretraining(written)] == [p.config for p in pretraining(spec)]
    assert report_config(written) == report_config(spec)


def test_a_label_or_a_claim_the_report_shows_still_changes_its_config(tmp_path):
    from encoderlab.study.graph import report_config

    data = yaml.safe_load(dump_study(get_study("paper1-pfs", "cpu"), "paper1-pfs"))
    spec = report_config(_loaded(data, tmp_path / "as-dumped"))
    relabelled = {**data, "runs": [{**data["runs"][0], "label": "Another"}, *data["runs"][1:]]}
    other = {**data, "claims": [{**data["claims"][0], "family": None}, *data["claims"][1:]]}
    for i, changed in enumerate((relabelled, other)):
        assert report_config(_loaded(changed, tmp_path / f"changed-{i}")) != spec
