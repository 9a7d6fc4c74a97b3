"""A new user's likely mistakes in a task file, each one line naming where and what (from an audit that
wrote task files from docs/evaluation.md alone)."""

from __future__ import annotations

import ast
import json
import re

import pytest
from tests.eval.fixtures import sentiment_files, write_task_file

from encoderlab.errors import UserError
from encoderlab.eval.tasks.custom import load_task_files

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def test_a_task_file_of_malformed_yaml_names_the_line_and_the_problem(tmp_path):
    # was: "cannot read it (ParserError); give a YAML task spec", which said neither where nor what
    path = tmp_path / "task.yaml"
    path.write_text("name: reviews\nfamily: sc\ndata:\n  train: train.csv\n test: test.csv\n")
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value) == (
        f"task file {path} is not valid YAML at line 5, column 2: expected <block end>, but found "
        "'<block mapping start>' (while parsing a block mapping); fix the syntax"
    )


@pytest.mark.parametrize(
    "finetune,got",
    [
        ({"max_steps": -3}, "max_steps must be >= 1, or null for `epochs`, got max_steps: -3"),
        ({"micro_batch_size": 0}, "must be >= 1, got batch_size: 16, micro_batch_size: 0"),
        ({"warmup_ratio": 1.5}, "warmup_ratio must be in [0, 1), got warmup_ratio: 1.5"),
    ],
)
def test_a_bad_finetune_value_is_named_with_its_value_not_the_whole_config(tmp_path, finetune, got):
    # was: "..., got FinetuneConfig(batch_size=16, micro_batch_size=16, max_steps=-3, epochs=1.0, ...)",
    # twelve fields to read for the one that is wrong
    path = write_task_file(tmp_path, name="reviews", **sentiment_files(tmp_path), finetune=finetune)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value).endswith(got)
    assert "FinetuneConfig" not in str(err.value)


def test_qa_answers_none_of_which_is_at_its_offset_are_named_not_an_empty_train_split(tmp_path):
    # was: "task first-word: the train split is empty; check the data files or the split sizes": every
    # training answer was skipped (its text is not at its answer_start), which the line did not say
    rows = [
        {"question": f"What comes first in text {i}?", "context": f"Paris{i} is first here", "answers": a}
        for i in range(20)
        for a in ({"text": [f"Paris{i}"], "answer_start": [1]},)  # 1-based offsets, as a spreadsheet counts
    ]
    for split in ("train", "test"):
        (tmp_path / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = {"train": "train.jsonl", "test": "test.jsonl"}
    path = write_task_file(tmp_path, name="first-word", family="qa", data=data, allow_overlap=True)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    said = re.fullmatch(  # the first row of train once validation is cut from it, with its line (was none)
        rf"task file {re.escape(str(path))}: no answer of the train split is in its context at its answer_start "
        r"\(first row, train split, line (\d+) of train\.jsonl: 'Paris(\d+)' at 1 reads 'aris\2 '\); "
        r"answer_start is the answer's 0-based character offset in the context",
        str(err.value),
    )
    assert said and int(said[1]) == int(said[2]) + 1, str(err.value)


@pytest.mark.parametrize(
    "suffix,sep,fix",
    [
        (".csv", ";", "save it with commas (Excel: CSV UTF-8)"),
        (".csv", "\t", "name it .tsv"),
        (".tsv", ",", "name it .csv"),
    ],
)
def test_a_file_of_another_separator_than_its_suffix_says_so(tmp_path, suffix, sep, fix):
    # was: "cannot read data.train (...): Error tokenizing data. C error: Expected 1 fields in line 3, saw 2"
    # (pandas', at the first row whose text held the expected separator), or, with none, "no column(s) review"
    names = {";": "semicolons", "\t": "tabs", ",": "commas"}
    for split in ("train", "test"):
        rows = [f"review{sep}stars", *(f"text {split} {i}, with a comma{sep}good" for i in range(4))]
        (tmp_path / f"{split}{suffix}").write_text("\n".join(rows) + "\n")
    data = {"train": f"train{suffix}", "test": f"test{suffix}"}
    columns = {"text": "review", "label": "stars"}
    path = write_task_file(tmp_path, name="reviews", family="sc", data=data, columns=columns)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    reads = "tabs" if suffix == ".tsv" else "commas"
    assert str(err.value) == (
        f"task file {path}: {tmp_path / ('train' + suffix)}'s header is one column, {f'review{sep}stars'!r}: the "
        f"file is separated by {names[sep]}, but a {suffix} file is read as separated by {reads}; {fix}"
    )


def test_a_tag_seen_only_in_the_test_split_names_that_split(tmp_path):
    # was: "task file t.yaml: label 'I-product' is not in the label set [...]", with the set read from train
    # and nothing saying the tag came from test
    rows = {
        "train": [{"words": ["a", f"w{i}"], "ner": ["O", "B-x"]} for i in range(20)],
        "test": [{"words": ["b", f"v{i}"], "ner": ["B-x", "I-y"]} for i in range(5)],
    }
    for split, split_rows in rows.items():
        (tmp_path / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in split_rows))
    data = {"train": "train.jsonl", "test": "test.jsonl"}
    columns = {"tokens": "words", "tags": "ner"}
    path = write_task_file(tmp_path, name="ner", family="tc", data=data, columns=columns)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value) == (
        f"task file {path}: test split, line 1 of test.jsonl: label 'I-y' is not in the label set ['O', 'B-x']; add it to `labels:` "
        "or fix the data"
    )


