"""In-batch copies of a positive told by the model's input as truncated (`heads.input_key`, `heads.copy_mask`):
two documents that differ only past the task's `max_length` are one input to the model, so each is masked
for the other's query, as a hard negative of that input is. Before, a copy was the same `doc_id` or the same
text, so such a pair stayed a negative whose logit is the positive's: training pushed apart two identical
inputs, a term no training lowers.

The expected mask is computed here from the prepared token ids themselves (equal ids, or equal `doc_id`s),
not from the code under test, and the loss from it by hand (cosine x 20, masked, cross entropy).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from tests.eval.fixtures import write_jsonl, write_task_file

from encoderlab.eval.batching import model_inputs
from encoderlab.eval.families import Retrieval
from encoderlab.eval.finetune import prepare
from encoderlab.eval.heads import copy_mask, input_key
from encoderlab.eval.tasks.custom import task_from_file

MAX_LENGTH = 16
"""The task's `max_length`: the documents below share their first tokens well past it."""
SHARED = "document about 0 " + "and the " * MAX_LENGTH
"""A start longer than `MAX_LENGTH` tokens (each word at least one token)."""


def _task(tmp_path, negatives: bool):
    """A task file of 30 pairs (or triplets): rows 0 and 1's documents are `SHARED` then different endings,
    under two ids; with `negatives`, so are rows 0 and 1's negatives (other endings again)."""
    rows = [
        {"query": f"query about {i}", "document": f"document about {i}", "doc_id": f"D{i}"} for i in range(30)
    ]
    rows[0]["document"], rows[1]["document"] = SHARED + "alpha", SHARED + "omega"
    if negatives:
        for i, row in enumerate(rows):
            row["negative"] = f"unrelated passage {i}"
        rows[0]["negative"], rows[1]["negative"] = SHARED + "beta", SHARED + "kappa"
    write_jsonl(tmp_path / "train.jsonl", rows)
    write_jsonl(tmp_path / "test.jsonl", [{"query": f"t {i}", "document": f"d {i}"} for i in range(10)])
    data = {"train": "train.jsonl", "test": "test.jsonl"}
    return task_from_file(
        write_task_file(tmp_path, "cut.yaml", name="cut", family="ir", data=data, max_length=MAX_LENGTH)
    )


def expected_mask(docs: list[list[int]], doc_ids: list[str], negs: list[list[int]]) -> torch.Tensor:
    """Query i masks positive j != i of the same id or the same ids as fed, then negative j of the same ids."""
    rows = [
        [i != j and (doc_ids[i] == doc_ids[j] or docs[i] == docs[j]) for j in range(len(docs))]
        + [docs[i] == n for n in negs]
        for i in range(len(docs))
    ]
    return torch.tensor(rows, dtype=torch.bool)


def _losses(tmp_path, model, tokenizer, negatives: bool, rows: tuple[str, ...]):
    """(loss, expected loss, expected mask) of the micro-batch of the rows of `doc_id`s `rows`: the loss as
    training computes it, and by hand with `expected_mask`."""
    task = _task(tmp_path, negatives)
    data = task.loader()
    prepared = prepare(task, tokenizer, data)
    at = {r["doc_id"]: i for i, r in enumerate(data.train)}
    micro = [prepared.train[at[d]] for d in rows]
    texts = [data.train[at[d]]["document"] for d in ("D0", "D1")]
    full = tokenizer(texts)["input_ids"]
    assert texts[0] != texts[1] and full[0] != full[1]  # other texts, other ids untruncated
    assert prepared.train[at["D0"]]["doc"] == prepared.train[at["D1"]]["doc"]  # one input once truncated
    module = Retrieval.build(task, model)
    keys = ("query", "doc", "negative") if negatives else ("query", "doc")
    with torch.no_grad():
        got = Retrieval.loss(module, micro)
        embedded = [module(*model_inputs(module, [f[k] for f in micro])) for k in keys]
    negs = [f["negative"] for f in micro] if negatives else []
    mask = expected_mask([f["doc"] for f in micro], [f["doc_id"] for f in micro], negs)
    logits = 20 * embedded[0] @ torch.cat(embedded[1:]).T
    manual = F.cross_entropy(logits.masked_fill(mask, float("-inf")), torch.arange(len(micro)))
    return got, manual, mask


@pytest.mark.usefixtures("isolated_tasks")
@pytest.mark.parametrize("negatives", [False, True], ids=["pairs", "triplets"])
def test_inputs_equal_up_to_the_cut_are_all_masked_so_nothing_is_left_to_push_apart(
    tmp_path, model, tokenizer, negatives
):
    """Rows 0 and 1 alone: every candidate of each query but its own positive is the same input (the other
    row's positive; with triplets, both rows' negatives too), so all are masked and the loss is the
    positive's alone, 0. Unmasked, those candidates' logits equal the positive's, and the loss stayed at
    log(candidates), a term no training lowers."""
    got, manual, mask = _losses(tmp_path, model, tokenizer, negatives, ("D0", "D1"))
    assert mask.sum() == mask.numel() - 2  # all but each query's own positive
    assert torch.allclose(got, manual) and torch.allclose(manual, torch.zeros(()))


@pytest.mark.usefixtures("isolated_tasks")
@pytest.mark.parametrize("negatives", [False, True], ids=["pairs", "triplets"])
def test_other_inputs_in_the_batch_stay_negatives(tmp_path, model, tokenizer, negatives):
    """Rows 0, 1, 2 and 10: rows 0 and 1 (and their negatives) are masked for each other's query only; rows
    2 and 10, and every other negative, stay candidates of every query."""
    got, manual, mask = _losses(tmp_path, model, tokenizer, negatives, ("D0", "D1", "D2", "D10"))
    assert mask[:, :4].nonzero().tolist() == [[0, 1], [1, 0]]
    assert mask[:, 4:].nonzero().tolist() == ([[0, 0], [0, 1], [1, 0], [1, 1]] if negatives else [])
    assert torch.allclose(got, manual)


def test_the_mask_compares_inputs_by_key_and_ids_by_equality():
    """`copy_mask` over `input_key`s is the mask of the ids themselves (`expected_mask`), for positives
    that are one input under two ids, one id over two inputs, and a negative of a positive's input."""
    docs, ids, negs = [[5, 6, 7], [5, 6, 7], [5, 6, 8], [9]], ["a", "b", "c", "c"], [[1], [5, 6, 8], [9], [2]]
    got = copy_mask(ids, [input_key(d) for d in docs], [input_key(n) for n in negs])
    assert torch.equal(got, expected_mask(docs, ids, negs))
    assert got.sum() == 2 + 2 + 2  # rows 0-1 (one input), rows 2-3 (one id), negatives 1 and 2
