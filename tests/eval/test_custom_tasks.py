"""Tasks from a file (`eval/tasks/custom.py`): each family from local files or the simulated hub,
one-line errors for bad specs, and a file task run end to end through the CLI, cache and summary."""

from __future__ import annotations

import json
import random
from pathlib import Path

import datasets
import pytest
import yaml
from tests.eval import hub_fixtures as hub
from tests.eval.conftest import NEGATIVE, POSITIVE, ir_pairs, qa_examples, sc_examples, tc_examples
from tests.eval.fixtures import SENTIMENT_LABELS, sentiment_files, sentiment_rows, write_csv
from tests.eval.fixtures import write_jsonl as _jsonl
from tests.eval.fixtures import write_task_file as _spec

from encoderlab.errors import UserError
from encoderlab.eval.families import input_text
from encoderlab.eval.spec import HubRepo, IRSplit, PairSCOptions
from encoderlab.eval.tasks import load_task
from encoderlab.eval.tasks.custom import load_task_files, task_from_file

pytestmark = pytest.mark.usefixtures("isolated_tasks")


def test_sc_from_csv_cuts_validation_from_train(tmp_path):
    train = write_csv(tmp_path / "train.csv", sentiment_rows(100, 0))
    test = write_csv(
        tmp_path / "test.csv",
        [r for r in sentiment_rows(60, 1) if r not in sentiment_rows(100, 0)][:30],
    )
    path = _spec(
        tmp_path,
        name="sentiment",
        family="sc",
        data={"train": train, "test": test, "validation_fraction": 0.1},
        columns={"text": "sentence", "label": "polarity"},
        labels=list(SENTIMENT_LABELS),
    )
    task = task_from_file(path)
    task, data = load_task(task)
    assert task.labels == SENTIMENT_LABELS and task.metric == "accuracy" and task.family == "sc"
    assert (len(data.train), len(data.val), len(data.tests["test"])) == (90, 10, 30)
    assert data.train[0]["label"] in (0, 1) and set(data.train[0]) == {"text", "label"}
    assert task.data_version.startswith("file:") and task.hub_repos == ()  # files: no hub input


def test_a_finetune_section_keeps_the_file_defaults_it_leaves_out(tmp_path):
    """`finetune: {warmup_ratio: 0}` trained 1000 steps x 32 (FinetuneConfig's), not the 300 x 16 a
    task file gets without the section."""
    train = write_csv(tmp_path / "train.csv", sentiment_rows(40, 0))
    test = write_csv(
        tmp_path / "test.csv", [r for r in sentiment_rows(30, 1) if r not in sentiment_rows(40, 0)][:10]
    )
    common = dict(
        family="sc", data={"train": train, "test": test}, columns={"text": "sentence", "label": "polarity"}
    )
    bare = task_from_file(_spec(tmp_path, "bare.yaml", name="bare", **common))
    path = _spec(
        tmp_path, "some.yaml", name="some", finetune={"warmup_ratio": 0.0, "max_steps": 50}, **common
    )
    some = task_from_file(path).finetune
    assert (some.batch_size, some.micro_batch_size, some.warmup_ratio, some.max_steps) == (
        bare.finetune.batch_size,
        bare.finetune.micro_batch_size,
        0.0,
        50,
    )
    assert bare.finetune.max_steps == 300 and bare.finetune.batch_size == 16


def test_pair_sc_from_jsonl_renders_the_template(tmp_path):
    rows = [{"premise": f"p{i} {POSITIVE[i % 3]}", "hypothesis": f"h{i}", "y": i % 2} for i in range(40)]
    _jsonl(tmp_path / "tr.jsonl", rows[:24])
    _jsonl(tmp_path / "va.jsonl", rows[24:32])
    _jsonl(tmp_path / "te.jsonl", rows[32:])
    path = _spec(
        tmp_path,
        name="nli",
        family="pair-sc",
        data={"train": "tr.jsonl", "validation": "va.jsonl", "test": "te.jsonl"},
        columns={"text": "premise", "text_pair": "hypothesis", "label": "y"},
        template="Premise: {a}\nHypothesis: {b}",
        metric="macro_f1",
        options={"pooling": "first"},
    )
    task, data = load_task(task_from_file(path))
    assert isinstance(task.options, PairSCOptions) and task.options.pooling == "first"
    assert task.labels == ("0", "1") and task.metric == "macro_f1"  # values seen in train, as names
    assert input_text(task, data.tests["test"][0]) == "Premise: p32 fine\nHypothesis: h32"  # POSITIVE[32 % 3]