def test_a_text_column_named_as_the_label_is_refused_as_one_class_per_row(tmp_path):
    # was: a class per train text, then "label '<a test text>' is not in the label set [<every train
    # text>]": one line thousands of characters long, not saying the columns were swapped
    spec = sentiment_files(tmp_path)  # 40 train rows: sentence (text), polarity (2 classes)
    spec["columns"] = {"text": "polarity", "label": "sentence"}
    path = write_task_file(tmp_path, name="swapped", **spec)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    message = str(err.value)
    assert re.fullmatch(
        rf"task file {re.escape(str(path))}: the label column 'sentence' holds 3\d different values in 3\d train rows "
        r"\(e\.g\. '[^']+' in the train split, line \d+ of train\.csv\), so nearly every row would be a class of "
        r"its own; if it is a text column, point `columns: \{label: \.\.\.\}` at the class column, else list the "
        r"classes in `labels:`",
        message,
    ), message
    spec["columns"] = {"text": "sentence", "label": "polarity"}  # the columns the right way round read
    assert load_task_files([str(write_task_file(tmp_path, name="swapped", **spec))])[0].name == "swapped"


def test_a_long_example_label_is_cut_inside_its_own_quotes():
    # was `repr(...)[:57] + "...'"`: a text with an apostrophe, which repr quotes with `"`, was shown as
    # `"it's a ...'` (opened with one quote, closed with another)
    from encoderlab.eval.tasks.custom_labels import _not_a_text_column

    values = [(f"it's sentence {i}, long enough to be cut where a refusal quotes it", i) for i in range(20)]
    with pytest.raises(UserError) as err:
        _not_a_text_column(
            values, {v for v, _ in values}, "sentence", "task file t.yaml", lambda i: f"row {i}"
        )
    example = re.search(r"\(e\.g\. (.*) in the row 0\)", str(err.value)).group(1)
    assert example.endswith('..."') and ast.literal_eval(example).startswith("it's sentence 0"), example


@pytest.mark.parametrize("name", ["train.csv", "train.jsonl.gz"])
def test_a_data_file_named_as_the_task_file_says_so(tmp_path, name):
    # was: the CSV read as YAML, "task file train.csv holds 'sentence,polarity <every row of the file>',
    # not a mapping of fields": one line as long as the file, whose fix (write `name: value` lines) was
    # not the user's mistake
    sentiment_files(tmp_path)
    path = tmp_path / name
    if name.endswith(".gz"):
        import gzip

        path.write_bytes(gzip.compress(b'{"sentence": "a text", "polarity": "positive"}\n'))
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    kind = ".jsonl" if name.endswith(".gz") else ".csv"
    assert str(err.value) == (
        f"task file {path} is a {kind} data file, not a task spec; pass the task's YAML file, whose `data:` "
        'names this file (docs/evaluation.md, "Your own tasks (task files)")'
    )


