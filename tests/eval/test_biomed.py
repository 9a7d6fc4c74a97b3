"""Paper 2's protocol and its English tasks: best-epoch selection, multi-label classification, and
the BigBio loaders on the simulated hub's parquet exports."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import datasets
import pytest
import torch
from tests.eval import bigbio_fixtures as hub
from tests.eval.conftest import TOPICS, filler, flipped_validation

from encoderlab.errors import UserError
from encoderlab.eval.families import MultiLabelClassification, family_ops
from encoderlab.eval.finetune import prepare, run_one
from encoderlab.eval.metrics import multilabel_f1
from encoderlab.eval.spec import FinetuneConfig, SCOptions, Task, TaskData, TCOptions
from encoderlab.eval.suites import SUITES
from encoderlab.eval.tasks import TASKS, load_task

EPOCHS = FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=None, epochs=4.0, select="best_epoch")


def _sc_task(**kw) -> Task:
    base = {"name": "t", "description": "", "options": SCOptions(labels=("neg", "pos")), "metric": "accuracy"}
    return Task(**{**base, "loader": lambda: None, "finetune": EPOCHS, "max_length": 64, **kw})


def test_best_epoch_weights_are_the_ones_tested(model, tokenizer):
    # the best epoch is the first while the test keeps improving
    task = _sc_task()
    prepared, by_epoch = flipped_validation(task, model, tokenizer, EPOCHS)  # the same run by hand

    result = run_one(task, model, tokenizer, prepared, lr=2e-3, seed=0)
    vals = [v for v, _ in by_epoch]
    assert result["val_by_epoch"] == pytest.approx(vals) and len(vals) == 4
    assert result["best_epoch"] == vals.index(max(vals)) + 1 == 1
    assert result["val"]["accuracy"] == pytest.approx(max(vals))
    assert result["test"]["test"]["accuracy"] == pytest.approx(by_epoch[0][1])
    assert by_epoch[-1][1] > by_epoch[0][1]  # the last model tests better: selection is not the last one


def test_multilabel_f1_matches_scikit_learn():
    from sklearn.metrics import f1_score
    from sklearn.preprocessing import MultiLabelBinarizer

    rng = random.Random(0)
    for _ in range(50):
        gold = [set(rng.sample(range(5), rng.randrange(0, 3))) for _ in range(12)]
        pred = [set(rng.sample(range(5), rng.randrange(0, 3))) for _ in range(12)]
        # one column per label of the task, as BCM's (logits > 0) matrix has: a label absent counts
        binarize = MultiLabelBinarizer(classes=range(5)).fit([range(5)])
        g, p = binarize.transform(gold), binarize.transform(pred)
        ours = multilabel_f1(gold, pred, range(5))
        assert ours["macro_f1"] == pytest.approx(100 * f1_score(g, p, average="macro", zero_division=0))
        assert ours["micro_f1"] == pytest.approx(100 * f1_score(g, p, average="micro", zero_division=0))
        assert ours["weighted_f1"] == pytest.approx(100 * f1_score(g, p, average="weighted", zero_division=0))


def test_weighted_f1_matches_scikit_learn():
    from sklearn.metrics import f1_score

    from encoderlab.eval.metrics import weighted_f1

    rng = random.Random(1)
    for _ in range(50):
        gold = [rng.randrange(4) for _ in range(30)]
        pred = [g if rng.random() < 0.5 else rng.randrange(5) for g in gold]
        assert weighted_f1(gold, pred) == pytest.approx(
            100 * f1_score(gold, pred, average="weighted", zero_division=0)
        )


def test_the_best_epoch_is_picked_by_select_metric_when_one_is_set(monkeypatch):
    from encoderlab.eval import finetune

    # epoch 1 is best on macro-F1, epoch 0 on weighted F1
    module = torch.nn.Linear(2, 2)
    picked = {}
    for select_metric in ("weighted_f1", None):
        epochs = iter([{"macro_f1": 50.0, "weighted_f1": 70.0}, {"macro_f1": 60.0, "weighted_f1": 65.0}])
        monkeypatch.setattr(finetune, "score", lambda task, module, split, it=epochs: (next(it), []))
        cfg = replace(EPOCHS, select_metric=select_metric)
        best = finetune.BestEpoch(_sc_task(metric="macro_f1", finetune=cfg), None)
        best(module, 0), best(module, 1)
        picked[select_metric] = (best.best[0], best.scores)
    assert picked == {"weighted_f1": (0, [70.0, 65.0]), None: (1, [50.0, 60.0])}
    # a family reports the score that picks the epoch even when it is not the task's metric
    tc = Task(
        name="tc", description="", options=TCOptions(labels=("O", "B-X")), metric="entity_f1",
        loader=lambda: None, finetune=replace(EPOCHS, select_metric="sentence_macro_f1"),
    )  # fmt: skip
    scores = family_ops(tc).metrics(tc, [{"i": 0, "gold": ["O", "B-X"], "pred": ["O", "O"]}])
    assert scores["sentence_macro_f1"] == pytest.approx(100 / 3) and scores["entity_f1"] == 0.0
    with pytest.raises(UserError, match="select_metric is read only with select: best_epoch"):
        FinetuneConfig(select_metric="weighted_f1").check("here")


def _topics(n: int, seed: int) -> list[dict]:
    """Multi-label: the labels are the (0-2) colour words in the text."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        labels = sorted(rng.sample(range(4), rng.randrange(0, 3)))
        words = filler(rng, 5) + [TOPICS[x] for x in labels]
        rng.shuffle(words)
        out.append({"text": " ".join(words), "labels": labels})
    return out


