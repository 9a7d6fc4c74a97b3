"""BEIR task files leave a query's own id out of its ranking, as BEIR does by default
(`EvaluateRetrieval.evaluate(..., ignore_identical_ids=True)` pops it from the results, and
`DenseRetrievalExactSearch.search` skips it). ArguAna and Quora put a query's text in the corpus under the
query's id, where it would rank first; before, a BEIR task file ranked it and scored lower than BEIR."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math

import pytest
import torch
from tests.eval.test_task_file_beir import beir_task

from encoderlab.eval import families
from encoderlab.eval.families import Retrieval
from encoderlab.eval.spec import IRSplit, TaskData
from encoderlab.eval.tasks.custom import load_task_files
from encoderlab.eval.tasks.splits import data_hash

pytestmark = pytest.mark.usefixtures("isolated_tasks")

# The embeddings the fake model gives each text (after the task's `query: `/`passage: ` prefix): query `a`'s own document `a` is its exact copy, so it
# would rank first; `b` (relevant) comes second, `c` third.
VECTORS = {
    "argument a": [1.0, 0.0, 0.0],
    "argument a again": [1.0, 0.0, 0.0],
    "counter b": [0.8, 0.6, 0.0],
    "other c": [0.0, 1.0, 0.0],
    "argument d": [0.0, 0.0, 1.0],
    "question e": [0.0, 1.0, 0.0],
}


def _write(folder):
    """An ArguAna-like folder: queries share ids with the corpus; each judges another document."""
    (folder / "qrels").mkdir(parents=True)
    docs = {"a": "argument a", "b": "counter b", "c": "other c", "d": "argument d"}
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in docs.items())
    )
    queries = {"a": "argument a again", "d": "argument d", "e": "question e"}
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in queries.items())
    )
    for name, judged in (("train", "e\tc\t1"), ("dev", "d\tc\t1"), ("test", "a\tb\t1")):
        (folder / "qrels" / f"{name}.tsv").write_text(f"query-id\tcorpus-id\tscore\n{judged}\n")


def test_a_query_never_retrieves_the_document_that_shares_its_id(tmp_path, monkeypatch):
    _write(tmp_path / "sci")
    (task,) = load_task_files([beir_task(tmp_path)])
    # each text's one "token" is its index in VECTORS (prepared ids are whole numbers, held as int32);
    # the fake model embeds a text as its vector
    names = list(VECTORS)
    monkeypatch.setattr(
        families, "text_ids", lambda task, tokenizer, texts: [[names.index(t.split(": ")[-1])] for t in texts]
    )
    monkeypatch.setattr(
        families,
        "predict_rows",
        lambda module, seqs, per_row: [torch.tensor(VECTORS[names[s[0]]]) for s in seqs],
    )
    prepared = Retrieval.prepare(task, None, task.loader())
    (prediction,) = Retrieval.predict(task, None, prepared.tests["test"])
    ranked = [d for d, _ in prediction["ranking"]]
    assert ranked[0] == "b" and sorted(ranked) == ["b", "c", "d"]  # `a` left out, `b` first
    scores = Retrieval.metrics(task, [prediction])
    # by hand: b (grade 1) at rank 1 of the ranking without `a`: DCG 1/log2(2) = ideal, so nDCG@10 100;
    # with `a` ranked, b would be second: 1/log2(3), about 63.09
    assert scores["ndcg@10"] == pytest.approx(100.0 * (1 / math.log2(2)) / (1 / math.log2(2)))
    assert scores["recall@10"] == pytest.approx(100.0)
    # without a shared id nothing is left out: query d's ranking holds every document but d itself
    (val,) = [p for p in Retrieval.predict(task, None, prepared.val)]
    assert sorted(d for d, _ in val["ranking"]) == ["a", "b", "c"]


def test_the_switch_enters_the_data_hash_only_where_set():
    """BEIR task files' cached scores are not reused (their hash changes); other retrieval tasks, whose
    scores it does not change, keep their hash: the three fields of before, hashed as before."""
    split = IRSplit({"q": "x"}, {"d": "y"}, {"q": {"d": 1}})
    fields = {"queries": split.queries, "corpus": split.corpus, "qrels": split.qrels}
    before = hashlib.sha256()
    for part in ([], fields, {"test": fields}, ()):
        before.update(json.dumps(part, sort_keys=True).encode())
    assert data_hash(TaskData([], split, {"test": split})) == before.hexdigest()[:16]
    beir = dataclasses.replace(split, ignore_identical_ids=True)
    assert data_hash(TaskData([], beir, {"test": beir})) != before.hexdigest()[:16]
