"""Paper 1's loaders on the simulated hub (`hub_fixtures`): the same `datasets.load_dataset` call
as a hub id, on files in the hub's layouts; EncodEval's splits, templates and judged-only corpora."""

from __future__ import annotations

import json
import random

import datasets
import pytest
from tests.eval import hub_fixtures as hub

from encoderlab.errors import UserError
from encoderlab.eval.families import input_text
from encoderlab.eval.tasks import TASKS, load_task


@pytest.fixture
def root(tmp_path, monkeypatch):
    """The simulated hub's root, with `datasets`' cache kept inside the test's folder."""
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    return tmp_path / "hub"


def _encodeval_split(root, config):
    """EncodEval's own calls on the same files: validation = 5% of train, seed 42."""
    ds = datasets.load_dataset(str(root / "nyu-mll/glue"), config)
    return ds["train"].train_test_split(train_size=0.95, seed=42)


def test_glue_sst2_splits_as_encodeval(root):
    hub.glue(root)
    task, data = load_task(TASKS["paper-sst2"])
    parts = _encodeval_split(root, "sst2")
    assert [e["text"] for e in data.train] == parts["train"]["sentence"]
    assert [e["text"] for e in data.val] == parts["test"]["sentence"] and len(data.val) == 3
    assert [e["label"] for e in data.val] == parts["test"]["label"]
    assert all(e["text"].startswith("validation") for e in data.tests["test"])  # GLUE validation = test
    assert task.labels == ("negative", "positive")


def test_mnli_tests_on_validation_matched(root):
    # The hub's mnli config has no `validation` split; reading one was the old loader's bug.
    hub.glue(root)
    task, data = load_task(TASKS["paper-mnli"])
    assert len(data.tests["test"]) == 8
    assert all(e["text"].startswith("validation_matched") for e in data.tests["test"])
    first = data.tests["test"][0]
    assert input_text(task, first) == f"Premise: {first['text']}\nHypothesis: {first['text_pair']}"
    _, qqp = load_task(TASKS["paper-qqp"])
    assert input_text(TASKS["paper-qqp"], qqp.train[0]).startswith("Question 1: train")


@pytest.mark.parametrize(
    ("name", "writer", "labels"),
    [
        ("paper-conll2003", hub.conll2003_en, hub.CONLL_NAMES),
        ("paper-uner", hub.uner_en, hub.UNER_NAMES),
        ("paper-ontonotes", hub.ontonotes5, hub.ONTONOTES_NAMES),
        ("paper-ontonotes", lambda r: hub.ontonotes5(r, layout="2023"), hub.ONTONOTES_NAMES),
        ("paper-ontonotes", lambda r: hub.ontonotes5(r, config="default"), hub.ONTONOTES_NAMES),
    ],
)
def test_ner_reads_tokens_tags_and_classlabel_names(root, name, writer, labels):
    writer(root)
    task, data = load_task(TASKS[name])
    assert task.labels == tuple(labels)
    assert (len(data.train), len(data.val), len(data.tests["test"])) == (20, 6, 6)
    example = data.train[0]
    assert len(example["tokens"]) == len(example["tags"]) == 6
    assert {task.labels[t] for e in data.train for t in e["tags"]} == {
        "O",
        labels[4 if "onto" in name else 1],
    }


def test_ontonotes_with_bare_tag_ids_reads_tners_37_labels(root):
    # tner/ontonotes5 stores tags as int32 ids without names; a mirror of it was refused before
    # ("stores tags as integers without label names"), though EncodEval trains it with 37 labels.
    # The card's one row is the only place where tner's ids meet words: 'Phil Rosen' must read as a
    # person, 'Fleet & Leasing Management Inc.' as an organisation and 'Boston' as a place (a GPE).
    hub.ontonotes5(root, tag_kind="int32")
    task, data = load_task(TASKS["paper-ontonotes"])
    assert len(task.labels) == 37 and len(data.train) == 21  # 20 rows and the card's
    card, *others = data.train
    assert card["tokens"] == list(hub.TNER_CARD_ROW[0])
    assert {w: task.labels[t] for w, t in zip(card["tokens"], card["tags"]) if t} == {
        "Phil": "B-PERSON",
        "Rosen": "I-PERSON",
        "Fleet": "B-ORG",
        "&": "I-ORG",
        "Leasing": "I-ORG",
        "Management": "I-ORG",
        "Inc.": "I-ORG",
        "Boston": "B-GPE",
    }
    assert {task.labels[t] for e in others for t in e["tags"]} == {"O", "B-PERSON"}  # id 4 in tner's order