def test_multilabel_classification_learns_label_sets(model, tokenizer):
    task = _sc_task(options=SCOptions(labels=tuple(TOPICS[:4]), multilabel=True), metric="macro_f1",
                    finetune=FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=60))  # fmt: skip
    assert family_ops(task) is MultiLabelClassification
    data = TaskData(train=_topics(256, 0), val=_topics(32, 1), tests={"test": _topics(64, 2)})
    result = run_one(task, model, tokenizer, prepare(task, tokenizer, data), lr=2e-3, seed=0)
    test = result["test"]["test"]
    assert test["macro_f1"] > 85 and test["accuracy"] > 60  # exact set match; chance is far below
    row = result["predictions"]["test"][0]
    assert isinstance(row["gold"], list) and isinstance(row["pred"], list)


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    return tmp_path / "hub"


@pytest.mark.parametrize("config", ["jnlpba", "ncbi_disease"])
def test_blurb_ner_configs(root, config):
    hub.blurb(root, config)
    task, data = load_task(TASKS[f"biomed-{config.replace('_', '-')}"])
    assert (
        task.labels == ("O", "B", "I") and task.finetune.epochs == 20 and task.finetune.select == "best_epoch"
    )
    assert (len(data.train), len(data.val), len(data.tests["test"])) == (30, 8, 8)
    # BLURB's -DOCSTART- lines (one per abstract in JNLPBA's files) are document markers, not sentences
    for split, examples in (("train", data.train), ("validation", data.val), ("test", data.tests["test"])):
        tokens, tags = hub.blurb_sentences(split)
        assert [e["tokens"] for e in examples] == tokens and [e["tags"] for e in examples] == tags


def test_gad_and_hoc(root):
    hub.gad(root)
    hub.hoc(root)
    task, gad = load_task(TASKS["biomed-gad"])
    assert {e["label"] for e in gad.train} == {0, 1}
    assert gad.train[0]["text"].startswith("@GENE$")
    task, hoc = load_task(TASKS["biomed-hoc"])
    assert task.options.multilabel and len(task.labels) == 10 and "none" not in task.labels
    none = [e for e in hoc.train if e["text"].split()[2:] == ["none"]]
    assert none and all(e["labels"] == [] for e in none)  # "none" is the empty set
    labelled = next(e for e in hoc.train if e["labels"])
    words = labelled["text"].split()[2:]
    assert [task.labels[x].split()[0] for x in labelled["labels"]] == sorted(
        words, key=lambda w: [h.split()[0] for h in task.labels].index(w)
    )


@pytest.mark.parametrize("name", ["biomed-chemprot", "biomed-gad", "biomed-hoc"])
def test_classification_reports_bcms_weighted_f1(name):
    """BCM's code (lindvalllab/BioClinical-ModernBERT@fb40fb6 src/metrics/metrics.py) computes weighted
    and micro F1, never macro, and picks and reports by weighted F1; the suite reported macro-F1."""
    task = TASKS[name]
    assert task.metric == "weighted_f1" == task.finetune.select_metric


