"""A task file's label column as the user has it: one label per row, a list of labels (multi-label),
a number (regression), or a cell that fits none of these; each documented kind trains, each misfit is
one documented line."""

from __future__ import annotations

import csv
import json
import math
import random
import re
from pathlib import Path

import pytest
from scipy import stats
from tests.eval.conftest import POSITIVE, TOPICS, filler, sc_examples, tc_examples
from tests.eval.fixtures import write_jsonl as _jsonl
from tests.eval.fixtures import write_task_file as _spec
from tests.reliability.errors_doc import assert_printed_as_documented
from tests.reliability.test_hostile_inputs import assert_one_line, cli

from encoderlab.errors import UserError
from encoderlab.eval.families import MultiLabelClassification, Regression, family_ops
from encoderlab.eval.finetune import prepare, run_one
from encoderlab.eval.metrics import correlations
from encoderlab.eval.tasks import load_task
from encoderlab.eval.tasks.custom import task_from_file

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def _eval_task_file(tmp_path: Path, file: str, capsys) -> tuple[int, str]:
    """`encoderlab eval` of a task file on a tiny model (one LR, one seed, out `e`): exit code, stderr."""
    from tests.eval.fixtures import model_folder

    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", tmp_path / file, "--lrs", "1e-4"]
    return cli([*argv, "--seeds", "0", "--out", tmp_path / "e"], capsys)


def _topics(n: int, seed: int) -> list[dict]:
    """Multi-label rows as a user writes them: the (0-2) colour words of the text, by name."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        names = sorted(rng.sample(TOPICS[:4], rng.randrange(0, 3)))
        words = [*filler(rng, 5), *names, f"n{seed}-{i}"]
        rng.shuffle(words)
        out.append({"body": " ".join(words), "colours": names})
    return out


def _topic_files(tmp_path: Path, **change) -> Path:
    data = {s: _jsonl(tmp_path / f"{s}.jsonl", _topics(n, k)) for k, (s, n) in enumerate(
        (("train", 256), ("validation", 32), ("test", 64)))}  # fmt: skip
    spec = {
        "name": "colours",
        "family": "sc",
        "data": data,
        "columns": {"text": "body", "label": "colours"},
        "options": {"multilabel": True},
        "metric": "macro_f1",
        "max_length": 64,
        "finetune": {"batch_size": 16, "micro_batch_size": 16, "max_steps": 60},
        **change,
    }
    return _spec(tmp_path, **spec)


def test_a_multilabel_task_file_trains_on_label_sets(tmp_path, model, tokenizer):
    # was: the label lists were read as classes named "['blue', 'red']", then a KeyError 'labels'
    # traceback once fine-tuning prepared the examples
    task, data = load_task(task_from_file(_topic_files(tmp_path)))
    assert family_ops(task) is MultiLabelClassification and task.metric == "macro_f1"
    assert task.labels == tuple(sorted(TOPICS[:4]))  # the names seen in train, not their lists
    first = _topics(256, 0)[0]
    assert [task.labels[x] for x in data.train[0]["labels"]] == first["colours"]
    result = run_one(task, model, tokenizer, prepare(task, tokenizer, data), lr=2e-3, seed=0)
    scores = result["test"]["test"]
    assert scores["macro_f1"] > 85 and scores["micro_f1"] > 85  # the colour words are the labels
    row = result["predictions"]["test"][0]
    assert set(row["gold"]) <= set(task.labels) and isinstance(row["pred"], list)


def test_micro_f1_is_only_for_multilabel_tasks(tmp_path):
    assert task_from_file(_topic_files(tmp_path, metric="micro_f1")).metric == "micro_f1"
    with pytest.raises(
        UserError,
        match=r"metric 'micro_f1' is not one of sc's: accuracy, macro_f1, weighted_f1, f1 \(micro_f1 scores a multi-label",
    ):
        task_from_file(_topic_files(tmp_path, options={}, metric="micro_f1"))


@pytest.mark.parametrize(
    ("case", "file", "change", "pattern"),
    [
        (
            "task-file-label-list-not-multilabel",
            "task_label_lists.yaml",
            {"options": {}},
            r"a row's label is a list \(\[.*\]\); for several labels per example set `options: "
            r"\{multilabel: true\}`, else give one label per row",
        ),
        (
            "task-file-multilabel-not-lists",
            "task_multilabel_names.yaml",
            {"columns": {"text": "body", "label": "first"}},
            r"with `multilabel: true` each label cell must be a list of labels \(JSON lines or parquet; "
            r"\[\] for none\), got '",
        ),
    ],
)
def test_a_label_cell_that_does_not_fit_the_task_is_one_line(tmp_path, capsys, case, file, change, pattern):
    # was: a list became one class named "['blue', 'red']" (silently), or a KeyError traceback

    spec = _topic_files(tmp_path, **change)
    for split in ("train", "validation", "test"):  # a column of single names beside the lists
        path = tmp_path / f"{split}.jsonl"
        rows = [json.loads(x) for x in path.read_text().splitlines()]
        _jsonl(path, [{**r, "first": (r["colours"] or ["none"])[0]} for r in rows])
    spec.rename(tmp_path / file)
    code, err = _eval_task_file(tmp_path, file, capsys)
    assert_one_line(code, err, pattern)
    assert_printed_as_documented(case, err, tmp_path)
    assert not (tmp_path / "e").exists()


def _scores(n: int, seed: int) -> list[dict]:
    """Regression rows as in a CSV: the score is how many positive words the text holds, plus noise."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = rng.randrange(4)
        words = [*filler(rng, 4), *(rng.choice(POSITIVE) for _ in range(k)), f"n{seed}-{i}"]
        rng.shuffle(words)
        out.append({"sentence": " ".join(words), "score": round(k + rng.uniform(-0.3, 0.3), 2)})
    return out


