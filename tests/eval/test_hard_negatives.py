"""Hard negatives in IR training (`negative`, sentence-transformers' triplets): the loss, and a task file's
column read and trained on. Before, the column was not read: fine-tuning used in-batch negatives only.

The loss is sentence-transformers' MultipleNegativesRankingLoss on (anchor, positive, negative) triplets:
every query's candidates are the batch's positives, then the batch's negatives, its own positive the
label (huggingface/sentence-transformers, sentence_transformers/losses/MultipleNegativesRankingLoss.py,
`compute_loss_from_embeddings`: `docs_all = torch.cat(docs, dim=0)`, scores `similarity_fct(queries,
docs_all) * scale`, labels `arange`; UKPLab's older `forward`: `embeddings_b = torch.cat(reps[1:])`).

Columns an IR file holds beside its pairs that are not read (`negative_id`, a column of relevance judgments
such as `label`) are refused rather than dropped without a word (the last tests).
"""

from __future__ import annotations

import re
import warnings

import pytest
import torch
import torch.nn.functional as F
from tests.eval.fixtures import model_folder, run_cli, write_jsonl, write_task_file
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli
from tests.reliability.treestate import assert_unchanged, world_state

from encoderlab.errors import UserError
from encoderlab.eval.batching import model_inputs
from encoderlab.eval.families import Retrieval
from encoderlab.eval.finetune import prepare
from encoderlab.eval.heads import HardNegatives, info_nce
from encoderlab.eval.tasks import irpairs
from encoderlab.eval.tasks.custom import task_from_file
from encoderlab.eval.tasks.registry import load_task

IDS = ["a", "b", "c"]
"""The positives' input keys, their identity in the loss (`heads.input_key` in training)."""
NEGS = ["x", "y", "z"]
"""Negatives' keys that no positive has."""