def test_tc_from_jsonl_with_tag_names(tmp_path):
    names = ("O", "B-PER", "B-LOC", "I-LOC")
    rows = [{"words": e["tokens"], "ner": [names[t] for t in e["tags"]]} for e in tc_examples(60, 0)]
    for split, part in (("train", rows[:40]), ("validation", rows[40:50]), ("test", rows[50:])):
        _jsonl(tmp_path / f"{split}.jsonl", part)
    path = _spec(
        tmp_path,
        name="ner",
        family="tc",
        data={s: f"{s}.jsonl" for s in ("train", "validation", "test")},
        columns={"tokens": "words", "tags": "ner"},
        allow_overlap=True,  # generated sentences repeat
    )
    task, data = load_task(task_from_file(path))
    assert task.labels == ("O", "B-LOC", "B-PER", "I-LOC") and task.metric == "entity_f1"
    first = rows[50]
    assert [task.labels[t] for t in data.tests["test"][0]["tags"]] == first["ner"]


def test_qa_from_parquet_with_the_squad_struct(tmp_path):
    for split, seed in (("train", 0), ("validation", 1), ("test", 2)):
        rows = {k: [] for k in ("id", "question", "context", "answers")}
        for e in qa_examples(20, seed, unanswerable=0.2):
            for k in ("id", "question", "context"):
                rows[k].append(e[k])
            rows["answers"].append(
                {
                    "text": [a["text"] for a in e["answers"]],
                    "answer_start": [a["answer_start"] for a in e["answers"]],
                }
            )
        datasets.Dataset.from_dict(rows).to_parquet(tmp_path / f"{split}.parquet")
    path = _spec(
        tmp_path,
        name="codeqa",
        family="qa",
        data={s: f"{s}.parquet" for s in ("train", "validation", "test")},
        options={"v2": True, "stride": 32},
        allow_overlap=True,
    )
    task, data = load_task(task_from_file(path))
    assert task.options.v2 and task.options.stride == 32 and task.metric == "f1"
    assert any(e["answers"] == [] for e in data.train) and data.tests["test"][0]["id"] == "q2-0"


def test_qa_by_tagging_with_eos_inputs_and_its_metric_checks(tmp_path):
    test_qa_from_parquet_with_the_squad_struct(tmp_path)
    common = {
        "family": "qa",
        "data": {s: f"{s}.parquet" for s in ("train", "validation", "test")},
        "allow_overlap": True,
        "inputs": "eos",
    }
    options = {"head": "tagger", "question_template": "Question: {question}\nContext: "}
    task = task_from_file(_spec(tmp_path, name="tagqa", options=options, **common))
    assert task.metric == "position_f1" and task.inputs == "eos" and task.options.head == "tagger"
    refusals = [
        (
            {"options": options, "metric": "f1"},
            r"metric 'f1' is not reported by the QA head 'tagger'; use one of",
        ),
        (
            {"options": {"question_template": "{q}"}},
            r"question template needs exactly the field \{question\}",
        ),
        (
            {"metric": "position_f1", "inputs": "tokenizer"},
            r"metric 'position_f1' is not reported by the QA head 'span'",
        ),
        # the span head reads neither: they would change the signature, not the inputs
        ({}, r"inputs 'eos': read only by the QA head 'tagger'"),
        (
            {"inputs": "tokenizer", "options": {"question_template": "Q: {question}"}},
            r"question_template: read only by the QA head 'tagger'",
        ),
        ({"options": {**options, "stride": 64}}, r"stride: read only by the QA head 'span'"),
        (
            {"options": options, "finetune": {"select": "best_epoch", "select_metric": "f1"}},
            r"finetune.select_metric 'f1' is not reported by the QA head 'tagger'",
        ),
        ({"inputs": "none"}, r"inputs"),
    ]
    for change, message in refusals:
        with pytest.raises(UserError, match=message) as exc:
            task_from_file(_spec(tmp_path, name="bad", **{**common, **change}))
        assert "\n" not in str(exc.value)