def test_a_text_file_named_as_the_task_file_is_shown_cut_short(tmp_path):
    # was: its whole text in the line
    path = tmp_path / "notes.txt"
    path.write_text("a line of notes " * 200)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value) == (
        f"task file {path} holds 'a line of notes a line of notes a line of notes a line...',"
        " not a mapping of fields; write its fields as `name: value` lines"
    )


def test_tc_rows_from_a_csv_name_the_format_that_holds_lists(tmp_path):
    # was: "a row's tokens and tags must both be lists, got 'paris is nice', 'B-LOC O O'", no fix
    for split in ("train", "test"):
        (tmp_path / f"{split}.csv").write_text("words,ner\n" + "paris is nice,B-LOC O O\n" * 5)
    data = {"train": "train.csv", "test": "test.csv"}
    path = write_task_file(
        tmp_path, name="ner", family="tc", data=data, columns={"tokens": "words", "tags": "ner"}
    )
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value).endswith(
        "a row's tokens and tags must both be lists, got 'paris is nice', 'B-LOC O O'; write one list each per "
        'row, in JSON lines or parquet (`{"tokens": ["Paris", "is"], "tags": ["B-LOC", "O"]}`, under your column '
        "names); a CSV or TSV cell is one text"
    ), str(err.value)


def test_label_names_that_differ_only_in_end_spaces_are_refused_without_labels(tmp_path):
    # was: a hand-edited CSV's `positive ` (cells are read as written) became a third class beside
    # `positive` and `negative`, trained and scored as such, without a word
    spec = sentiment_files(tmp_path)  # polarity: negative / positive
    train = tmp_path / "train.csv"
    lines = train.read_text().splitlines()
    row = next(i for i, line in enumerate(lines) if line.endswith(",positive"))
    lines[row] += " "
    train.write_text("\n".join(lines) + "\n")
    path = write_task_file(tmp_path, name="spaced", **spec)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert re.fullmatch(
        rf"task file {re.escape(str(path))}: the label column 'polarity' holds '(positive|positive )' \(train "
        r"split, line \d+ of train\.csv\) and '(positive|positive )' \(train split, line \d+ of train\.csv\), "
        r"which differ only in spaces at their ends, so each would be a class of its own; remove the spaces "
        r"from the data, or name the classes in `labels:`",
        str(err.value),
    ), str(err.value)
    assert f"line {row + 1} of train.csv" in str(err.value)
    spec["labels"] = ["negative", "positive", "positive "]  # named: the user's own three classes
    task = load_task_files([str(write_task_file(tmp_path, name="spaced", **spec))])[0]
    assert task.options.labels == ("negative", "positive", "positive ")


@pytest.mark.parametrize(
    ("written", "differ", "fix"),
    [
        ("Positive", "in case", "write the class in one case in the data"),
        ("Positive ", "in case and in spaces at their ends", "write the class one way in the data"),
    ],
)
def test_label_names_that_differ_only_in_case_are_refused_without_labels(tmp_path, written, differ, fix):
    # was: a hand-edited CSV's `Positive` beside `positive` became a third class, trained and scored as
    # such, without a word
    spec = sentiment_files(tmp_path)  # polarity: negative / positive
    train = tmp_path / "train.csv"
    lines = train.read_text().splitlines()
    row = next(i for i, line in enumerate(lines) if line.endswith(",positive"))
    lines[row] = lines[row].removesuffix("positive") + written
    train.write_text("\n".join(lines) + "\n")
    path = write_task_file(tmp_path, name="cased", **spec)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    names = f"(positive|{re.escape(written)})"
    assert re.fullmatch(
        rf"task file {re.escape(str(path))}: the label column 'polarity' holds '{names}' \(train split, line "
        rf"\d+ of train\.csv\) and '{names}' \(train split, line \d+ of train\.csv\), which differ only "
        rf"{differ}, so each would be a class of its own; {fix}, or name the classes in `labels:`",
        str(err.value),
    ), str(err.value)
    assert f"'{written}' (train split, line {row + 1} of train.csv)" in str(err.value)
    spec["labels"] = ["negative", "positive", written]  # named: the user's own three classes
    task = load_task_files([str(write_task_file(tmp_path, name="cased", **spec))])[0]
    assert task.options.labels == ("negative", "positive", written)


