"""A task file's cells that were read without a word and scored wrongly, or stopped a run after
fine-tuning: empty sentences and words (tc), empty QA and IR cells, QA ids used twice in a scored
split, negative answer offsets, IR ids naming two texts, and an IR id of 0 (`eval/tasks/custom_rows.py`,
`custom_labels.py`). Each is one line naming the file, raised while the file is read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.eval.fixtures import write_jsonl, write_task_file

from encoderlab.errors import UserError
from encoderlab.eval.families import TokenClassification
from encoderlab.eval.metrics import correlations, squad_v1
from encoderlab.eval.spec import Task, TCOptions
from encoderlab.eval.tasks import load_task
from encoderlab.eval.tasks.custom import task_from_file

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def _task(tmp_path: Path, family: str, train: list[dict], test: list[dict], **spec) -> Path:
    data = {
        "train": write_jsonl(tmp_path / "train.jsonl", train),
        "test": write_jsonl(tmp_path / "test.jsonl", test),
    }
    return write_task_file(tmp_path, name="cells", family=family, data=data, **spec)


def _refused(path: Path, pattern: str) -> None:
    with pytest.raises(UserError) as err:
        task_from_file(path)
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"task file {path}: ")
    assert re.search(pattern, line), line


def _tc(n: int, offset: int = 0) -> list[dict]:
    return [{"tokens": ["Alice", f"w{offset + i}"], "tags": ["B-PER", "O"]} for i in range(n)]


def test_a_tc_split_of_empty_sentences_is_refused_when_read(tmp_path):
    # was: read, fine-tuned, then a ZeroDivisionError traceback scoring a split without a word
    task = Task(
        name="t", description="", options=TCOptions(labels=("O", "B-PER")), metric="entity_f1", loader=None
    )
    with pytest.raises(ZeroDivisionError):  # what such a split reached
        TokenClassification.metrics(task, [{"gold": [], "pred": []}])
    path = _task(tmp_path, "tc", _tc(20), [{"tokens": [], "tags": []}])
    _refused(path, r"a row has no tokens \(an empty sentence\); remove the row")


def test_a_tc_row_with_an_empty_word_is_refused(tmp_path):
    # was: the word 'None' fed to the model
    test = [{"tokens": ["Bob", None], "tags": ["B-PER", "O"]}]
    _refused(_task(tmp_path, "tc", _tc(20), test), r"a row has an empty token; fill it in or remove the row")


@pytest.mark.parametrize(
    ("family", "row", "field"),
    [
        ("tc", {"tokens": ["Bob", ""], "tags": ["B-PER", "O"]}, "token"),
        ("tc", {"tokens": ["Bob", " "], "tags": ["B-PER", "O"]}, "token"),
        ("ir", {"query": "", "document": "lost"}, "query"),
    ],
)
def test_a_blank_text_cell_is_refused_as_an_empty_one(tmp_path, family, row, field):
    # was: read as a text of nothing (a blank word got no token and was scored as O); only null was refused
    train = _tc(20) if family == "tc" else _ir(20, "r")
    test = (_tc(3, 100) if family == "tc" else _ir(3, "t")) + [row]
    _refused(
        _task(tmp_path, family, train, test), rf"a row has an empty {field}; fill it in or remove the row"
    )


@pytest.mark.parametrize("blank", ["", " "])
def test_a_blank_label_is_refused_as_an_empty_one(tmp_path, blank):
    # was: a class called '' (or ' ') of its own, inferred from train like any other name
    train = [{"text": f"text {i}", "label": ("pos", "neg")[i % 2]} for i in range(20)]
    test = [{"text": "a", "label": "pos"}, {"text": "b", "label": blank}]
    _refused(_task(tmp_path, "sc", train, test), r"a row has an empty label; fill it in or remove the row")
    tags = [{"tokens": ["Bob", "x"], "tags": ["B-PER", blank]}]
    _refused(_task(tmp_path, "tc", _tc(20), tags), r"a row has an empty label; fill it in or remove the row")


def _qa(n: int, prefix: str) -> list[dict]:
    return [
        {
            "id": f"{prefix}{i}",
            "question": f"who {prefix} {i}?",
            "context": f"{prefix} {i} alice",
            "answers": {"text": ["alice"], "answer_start": [len(f"{prefix} {i} ")]},
        }
        for i in range(n)
    ]


def test_qa_ids_used_twice_in_a_scored_split_are_refused(tmp_path):
    # was: predictions and scores keyed by id: the split was scored on one of the questions
    test = _qa(4, "t")
    test[2]["id"] = "t0"
    _refused(
        _task(tmp_path, "qa", _qa(20, "r"), test),
        r"test split, line 3 of test.jsonl: the test split has two questions with id 't0' \(this one and "
        r"line 1 of test.jsonl\); scores are keyed by id",
    )
    train = _qa(20, "r")
    train[5]["id"] = "r0"  # training never reads ids: a repeated one there is harmless
    task, data = load_task(task_from_file(_task(tmp_path, "qa", train, _qa(4, "t"))))
    assert len(data.train) == 19 and len(data.tests["test"]) == 4


@pytest.mark.parametrize(
    ("cell", "value", "pattern"),
    [
        ("context", None, r"a row has an empty context; fill it in or remove the row"),
        ("question", None, r"a row has an empty question; fill it in or remove the row"),
        ("question", "", r"a row has an empty question; fill it in or remove the row"),
        ("answers", [{"text": None, "answer_start": 0}], r"a row has an empty answer text"),
        ("answers", {"text": [""], "answer_start": [0]}, r"a row has an empty answer text"),
        ("answers", [{"text": "t", "answer_start": -3}], r"a row's answer_start is -3; it is the answer's"),
    ],
)
def test_empty_qa_cells_and_negative_offsets_are_refused(tmp_path, cell, value, pattern):
    # was: the text 'None' as a question, context or answer; a negative offset sliced from the end
    test = _qa(4, "t")
    test[1][cell] = value
    _refused(_task(tmp_path, "qa", _qa(20, "r"), test), pattern)


def _ir(n: int, prefix: str, ids: bool = False) -> list[dict]:
    rows = [{"query": f"{prefix} query {i}", "document": f"{prefix} document {i}"} for i in range(n)]
    return [{**r, "qid": i, "did": i} for i, r in enumerate(rows)] if ids else rows


def test_empty_ir_cells_are_refused(tmp_path):
    test = _ir(4, "t") + [{"query": "lost", "document": None}]
    _refused(_task(tmp_path, "ir", _ir(20, "r"), test), r"a row has an empty document; fill it in")


def test_an_ir_id_of_zero_is_an_id_and_an_id_naming_two_texts_is_refused(tmp_path):
    columns = {"query_id": "qid", "doc_id": "did"}
    path = _task(tmp_path, "ir", _ir(20, "r", ids=True), _ir(4, "t", ids=True), columns=columns)
    task, data = load_task(task_from_file(path))
    assert sorted(data.tests["test"].queries) == ["0", "1", "2", "3"]  # was: 0 replaced by a text hash
    assert data.tests["test"].qrels["0"] == {"0": 1}
    test = _ir(4, "t", ids=True)
    test[2]["qid"] = 1  # the later query silently replaced the earlier, their documents merged
    path = _task(tmp_path, "ir", _ir(20, "r", ids=True), test, columns=columns)
    _refused(
        path,
        r"test split, line 3 of test.jsonl: the test split gives query id '1' to two different query texts",
    )


def test_an_ir_id_written_as_nan_is_a_missing_id(tmp_path):
    # was: the id 'nan' (json.dumps writes NaN for a missing number), so two such rows were refused as
    # "gives document id 'nan' to two different document texts"
    columns = {"query_id": "qid", "doc_id": "did"}
    test = _ir(4, "t", ids=True)
    test[1]["did"], test[2]["did"] = float("nan"), float("nan")
    path = _task(tmp_path, "ir", _ir(20, "r", ids=True), test, columns=columns)
    corpus = load_task(task_from_file(path))[1].tests["test"].corpus
    assert len(corpus) == 4 and "nan" not in corpus


def _sc(n: int, prefix: str, labels=("bad", "good")) -> list[dict]:
    return [{"text": f"{prefix} text {i}", "label": labels[i % len(labels)]} for i in range(n)]


def test_a_class_named_twice_in_labels_is_refused(tmp_path):
    # was: read; the second 'bad' (id 1) was never a gold id, and predicting it read as 'bad', a hit
    path = _task(tmp_path, "sc", _sc(20, "r"), _sc(4, "t"), labels=["bad", "bad", "good"])
    _refused(path, r"labels: 'bad' is listed twice; name each class once \(its position is its id\)")


@pytest.mark.parametrize(
    ("labels", "options", "pattern"),
    [
        (
            None,
            {},
            r"^task file [^:]+: train split, train\.jsonl: the label column 'label' holds only 'good' "
            r"\(e\.g\. line 1\); a classifier needs two classes or more",
        ),
        (
            ["good"],
            {},
            r"^task file [^:]+: `labels:` holds only 'good'; a classifier needs two classes or more",
        ),
        (
            None,
            {"multilabel": True},
            r"^task file [^:]+: train split, train\.jsonl: the label column 'label' holds no label; a "
            r"classifier needs a label",
        ),
    ],
)
def test_a_label_set_nothing_can_be_learnt_from_is_refused(tmp_path, labels, options, pattern):
    # was: one class trained a loss of 0 and scored 100; multi-label without a label, zero outputs and a
    # NaN loss
    value = [] if options else "good"
    train, test = (
        [{"text": f"{p} text {i}", "label": value} for i in range(n)] for p, n in (("r", 20), ("t", 4))
    )
    spec = {"options": options, **({"labels": labels} if labels else {})}
    _refused(_task(tmp_path, "sc", train, test, **spec), pattern)
    test[0]["label"] = ["bad"] if options else "bad"  # a class train lacks: the row naming it is the line
    if not labels:
        _refused(_task(tmp_path, "sc", train, test, **spec), r"label 'bad' is not in the label set")


def test_a_single_class_names_trains_file_and_first_line_not_its_header(tmp_path):
    # was: "train's label column 'label' holds only 'good'", naming no file, split or line
    (tmp_path / "train.csv").write_text("text,label\n" + "".join(f'"r\n{i}",good\n' for i in range(20)))
    (tmp_path / "test.csv").write_text("text,label\nt,good\n")
    data = {"train": str(tmp_path / "train.csv"), "test": str(tmp_path / "test.csv")}
    path = write_task_file(tmp_path, name="cells", family="sc", data=data)
    _refused(
        path,
        rf"^task file {re.escape(str(path))}: train split, {re.escape(str(tmp_path / 'train.csv'))}: the label "
        r"column 'label' holds only 'good' \(e\.g\. line 2\); a classifier needs two classes or more: name "
        r"every class in `labels:`, or add examples of the others to train$",
    )


def test_numeric_tags_with_entity_f1_ask_for_their_names(tmp_path):
    # was: "tag '0' is not one; set `metric: accuracy`", as for POS tags, where the fix is `labels:`
    train = [{"tokens": ["Alice", "Smith", f"w{i}"], "tags": [1, 2, 0]} for i in range(20)]
    test = [{"tokens": ["Bob", "v"], "tags": [1, 0]}]
    _refused(
        _task(tmp_path, "tc", train, test),
        r"the tags are numbers \(e.g. '0'\), ids without names; name them in `labels:` in id order",
    )
    path = _task(tmp_path, "tc", train, test, labels=["O", "B-PER", "I-PER"])
    assert task_from_file(path).labels == ("O", "B-PER", "I-PER")


def test_an_unanswerable_question_of_a_squad_v1_task_is_refused_when_read(tmp_path):
    # was: read and fine-tuned, then the official v1 score's max over no answer: a ValueError traceback
    with pytest.raises(ValueError):
        squad_v1({"t9": []}, {"t9": "alice"})
    test = _qa(4, "t") + [{"id": "t9", "question": "who?", "context": "nobody here", "answers": []}]
    _refused(
        _task(tmp_path, "qa", _qa(20, "r"), test),
        r"the test split has a question without an answer \(id 't9'\), which SQuAD v1.1 cannot score; "
        r"set `options: \{v2: true\}`",
    )
    for options in ({"v2": True}, {"head": "tagger"}):  # both score a question without an answer
        task, data = load_task(task_from_file(_task(tmp_path, "qa", _qa(20, "r"), test, options=options)))
        assert data.tests["test"][-1]["answers"] == []


def test_a_regression_split_of_one_example_is_refused_when_read(tmp_path):
    # was: read and fine-tuned, then scoring the one-example validation cut (5% of 20) stopped the run
    with pytest.raises(ValueError):
        correlations([0.5], [0.4])
    train, test = ([{"text": f"{p} {i}", "label": i / 7} for i in range(n)] for p, n in (("r", 20), ("t", 4)))
    path = _task(tmp_path, "sc", train, test, options={"regression": True})
    _refused(path, r"the validation split has 1 example, and a correlation needs at least 2")
    spec = {"options": {"regression": True}}
    data = {"train": "train.jsonl", "test": "test.jsonl", "validation_fraction": 0.1}
    path = write_task_file(tmp_path, name="cells", family="sc", data=data, **spec)
    assert len(load_task(task_from_file(path))[1].val) == 2


def test_whole_float_labels_name_the_classes_an_int_column_does(tmp_path):
    # was: "label '0' is not in the label set ['0.0', '1.0']" for a train file of floats (as pandas writes
    # them) beside a test file of ints, and the reverse
    floats = [{"text": f"r {i}", "label": float(i % 2)} for i in range(40)]
    ints = [{"text": f"t {i}", "label": i % 2} for i in range(6)]
    for train, test in ((floats, ints), ([{**r, "label": int(r["label"])} for r in floats], ints)):
        task, data = load_task(task_from_file(_task(tmp_path, "sc", train, test)))
        assert task.labels == ("0", "1")
        assert [e["label"] for e in data.tests["test"]] == [0, 1, 0, 1, 0, 1]
    floats_test = [{**r, "label": float(r["label"])} for r in ints]
    task, data = load_task(task_from_file(_task(tmp_path, "sc", floats, floats_test, labels=["1.0", "0.0"])))
    assert [task.labels[e["label"]] for e in data.tests["test"]] == ["0.0", "1.0"] * 3  # by name as written


@pytest.mark.parametrize("family", ["qa", "ir"])
def test_an_id_column_one_file_lacks_is_read_where_it_is(tmp_path, family):
    # was: "ValueError: Column name ['id'] not in the dataset", a traceback, when train had it
    if family == "qa":
        train, test = _qa(20, "r"), [{k: v for k, v in r.items() if k != "id"} for r in _qa(4, "t")]
    else:
        train, test = [{**r, "qid": f"Q{i}"} for i, r in enumerate(_ir(20, "r"))], _ir(4, "t")
    spec = {"columns": {"query_id": "qid"}} if family == "ir" else {}
    task, data = load_task(task_from_file(_task(tmp_path, family, train, test, **spec)))
    if family == "qa":
        assert data.train[0]["id"].startswith("r") and [e["id"] for e in data.tests["test"]] == [
            f"test-{i}" for i in range(4)
        ]
    else:
        assert len(data.tests["test"].queries) == 4 and all(len(q) == 16 for q in data.tests["test"].queries)


@pytest.mark.parametrize(
    ("family", "cell", "value", "pattern"),
    [
        ("sc", "text", ["a", "list"], r"a row's text is \['a', 'list'\], not a text; give one text per cell"),
        ("sc", "label", {"x": 1}, r"a row's label \{'x': 1\} is not a name or a number"),
        ("tc", "tokens", [["nested"], "w"], r"a row's token is \['nested'\], not a text"),
        ("qa", "question", {"q": "?"}, r"a row's question is \{'q': '\?'\}, not a text"),
        ("ir", "document", ["d", "e"], r"a row's document is \['d', 'e'\], not a text"),
    ],
)
def test_a_nested_cell_where_a_text_or_label_belongs_is_refused(tmp_path, family, cell, value, pattern):
    # was: str() fed the model "['a', 'list']", or made a class called "{'x': 1}"
    rows = {"sc": lambda n, p: _sc(n, p), "tc": _tc, "qa": _qa, "ir": _ir}[family]
    train, test = (rows(20, "r"), rows(4, "t")) if family != "tc" else (_tc(20), _tc(4, 100))
    test[1] = {**test[1], cell: value}
    if family == "tc":
        test[1]["tags"] = ["B-PER", "O"]
    _refused(_task(tmp_path, family, train, test), pattern)


def test_a_null_hub_split_other_than_validation_says_so(tmp_path, monkeypatch):
    # was: "nyu-mll/glue (config sst2) has no split None (it has train, validation, test)"
    from tests.eval import hub_fixtures as hub

    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))
    hub.glue(tmp_path / "hub")
    data = {"hub": "nyu-mll/glue", "config": "sst2", "splits": {"test": None}}
    path = write_task_file(tmp_path, name="sst", family="sc", data=data, columns={"text": "sentence"})
    _refused(
        path, r"data.splits.test is null, which only validation may be .*or cut it with data.test_fraction$"
    )


def test_a_regression_split_whose_targets_are_all_alike_is_refused_when_read(tmp_path):
    # was: read and fine-tuned; a correlation over targets all alike scored every run 0 (`correlations`), so
    # the LR was picked by a tie of zeros and the test reported 0, without a word
    assert correlations([3.0, 3.0, 3.0], [0.1, 0.5, 0.2])["pearson"] == 0.0
    train = [{"text": f"r {i}", "label": i / 7} for i in range(60)]
    test = [{"text": f"t {i}", "label": 3} for i in range(4)]
    path = _task(tmp_path, "sc", train, test, options={"regression": True})
    _refused(
        path,
        r"the test split's 4 targets are all 3, and a correlation over targets all alike is undefined \(every run "
        r"would score 0\); add examples with other targets \(or raise data.validation_fraction",
    )
    test[0]["label"] = 2.5
    path = _task(tmp_path, "sc", train, test, options={"regression": True})
    assert len(load_task(task_from_file(path))[1].tests["test"]) == 4


@pytest.mark.parametrize("options", [{}, {"regression": True}])
def test_a_nan_label_as_pythons_json_writes_a_missing_value_is_an_empty_label(tmp_path, options):
    # was, with classes: "holds fractional numbers (e.g. nan ...); for a numeric target set `options:
    # {regression: true}`", a fix that was then refused as "target nan is not a finite number"
    train = [{"text": f"r {i}", "label": float(i % 2)} for i in range(20)]
    train[3]["label"] = float("nan")  # json.dumps writes NaN, as for a pandas row's missing value
    test = [{"text": f"t {i}", "label": float(i % 2)} for i in range(4)]
    path = _task(tmp_path, "sc", train, test, options=options)
    assert "NaN" in (tmp_path / "train.jsonl").read_text().splitlines()[3]
    _refused(
        path,
        r": train split, line 4 of train\.jsonl: a row has an empty label; fill it in or remove the row$",
    )


def test_iob1_tags_scored_by_strict_entity_f1_are_refused_with_both_fixes(tmp_path):
    # was: read and scored; seqeval's strict IOB2 mode drops an entity an `I-` tag starts from the gold, so a
    # model tagging it O scored 100 on it, and one tagging it B-PER I-PER scored a false positive
    from seqeval.metrics import f1_score
    from seqeval.scheme import IOB2

    gold, missed = [["I-PER", "I-PER", "O", "B-LOC"]], [["O", "O", "O", "B-LOC"]]
    assert f1_score(gold, missed, mode="strict", scheme=IOB2) == 1.0  # the person missed, scored right
    train = [{"tokens": ["ann", "lee", f"w{i}"], "tags": ["B-PER", "I-PER", "O"]} for i in range(20)]
    test = [{"tokens": [f"v{i}", "bob", "ray"], "tags": ["O", "B-PER", "I-PER"]} for i in range(4)]
    test[2]["tags"] = ["O", "I-PER", "I-PER"]  # IOB1: I- starts the entity
    path = _task(tmp_path, "tc", train, test)
    _refused(
        path,
        r": test split, line 3 of test\.jsonl: tag 'I-PER' of word 2 \('bob'\) follows 'O', so strict IOB2 entity "
        r"F1 \(metric 'entity_f1'\) drops that entity from the scores; convert IOB1 tags to IOB2 \(B- starts every "
        r"entity\), or set `metric: conlleval_f1` \(conlleval's lenient reading\)$",
    )
    for metric in ("conlleval_f1", "accuracy"):  # scores that read an I- start as an entity, or no entities
        assert task_from_file(_task(tmp_path, "tc", train, test, metric=metric)).metric == metric