def test_ir_from_jsonl_builds_judged_corpora(tmp_path):
    pairs = [{"q": p["query"], "d": p["document"]} for p in ir_pairs(60, 0)]
    _jsonl(tmp_path / "train.jsonl", pairs[:40])
    _jsonl(tmp_path / "test.jsonl", [{"q": f"find {r['d'][:20]}", "d": r["d"]} for r in pairs[40:]])
    path = _spec(
        tmp_path,
        name="search",
        family="ir",
        data={"train": "train.jsonl", "test": "test.jsonl", "validation_fraction": 0.25},
        columns={"query": "q", "document": "d"},
        options={"query_prefix": "Q: "},
        allow_overlap=True,  # topics repeat across generated queries
    )
    task, data = load_task(task_from_file(path))
    assert isinstance(data.tests["test"], IRSplit) and len(data.tests["test"].queries) == 20
    assert task.options.query_prefix == "Q: "
    held = set(data.val.queries.values())  # a query's rows stay on one side of the cut (topics repeat)
    assert held and not held & {p["query"] for p in data.train}
    assert len(data.train) == sum(p["q"] not in held for p in pairs[:40])
    test = data.tests["test"]
    for qid, relevant in test.qrels.items():  # each query judges the document it was written from
        [did] = relevant
        assert test.queries[qid] == f"find {test.corpus[did][:20]}"


def test_hub_source_through_the_paper_loader(tmp_path, monkeypatch):
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))
    hub.glue(tmp_path / "hub")
    path = _spec(
        tmp_path,
        name="my-sst2",
        family="sc",
        data={"hub": "nyu-mll/glue", "config": "sst2", "splits": {"test": "validation", "validation": None}},
        columns={"text": "sentence"},
    )
    task, data = load_task(task_from_file(path))
    assert task.labels == ("negative", "positive")  # the ClassLabel names
    assert task.hub_repos == (HubRepo("nyu-mll/glue"),)  # the study report lists it (was: none)
    assert (len(data.train), len(data.val), len(data.tests["test"])) == (57, 3, 8)
    cut = {"hub": "nyu-mll/glue", "config": "sst2", "test_fraction": 0.25}  # the hub's test is not read
    path = _spec(tmp_path, name="my-sst2", family="sc", data=cut, columns={"text": "sentence"})
    task, data = load_task(task_from_file(path))
    assert (len(data.train), len(data.val), len(data.tests["test"])) == (45, 8, 15)


def test_labels_given_beside_a_class_label_column_are_matched_by_name(tmp_path, monkeypatch):
    """Was: the column's ids read as positions in `labels:`, so `labels: [positive, negative]` (to set the
    class order) swapped every label of SST-2, and CoNLL's B-PER (id 1) became the B-LOC of a reordered
    tag list, each without a word."""
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))
    hub.glue(tmp_path / "hub")
    hub.conll2003_en(tmp_path / "hub")
    data = {"hub": "nyu-mll/glue", "config": "sst2", "splits": {"test": "validation", "validation": None}}
    spec = {"name": "my-sst2", "family": "sc", "data": data, "columns": {"text": "sentence"}}
    _, plain = load_task(task_from_file(_spec(tmp_path, **spec)))
    task, swapped = load_task(task_from_file(_spec(tmp_path, **spec, labels=["positive", "negative"])))
    assert task.labels == ("positive", "negative")
    assert [1 - e["label"] for e in plain.tests["test"]] == [e["label"] for e in swapped.tests["test"]]
    tags = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-MISC", "I-MISC"]
    ner = {"name": "ner", "family": "tc", "data": {"hub": "hgissbkh/conll2003-en"}}
    ner["columns"] = {"tokens": "words", "tags": "ner"}
    _, plain = load_task(task_from_file(_spec(tmp_path, **ner)))
    task, reordered = load_task(task_from_file(_spec(tmp_path, **ner, labels=tags)))
    names = [[hub.CONLL_NAMES[t] for t in e["tags"]] for e in plain.train]
    assert [[task.options.labels[t] for t in e["tags"]] for e in reordered.train] == names
    assert any("B-PER" in n for n in names)


