"""compute.jsonl is rewritten after every node; each finished node's line is encoded once, not once per rewrite."""

from __future__ import annotations

import json

from fake_study import backend, pair_spec

from encoderlab.study import runner
from encoderlab.study.runner import run_study


def test_each_compute_line_is_encoded_once_however_many_nodes_finish_after_it(tmp_path, monkeypatch):
    # Before, every rewrite encoded every finished node's record again: n^2 / 2 encodings for n nodes (about
    # 2,900 for this study of 76), a third of a large fake study's CPU time. Counting encodings, not time.
    encoded = []
    real = runner.json_text
    monkeypatch.setattr(runner, "json_text", lambda data, **kw: encoded.append(data) or real(data, **kw))
    run_study(pair_spec(), tmp_path, backend(), progress=False)
    lines = (tmp_path / "compute.jsonl").read_text().splitlines()
    records = [r for r in encoded if "key" in r and "node" in r]
    assert len(lines) > 50 and len(records) == len(lines)  # one encoding per node
    assert [json.loads(line) for line in lines] == records  # the file holds exactly those records, in order
