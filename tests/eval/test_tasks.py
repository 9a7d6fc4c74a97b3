"""Deterministic splits, code-retrieval extraction, and the paper suite's loaders on tiny local
files in the hub datasets' formats ($ENCODERLAB_PAPER_DATA)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from encoderlab.errors import UserError
from encoderlab.eval.spec import IRSplit
from encoderlab.eval.suites import SUITES
from encoderlab.eval.tasks import TASKS, docstring_functions, load_task, split_groups, subsample


def test_splits_keep_groups_together_and_are_stable():
    items = [{"id": i, "group": i // 5} for i in range(500)]
    train, val, test = split_groups(items, lambda r: r["group"], "salt", (0.6, 0.1, 0.3))
    assert len(train) + len(val) + len(test) == 500
    groups = [{r["group"] for r in part} for part in (train, val, test)]
    assert not (groups[0] & groups[1] or groups[0] & groups[2] or groups[1] & groups[2])
    # adding items never moves existing ones
    again = split_groups(items + [{"id": 999, "group": 999}], lambda r: r["group"], "salt", (0.6, 0.1, 0.3))
    assert [r for r in again[0] if r["id"] != 999] == train
    assert subsample(list(range(100)), 10) == subsample(list(range(100)), 10) and subsample([1, 2], 5) == [
        1,
        2,
    ]


def test_every_suite_task_is_registered_with_a_metric():
    for suite, names in SUITES.items():
        for name in names:
            assert TASKS[name].metric and TASKS[name].family in ("sc", "tc", "qa", "ir"), (suite, name)
    assert len(SUITES["paper"]) == 12


SOURCE = '''
def add(a, b):
    """Add two numbers and return the sum.

    More details here.
    """
    return a + b


class K:
    def method(self):
        """Too short"""
        return 1

    def undocumented(self):
        return 2
'''


def test_docstring_functions_remove_the_docstring_from_the_document():
    [rec] = docstring_functions(SOURCE, "mod.py")
    assert rec["query"] == "Add two numbers and return the sum."
    assert rec["doc"] == "def add(a, b):\n    return a + b" and rec["did"] == "mod.py:add:2"


def _write(root: Path, folder: str, split: str, rows: list[dict]) -> None:
    (root / folder).mkdir(parents=True, exist_ok=True)
    (root / folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def paper_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_PAPER_DATA", str(tmp_path))
    return tmp_path


def test_paper_sc_uses_encodeval_splits_and_templates(paper_dir):
    _write(
        paper_dir,
        "glue-mnli",
        "train",
        [{"premise": f"p{i}", "hypothesis": f"h{i}", "label": i % 3, "idx": i} for i in range(40)],
    )
    _write(paper_dir, "glue-mnli", "validation", [{"premise": "p", "hypothesis": "h", "label": 2, "idx": 0}])
    task, data = load_task(TASKS["paper-mnli"])
    assert (len(data.train), len(data.val), len(data.tests["test"])) == (38, 2, 1)
    assert data.tests["test"] == [{"text": "p", "text_pair": "h", "label": 2}]


def test_paper_tc_int_and_string_tags(paper_dir):
    rows = [{"words": ["John", "lives"], "ner": [1, 0]}]
    for split in ("train", "validation", "test"):
        _write(paper_dir, "conll2003-en", split, rows)
        _write(paper_dir, "ontonotes5", split, [{"tokens": ["Paris"], "tags": ["B-GPE"]}])
    _, data = load_task(TASKS["paper-conll2003"])
    assert data.train == [{"tokens": ["John", "lives"], "tags": [1, 0]}]
    task, data = load_task(TASKS["paper-ontonotes"])
    assert task.labels == ("O", "B-GPE") and data.tests["test"][0]["tags"] == [1]


def test_paper_squad_v2_keeps_unanswerable_and_skips_bad_spans(paper_dir):
    rows = [
        {
            "id": "a",
            "title": "t",
            "context": "the code is red",
            "question": "q?",
            "answers": {"text": ["red"], "answer_start": [12]},
        },
        {
            "id": "b",
            "title": "t",
            "context": "nothing here",
            "question": "q?",
            "answers": {"text": [], "answer_start": []},
        },
        {
            "id": "c",
            "title": "t",
            "context": "the code is red",
            "question": "q?",
            "answers": {"text": ["red"], "answer_start": [3]},
        },
    ]
    _write(paper_dir, "squad_v2", "train", rows * 10)
    _write(paper_dir, "squad_v2", "validation", rows)
    task, data = load_task(TASKS["paper-squad-v2"])
    assert task.options.v2 and [e["answers"] for e in data.tests["test"]] == [
        [{"text": "red", "answer_start": 12}],
        [],
    ]
    assert data.counts["skipped_questions"] == 11


def test_paper_retrieval_from_beir_and_mldr_files(paper_dir):
    _write(paper_dir, "msmarco-pairs", "train", [{"query": "q", "positive": "d"}])
    _write(
        paper_dir,
        "nq-corpus",
        "corpus",
        [{"_id": f"d{i}", "title": "T", "text": f"doc {i}"} for i in range(6)],
    )
    _write(paper_dir, "nq-queries", "queries", [{"_id": f"q{i}", "text": f"query {i}"} for i in range(6)])
    _write(
        paper_dir,
        "nq-qrels",
        "test",
        [{"query-id": f"q{i}", "corpus-id": f"d{i}", "score": 1} for i in range(6)],
    )
    _, data = load_task(TASKS["paper-nq"])
    assert isinstance(data.val, IRSplit) and len(data.val.queries) + len(data.tests["test"].queries) == 6
    assert data.val.corpus[next(iter(data.val.qrels[next(iter(data.val.qrels))]))].startswith("T. doc")

    _write(paper_dir, "mldr-en-corpus", "corpus", [{"docid": "x", "text": "long doc"}])
    for split in ("dev", "test"):
        _write(
            paper_dir,
            "mldr-en-default",
            split,
            [{"query_id": f"{split}1", "query": "what", "positive_passages": [{"docid": "x"}]}],
        )
    task, data = load_task(TASKS["paper-mldr"])
    assert data.tests["test"].qrels == {"test1": {"x": 1}} and task.options.query_prefix == "Query: "


def test_paper_task_without_files_or_hub_is_one_clear_error(paper_dir, monkeypatch):
    with pytest.raises(UserError, match="has no glue-sst2/<split>.jsonl"):
        load_task(TASKS["paper-sst2"])
    monkeypatch.delenv("ENCODERLAB_PAPER_DATA")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match="HF_HUB_OFFLINE=1; set ENCODERLAB_PAPER_DATA"):
        load_task(TASKS["paper-sst2"])