@pytest.mark.parametrize(("config", "said"), [(None, "none was named"), ("sst3", "no config 'sst3'")])
def test_a_hub_config_left_out_or_unknown_names_the_configs_and_the_field(
    tmp_path, monkeypatch, config, said
):
    """Was: "Config name is missing.; check the mirror's files against docs/evaluation.md" (the mirror
    was fine, and `datasets`' list of configs was cut off with its next lines)."""
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))
    hub.glue(tmp_path / "hub")
    data = {"hub": "nyu-mll/glue", "splits": {"test": "validation", "validation": None}}
    path = _spec(
        tmp_path, name="my-sst2", family="sc", data={**data, "config": config}, columns={"text": "sentence"}
    )
    with pytest.raises(UserError) as err:
        task_from_file(path)
    assert str(err.value).endswith(
        f": it has configs sst2, mnli, qqp, and {said}; name one (a task file's data.config)"
    ), str(err.value)


def test_a_hub_split_lacking_a_column_is_named_by_the_split_it_plays(tmp_path, monkeypatch):
    """Read "test split, the dataset's 'test' split: no column ..." (the split named twice)."""
    monkeypatch.setenv("ENCODERLAB_HUB_DATA", str(tmp_path / "hub"))
    hub.glue(tmp_path / "hub")
    for splits, where in (
        (
            {"train": "validation", "test": "train", "validation": None},
            r"train split \(the dataset's 'validation' split\)",
        ),
        ({"test": "validation", "validation": None}, r"train split"),
    ):
        data = {"hub": "nyu-mll/glue", "config": "sst2", "splits": splits}
        path = _spec(tmp_path, name="my-sst2", family="sc", data=data, columns={"text": "body"})
        with pytest.raises(UserError, match=rf"{where}: no column body \(it has ") as err:
            load_task(task_from_file(path))
        assert "split, the dataset's" not in str(err.value)


BAD = [
    ({"family": "sc-pair"}, r"unknown family 'sc-pair'; valid: ir, pair-sc, qa, sc, tc"),
    ({"colour": "red"}, r"unknown field colour; valid: .*allow_overlap"),
    (
        {"columns": {"text": "body"}},
        r"train split, line 1 of train\.csv \(the header\): no columns body, label \(it has sentence, polarity\)",
    ),
    (
        {"labels": ["negative"]},
        r": label 'positive' is not in the label set \['negative'\]; add it to `labels:`",
    ),
    (
        {"data": {"train": "train.csv", "test": "empty.csv"}},
        r"the test split is empty \(.*empty.csv\); add examples",
    ),
    (  # the first shared input as written, not a Python tuple ("('...', None)")
        {"data": {"train": "train.csv", "test": "train.csv"}},
        r"\d+ inputs of test also appear in train \(first: '[^'(|]+'\); deduplicate",
    ),
    ({"metric": "ndcg@10"}, r"metric 'ndcg@10' is not one of sc's: accuracy, macro_f1"),
    (  # the fix was not said, nor where a relative path is read from
        {"data": {"train": "nope.csv", "test": "test.csv"}},
        r"data.train file .*nope.csv does not exist; fix data.train \(a relative path is read from the task file.s folder\)$",
    ),
    (  # was "data.train file ... does not exist", of a folder that does
        {"data": {"train": ".", "test": "test.csv"}},
        r"data.train .* is a folder; name the data file itself$",
    ),
    ({"template": "{a} {b}"}, r"`template` is only for pair-sc; remove it, or set `family: pair-sc`"),
    (  # named no fix, nor the form a pair takes here (one text, not the tokenizer's pair encoding)
        {"family": "pair-sc", "columns": {"text": "sentence", "text_pair": "sentence", "label": "polarity"}},
        r'`template` is required for pair-sc; add `template:` joining the two texts, e\.g\. template: "\{a\}\\n\{b\}"',
    ),
]