def test_labels_under_options_are_refused_not_replaced_by_the_datas(tmp_path):
    # was: `options: {labels: [positive, negative]}` accepted (`labels` is a field of the family's
    # options), then replaced by the labels read from train, sorted: the order the user gave was lost
    spec = sentiment_files(tmp_path)
    path = write_task_file(tmp_path, name="optioned", options={"labels": ["positive", "negative"]}, **spec)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value) == (
        f"task file {path}: options.labels: the label set is the task's own `labels:` field; move it there"
    )
    path = write_task_file(tmp_path, name="optioned", labels=["positive", "negative"], **spec)
    assert load_task_files([str(path)])[0].options.labels == ("positive", "negative")


def test_a_template_under_options_is_refused_and_options_list_neither_as_valid(tmp_path):
    """Was: a pair-sc task's `options: {template: ...}` replaced by its own `template:` without a word,
    and a misspelt option's line listed `labels` and `template` as valid options, which are refused."""
    pair = {"name": "pairs", "family": "pair-sc", "template": "{a} | {b}", "data": {"train": "t.csv"}}
    path = write_task_file(tmp_path, **pair, options={"template": "{a} [SEP] {b}"})
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value) == (
        f"task file {path}: options.template: the template is the task's own `template:` field; move it there"
    )
    path = write_task_file(tmp_path, **pair, options={"poolng": "mean"})
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value) == (
        f"task file {path}: options: unknown field poolng (pooling?); valid: head, multilabel, pooling, positive_label, regression"
    )


def test_a_task_file_saved_as_utf16_says_so_and_gives_the_command(tmp_path):
    # was: "is not valid YAML ('utf-8' codec can't decode byte 0xff in position 0: invalid start byte);
    # fix the syntax", of a file whose syntax is right: Notepad's "Unicode" is UTF-16
    spec = sentiment_files(tmp_path)
    path = write_task_file(tmp_path, name="notepad", **spec)
    path.write_bytes(path.read_text().encode("utf-16"))
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value) == (
        f"task file {path} is UTF-16 text, not UTF-8; save it as UTF-8, e.g. "
        "`iconv -f utf-16 -t utf-8 task.yaml > utf8-task.yaml`"
    )


def test_a_study_file_given_as_a_task_file_says_it_is_a_study_file(tmp_path, capsys):
    """Was: "unknown fields baseline, runs; valid: ...", listing the study's own fields."""
    from tests.eval.fixtures import model_folder
    from tests.reliability.errors_doc import assert_printed_as_documented
    from tests.reliability.test_hostile_inputs import assert_one_line, cli

    from encoderlab.study.catalog import get_study
    from encoderlab.study.files import dump_study

    path = tmp_path / "study.yaml"
    path.write_text(dump_study(get_study("paper1-pfs", "cpu")))
    argv = ["eval", model_folder(tmp_path / "model"), "--task-file", path, "--out", tmp_path / "e"]
    code, err = cli([*argv, "--lrs", "1e-4", "--seeds", "0"], capsys)
    assert_one_line(code, err, rf"task file {path} is a study file \(it has `runs:`, not `family:`\); run it")
    assert_printed_as_documented("task-file-is-a-study-file", err, tmp_path)
    assert not (tmp_path / "e").exists()