def _score_files(tmp_path: Path, **change) -> Path:
    data = {
        s: _write_csv(tmp_path / f"{s}.csv", _scores(n, k))
        for k, (s, n) in enumerate((("train", 256), ("validation", 32), ("test", 64)))
    }
    spec = {
        "name": "similarity",
        "family": "sc",
        "data": data,
        "columns": {"text": "sentence", "label": "score"},
        "options": {"regression": True},
        "max_length": 64,
        "finetune": {"batch_size": 16, "micro_batch_size": 16, "max_steps": 60},
        **change,
    }
    return _spec(tmp_path, **spec)


def _write_csv(path: Path, rows: list[dict]) -> str:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path.name


def test_a_regression_task_file_learns_its_numbers(tmp_path, model, tokenizer):
    # was: "unknown field(s) regression" for the option; without it, one class per distinct score
    task, data = load_task(task_from_file(_score_files(tmp_path)))
    assert family_ops(task) is Regression and task.metric == "pearson" and task.labels == ()
    assert data.train[0]["target"] == _scores(256, 0)[0]["score"]
    prepared = prepare(task, tokenizer, data)
    result = run_one(task, model, tokenizer, prepared, lr=2e-3, seed=0)
    test = result["test"]["test"]
    assert test["pearson"] > 80 and test["spearman"] > 80 and test["n"] == 64
    rows = result["predictions"]["test"]
    gold, pred = [r["gold"] for r in rows], [r["pred"] for r in rows]
    assert test["pearson"] == pytest.approx(100 * stats.pearsonr(gold, pred).statistic)
    assert test["mse"] == pytest.approx(sum((g - p) ** 2 for g, p in zip(gold, pred)) / len(rows))
    assert task_from_file(_score_files(tmp_path, metric="spearman")).metric == "spearman"