@pytest.mark.parametrize(("change", "message"), BAD)
def test_bad_specs_are_one_line_errors(tmp_path, change, message):
    (tmp_path / "empty.csv").write_text("sentence,polarity\n")
    spec = {"name": "bad", **sentiment_files(tmp_path), **change}
    with pytest.raises(UserError, match=message) as exc:
        task_from_file(_spec(tmp_path, **spec))
    assert "\n" not in str(exc.value) and str(tmp_path / "task.yaml") in str(exc.value)


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
@pytest.mark.parametrize("renamed", [False, True])
def test_a_split_without_the_label_column_is_named(tmp_path, suffix, renamed):
    """Read together, `datasets` gave the test file the train file's columns: a test file without the
    label column was "label 'None' is not in the label set ...; add it to `labels:`" (a wrong fix), one
    naming it otherwise "cannot read the data files: An error occurred while generating the dataset"."""
    write = write_csv if suffix == "csv" else _jsonl
    test = [
        {"sentence": r["sentence"], **({"stars": r["polarity"]} if renamed else {})}
        for r in sentiment_rows(10, 1)
    ]
    data = {
        "train": write(tmp_path / f"train.{suffix}", sentiment_rows(40, 0)),
        "test": write(tmp_path / f"test.{suffix}", test),
    }
    spec = {"name": "bad", "family": "sc", "data": data, "columns": {"text": "sentence", "label": "polarity"}}
    has = "sentence, stars" if renamed else "sentence"
    place = r"line 1 of test\.csv \(the header\)" if suffix == "csv" else r"test\.jsonl"
    with pytest.raises(
        UserError, match=rf": test split, {place}: no column polarity \(it has {has}\); fix `columns:`"
    ):
        task_from_file(_spec(tmp_path, **spec))


def test_a_missing_field_is_named_not_the_constructors_words(tmp_path):
    spec = {"name": "bad", **sentiment_files(tmp_path)}
    del spec["data"]
    with pytest.raises(UserError) as exc:
        task_from_file(_spec(tmp_path, **spec))
    assert str(exc.value) == f"task file {tmp_path / 'task.yaml'}: missing field data"


def test_a_builtin_name_or_a_repeated_name_is_refused(tmp_path):
    spec = sentiment_files(tmp_path)
    with pytest.raises(UserError, match="'boolq' is a built-in task's name"):
        load_task_files([_spec(tmp_path, file="a.yaml", name="boolq", **spec)])
    (tmp_path / "a.yaml").unlink()
    _spec(tmp_path, file="a.yaml", name="mine", **spec)
    _spec(tmp_path, file="b.yml", name="mine", **spec)
    with pytest.raises(UserError, match="name 'mine' is also used by"):
        load_task_files([tmp_path])