def test_squad_and_record_keep_answers_and_unanswerable_questions(root):
    hub.squad(root)
    hub.squad(root, v2=True)
    hub.record(root)
    _, v1 = load_task(TASKS["paper-squad"])
    assert (len(v1.train), len(v1.val), len(v1.tests["test"])) == (38, 2, 8)
    ex = v1.tests["test"][0]
    ans = ex["answers"][0]
    assert ex["context"][ans["answer_start"] :].startswith(ans["text"]) and isinstance(
        ans["answer_start"], int
    )
    task, v2 = load_task(TASKS["paper-squad-v2"])
    assert task.options.v2 and any(e["answers"] == [] for e in v2.train)
    test_read = {"test_from_validation": len(v2.tests["test"])}  # its test is the validation split
    assert v2.counts == {"skipped_answers": 0, "mismatched_scored_answers": 0, **test_read}
    _, rec = load_task(TASKS["paper-record"])  # answer_start stored as int64
    assert len(rec.tests["test"]) == 8 and rec.tests["test"][0]["answers"]


def test_record_without_id_and_title_columns_loads_with_its_own_ids(root):
    # EncodEval drops `id` and `title` from SQuAD but not from hgissbkh/record, which may have neither
    # (hub_fixtures.record): the loader needs only context, question and answers, and numbers the rest.
    hub.record(root, ids=False)
    _, rec = load_task(TASKS["paper-record"])
    assert (len(rec.train), len(rec.val), len(rec.tests["test"])) == (38, 2, 8)
    assert [e["id"] for e in rec.tests["test"][:2]] == ["test-0", "test-1"]
    ex = rec.tests["test"][0]
    ans = ex["answers"][0]
    assert ex["context"][ans["answer_start"] :].startswith(ans["text"])


def test_msmarco_evaluates_on_the_judged_corpus_of_both_splits(root):
    hub.msmarco_pairs(root)
    qrels = hub.msmarco(root)
    task, data = load_task(TASKS["paper-msmarco"])
    assert len(data.train) == 64 and task.options.query_prefix == "Query: "
    val, test = data.val, data.tests["test"]
    judged = {d for q, d, s in qrels["dev"] + qrels["test"]}
    # Grade-0 documents stay in the corpus (as EncodEval); a train-only document does not.
    assert set(val.corpus) == set(test.corpus) == judged and "1011" not in val.corpus
    assert set(val.qrels) == {q for q, _, _ in qrels["dev"]}
    # Query 10 has only a grade-0 document: not evaluated. Grade 3 counts as relevant (1).
    assert set(test.qrels) == {"6", "7", "8", "9"} and test.qrels["6"] == {"1006": 1}


def test_nq_halves_are_seeded_and_disjoint(root):
    hub.msmarco_pairs(root)
    hub.nq(root)
    _, data = load_task(TASKS["paper-nq"])
    ids = sorted(f"test{i}" for i in range(10))
    expected_val = set(random.Random(42).sample(ids, 5))
    assert (
        set(data.val.queries) == expected_val and set(data.tests["test"].queries) == set(ids) - expected_val
    )
    half = data.val if "test0" in expected_val else data.tests["test"]
    # doc0 is in the first of the corpus's three export files, doc20 in the last: all are read.
    assert half.qrels["test0"] == {"doc0": 1, "doc20": 1}  # both of its judged documents
    assert data.val.corpus["doc3"].startswith("Title 3. ") and len(data.val.corpus) == 11


def test_mldr_corpus_is_the_positive_passages(root):
    hub.msmarco_pairs(root)
    qrels = hub.mldr_en(root)
    _, data = load_task(TASKS["paper-mldr"])
    assert set(data.val.corpus) == {f"d{i}" for i in range(8)}  # d8-d11 are never judged
    assert data.tests["test"].qrels == {q: {d: 1} for q, d in qrels["test"]}


def test_missing_mirror_and_changed_layout_are_one_line_errors(root, tmp_path):
    with pytest.raises(
        UserError,
        match=r"has no mirror of nyu-mll/glue; download it with: hf download --repo-type dataset nyu-mll/glue --local-dir",
    ):
        load_task(TASKS["paper-sst2"])
    hub.squad(root)
    (root / "rajpurkar/squad/plain_text/train-00000-of-00001.parquet").unlink()
    with pytest.raises(UserError, match=r"rajpurkar/squad \(config plain_text\)"):
        load_task(TASKS["paper-squad"])
    hub.msmarco_pairs(root)
    ds = datasets.Dataset.from_dict({"question": ["q"], "positive": ["d"]})
    ds.to_parquet(root / "hgissbkh/msmarco-pairs/data/train-00000-of-00001.parquet")
    hub.mldr_en(root)
    with pytest.raises(UserError, match=r"has no column query \(it has question, positive\)"):
        load_task(TASKS["paper-mldr"])