def test_correlations_of_a_constant_side_are_zero_not_nan():
    assert correlations([1.0, 2.0, 3.0], [5.0, 5.0, 5.0]) == {"pearson": 0.0, "spearman": 0.0, "mse": 29 / 3}
    assert correlations([1.0, 2.0, 3.0], [3.0, 5.0, 4.0])["spearman"] == pytest.approx(50.0)
    assert Regression.constant([{"pred": 0.5}, {"pred": 0.5}]) == "predicts 0.5 for all 2 examples"


def test_a_diverged_regression_run_scores_zero_not_nan():
    # Before: NaN predictions scored NaN, which made the LR choice depend on the grid's order and stopped
    # a study's report (Holm refuses a NaN p-value); an infinite one gave a NaN Pearson.
    for pred in ([math.nan] * 3, [1.0, math.inf, 2.0], [1.0, 2.0, math.nan]):
        scores = correlations([1.0, 2.0, 3.0], pred)
        assert (scores["pearson"], scores["spearman"]) == (0.0, 0.0), pred
        flagged = Regression.constant([{"pred": p} for p in pred])
        assert flagged is not None and "non-finite" in flagged, pred


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"metric": "accuracy"}, r"metric 'accuracy' is not one of sc's: pearson, spearman$"),
        (
            {"labels": ["low", "high"]},
            r"`labels` names classes; a regression task \(`regression: true`\) has none",
        ),
        ({"options": {"regression": True, "multilabel": True}}, r"regression predicts one number"),
        ({"options": {}, "metric": "pearson"}, r"metric 'pearson' is not one of sc's: accuracy, macro_f1"),
    ],
)
def test_regression_settings_that_contradict_are_one_line(tmp_path, change, message):
    with pytest.raises(UserError, match=message) as exc:
        task_from_file(_score_files(tmp_path, **change))
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(
    ("case", "file", "change", "cell", "pattern"),
    [
        (
            "task-file-fractional-labels",
            "task_fractional_labels.yaml",
            {"options": {}},
            None,
            r"the label column 'score' holds fractional numbers \(e.g. .* in the train split, line \d+ of "
            r"train\.csv\), each of which would be a class; "
            r"for a numeric target set `options: \{regression: true\}`, else give class names",
        ),
        (
            "task-file-regression-not-a-number",
            "task_regression_text.yaml",
            {},
            "about three",
            r"a row's target 'about three' is not a finite number; a regression task \(`regression: true`\) "
            r"needs a number in every label cell",
        ),
    ],
)
def test_a_score_column_that_does_not_fit_is_one_line(tmp_path, capsys, case, file, change, cell, pattern):
    # was: a label set of every distinct score (a line listing them all, or silently that many
    # classes when train held every test score), or the text kept as a class name

    spec = _score_files(tmp_path, **change)
    if cell is not None:
        _write_csv(tmp_path / "train.csv", [*_scores(256, 0), {"sentence": "odd one", "score": cell}])
    spec.rename(tmp_path / file)
    code, err = _eval_task_file(tmp_path, file, capsys)
    assert_one_line(code, err, pattern)
    assert_printed_as_documented(case, err, tmp_path)
    assert not (tmp_path / "e").exists()


def test_boolean_labels_are_named_alike_in_the_label_set_and_the_rows(tmp_path):
    # was: "label 'true' is not in the label set ['False', 'True']" for a JSON lines true/false column
    rows = [{"text": f"t{i} {'yes' if i % 2 else 'no'}", "answer": bool(i % 2)} for i in range(60)]
    data = {
        "train": _jsonl(tmp_path / "tr.jsonl", rows[:40]),
        "test": _jsonl(tmp_path / "te.jsonl", rows[40:]),
    }
    spec = {"name": "yesno", "family": "sc", "data": data, "columns": {"label": "answer"}}
    task, loaded = load_task(task_from_file(_spec(tmp_path, **spec)))
    assert task.labels == ("false", "true")
    assert [task.labels[e["label"]] for e in loaded.tests["test"]] == [
        str(r["answer"]).lower() for r in rows[40:]
    ]