def _embeddings(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(queries, positives, negatives), 3 each, L2-normalised as `BiEncoder` gives them."""
    torch.manual_seed(seed)
    q, d, n = (F.normalize(torch.randn(3, 4), dim=-1) for _ in range(3))
    return q, d, n


def direct(q, d, n, positives: list[str], negatives: list[str]) -> torch.Tensor:
    """The loss computed row by row: query i's candidates are its positive, every other positive whose text
    is not its positive's, then every negative whose text is not (cross entropy on cosine x 20)."""
    losses = []
    for i in range(len(q)):
        keep = [j for j in range(len(d)) if j == i or positives[j] != positives[i]]
        kept = [d[j] for j in keep] + [n[j] for j in range(len(n)) if negatives[j] != positives[i]]
        logits = 20 * torch.stack([q[i] @ c for c in kept])
        losses.append(-torch.log_softmax(logits, 0)[keep.index(i)])
    return torch.stack(losses).mean()


def test_hard_negatives_are_candidates_after_the_positives_in_one_cross_entropy():
    q, d, n = _embeddings()
    logits = 20 * q @ torch.cat([d, n]).T  # candidates: positives 0-2, then negatives 3-5
    manual = torch.stack([-torch.log_softmax(logits[i], 0)[i] for i in range(3)]).mean()
    got = info_nce(q, d, IDS, hard=HardNegatives(n, NEGS), keys=IDS)
    assert torch.allclose(got, manual)
    assert not torch.allclose(got, info_nce(q, d, IDS))  # the negatives count: not the pairs' loss


def test_a_hard_negative_that_is_a_querys_positive_is_masked_for_that_query_only():
    """Row 2's negative is the text of rows 0 and 2's positive (both 'a'): masked for queries 0 and 2, a
    negative for query 1; rows 0 and 2 share a positive: each other's is masked too, as without negatives."""
    q, d, n = _embeddings()
    logits = 20 * q @ torch.cat([d, n]).T
    keep = {0: [0, 1, 3, 4], 1: [0, 1, 2, 3, 4, 5], 2: [1, 2, 3, 4]}  # row: its unmasked candidates
    manual = torch.stack(
        [-torch.log_softmax(logits[i, keep[i]], 0)[keep[i].index(i)] for i in range(3)]
    ).mean()
    got = info_nce(q, d, ["a", "b", "a"], hard=HardNegatives(n, ["x", "y", "a"]), keys=["a", "b", "a"])
    assert torch.allclose(got, manual)
    assert torch.allclose(got, direct(q, d, n, ["a", "b", "a"], ["x", "y", "a"]))


@pytest.mark.parametrize(
    ("ids", "texts"), [(["a", "b", "c"], ["t", "u", "t"]), (["a", "b", "a"], ["t", "u", "v"])]
)
def test_a_copy_of_a_positive_is_the_same_text_or_the_same_id(ids, texts):
    """Rows 0 and 2 hold one text under two ids (the model cannot tell them apart), or one id over two texts
    (the retrieval evaluation takes them for one document, as a built-in task's id may say): either way each
    is masked for the other's query; row 1 keeps all its candidates."""
    q, d, _ = _embeddings()
    logits = 20 * q @ d.T
    keep = {0: [0, 1], 1: [0, 1, 2], 2: [1, 2]}
    manual = torch.stack(
        [-torch.log_softmax(logits[i, keep[i]], 0)[keep[i].index(i)] for i in range(3)]
    ).mean()
    assert torch.allclose(info_nce(q, d, ids, keys=texts), manual)
    assert not torch.allclose(info_nce(q, d, IDS, keys=IDS), manual)  # no copy: nothing masked


def test_the_loss_is_sentence_transformers_multiple_negatives_ranking_loss_on_triplets():
    pytest.importorskip("sentence_transformers")
    with warnings.catch_warnings():  # 6.x moved the losses; `sentence_transformers.losses` still reads them
        warnings.simplefilter("ignore")
        from sentence_transformers.losses import MultipleNegativesRankingLoss

    class Given(torch.nn.Module):
        """A 'model' returning the embeddings it is handed, so ST's loss scores ours."""

        def forward(self, features):
            return {"sentence_embedding": features["e"]}

    q, d, n = _embeddings()
    st = MultipleNegativesRankingLoss(Given())
    assert torch.allclose(
        st([{"e": q}, {"e": d}, {"e": n}], None), info_nce(q, d, IDS, hard=HardNegatives(n, NEGS), keys=IDS)
    )
    assert torch.allclose(st([{"e": q}, {"e": d}], None), info_nce(q, d, IDS))


# ----------------------------------------------------------------------------- task files


def spelled(i: int) -> str:
    """`i` with its digits as letters (0 -> a, 10 -> ba): the fixture tokenizer knows no digits, so
    "document about 1" and "document about 2" were one input ([UNK]), a copy of each other in the loss."""
    return "".join("abcdefghij"[int(c)] for c in str(i))


def _rows(n: int, negative: str | None = "hard") -> list[dict]:
    """`n` training rows; row 1's negative is row 0's document (a copy of a positive); `negative`: the
    column holding them (None: no column)."""
    rows = [{"query": f"query about {i}", "document": f"document about {spelled(i)}"} for i in range(n)]
    if negative:
        for i, r in enumerate(rows):
            r[negative] = rows[0]["document"] if i == 1 else f"unrelated passage {spelled(i)}"
    return rows


def _task_file(tmp_path, train: list[dict], name: str = "trip.yaml", **extra):
    write_jsonl(tmp_path / "train.jsonl", train)
    test = [{"query": f"test query {i}", "document": f"test document {i}"} for i in range(10)]
    for i, r in enumerate(test if extra.get("columns") else ()):  # a test file's negatives: not read
        r[extra["columns"]["negative"]] = f"test negative {i}"
    write_jsonl(tmp_path / "test.jsonl", test)
    spec = {"family": "ir", "data": {"train": "train.jsonl", "test": "test.jsonl"}, "max_length": 32, **extra}
    return write_task_file(tmp_path, name, name=name.removesuffix(".yaml"), **spec)


@pytest.mark.usefixtures("isolated_tasks")
def test_a_task_files_negative_column_is_trained_on_and_scoring_is_unchanged(tmp_path, model, tokenizer):
    """`columns: {negative: hard}` reads the triplets; the training loss adds the batch's negatives (row 1's,
    the text of row 0's positive, masked for query 0); validation and test are those of the same files
    without the column (the test file's negatives are not read)."""
    path = _task_file(tmp_path, _rows(30), columns={"negative": "hard"})
    task = task_from_file(path)
    data = task.loader()
    assert all(r["negative"] for r in data.train)
    (tmp_path / "plain").mkdir()
    without = task_from_file(_task_file(tmp_path / "plain", _rows(30, None), "plain.yaml")).loader()
    assert data.val == without.val and data.tests == without.tests
    assert [{k: r[k] for k in ("query", "document", "doc_id")} for r in data.train] == without.train

    prepared = prepare(task, tokenizer, data)
    module = Retrieval.build(task, model)
    rows_at = sorted(range(len(data.train)), key=lambda i: data.train[i]["document"])[:4]  # docs 0, 1, 10, 11
    micro = [prepared.train[i] for i in rows_at]
    with torch.no_grad():
        got = Retrieval.loss(module, micro)
        pairs_only = Retrieval.loss(
            module, [{k: f[k] for k in ("query", "doc", "doc_id", "doc_key")} for f in micro]
        )
        queries, docs, negatives = (
            module(*model_inputs(module, [f[k] for f in micro])) for k in ("query", "doc", "negative")
        )
    positives, hard = [f["doc_key"] for f in micro], [f["negative_key"] for f in micro]
    assert [(i, j) for i, p in enumerate(positives) for j, h in enumerate(hard) if p == h] == [(0, 1)]
    manual = direct(queries, docs, negatives, positives, hard)  # row 1's negative masked for query 0
    assert torch.allclose(got, manual) and not torch.allclose(got, pairs_only)


@pytest.mark.usefixtures("isolated_tasks")
def test_a_task_file_without_a_negative_column_keeps_its_training_rows(tmp_path):
    """No `negative` key where the file has no column: the data hash of such tasks (and their cached
    scores) stays."""
    data = task_from_file(_task_file(tmp_path, _rows(30, None))).loader()
    assert {tuple(sorted(r)) for r in data.train} == {("doc_id", "document", "query")}


def _refused_as_run_and_as_check(tmp_path, path, row: str, expected: str, capsys, monkeypatch) -> None:
    """`eval MODEL --task-file PATH --out e`, and with `--check`: each refused in the one line `expected`, as
    errors.md's `row` prints it, with nothing written (`treestate`: the test's folder, caches and the working
    folder)."""
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--out", tmp_path / "e"]
    monkeypatch.chdir(tmp_path)
    for check in ([], ["--check"]):
        before = world_state(tmp_path)
        code, err = cli([*argv, "--lrs", "1e-4", "--seeds", "0", *check], capsys)
        assert_one_line(code, err, "^encoderlab: error: " + re.escape(expected) + "$")
        assert_printed_as_documented(row, err, tmp_path)
        assert_unchanged(before)


@pytest.mark.usefixtures("isolated_tasks")
@pytest.mark.parametrize("empty", [None, "", "   "])
def test_an_empty_negative_is_refused_naming_the_first_such_row(tmp_path, capsys, empty, monkeypatch):
    """Every row needs one once the file has the column (sentence-transformers' triplets); a row without
    one trained on fewer candidates, unsaid. The first bad row in file order is named."""
    rows = _rows(30, "negative")
    rows[2]["negative"] = empty
    rows[5]["negative"] = None
    path = _task_file(tmp_path, rows, "task_negative_empty.yaml")
    _refused_as_run_and_as_check(
        tmp_path,
        path,
        "task-file-ir-negative-empty",
        (
            f"task file {path}: train split, line 3 of train.jsonl: a row has an empty negative (its hard "
            "negative; once the file has that column every row needs one, as sentence-transformers' triplets "
            "do); fill it in, remove the row, or drop the column to train on in-batch negatives only"
        ),
        capsys,
        monkeypatch,
    )


@pytest.mark.usefixtures("isolated_tasks")
def test_a_row_without_the_negative_key_beside_rows_with_it_is_refused(tmp_path):
    rows = _rows(30, "negative")
    del rows[3]["negative"]  # JSON lines: `datasets` fills the column with null
    path = _task_file(tmp_path, rows)
    with pytest.raises(UserError, match=r"line 4 of train.jsonl: a row has an empty negative"):
        task_from_file(path)


@pytest.mark.usefixtures("isolated_tasks")
def test_a_named_negative_column_only_the_test_split_has_is_refused(tmp_path, capsys, monkeypatch):
    """`columns: {negative: hard}` where only test holds `hard`: negatives are training-only, so it was
    dropped without a word (in-batch negatives only); `require_named_columns` refuses it only where no split
    has it."""
    path = _task_file(
        tmp_path, _rows(30, None), "task_negative_not_in_train.yaml", columns={"negative": "hard"}
    )
    _refused_as_run_and_as_check(
        tmp_path,
        path,
        "task-file-ir-negative-not-in-train",
        (
            f"task file {path}: columns.negative: the train split has no column 'hard' (train split, "
            "train.jsonl: columns query, document); hard negatives are read in training only: add the column "
            "to the train data, or leave negative out of `columns:`"
        ),
        capsys,
        monkeypatch,
    )


@pytest.mark.usefixtures("isolated_tasks")
def test_eval_check_says_the_training_rows_hold_hard_negatives(tmp_path, capsys):
    """`--check` says what training will use: the triplets' negatives (the pairs' count alone did not)."""
    for name, rows in (("trip.yaml", _rows(30, "negative")), ("pairs.yaml", _rows(30, None))):
        path = _task_file(tmp_path, rows, name)
        argv = [
            "eval",
            model_folder(tmp_path / "model"),
            "--task-file",
            path,
            "--out",
            tmp_path / "e",
            "--check",
        ]
        code, out, _ = run_cli([str(a) for a in argv] + ["--lrs", "1e-4", "--seeds", "0"], capsys)
        said = re.search(r"examples: train \d+ query-document pairs with hard negatives,", out)
        assert code == 0 and bool(said) == (name == "trip.yaml"), out


@pytest.mark.usefixtures("isolated_tasks")
@pytest.mark.parametrize("cut", ["validation_fraction", "test_fraction"])
def test_a_cut_from_triplets_keeps_each_querys_rows_on_one_side(tmp_path, cut):
    """Triplets repeat a query once per negative (sentence-transformers' hard-negative datasets do): a cut
    from train took rows, so a query's rows landed on both sides and the task was refused as overlap
    ("deduplicate the data"), which the data had no duplicate to fix. A query's rows now go where the cut
    put one of them: validation (or test) queries are not trained on, and judge all their documents."""
    rows = [
        {"query": f"query about {i}", "document": f"document about {i}", "negative": f"passage {i}.{j}"}
        for i in range(40)
        for j in range(3)
    ]
    write_jsonl(tmp_path / "train.jsonl", rows)
    data_spec = {"train": "train.jsonl", cut: 0.2}
    if cut == "validation_fraction":
        write_jsonl(tmp_path / "test.jsonl", [{"query": f"t {i}", "document": f"d {i}"} for i in range(5)])
        data_spec["test"] = "test.jsonl"
    path = write_task_file(tmp_path, "trip.yaml", name="trip", family="ir", data=data_spec)
    data = task_from_file(path).loader()
    trained = {r["query"] for r in data.train}
    cuts = [data.val] + ([data.tests["test"]] if cut == "test_fraction" else [])  # validation: from the rest
    sides = [trained, *(set(c.queries.values()) for c in cuts)]
    assert all(sides) and sum(map(len, sides)) == len(set().union(*sides)) == 40  # disjoint, every query
    assert len(data.train) == 3 * len(trained)
    assert all(len(docs) == 1 for c in cuts for docs in c.qrels.values())  # its 3 rows: one judgment


@pytest.mark.usefixtures("isolated_tasks")
def test_a_cut_that_draws_every_query_is_one_line_naming_the_queries(tmp_path, capsys):
    """One query of 20 triplets: the cut's one row takes the query, and its other rows follow it, so nothing
    is left to train on; the line says why (a query's rows stay together) and that more queries fix it, not
    only a lower fraction, which cannot. Before, it was refused as overlap ("deduplicate the data")."""
    rows = [
        {"query": "the one query", "document": "its document", "negative": f"passage {j}"} for j in range(20)
    ]
    path = _task_file(tmp_path, rows, "task_cut_takes_every_query.yaml")
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--out", tmp_path / "e"]
    code, err = cli([*argv, "--lrs", "1e-4", "--seeds", "0"], capsys)
    expected = (
        f"task file {path}: data.validation_fraction 0.05 of the 20 train examples leaves none to train on: "
        "the cut drew a row of their 1 query, whose rows stay on one side (a query is never both trained on "
        "and scored); add rows of other queries"
    )
    assert_one_line(code, err, "^encoderlab: error: " + re.escape(expected) + "$")
    assert_printed_as_documented("task-file-ir-cut-takes-every-query", err, tmp_path)
    assert not (tmp_path / "e").exists()


@pytest.mark.usefixtures("isolated_tasks")
def test_a_copy_of_a_positive_under_another_doc_id_is_masked_as_a_copy(tmp_path, model, tokenizer):
    """Rows 0 and 1 give one document text two `doc_id`s (a split refuses only one id for two texts): the
    model reads the same text, so each is masked for the other's query, as a hard negative of that text is.
    Before, in-batch copies were told by id and negatives by text, so this copy stayed a negative whose logit
    is the positive's, a term no training lowers."""
    rows = [
        {"query": f"query about {i}", "document": f"document about {spelled(i)}", "doc_id": f"D{i}"}
        for i in range(30)
    ]
    rows[1]["document"] = rows[0]["document"]
    task = task_from_file(_task_file(tmp_path, rows))
    data = task.loader()
    assert data.train[0]["doc_id"] != data.train[1]["doc_id"]
    prepared = prepare(task, tokenizer, data)
    module = Retrieval.build(task, model)
    rows_at = sorted(range(len(data.train)), key=lambda i: data.train[i]["document"])[:4]  # docs 0, 0, 10, 11
    micro = [prepared.train[i] for i in rows_at]
    with torch.no_grad():
        got = Retrieval.loss(module, micro)
        queries, docs = (module(*model_inputs(module, [f[k] for f in micro])) for k in ("query", "doc"))
    texts = [data.train[i]["document"] for i in rows_at]
    assert texts[0] == texts[1] and len(set(texts)) == 3
    assert torch.allclose(got, direct(queries, docs, docs[:0], texts, []))
    unmasked = torch.nn.functional.cross_entropy(20 * queries @ docs.T, torch.arange(4))  # ST's, no mask
    assert not torch.allclose(got, unmasked)


@pytest.mark.usefixtures("isolated_tasks")
def test_a_negative_id_column_is_refused_as_unread(tmp_path, capsys, monkeypatch):
    """A hard negative is told from a query's positive by its text (above), so a `negative_id` column, whose
    name says it is read as `doc_id` is, was dropped without a word; now one line, in a task file and in a
    pairs file beside data.beir alike."""
    rows = _rows(30, "negative")
    for i, r in enumerate(rows):
        r["doc_id"], r["negative_id"] = f"D{i}", "D0" if i == 1 else f"N{i}"
    path = _task_file(tmp_path, rows, "task_negative_id.yaml")
    _refused_as_run_and_as_check(
        tmp_path,
        path,
        "task-file-ir-negative-id",
        (
            f"task file {path}: train split, train.jsonl: column 'negative_id' is not read: a hard negative is "
            "masked for a query when its input (its text as truncated) is the query's positive's, as in-batch "
            "copies are (the model reads texts, not ids); drop or rename the column"
        ),
        capsys,
        monkeypatch,
    )
    with pytest.raises(UserError, match=r"^t: train split, train.jsonl: column 'negative_id' is not read"):
        irpairs.read_pairs("train.jsonl", {}, tmp_path, "t")


@pytest.mark.usefixtures("isolated_tasks")
def test_a_label_column_marking_a_row_not_relevant_is_refused(tmp_path, capsys, monkeypatch):
    """Every row of an IR file is a relevant pair of grade 1, so a `(query, document, label)` file's label-0 rows
    were trained on as positives and judged relevant, the column dropped without a word; now one line naming
    the first such row, in a task file and in a pairs file beside data.beir alike."""
    rows = _rows(30, None)
    for i, r in enumerate(rows):
        r["label"] = 0 if i in (4, 9) else 1
    path = _task_file(tmp_path, rows, "task_relevance.yaml")
    _refused_as_run_and_as_check(
        tmp_path,
        path,
        "task-file-ir-relevance-column",
        (
            f"task file {path}: train split, line 5 of train.jsonl: column 'label' holds 0, but it is not read: "
            "every row of an IR task file is read as a relevant (query, document) pair of grade 1; keep only the "
            "relevant rows and drop the column (a hub dataset: save its splits as .jsonl files first, with "
            "`datasets`' to_json; graded or non-relevant judgments: a BEIR folder's qrels, `data: {beir: FOLDER}`)"
        ),
        capsys,
        monkeypatch,
    )
    write_jsonl(tmp_path / "pairs.jsonl", rows)
    with pytest.raises(UserError, match=r"^t: train split, line 5 of pairs.jsonl: column 'label' holds 0"):
        irpairs.read_pairs("pairs.jsonl", {}, tmp_path, "t")


@pytest.mark.usefixtures("isolated_tasks")
def test_a_relevance_column_of_ones_or_one_columns_reads_is_accepted(tmp_path):
    """A column of 1s says what the rows are read as; a column `columns:` reads (here as `doc_id`) is data."""
    rows = _rows(30, None)
    for i, r in enumerate(rows):
        r["Score"], r["label"] = 1, f"D{i}"
    write_jsonl(tmp_path / "train.jsonl", rows)
    write_jsonl(
        tmp_path / "test.jsonl",
        [{"query": f"q {i}", "document": f"d {i}", "label": f"T{i}", "score": "1"} for i in range(9)],
    )
    data = {"train": "train.jsonl", "test": "test.jsonl"}
    path = write_task_file(
        tmp_path, "ones.yaml", name="ones", family="ir", data=data, columns={"doc_id": "label"}
    )
    task, data = load_task(task_from_file(path))
    assert len(data.train) > 0
