"""A study's prepare node says when its val split holds no document, as `data prepare` does.

`data prepare` notes a val split that its --val-fraction left empty (tests/data/test_prepare_no_validation.py);
a study's prepare node wrote such a folder without a word, and its runs reported "no validation loss". The
node's note comes from the same function (`holdout.no_validation_note`), worded for a study: its fraction is
the default, which a study cannot set, so the fix names how many documents hold one out, followed here.
"""

from __future__ import annotations

import dataclasses

import pytest
from fake_study import tiny_corpus
from tests.study.study_fixtures import field_hint_study

from encoderlab.data.holdout import docs_holding_one_out, held_out_count
from encoderlab.data.prepare import PrepareConfig, read_meta
from encoderlab.study.files import load_study_file
from encoderlab.study.graph import prepare_graph
from encoderlab.study.nodes import real_backend, run_prepare
from encoderlab.study.runner import NodeContext

FRACTION = PrepareConfig.__dataclass_fields__["val_fraction"].default
"""What a study's prepare node holds out (no setting of a study)."""


def _run_prepare(tmp_path, docs: int, capsys) -> tuple[dict, list[str]]:
    """The prepare node of a study reading a corpus of `docs` documents, run: (its meta.json, its notes)."""
    folder = tmp_path / f"d{docs}"
    folder.mkdir()
    tiny_corpus(folder / "c.jsonl", docs)
    spec = load_study_file(field_hint_study(folder, ["c.jsonl"]))
    spec = dataclasses.replace(spec, data=(dataclasses.replace(spec.data[0], decontaminate=False),))
    node = prepare_graph(spec, real_backend()).nodes["prepare/main"]
    (folder / "node").mkdir()
    capsys.readouterr()
    ctx = NodeContext(node=node, out_dir=folder / "node", inputs={}, study_dir=folder, spec=spec)
    result = run_prepare(ctx)
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("encoderlab: note:")]
    return read_meta(folder / "node" / result["data"]), notes


def test_the_fewest_documents_holding_one_out():
    for fraction in (FRACTION, 0.001, 0.3, 0.5, 0.9):
        need = docs_holding_one_out(fraction)
        assert held_out_count(need, fraction) == 1 and (need == 1 or held_out_count(need - 1, fraction) == 0)


@pytest.mark.slow
def test_a_study_prepare_node_notes_an_empty_val_split_and_its_fix_holds_one_out(tmp_path, capsys):
    need = docs_holding_one_out(FRACTION)
    few = need - 1
    meta, notes = _run_prepare(tmp_path, few, capsys)
    assert meta["splits"]["val"]["docs"] == 0
    assert notes == [
        f"encoderlab: note: study mini, dataset main: its val fraction {FRACTION} held out none of the {few} "
        "documents, so the val split is empty and the runs on it report no validation loss; give the dataset "
        f"{need} documents or more (more text, or a higher max_docs)"
    ]
    meta, notes = _run_prepare(tmp_path, need, capsys)  # the fix followed
    assert meta["splits"]["val"]["docs"] == 1 and notes == []