@pytest.mark.parametrize("metric", [None, "conlleval_f1"])
def test_entity_f1_over_tags_that_are_not_iob_is_one_line(tmp_path, capsys, metric):
    # was: fine-tuning ran, then seqeval stopped with "KeyError: 'D'" (a traceback) on a POS tag set

    rows = [{"tokens": ["the", "cat", f"w{i}"], "tags": ["DT", "NN", "NN"]} for i in range(30)]
    data = {
        "train": _jsonl(tmp_path / "tr.jsonl", rows[:20]),
        "test": _jsonl(tmp_path / "te.jsonl", rows[20:]),
    }
    file = "task_pos_entity_f1.yaml"
    _spec(tmp_path, file, name="pos", family="tc", data=data, **({"metric": metric} if metric else {}))
    code, err = _eval_task_file(tmp_path, file, capsys)
    named = "'entity_f1' \\(tc's default\\)" if metric is None else "'conlleval_f1'"
    assert_one_line(
        code, err, rf"metric {named} scores entities tagged O, B-TYPE, I-TYPE, but tag 'DT' is not one"
    )
    if metric is None:
        assert_printed_as_documented("task-file-tags-not-iob", err, tmp_path)
    assert not (tmp_path / "e").exists()
    accuracy = _spec(tmp_path, name="pos", family="tc", data=data, metric="accuracy")
    assert task_from_file(accuracy).metric == "accuracy"


@pytest.mark.parametrize(
    "answers",
    [
        {"text": "Paris", "answer_start": 10},  # one answer, not lists: the documented catalogue case
        "Paris",
        {"text": ["Paris", "Rome"], "answer_start": [10]},  # zip would drop Rome
        None,
    ],
)
def test_qa_answers_not_in_squads_shape_are_one_line(tmp_path, capsys, answers):
    # was: "TypeError: 'int' object is not iterable" (a traceback), or a silently dropped answer

    good = {"text": ["Paris"], "answer_start": [10]}
    rows = [
        {"question": f"where {i}?", "context": f"He lives, Paris, {i}.", "answers": good} for i in range(20)
    ]
    rows[3] = {**rows[3], "answers": answers}
    data = {
        "train": _jsonl(tmp_path / "tr.jsonl", rows[:15]),
        "test": _jsonl(tmp_path / "te.jsonl", rows[15:]),
    }
    file = "task_qa_one_answer.yaml"
    _spec(tmp_path, file, name="myqa", family="qa", data=data)
    code, err = _eval_task_file(tmp_path, file, capsys)
    assert_one_line(
        code, err, r"a row's answers must be SQuAD's \{text: \[texts\], answer_start: \[offsets\]\}"
    )
    if isinstance(answers, dict) and answers["text"] == "Paris":
        assert_printed_as_documented("task-file-qa-answers-shape", err, tmp_path)
    assert not (tmp_path / "e").exists()
    rows[3] = {**rows[3], "answers": [{"text": "Paris", "answer_start": 10}]}  # a list of structs reads
    _jsonl(tmp_path / "tr.jsonl", rows[:15])
    task, loaded = load_task(task_from_file(tmp_path / file))
    assert loaded.train[3]["answers"] == [{"text": "Paris", "answer_start": 10}]


def _id_rows(n: int, seed: int) -> list[dict]:
    """sc rows as a run_glue CSV holds them: the label a class id (0 bad, 1 good)."""
    return [
        {"review": f"{e['text']} r{seed}-{i}", "stars": e["label"]}
        for i, e in enumerate(sc_examples(n, seed))
    ]