@pytest.mark.parametrize("validation", [None, "dev.json"])
def test_a_squad_json_of_one_object_is_named_as_one_example_not_as_a_too_small_train_split(
    tmp_path, validation
):
    # was, with validation cut from train: "data.validation_fraction 0.05 of the 1 train example leaves none
    # to train on", which hid that SQuAD's {version, data} file had been read as one example
    def squad(start: int) -> str:
        qas = [
            {"id": str(i), "question": "what?", "answers": [{"text": "red", "answer_start": 4}]}
            for i in (start,)
        ]
        return json.dumps(
            {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "the red", "qas": qas}]}]}
        )

    data = {"train": "train.json", "test": "test.json"}
    for i, name in enumerate(("train.json", "test.json", *([validation] if validation else []))):
        (tmp_path / name).write_text(squad(i))
    if validation:
        data["validation"] = validation
    path = write_task_file(tmp_path, name="squad-file", family="qa", data=data)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value) == (
        f"task file {path}: train split, train.json: no columns question, context, answers (it has version, "
        "data); the file is one JSON object, read as one example: write one row per example, as a JSON array of "
        "rows or JSON lines (a nested layout such as SQuAD's {version, data} flattened to a row per question), "
        "or fix `columns:`"
    )


@pytest.mark.parametrize(
    "columns,fields,own",
    [
        ({"text": "polarity", "label": "polarity"}, "text and label", ""),
        (
            {"label": "text"},
            "text and label",
            " (text, left out of `columns:`, reads the column of its own name)",
        ),
    ],
)
def test_two_fields_reading_one_column_are_refused_before_the_data_is_read(tmp_path, columns, fields, own):
    # was: a KeyError traceback ('text'): the rows are renamed column -> field, so one field was lost
    spec = {**sentiment_files(tmp_path), "columns": columns}
    path = write_task_file(tmp_path, name="one-column", **spec)
    column = next(iter(columns.values()))
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value) == (
        f"task file {path}: columns: {fields} both read column {column!r}{own}; give each field its own column"
    )


@pytest.mark.parametrize(
    "header,have,what",
    [
        ("sentence, polarity", " polarity", "in spaces at its ends"),
        ("sentence,Polarity", "Polarity", "in case"),
        ("sentence,Polarity ", "Polarity ", "in case and in spaces at its ends"),
    ],
)
def test_a_header_column_differing_only_in_spaces_or_case_is_named_with_the_difference(
    tmp_path, header, have, what
):
    # was: "no column polarity (it has sentence,  polarity); fix `columns:` or the data", the space unseen
    spec = sentiment_files(tmp_path)
    train = tmp_path / "train.csv"
    train.write_text(train.read_text().replace("sentence,polarity", header, 1))
    path = write_task_file(tmp_path, name="spaced", **spec)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value).endswith(
        f"no column polarity (it has {', '.join(header.split(','))}); its column {have!r} differs from "
        f"'polarity' only {what}: write it as 'polarity' in the data, or as {have!r} in `columns:`"
    ), str(err.value)


@pytest.mark.parametrize(
    "column,got",
    [
        (1, 'got 1; quote it ("1") to give it as text'),
        (
            ["polarity"],
            "got the list [polarity] (YAML reads [ ] or { } unquoted as one); quote it ('[polarity]') to give "
            "it as text",
        ),
    ],
)
def test_a_column_name_that_is_not_text_is_refused_naming_the_field(tmp_path, column, got):
    # was: a TypeError traceback ("sequence item 0: expected str instance, int found") where the data
    # lacked the column: `from_dict` checked that `columns:` was a mapping, not its values
    spec = {**sentiment_files(tmp_path), "columns": {"text": "sentence", "label": column}}
    path = write_task_file(tmp_path, name="numbered", **spec)
    with pytest.raises(UserError) as err:
        load_task_files([str(path)])
    assert str(err.value) == f"task file {path}: columns.label: expected str, {got}"