ENCODEVAL_MAX_STEPS = {
    # `max_steps` of hgissbkh/EncodEval@7e03774 configs/{SC,TC,QA,IR}/<dataset>_lr*_sd*.yaml (-1: one
    # epoch); NQ and MLDR reload the msmarco_pairs run. OntoNotes is the TC dataset with 1000 steps.
    "paper-sst2": 1000,
    "paper-mnli": 1000,
    "paper-qqp": 1000,
    "paper-conll2003": -1,
    "paper-ontonotes": 1000,
    "paper-uner": -1,
    "paper-squad": 1000,
    "paper-squad-v2": 1000,
    "paper-record": 1000,
    "paper-msmarco": 1000,
    "paper-nq": 1000,
    "paper-mldr": 1000,
}


@pytest.mark.parametrize(("name", "max_steps"), ENCODEVAL_MAX_STEPS.items())
def test_paper_schedules_are_encodevals_configs(name, max_steps):
    # OntoNotes trained one epoch (its TC siblings' schedule), about twice EncodEval's 1000 steps.
    ft = TASKS[name].finetune
    n_train = 59_924  # more examples than 1000 batches of 32 hold
    expected = -(-n_train // 32) if max_steps == -1 else max_steps
    assert ft.total_steps(n_train) == expected
    assert (ft.batch_size, ft.warmup_ratio, ft.weight_decay, ft.betas, ft.eps) == (
        32,
        0.1,
        0.1,
        (0.9, 0.95),
        1e-5,
    )
    assert ft.select == "last"  # save_strategy "no": the last model is scored
    assert ft.weights == "bf16"  # `dtype: !ext torch.bfloat16`, applied by `model.to(dtype)` before training


def test_a_paper_task_runs_end_to_end_at_the_model_length(root, tmp_path, monkeypatch):
    from dataclasses import replace

    from tests.eval.fixtures import model_folder

    from encoderlab.eval import evaluate
    from encoderlab.eval.spec import FinetuneConfig

    hub.glue(root, n_train=120)
    quick = FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=30)
    monkeypatch.setitem(TASKS, "paper-sst2", replace(TASKS["paper-sst2"], finetune=quick))
    summary = evaluate(
        str(model_folder(tmp_path / "m")),
        suite="paper",
        tasks=["paper-sst2"],
        lrs=[2e-3],
        seeds=[0],
        out=tmp_path / "o",
        progress=False,
    )
    record = json.loads((tmp_path / "o" / "results.jsonl").read_text())
    assert record["test"]["test"]["n"] == 8 and summary.tasks["paper-sst2"].test.n == 1
    assert TASKS["paper-sst2"].max_length is None
    assert TASKS["paper-sst2"].for_model(256).max_length == 253  # round(0.99 * 256)


@pytest.mark.parametrize(
    ("name", "writers", "metric"),
    [
        ("paper-conll2003", (hub.conll2003_en,), "sentence_macro_f1"),
        ("paper-squad-v2", (lambda r: hub.squad(r, v2=True),), "position_f1"),
        ("paper-msmarco", (hub.msmarco_pairs, hub.msmarco), "ndcg@10_retrieved"),
    ],
)
def test_tc_qa_and_ir_run_end_to_end_with_encodevals_scores(
    root, tmp_path, monkeypatch, name, writers, metric
):
    from dataclasses import replace

    from tests.eval.fixtures import model_folder

    from encoderlab.eval import evaluate
    from encoderlab.eval.spec import FinetuneConfig

    for write in writers:
        write(root)
    quick = FinetuneConfig(batch_size=8, micro_batch_size=8, max_steps=4, epochs=1.0)
    monkeypatch.setitem(TASKS, name, replace(TASKS[name], finetune=quick))
    assert TASKS[name].metric == metric and TASKS[name].inputs == "eos"
    evaluate(
        str(model_folder(tmp_path / "m")),
        suite="paper",
        tasks=[name],
        lrs=[1e-3],
        seeds=[0],
        out=tmp_path / "o",
        progress=False,
    )
    record = json.loads((tmp_path / "o" / "results.jsonl").read_text())
    assert 0 <= record["test"]["test"][metric] <= 100


def test_no_hub_and_no_mirror_is_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("ENCODERLAB_HUB_DATA", raising=False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    with pytest.raises(
        UserError, match=r"cannot load nyu-mll/glue \(config sst2\).*set ENCODERLAB_HUB_DATA=DIR"
    ) as exc:
        load_task(TASKS["paper-sst2"])
    assert "\n" not in str(exc.value)