def test_biomed_suite_runs_paper2_protocol_end_to_end(root, tmp_path, monkeypatch):
    from tests.eval.fixtures import model_folder

    from encoderlab.eval import evaluate

    hub.gad(root)
    monkeypatch.setitem(
        TASKS,
        "biomed-gad",
        replace(TASKS["biomed-gad"], finetune=replace(TASKS["biomed-gad"].finetune, epochs=3.0)),
    )
    summary = evaluate(
        str(model_folder(tmp_path / "m")),
        suite="biomed",
        tasks=["biomed-gad"],
        out=tmp_path / "o",
        progress=False,
    )
    records = [json.loads(x) for x in (tmp_path / "o" / "results.jsonl").read_text().splitlines()]
    assert [(r["lr"], r["seed"]) for r in records] == [
        (5e-5, s) for s in (42, 43, 44, 45, 46)
    ]  # paper 2's grid
    assert all(len(r["val_by_epoch"]) == 3 and 1 <= r["best_epoch"] <= 3 for r in records)
    # the epoch is picked on weighted F1 (BCM's), the score reported is weighted F1 at that epoch
    assert TASKS["biomed-gad"].finetune.select_metric == "weighted_f1"
    assert all(r["val_by_epoch"][r["best_epoch"] - 1] == max(r["val_by_epoch"]) for r in records)
    assert all(r["val"]["weighted_f1"] == max(r["val_by_epoch"]) for r in records)
    assert all(r["val_score"] == r["val"]["weighted_f1"] for r in records)
    assert summary.tasks["biomed-gad"].metric == "weighted_f1" and summary.tasks["biomed-gad"].test.n == 5


def test_bio_sentences_tag_words_from_character_offsets():
    from encoderlab.eval.tasks.biomed import bio_sentences

    text = "Cells of the left ventricle (LV) died. The Golgi-apparatus grew. Then e.g. one showed it."
    spans = [
        (text.index("left ventricle"), text.index(" (LV)")),
        (text.index("ventricle"), text.index(" (LV)")),
    ]
    spans += [(text.index("LV"), text.index("LV") + 2), (text.index("Golgi"), text.index(" grew"))]
    spans += [(text.index("Cel"), text.index("Cel") + 3)]  # a mention inside a word tags the word
    got = [list(zip(s["tokens"], s["tags"])) for s in bio_sentences(text, spans)]
    assert got == [
        [("Cells", 1), ("of", 0), ("the", 0), ("left", 1), ("ventricle", 2), ("(", 0), ("LV", 1), (")", 0)]
        + [("died", 0), (".", 0)],  # the nested "ventricle" is dropped: the outer mention is kept
        [("The", 0), ("Golgi", 1), ("-", 2), ("apparatus", 2), ("grew", 0), (".", 0)],
        [("Then", 0), ("e", 0), (".", 0), ("g", 0), (".", 0), ("one", 0), ("showed", 0), ("it", 0), (".", 0)],
        # a capital after a full stop ends a sentence, a lower-case word does not
    ]


def test_anatem_reads_brat_offsets_as_sentence_tags(root):
    hub.anatem(root)
    task, data = load_task(TASKS["biomed-anatem"])
    assert task.labels == ("O", "B", "I") and task.metric == "conlleval_f1" and task.finetune.epochs == 20
    assert (len(data.train), len(data.val), len(data.tests["test"])) == (48, 12, 12)  # two sentences each
    first = data.train[0]
    organ = [w for w, t in zip(first["tokens"], first["tags"]) if t]
    assert first["tokens"][-1] == "." and organ in (["left", "ventricle"], ["liver"], ["renal", "cortex"])
    assert [t for t in first["tags"] if t] == [1, 2][: len(organ)]
    second = data.train[1]
    assert second["tokens"][0] == "Many" and second["tags"][:2] == [0, 1]
    assert "biomed-anatem" in SUITES["biomed"]


def test_anatem_offsets_that_miss_their_text_are_one_line(root):
    from encoderlab.errors import UserError

    hub.anatem(root, offsets_shift=1)
    with pytest.raises(
        UserError, match=r"^task biomed-anatem: an entity of bigbio/anat_em .* reads '.*' but"
    ):
        load_task(TASKS["biomed-anatem"])