def _id_task(tmp_path: Path, suffix: str, rows: dict, **change) -> Path:
    write = _write_csv if suffix == "csv" else _jsonl
    data = {s: write(tmp_path / f"{s}.{suffix}", r) for s, r in rows.items()}
    spec = {"name": "reviews", "family": "sc", "data": data, "columns": {"text": "review", "label": "stars"}}
    return _spec(tmp_path, **{**spec, "labels": ["bad", "good"], **change})


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_class_ids_beside_named_labels_are_positions_in_them(tmp_path, suffix):
    # was: "label '1' is not in the label set ['bad', 'good']; add it to `labels:`"
    rows = {"train": _id_rows(60, 0), "test": _id_rows(20, 1)}
    task, data = load_task(task_from_file(_id_task(tmp_path, suffix, rows)))
    assert task.labels == ("bad", "good")
    assert [e["label"] for e in data.tests["test"]] == [r["stars"] for r in rows["test"]]
    named = {s: [{**r, "stars": ("bad", "good")[r["stars"]]} for r in v] for s, v in rows.items()}
    (tmp_path / "names").mkdir()
    by_name = task_from_file(_id_task(tmp_path / "names", suffix, named))
    assert by_name.data_version == task.data_version  # the same examples: the same cached scores
    swapped = task_from_file(_id_task(tmp_path, suffix, rows, labels=["good", "bad"]))
    assert swapped.data_version != task.data_version


def test_digit_label_names_are_still_names_and_tag_ids_are_positions(tmp_path):
    rows = {"train": _id_rows(60, 0), "test": _id_rows(20, 1)}
    task, data = load_task(task_from_file(_id_task(tmp_path, "csv", rows, labels=["1", "0"])))
    assert [task.labels[e["label"]] for e in data.tests["test"]] == [str(r["stars"]) for r in rows["test"]]
    tags = ["O", "B-PER", "B-LOC", "I-LOC"]  # a JSON export of a ClassLabel tag column: ids
    tc = {
        s: _jsonl(tmp_path / f"{s}.jsonl", tc_examples(n, k))
        for k, (s, n) in enumerate((("train", 40), ("test", 10)))
    }
    task, data = load_task(task_from_file(_spec(tmp_path, name="ner", family="tc", data=tc, labels=tags)))
    assert [e["tags"] for e in data.tests["test"]] == [r["tags"] for r in tc_examples(10, 1)]


@pytest.mark.parametrize(
    ("case", "file", "cell", "pattern"),
    [
        (
            "task-file-label-ids-out-of-range",
            "task_label_ids_range.yaml",
            2,
            r"the label column 'stars' holds class ids, read as positions in `labels:`, but 2 \(train split, "
            r"line 9 of train\.csv\) is not one of 0 to 1; name every class in `labels:` in id order, or fix the data",
        ),
        (
            "task-file-label-ids-beside-names",
            "task_label_ids_names.yaml",
            "good",
            r"the label column 'stars' holds both names from `labels:` \(e.g. 'good' in the train split, line 9 "
            r"of train\.csv\) and class ids \(e.g. [01] in the train split, line \d+ of train\.csv\); write every "
            r"label as its name, or as its position in `labels:` \(from 0\)",
        ),
        (  # was: "label '1' is not in the label set ['bad', 'good']", naming an id, not the typo
            "task-file-label-ids-beside-unknown",
            "task_label_ids_unknown.yaml",
            "goood",
            r"the label column 'stars' holds class ids \(e.g. [01] in the train split, line \d+ of train\.csv\) "
            r"and 'goood' \(train split, line 9 of train\.csv\), which is neither a name in "
            r"`labels:` \['bad', 'good'\] nor a class id; fix that cell, or add it to `labels:` and write "
            r"every label as its name",
        ),
    ],
)
def test_class_ids_that_cannot_be_positions_are_one_line(tmp_path, capsys, case, file, cell, pattern):

    rows = _id_rows(60, 0)
    rows[7] = {**rows[7], "stars": cell}
    _id_task(tmp_path, "csv", {"train": rows, "test": _id_rows(20, 1)}).rename(tmp_path / file)
    code, err = _eval_task_file(tmp_path, file, capsys)
    assert_one_line(code, err, pattern)
    assert_printed_as_documented(case, err, tmp_path)
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_a_split_of_class_ids_beside_train_names_is_told_to_use_one_form(tmp_path, suffix):
    # was: "label '1' is not in the label set ['bad', 'good']; add it to `labels:` or fix the data": a
    # test file of ids beside a train file of names, whose fix made a class called '1' (a third class)
    named = [{**r, "stars": ("bad", "good")[r["stars"]]} for r in _id_rows(60, 0)]
    rows = {"train": named, "test": _id_rows(20, 1)}
    write = _write_csv if suffix == "csv" else _jsonl
    data = {s: write(tmp_path / f"{s}.{suffix}", r) for s, r in rows.items()}
    columns = {"text": "review", "label": "stars"}
    path = _spec(tmp_path, name="reviews", family="sc", data=data, columns=columns)  # no `labels:`
    with pytest.raises(UserError) as refused:
        load_task(task_from_file(path))
    line = str(refused.value)
    assert "add it to `labels:`" not in line, line
    assert re.search(
        r"label '\d' looks like a class id, but the label set \['bad', 'good'\] is of names; ", line
    )
    assert "write every split's labels in one form" in line