def test_a_file_task_runs_end_to_end_through_the_cli_cache_and_summary(tmp_path, capsys, monkeypatch):
    from tests.eval.fixtures import model_folder

    from encoderlab.cli import main
    from encoderlab.eval import protocol

    rng = random.Random(0)
    rows = [
        {"sentence": f"{rng.choice(POSITIVE if y else NEGATIVE)} {i}", "polarity": SENTIMENT_LABELS[y]}
        for i, y in enumerate(rng.randrange(2) for _ in range(160))
    ]
    folder = tmp_path / "tasks"
    folder.mkdir()
    write_csv(folder / "train.csv", rows[:120])
    write_csv(folder / "test.csv", rows[120:])
    spec = {
        "name": "polarity",
        "family": "sc",
        "data": {"train": "train.csv", "test": "test.csv", "validation_fraction": 0.2},
        "columns": {"text": "sentence", "label": "polarity"},
        "finetune": {"batch_size": 16, "micro_batch_size": 16, "max_steps": 40},
        "max_length": 32,
    }
    _spec(folder, file="polarity.yaml", **spec)
    model, out = str(model_folder(tmp_path / "m")), tmp_path / "out"
    argv = [
        "eval",
        model,
        "--task-file",
        str(folder),
        "--lrs",
        "2e-3",
        "--seeds",
        "0",
        "1",
        "--out",
        str(out),
    ]
    main(argv)
    printed = capsys.readouterr().out
    assert "polarity" in printed and (out / "summary.md").is_file()
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["task"] for r in records] == ["polarity", "polarity"]
    summary = json.loads((out / "summary.json").read_text())
    assert (
        summary["tasks"]["polarity"]["test"]["n"] == 2 and summary["tasks"]["polarity"]["test"]["mean"] > 80
    )

    calls = []
    real = protocol.run_one
    monkeypatch.setattr(protocol, "run_one", lambda *a, **k: calls.append(a[4:6]) or real(*a, **k))
    main(argv)  # cached: nothing retrained
    assert calls == []
    write_csv(folder / "test.csv", rows[120:150])  # other data: another signature, retrained
    main(argv)
    assert len(calls) == 2 and len((out / "results.jsonl").read_text().splitlines()) == 4


def test_the_worked_example_in_the_docs_loads(tmp_path):
    doc = (Path(__file__).parents[2] / "docs" / "evaluation.md").read_text()
    block = doc.split("<!-- task-file example -->\n```yaml\n", 1)[1].split("```", 1)[0]
    spec = yaml.safe_load(block)
    rows = [
        {"review": f"{e['text']} {i}", "stars": ("bad", "good")[e["label"]]}
        for i, e in enumerate(sc_examples(80, 0))
    ]
    write_csv(tmp_path / spec["data"]["train"], rows[:60])
    write_csv(tmp_path / spec["data"]["test"], rows[60:])
    (tmp_path / "reviews.yaml").write_text(block)
    task, data = load_task(task_from_file(tmp_path / "reviews.yaml"))
    assert task.name == "reviews" and task.metric == "macro_f1" and task.labels == ("bad", "good")
    assert (len(data.train), len(data.val), len(data.tests["test"])) == (54, 6, 20)


@pytest.mark.parametrize(
    "form",
    [
        "--task-file {a} --task-file {b} --tasks boolq --tasks vitaminc",
        "--task-file {a} {b} --tasks boolq vitaminc",
        "--tasks boolq --task-file {a} --tasks vitaminc --task-file {b}",
    ],
)
def test_task_files_and_tasks_keep_every_value_however_given(tmp_path, monkeypatch, form):
    from types import SimpleNamespace

    from encoderlab.cli import main
    from encoderlab.eval import commands

    spec = sentiment_files(tmp_path)
    a, b = (
        _spec(tmp_path, file="a.yaml", name="first", **spec),
        _spec(tmp_path, file="b.yaml", name="second", **spec),
    )
    seen = {}
    monkeypatch.setattr(
        commands, "evaluate", lambda model, **kw: seen.update(kw) or SimpleNamespace(tasks={})
    )
    # the command checks assets and loads the model before it creates --out; neither exists here
    monkeypatch.setattr(commands, "require_assets", lambda names: None)
    monkeypatch.setattr(
        commands, "load_eval_model", lambda source: SimpleNamespace(tokenizer=None, positions=None)
    )
    main(["eval", "m", *form.format(a=a, b=b).split(), "--out", str(tmp_path / "o")])
    assert seen["suite"] is None and seen["tasks"] == ["boolq", "vitaminc", "first", "second"]
    main(["eval", "m", "--out", str(tmp_path / "o")])  # no task file: the pocket suite, its own grid
    assert seen["suite"] == "pocket" and seen["tasks"] is None and seen["lrs"] is None