def test_bc5cdr_is_one_task_with_chemical_and_disease_tags(root):
    """Paper 2 scores BC5CDR once (one column of its English table, `bigbio/bc5cdr` in its model card);
    the suite had BLURB's two halves, biomed-bc5chem and biomed-bc5disease."""
    hub.bc5cdr(root)
    assert [n for n in SUITES["biomed"] if "bc5" in n] == ["biomed-bc5cdr"]
    task, data = load_task(TASKS["biomed-bc5cdr"])
    assert task.labels == ("O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease")
    assert (
        task.metric == "conlleval_f1"
        and task.finetune.epochs == 20
        and task.hub_repos[0].repo == "bigbio/bc5cdr"
    )
    assert (len(data.train), len(data.val), len(data.tests["test"])) == (72, 18, 18)  # title + 2 sentences
    title, body = data.train[0], data.train[1]
    assert title["tokens"][:2] == ["Study", "train"] and title["tags"][-2:] == [1, 0]  # "<chem> ."
    tagged = [(w, task.labels[t]) for w, t in zip(body["tokens"], body["tags"]) if t]
    assert tagged[0][1] == "B-Chemical" and tagged[1][1] == "B-Disease"
    assert [t for _, t in tagged[1:]] in (["B-Disease", "I-Disease"], ["B-Disease"])


def test_bc5cdr_offsets_that_miss_their_text_are_one_line(root):
    hub.bc5cdr(root, offsets_shift=1)
    with pytest.raises(UserError, match=r"^task biomed-bc5cdr: a mention of bigbio/bc5cdr .* reads '.*' but"):
        load_task(TASKS["biomed-bc5cdr"])


def test_chemprot_pairs_follow_blues_converter():
    """BLUE's create_chemprot_bert.py, restated on one abstract: pairs within a sentence only, one row
    per gold label, "false" without one, overlapping mentions as @CHEM-GENE$, "i.v." ends no sentence."""
    from encoderlab.eval.tasks.biomed import chemprot_pairs

    text = "Title of it\nDrugA blocks GENEB and DrugC. DrugA-GENEB i.v. Dosed it. GENEB rose."

    def at(mention: str, nth: int) -> list[int]:  # the nth occurrence's [start, end]
        starts = [i for i in range(len(text)) if text.startswith(mention, i)]
        return [starts[nth], starts[nth] + len(mention)]

    mentions = [
        {"id": i, "type": t, "offsets": at(m, n)}
        for i, t, m, n in [
            ("T1", "CHEMICAL", "DrugA", 0),
            ("T2", "GENE-Y", "GENEB", 0),
            ("T3", "CHEMICAL", "DrugC", 0),
            ("T4", "CHEMICAL", "DrugA-GENEB", 0),
            ("T5", "GENE-N", "GENEB", 1),
            ("T6", "GENE-N", "GENEB", 2),
        ]
    ]
    relations = [{"type": "CPR:4", "arg1": "T1", "arg2": "T2"}, {"type": "CPR:9", "arg1": "T1", "arg2": "T2"}]
    assert chemprot_pairs(text, mentions, relations) == [
        ("Title of it @CHEMICAL$ blocks @GENE$ and DrugC.", "CPR:4"),
        ("Title of it @CHEMICAL$ blocks @GENE$ and DrugC.", "CPR:9"),
        ("Title of it DrugA blocks @GENE$ and @CHEMICAL$.", "false"),
        ("@CHEM-GENE$ i.v. Dosed it.", "false"),  # T4 contains T5
    ]  # T6 is alone in its sentence: no pair


def test_chemprot_reads_bigbios_abstracts(root):
    hub.chemprot(root)
    task, data = load_task(TASKS["biomed-chemprot"])
    assert task.labels[-1] == "false" and task.max_length == 512 and task.metric == "weighted_f1"
    assert (len(data.train), len(data.val), len(data.tests["test"])) == (32, 8, 8)  # one pair per abstract
    for e in data.train:
        assert e["text"].startswith("Study train ") and "@CHEMICAL$" in e["text"] and "@GENE$" in e["text"]
        assert task.labels[e["label"]] == ("CPR:4" if " inhibits " in e["text"] else "false")
    assert "caffeine" not in data.train[0]["text"] and {"biomed-chemprot", "biomed-anatem"} <= set(
        SUITES["biomed"]
    )


def test_chemprot_offsets_that_miss_their_mention_are_one_line(root):
    from encoderlab.errors import UserError

    hub.chemprot(root, offsets_shift=2)
    with pytest.raises(UserError, match=r"^task biomed-chemprot: a mention of bigbio/chemprot .* but its"):
        load_task(TASKS["biomed-chemprot"])