def test_a_tag_set_without_o_gets_no_o_and_is_scored_over_its_own_tags(tmp_path, model, tokenizer):
    # was: ("O", "NAME", "WORD"): an O class no word trains on, which the head predicted for words
    # while it was barely trained (and NER's default order put it first even without O in the data)
    from sklearn.metrics import accuracy_score, f1_score

    def rows(n: int, seed: int) -> list[dict]:
        return [
            {"tokens": r["tokens"], "tags": ["WORD" if t == 0 else "NAME" for t in r["tags"]]}
            for r in tc_examples(n, seed)
        ]

    data = {s: _jsonl(tmp_path / f"{s}.jsonl", rows(n, k)) for k, (s, n) in enumerate(
        (("train", 64), ("validation", 8), ("test", 16)))}  # fmt: skip
    finetune = {"batch_size": 16, "micro_batch_size": 16, "max_steps": 2}
    spec = _spec(
        tmp_path, name="names", family="tc", data=data, metric="sentence_macro_f1", finetune=finetune
    )
    task, loaded = load_task(task_from_file(spec))
    assert task.labels == ("NAME", "WORD")  # sorted, as sc's classes; no O the data lacks
    result = run_one(task, model, tokenizer, prepare(task, tokenizer, loaded), lr=1e-5, seed=0)
    predictions = result["predictions"]["test"]
    gold, pred = [p["gold"] for p in predictions], [p["pred"] for p in predictions]
    assert gold == [r["tags"] for r in rows(16, 2)]
    assert {t for s in pred for t in s} <= set(task.labels)  # every word read: no truncation's O
    scores = result["test"]["test"]
    flat = [t for s in gold for t in s], [t for s in pred for t in s]
    assert scores["accuracy"] == pytest.approx(100 * accuracy_score(*flat))
    by_sentence = [100 * f1_score(g, p, average="macro", zero_division=0) for g, p in zip(gold, pred)]
    assert scores["sentence_macro_f1"] == pytest.approx(sum(by_sentence) / len(by_sentence))
    assert "entity_f1" not in scores  # a tag set that is not IOB has no entities
    ner = {s: _jsonl(tmp_path / f"ner-{s}.jsonl", [
        {"tokens": r["tokens"], "tags": [("O", "B-PER", "B-LOC", "I-LOC")[t] for t in r["tags"]]}
        for r in tc_examples(20, k)]) for k, s in enumerate(("train", "test"))}  # fmt: skip
    assert task_from_file(_spec(tmp_path, name="ner", family="tc", data=ner)).labels[0] == "O"