def test_a_suite_beside_task_files_keeps_its_tasks_choice_and_its_grid(tmp_path, monkeypatch):
    """`--suite pocket --tasks boolq --task-file a.yaml` ran all of pocket, and `--suite biomed` beside a
    task file ran paper 1's grid (6 LRs x seeds 0-4), not biomed's (5e-5 x seeds 42-46)."""
    from types import SimpleNamespace

    from encoderlab.cli import main
    from encoderlab.eval import commands
    from encoderlab.eval.suites import SUITE_GRIDS, SUITES

    a = _spec(tmp_path, file="a.yaml", name="first", **sentiment_files(tmp_path))
    seen = {}
    monkeypatch.setattr(
        commands, "evaluate", lambda model, **kw: seen.update(kw) or SimpleNamespace(tasks={})
    )
    monkeypatch.setattr(commands, "require_assets", lambda names: None)
    monkeypatch.setattr(
        commands, "load_eval_model", lambda source: SimpleNamespace(tokenizer=None, positions=None)
    )
    out = ["--out", str(tmp_path / "o")]
    main(["eval", "m", "--suite", "pocket", "--tasks", "boolq", "--task-file", str(a), *out])
    assert seen["tasks"] == ["boolq", "first"]
    main(["eval", "m", "--suite", "biomed", "--task-file", str(a), *out])
    assert seen["tasks"] == [*SUITES["biomed"], "first"]
    assert (tuple(seen["lrs"]), tuple(seen["seeds"])) == SUITE_GRIDS["biomed"]
    main(["eval", "m", "--suite", "biomed", "--task-file", str(a), "--lrs", "1e-4", *out])
    assert tuple(seen["lrs"]) == (1e-4,) and tuple(seen["seeds"]) == SUITE_GRIDS["biomed"][1]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {"sentence": "fine film", "polarity": None},
            r"a row has an empty label; fill it in or remove the row",
        ),
        (
            {"sentence": None, "polarity": "positive"},
            r"a row has an empty text; fill it in or remove the row",
        ),
    ],
)
def test_an_empty_cell_is_named_not_read_as_the_word_none(tmp_path, row, message):
    # was: an empty label became a class called 'None' (inferred labels), an empty text the input "None"
    files = sentiment_files(tmp_path)
    rows = sentiment_rows(40, 0) + [row]
    write_csv(tmp_path / "train.csv", rows)
    with pytest.raises(UserError, match=message):
        task_from_file(_spec(tmp_path, name="empty", **files))


def test_tc_rows_whose_tokens_are_not_lists_are_one_line(tmp_path):
    rows = [{"tokens": ["a", "b"], "tags": ["O", "O"]}] * 5 + [{"tokens": None, "tags": ["O"]}]
    _jsonl(tmp_path / "tr.jsonl", rows)
    _jsonl(tmp_path / "te.jsonl", [{"tokens": ["c"], "tags": ["O"]}])
    spec = {"family": "tc", "data": {"train": "tr.jsonl", "test": "te.jsonl"}}
    with pytest.raises(UserError, match=r"a row's tokens and tags must both be lists, got None"):
        task_from_file(_spec(tmp_path, name="tags", **spec))


def test_a_missing_task_file_names_what_to_give(tmp_path):
    """It said only "does not exist", with no fix."""
    from encoderlab.eval.tasks.custom import task_files

    with pytest.raises(
        UserError, match=r"does not exist; give the path of a task YAML file or of a folder of them"
    ):
        task_files([tmp_path / "nope.yaml"])


def test_a_missing_task_file_names_the_one_of_a_near_name_beside_it(tmp_path):
    """`--task-file pair.yaml` beside pairs.yaml said only to give the path of a task file."""
    from encoderlab.eval.tasks.custom import task_files

    (tmp_path / "pairs.yaml").write_text("name: pairs\n")
    with pytest.raises(UserError) as exc:
        task_files([tmp_path / "pair.yaml"])
    assert str(exc.value).startswith(
        f"task file {tmp_path}/pair.yaml does not exist; did you mean {tmp_path}/pairs.yaml? (docs/evaluation.md"
    )
