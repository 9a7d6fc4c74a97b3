"""A pairs file beside `data.beir` (`irpairs.read_pairs`) is streamed: each row is checked and dropped as
it is read, its texts kept once in the queries and corpus (`custom_rows.SplitIds`). Before, every row was
first read into a list of dicts, then copied into rows of ids, then into the pairs: a msmarco-style file of
millions of rows was held two or three times over. Measured on a synthetic 300,000-row triplet file
(tracemalloc, not a test): peak 378 MiB before, 286 MiB after, 264 MiB of it the pairs kept.

The contract tested is the generator's: a row is checked before the next is pulled from the file, so a bad
row early in the file is refused with the rest unread, and at most the row being checked is held."""

from __future__ import annotations

import hashlib
import json

import pytest

from encoderlab.errors import UserError
from encoderlab.eval.tasks import irpairs
from encoderlab.eval.tasks.custom_rows import ir_negatives, ir_rows

WHERE = "task file t.yaml"


def _write(path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _counted(monkeypatch) -> list[int]:
    """The rows `read_pairs` pulls from its file, counted as they are pulled."""
    pulled: list[int] = []
    real = irpairs.rows

    def counting(split, columns):
        for row in real(split, columns):
            pulled.append(1)
            yield row

    monkeypatch.setattr(irpairs, "rows", counting)
    return pulled


def test_a_bad_row_is_refused_before_the_rest_of_the_pairs_file_is_read(tmp_path, monkeypatch):
    rows = [{"query": f"question {i}", "document": f"answer {i}"} for i in range(500)]
    rows[2]["query"] = ""
    _write(tmp_path / "pairs.jsonl", rows)
    pulled = _counted(monkeypatch)
    with pytest.raises(UserError, match="line 3 of pairs.jsonl"):
        irpairs.read_pairs("pairs.jsonl", {}, tmp_path, WHERE)
    assert len(pulled) == 3


def test_streamed_pairs_are_the_pairs_of_the_split_read_whole(tmp_path, monkeypatch):
    """The same queries, corpus, judgments and triplets as `ir_rows` and `ir_negatives` give for the rows
    held whole (a task file's train split), ids given or hashed, a query of two positives included."""
    rows = [
        {"query": f"q{i % 7}", "positive": f"d{i}", "negative": f"n{i}", "doc_id": f"D{i}"} for i in range(40)
    ]
    _write(tmp_path / "pairs.jsonl", rows)
    pulled = _counted(monkeypatch)
    got = irpairs.read_pairs("pairs.jsonl", {"document": "positive"}, tmp_path, WHERE)
    whole = [
        {"query": r["query"], "document": r["positive"], "doc_id": r["doc_id"], "negative": r["negative"]}
        for r in rows
    ]
    order = range(len(whole))
    read = ir_rows(whole, "train", str, order)
    assert got.queries == {q: text for q, text, _, _ in read}
    assert got.corpus == {d: text for _, _, d, text in read}
    assert got.judged == {q: {d: 1 for qq, _, d, _ in read if qq == q} for q, _, _, _ in read}
    negatives = ir_negatives(whole, str, order)
    assert got.triplets == [(q, d, n) for (q, _, d, _), n in zip(read, negatives)]
    assert len(pulled) == len(rows) and len(got.queries) == 7


@pytest.mark.parametrize("n", [0, 1, 3])
def test_the_data_hash_of_streamed_examples_is_the_hash_of_their_whole_json_text(n):
    """`splits.data_hash` hashes the training examples one at a time (the whole JSON text of a 300,000-row
    pairs file was the peak of loading its task: 484 MiB of Python objects, now 382, tracemalloc, with the
    examples built once in `beir.beir_data`); the digest is the one-shot text's, so no task signature or
    cached score changes. Examples with hard negatives, keys out of order and non-ASCII text."""
    from encoderlab.eval.spec import IRSplit, TaskData
    from encoderlab.eval.tasks.splits import _hashed, data_hash

    train = [
        {"query": f"q{i} é", "document": f"d{i} “x”", "doc_id": f"D{i}", "negative": f"n{i}"}
        for i in range(n)
    ]
    split = IRSplit({"q": "x"}, {"d": "y"}, {"q": {"d": 1}})
    data = TaskData(train, split, {"test": split}, labels=("a", "b"))
    whole = hashlib.sha256()
    for part in (data.train, data.val, data.tests, data.labels):
        whole.update(json.dumps(part, sort_keys=True, default=_hashed).encode())
    assert data_hash(data) == whole.hexdigest()[:16]
